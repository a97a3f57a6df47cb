/* Unit tests for lib/log.c: plain lines, and syslog priorities when the
   fd is systemd's journal stream ($JOURNAL_STREAM). */
#include "test-common.h"
#include "log.h"

#include <fcntl.h>
#include <sys/stat.h>

/* The test's log file, opened fresh by log_file_open(). */
static int log_file_open(const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		i_fatal("open(%s) failed: %s", path, strerror(errno));
	return fd;
}

/* Everything written to fd so far, in buf (NUL-terminated). */
static void log_file_read(int fd, char *buf, size_t size)
{
	ssize_t ret = pread(fd, buf, size - 1, 0);
	buf[ret > 0 ? ret : 0] = '\0';
}

static void journal_stream_of(int fd, char *buf, size_t size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		i_fatal("fstat() failed: %s", strerror(errno));
	snprintf(buf, size, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
}

static void test_log_fd_is_journal(void)
{
	char stream[64], other[64];
	int fd = log_file_open("journal");
	int fd2 = log_file_open("other");

	journal_stream_of(fd, stream, sizeof(stream));
	journal_stream_of(fd2, other, sizeof(other));
	test_assert(log_fd_is_journal(fd, stream));
	test_assert(!log_fd_is_journal(fd2, stream));
	test_assert(log_fd_is_journal(fd2, other));
	test_assert(!log_fd_is_journal(fd, NULL));
	test_assert(!log_fd_is_journal(fd, ""));
	test_assert(!log_fd_is_journal(fd, "12"));
	test_assert(!log_fd_is_journal(fd, "x:y"));
	/* Trailing bytes make it another value, not a match. */
	char longer[80];
	snprintf(longer, sizeof(longer), "%s0", stream);
	test_assert(!log_fd_is_journal(fd, longer));
	snprintf(longer, sizeof(longer), "%s:1", stream);
	test_assert(!log_fd_is_journal(fd, longer));
	close(fd);
	close(fd2);
}

static void test_log_plain(void)
{
	char buf[1024];
	int fd = log_file_open("plain");

	(void)unsetenv("JOURNAL_STREAM");
	log_init("t: ", false);
	log_set_fd(fd);
	i_warning("careful %d", 1);
	log_write_line("child[1]: ", "error: bad\nthing", 16);
	log_file_read(fd, buf, sizeof(buf));
	test_assert_str(buf, "t: warning: careful 1\nchild[1]: error: bad?thing\n");
	close(fd);
}

static void test_log_journal_priorities(void)
{
	char buf[1024], stream[64];
	int fd = log_file_open("journal-prio");

	journal_stream_of(fd, stream, sizeof(stream));
	test_assert(setenv("JOURNAL_STREAM", stream, 1) == 0);
	/* Timestamps are asked for but the journal has its own. */
	log_init("t: ", true);
	log_set_fd(fd);
	log_set_debug(true);
	i_debug("d");
	i_info("i");
	i_warning("w");
	i_error("e");
	/* Children's lines carry their level as text. */
	log_write_line("c: ", "info: ci", 8);
	log_write_line("c: ", "error: ce", 9);
	log_write_line("c: ", "fatal: cf", 9);
	log_write_line("c: ", "warning: cw", 11);
	log_write_line("c: ", "debug: cd", 9);
	log_write_line("c: ", "==1==ERROR: AddressSanitizer", 28);
	log_write_line("c: ", "error", 5);
	log_file_read(fd, buf, sizeof(buf));
	test_assert_str(buf,
			"<7>t: debug: d\n<6>t: info: i\n<4>t: warning: w\n"
			"<3>t: error: e\n<6>c: info: ci\n<3>c: error: ce\n"
			"<2>c: fatal: cf\n<4>c: warning: cw\n<7>c: debug: cd\n"
			"<5>c: ==1==ERROR: AddressSanitizer\n<5>c: error\n");

	/* Another fd (a log_path file dup2()ed over stderr) is not the
	   journal: plain lines again. */
	int fd2 = log_file_open("after");
	log_init("t: ", false);
	log_set_fd(fd2);
	i_info("plain");
	log_file_read(fd2, buf, sizeof(buf));
	test_assert_str(buf, "t: info: plain\n");
	(void)unsetenv("JOURNAL_STREAM");
	log_set_fd(STDERR_FILENO);
	log_set_debug(false);
	close(fd);
	close(fd2);
}

static void test_log_cleanup(void)
{
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_log_fd_is_journal), TEST(test_log_plain),
	  TEST(test_log_journal_priorities), TEST(test_log_cleanup))
