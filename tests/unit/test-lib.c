/* Unit tests for lib/lib.c (allocation, fd and secret helpers),
   lib/log.c (line format, context, limits) and lib/latency-histogram.c. */
#include "test-common.h"
#include "latency-histogram.h"
#include "log.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* Bytes of log output read back per test; above log.c's line limit. */
#define TEST_LOG_READ_MAX 8192

static void test_lib_strdup(void)
{
	char *s = i_strdup("abc");
	test_assert_str(s, "abc");
	i_free(s);
	test_assert(s == NULL);
	test_assert(i_strdup(NULL) == NULL);

	s = i_strndup("abcdef", 2);
	test_assert_str(s, "ab");
	i_free(s);
	const char raw[3] = { 'x', 'y', 'z' };
	s = i_strndup(raw, 3);
	test_assert_str(s, "xyz");
	i_free(s);

	s = i_strdup_printf("%s:%u", "n", 12u);
	test_assert_str(s, "n:12");
	i_free(s);

	unsigned char *z = i_malloc(100);
	bool zero = true;
	for (unsigned int i = 0; i < 100; i++)
		zero = zero && z[i] == 0;
	test_assert(zero);
	z = i_realloc(z, 200);
	test_assert(z[99] == 0);
	i_free(z);
}

/* Runs func in a child and returns its wait status. */
static int run_in_child(void (*func)(void))
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null_fd = open("/dev/null", O_WRONLY);
		if (null_fd >= 0)
			dup2(null_fd, STDERR_FILENO);
		func();
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

static void child_mul_overflow(void)
{
	(void)i_mul_size(SIZE_MAX / 2 + 1, 2);
}

static void child_add_overflow(void)
{
	(void)i_add_size(SIZE_MAX, 1);
}

static void child_fatal(void)
{
	i_fatal("fatal test");
}

static void test_lib_size_checks(void)
{
	test_assert_int(i_mul_size(3, 7), 21);
	test_assert_int(i_mul_size(0, SIZE_MAX), 0);
	test_assert(i_mul_size(SIZE_MAX, 1) == SIZE_MAX);
	test_assert_int(i_add_size(3, 7), 10);
	test_assert(i_add_size(SIZE_MAX - 1, 1) == SIZE_MAX);

	/* Overflow is a bug: it must abort, never wrap. */
	int status = run_in_child(child_mul_overflow);
	test_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	status = run_in_child(child_add_overflow);
	test_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	status = run_in_child(child_fatal);
	test_assert(WIFEXITED(status) && WEXITSTATUS(status) == FATAL_EXIT_CODE);
}

static void test_lib_fds(void)
{
	int fds[2];
	test_assert(pipe(fds) == 0);

	test_assert(fd_set_nonblock(fds[0], true) == 0);
	test_assert((fcntl(fds[0], F_GETFL) & O_NONBLOCK) != 0);
	char c;
	errno = 0;
	test_assert(read(fds[0], &c, 1) < 0 && errno == EAGAIN);
	test_assert(fd_set_nonblock(fds[0], false) == 0);
	test_assert((fcntl(fds[0], F_GETFL) & O_NONBLOCK) == 0);

	test_assert(fd_set_cloexec(fds[1], true) == 0);
	test_assert((fcntl(fds[1], F_GETFD) & FD_CLOEXEC) != 0);
	test_assert(fd_set_cloexec(fds[1], false) == 0);
	test_assert((fcntl(fds[1], F_GETFD) & FD_CLOEXEC) == 0);
	test_assert(fd_set_nonblock(-1, true) < 0);

	int fd = fds[0];
	i_close_fd(&fds[0]);
	test_assert_int(fds[0], -1);
	test_assert(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	i_close_fd(&fds[0]);   /* -1 is a no-op */
	test_assert_int(fds[0], -1);
	i_close_fd(&fds[1]);
}

static void test_lib_secrets(void)
{
	unsigned char a[32], b[32];

	memset(a, 'x', sizeof(a));
	memcpy(b, a, sizeof(b));
	test_assert(mem_equals_timing_safe(a, b, sizeof(a)));
	b[31] ^= 1;
	test_assert(!mem_equals_timing_safe(a, b, sizeof(a)));
	b[31] ^= 1;
	b[0] ^= 0x80;
	test_assert(!mem_equals_timing_safe(a, b, sizeof(a)));
	test_assert(mem_equals_timing_safe(a, b, 0));

	safe_memset(a, 0, sizeof(a));
	bool zero = true;
	for (unsigned int i = 0; i < sizeof(a); i++)
		zero = zero && a[i] == 0;
	test_assert(zero);

	/* Two 256-bit random values are equal or all zero only if broken. */
	random_fill(a, sizeof(a));
	random_fill(b, sizeof(b));
	test_assert(memcmp(a, b, sizeof(a)) != 0);
	unsigned char zeros[32] = { 0 };
	test_assert(memcmp(a, zeros, sizeof(a)) != 0);
	random_fill(a, 0);
}

static void test_lib_time(void)
{
	uint64_t t1 = time_monotonic_ms();
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 30 * 1000000 };
	nanosleep(&ts, NULL);
	uint64_t t2 = time_monotonic_ms();
	test_assert(t2 >= t1 + 30);
	test_assert(t2 < t1 + 5000);
}

/* Reads what the log wrote into the pipe so far. */
static const char *log_read(int fd, char *buf, size_t size)
{
	ssize_t ret = read(fd, buf, size - 1);
	buf[ret > 0 ? ret : 0] = '\0';
	return buf;
}

static void test_log_format(void)
{
	static char buf[TEST_LOG_READ_MAX];
	int fds[2];
	test_assert(pipe(fds) == 0);
	test_assert(fd_set_nonblock(fds[0], true) == 0);
	log_set_fd(fds[1]);
	log_init("test: ", false);

	i_info("hello %d", 42);
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "test: info: hello 42\n");
	i_warning("w");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "test: warning: w\n");
	i_error("e");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "test: error: e\n");

	/* Debug only when enabled. */
	i_debug("hidden");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "");
	log_set_debug(true);
	i_debug("shown");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "test: debug: shown\n");
	log_set_debug(false);

	log_set_context("user=demo session=s1");
	i_info("x");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)),
			"test: info: user=demo session=s1: x\n");
	log_set_context(NULL);
	i_info("y");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)), "test: info: y\n");

	/* Embedded newlines cannot forge a second line. */
	i_info("a\nfake: error: b\r");
	test_assert_str(log_read(fds[0], buf, sizeof(buf)),
			"test: info: a fake: error: b \n");

	/* errno survives logging (callers log, then inspect errno). */
	errno = ENOSPC;
	i_error("err");
	test_assert_int(errno, ENOSPC);
	(void)log_read(fds[0], buf, sizeof(buf));

	log_init("", true);
	i_info("stamped");
	log_read(fds[0], buf, sizeof(buf));
	/* 2024-01-02T03:04:05.678 info: stamped */
	test_assert(strlen(buf) > 24 && buf[4] == '-' && buf[10] == 'T' &&
		    buf[19] == '.' && strcmp(buf + 24, "info: stamped\n") == 0);

	log_init("", false);
	log_set_fd(STDERR_FILENO);
	close(fds[0]);
	close(fds[1]);
}

static void test_log_long_line(void)
{
	static char buf[TEST_LOG_READ_MAX];
	int fds[2];
	test_assert(pipe(fds) == 0);
	test_assert(fd_set_nonblock(fds[0], true) == 0);
	log_set_fd(fds[1]);
	log_init("p: ", false);

	char *longstr = i_malloc(6000);
	memset(longstr, 'L', 5999);
	i_info("%s", longstr);
	const char *line = log_read(fds[0], buf, sizeof(buf));
	size_t len = strlen(line);
	/* One line, cut to fit one atomic pipe write. */
	test_assert(len > 1000 && len <= 4096);
	test_assert(line[len - 1] == '\n');
	test_assert(strchr(line, '\n') == line + len - 1);
	test_assert(strncmp(line, "p: info: LLL", 12) == 0);
	i_free(longstr);

	log_init("", false);
	log_set_fd(STDERR_FILENO);
	close(fds[0]);
	close(fds[1]);
}

/* Cumulative "le" buckets: an event at a bound is in that bucket, one
   past the last bound only in the count (+Inf). */
static void test_latency_histogram(void)
{
	struct latency_histogram h;
	static const uint64_t bounds[LATENCY_BUCKETS] = LATENCY_BUCKET_BOUNDS_US;

	memset(&h, 0, sizeof(h));
	latency_histogram_add(&h, 0);
	latency_histogram_add(&h, 1000);
	latency_histogram_add(&h, 1001);
	latency_histogram_add(&h, 30000001);
	test_assert_int(h.count, 4);
	test_assert_int(h.usecs, 0 + 1000 + 1001 + 30000001);
	test_assert_int(h.le[0], 2);
	for (unsigned int i = 1; i < LATENCY_BUCKETS; i++) {
		test_assert(bounds[i] > bounds[i - 1]);
		test_assert_int(h.le[i], 3);
	}
	uint64_t t1 = time_monotonic_us();
	uint64_t t2 = time_monotonic_us();
	test_assert(t2 >= t1 && t1 > 0);
}

TEST_MAIN(
	TEST(test_latency_histogram),
	TEST(test_lib_strdup),
	TEST(test_lib_size_checks),
	TEST(test_lib_fds),
	TEST(test_lib_secrets),
	TEST(test_lib_time),
	TEST(test_log_format),
	TEST(test_log_long_line),
)
