/* Unit tests for lib/prefetch-thread.c: queued files end up in the page
   cache, names that do not open are counted and skipped, a full queue
   refuses, and every directory descriptor is closed once its entries
   and its owner are done. */
#include "test-common.h"
#include "prefetch-thread.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define FILE_SIZE (64 * 1024)

static int open_fd_count(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int count = 0;

	test_assert(dir != NULL);
	if (dir == NULL)
		return -1;
	while (readdir(dir) != NULL)
		count++;
	closedir(dir);
	return count;
}

/* A file of FILE_SIZE bytes under dir, written out and evicted from the
   page cache. */
static void cold_file(int dirfd, const char *name)
{
	static char data[FILE_SIZE];
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
			0600);

	test_assert(fd != -1);
	memset(data, 'x', sizeof(data));
	test_assert(write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));
	test_assert(fsync(fd) == 0);
	test_assert(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
	test_assert(close(fd) == 0);
}

/* Pages of name's first len bytes in the page cache. */
static unsigned int resident_pages(int dirfd, const char *name, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[FILE_SIZE / 512];
	unsigned int count = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	test_assert(fd != -1);
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	test_assert(map != MAP_FAILED);
	test_assert(mincore(map, len, vec) == 0);
	for (size_t i = 0; i < (len + page - 1) / page; i++)
		count += vec[i] & 1;
	munmap(map, len);
	close(fd);
	return count;
}

/* The thread's fadvise only starts the reads, and mincore() counts a
   page once its read completed: wait for want pages (at most
   RESIDENT_WAIT_MSECS; nothing else brings these pages in). */
#define RESIDENT_WAIT_MSECS 10000
static unsigned int resident_pages_wait(int dirfd, const char *name,
					size_t len, unsigned int want)
{
	unsigned int pages = 0;

	for (unsigned int ms = 0; ms < RESIDENT_WAIT_MSECS; ms++) {
		pages = resident_pages(dirfd, name, len);
		if (pages >= want)
			break;
		usleep(1000);
	}
	return pages;
}

static void test_prefetch_reads_into_page_cache(void)
{
	const char *error;
	long page = sysconf(_SC_PAGESIZE);
	int dirfd = open(test_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);

	test_assert(dirfd != -1);
	cold_file(dirfd, "a");
	cold_file(dirfd, "b");
	/* the checks of the page cache mean something only where eviction
	   works (not on tmpfs, say) */
	bool evicted = resident_pages(dirfd, "a", FILE_SIZE) == 0 &&
		resident_pages(dirfd, "b", FILE_SIZE) == 0;
	if (!evicted)
		printf("note: %s keeps evicted pages: page cache not checked\n",
		       test_tmpdir());

	struct prefetch_thread *thread = prefetch_thread_create(4, &error);
	test_assert(thread != NULL);
	struct prefetch_dir *dir = prefetch_dir_create(dirfd);
	test_assert(dir != NULL);
	/* a's first 8 KiB, all of b */
	test_assert(prefetch_thread_add(thread, dir, "a", 8192));
	test_assert(prefetch_thread_add(thread, dir, "b", 0));
	prefetch_thread_wait_idle(thread);
	/* WILLNEED may read a little more than asked, never less */
	if (evicted) {
		test_assert_int(resident_pages_wait(dirfd, "a", 8192,
						    8192 / page), 8192 / page);
		test_assert_int(resident_pages_wait(dirfd, "b", FILE_SIZE,
						    FILE_SIZE / page),
				FILE_SIZE / page);
	}

	struct prefetch_thread_stats stats;
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(stats.queued, 2);
	test_assert_int(stats.done, 2);
	test_assert_int(stats.failed, 0);
	prefetch_dir_unref(&dir);
	test_assert(dir == NULL);
	prefetch_thread_destroy(&thread);
	test_assert(thread == NULL);
	close(dirfd);
}

static void test_prefetch_skips_what_does_not_open(void)
{
	const char *error;
	char long_name[NAME_MAX + 2];
	int dirfd = open(test_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);

	test_assert(dirfd != -1);
	test_assert(symlinkat("/etc/passwd", dirfd, "link") == 0);
	test_assert(mkfifoat(dirfd, "fifo", 0600) == 0);
	cold_file(dirfd, "real");
	struct prefetch_thread *thread = prefetch_thread_create(8, &error);
	struct prefetch_dir *dir = prefetch_dir_create(dirfd);
	test_assert(thread != NULL && dir != NULL);
	/* gone, a symlink (never followed), a FIFO (must not block the
	   thread: it opens without a writer), then a real file */
	test_assert(prefetch_thread_add(thread, dir, "missing", 0));
	test_assert(prefetch_thread_add(thread, dir, "link", 0));
	test_assert(prefetch_thread_add(thread, dir, "fifo", 0));
	test_assert(prefetch_thread_add(thread, dir, "real", 0));
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	test_assert(!prefetch_thread_add(thread, dir, long_name, 0));
	prefetch_thread_wait_idle(thread);

	struct prefetch_thread_stats stats;
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(stats.queued, 4);
	test_assert_int(stats.failed, 2);
	test_assert_int(stats.done, 2);
	test_assert(resident_pages_wait(dirfd, "real", FILE_SIZE, 1) > 0);
	prefetch_dir_unref(&dir);
	prefetch_thread_destroy(&thread);
	close(dirfd);
}

/* Many more entries than the queue holds: each is either refused or
   done, and every dup of the directory is closed in the end, whichever
   of the owner and the thread lets go last. */
static void test_prefetch_full_queue_and_descriptors(void)
{
	const char *error;
	int dirfd = open(test_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);

	test_assert(dirfd != -1);
	cold_file(dirfd, "f");
	int fds_before = open_fd_count();
	struct prefetch_thread *thread = prefetch_thread_create(2, &error);
	test_assert(thread != NULL);
	unsigned int accepted = 0, refused = 0;
	for (unsigned int round = 0; round < 50; round++) {
		struct prefetch_dir *dir = prefetch_dir_create(dirfd);
		test_assert(dir != NULL);
		for (unsigned int i = 0; i < 20; i++) {
			if (prefetch_thread_add(thread, dir, "f", 4096))
				accepted++;
			else
				refused++;
		}
		/* the owner goes first; queued entries keep the dup */
		prefetch_dir_unref(&dir);
	}
	prefetch_thread_wait_idle(thread);
	struct prefetch_thread_stats stats;
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(accepted + refused, 1000);
	test_assert_int(stats.queued, accepted);
	test_assert_int(stats.full, refused);
	test_assert_int(stats.done, accepted);
	test_assert(refused > 0);
	test_assert_int(open_fd_count(), fds_before);

	/* entries still queued at destroy are dropped, their dups closed */
	struct prefetch_dir *dir = prefetch_dir_create(dirfd);
	for (unsigned int i = 0; i < 2; i++)
		(void)prefetch_thread_add(thread, dir, "f", 4096);
	prefetch_dir_unref(&dir);
	prefetch_thread_destroy(&thread);
	test_assert_int(open_fd_count(), fds_before);
	close(dirfd);
}

TEST_MAIN(
	TEST(test_prefetch_reads_into_page_cache),
	TEST(test_prefetch_skips_what_does_not_open),
	TEST(test_prefetch_full_queue_and_descriptors),
)
