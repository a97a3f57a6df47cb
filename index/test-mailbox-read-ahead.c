/* Unit tests: mailbox-read-ahead.c. mailbox_prefetch() brings a message's
   file into the page cache with and without the read-ahead thread and
   skips expunged messages; mailbox_read_ahead_pread() queues the next
   files only after a read found the folder cold, in batches. Pages are
   made cold with fsync + POSIX_FADV_DONTNEED and looked at with
   mincore(). */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-read-ahead.h"
#include "prefetch-thread.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define MSG_COUNT 40
#define BODY_SIZE (32 * 1024)
/* a read of the disk that takes longer than this is stuck */
#define RESIDENT_WAIT_MSECS 10000

static struct mailbox *box;
static bool eviction_works = true;

static void append_messages(void)
{
	static char body[BODY_SIZE];
	const char *error;
	uint32_t uid;

	memset(body, 'b', sizeof(body));
	for (unsigned int i = 0; i < MSG_COUNT; i++) {
		struct mailbox_append_ctx *save;
		char hdr[128];
		int len = snprintf(hdr, sizeof(hdr),
				   "Subject: ahead %u\r\n\r\n", i + 1);
		test_assert(mailbox_append_begin(box, 0, 1000000000, &save,
						 &error) == 0);
		test_assert(mailbox_append_write(save, hdr, (size_t)len,
						 &error) == 0);
		test_assert(mailbox_append_write(save, body, sizeof(body),
						 &error) == 0);
		test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
	}
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), MSG_COUNT);
}

/* Pages of message seq's file in the page cache. */
static unsigned int resident(uint32_t seq)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[BODY_SIZE / 512 + 2];
	const char *error;
	int fd = mailbox_msg_open(box, seq, &error);
	unsigned int count = 0;

	test_assert(fd != -1);
	void *map = mmap(NULL, BODY_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	test_assert(map != MAP_FAILED);
	test_assert(mincore(map, BODY_SIZE, vec) == 0);
	for (long i = 0; i < BODY_SIZE / page; i++)
		count += vec[i] & 1;
	munmap(map, BODY_SIZE);
	close(fd);
	return count;
}

static bool resident_wait(uint32_t seq)
{
	for (unsigned int ms = 0; ms < RESIDENT_WAIT_MSECS; ms++) {
		if (resident(seq) > 0)
			return true;
		usleep(1000);
	}
	return false;
}

static void evict_all(void)
{
	const char *error;

	for (uint32_t seq = 1; seq <= MSG_COUNT; seq++) {
		int fd = mailbox_msg_open(box, seq, &error);
		test_assert(fd != -1);
		test_assert(fsync(fd) == 0);
		test_assert(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
		close(fd);
	}
	for (uint32_t seq = 1; seq <= MSG_COUNT; seq++) {
		if (resident(seq) != 0)
			eviction_works = false;
	}
	if (!eviction_works)
		printf("note: %s keeps evicted pages: page cache not checked\n",
		       test_tmpdir());
}

/* The process's read-ahead thread for a test, and its end. */
static struct prefetch_thread *thread_start(unsigned int capacity)
{
	const char *error;
	struct prefetch_thread *thread =
		prefetch_thread_create(capacity, &error);

	test_assert(thread != NULL);
	mailbox_read_ahead_set_thread(thread);
	return thread;
}

static void thread_stop(struct prefetch_thread **thread)
{
	mailbox_read_ahead_set_thread(NULL);
	prefetch_thread_destroy(thread);
}

/* A reader's first read of message seq. */
static void read_first(struct mailbox_read_ahead *ra, uint32_t seq)
{
	char buf[4096];
	const char *error;
	int fd = mailbox_msg_open(box, seq, &error);

	test_assert(fd != -1);
	test_assert(mailbox_read_ahead_pread(box, ra, seq, fd, buf,
					     sizeof(buf), 0, 0) > 0);
	close(fd);
}

static void test_prefetch_without_thread(void)
{
	evict_all();
	for (uint32_t seq = 1; seq <= 5; seq++)
		test_assert(mailbox_prefetch(box, seq, 0));
	if (eviction_works) {
		for (uint32_t seq = 1; seq <= 5; seq++)
			test_assert(resident_wait(seq));
		test_assert_int(resident(6), 0);
	}
}

static void test_prefetch_on_thread(void)
{
	struct prefetch_thread_stats stats;
	struct prefetch_thread *thread = thread_start(8);

	evict_all();
	for (uint32_t seq = 11; seq <= 15; seq++)
		test_assert(mailbox_prefetch(box, seq, 0));
	prefetch_thread_wait_idle(thread);
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(stats.queued, 5);
	test_assert_int(stats.done, 5);
	if (eviction_works) {
		for (uint32_t seq = 11; seq <= 15; seq++)
			test_assert(resident_wait(seq));
		test_assert_int(resident(16), 0);
	}
	thread_stop(&thread);
}

/* The reader's first reads: nothing ahead while the folder is warm;
   once a read waited, the next MAILBOX_READ_AHEAD_MSGS, refilled when
   half of them were read. */
static void test_read_ahead_pread(void)
{
	struct mailbox_read_ahead ra;
	struct prefetch_thread_stats stats;
	const char *error;
	struct prefetch_thread *thread = thread_start(MAILBOX_READ_AHEAD_QUEUE);

	/* warm (every file was read by resident() above... make sure) */
	for (uint32_t seq = 1; seq <= MSG_COUNT; seq++) {
		int fd = mailbox_msg_open(box, seq, &error);
		test_assert(fd != -1);
		test_assert(posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED) == 0);
		close(fd);
	}
	for (uint32_t seq = 1; seq <= MSG_COUNT; seq++)
		test_assert(resident_wait(seq));
	memset(&ra, 0, sizeof(ra));
	for (uint32_t seq = 1; seq <= 4; seq++)
		read_first(&ra, seq);
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(stats.queued, 0);

	if (eviction_works) {
		evict_all();
		memset(&ra, 0, sizeof(ra));
		unsigned int want[] = {
			/* after seq 1: the first read of a run looks only */
			0,
			/* seq 2 follows a read that waited: 3..18 */
			MAILBOX_READ_AHEAD_MSGS,
		};
		for (uint32_t seq = 1; seq <= 2; seq++) {
			read_first(&ra, seq);
			prefetch_thread_get_stats(thread, &stats);
			test_assert_int(stats.queued, want[seq - 1]);
		}
		/* up to half the window read: no more queued; then the
		   window is filled again */
		/* refilled once no more than half the window is ahead */
		uint32_t half = 1 + MAILBOX_READ_AHEAD_MSGS / 2;
		for (uint32_t seq = 3; seq <= half + 1; seq++) {
			read_first(&ra, seq);
			prefetch_thread_get_stats(thread, &stats);
			test_assert_int(stats.queued, seq <= half ?
					MAILBOX_READ_AHEAD_MSGS :
					seq + MAILBOX_READ_AHEAD_MSGS - 2);
		}
		prefetch_thread_wait_idle(thread);
		/* what was queued is in the page cache */
		for (uint32_t seq = 3; seq <= half + 1 + MAILBOX_READ_AHEAD_MSGS;
		     seq++)
			test_assert(resident_wait(seq));
	}
	thread_stop(&thread);
}

static void test_prefetch_skips_expunged(void)
{
	const char *error;
	struct prefetch_thread_stats stats;
	struct prefetch_thread *thread = thread_start(8);

	/* expunged by another handle; this view learns of it in a sync
	   that may not expunge, so the message keeps its number */
	char root[512];
	struct mailbox *other;
	snprintf(root, sizeof(root), "%s/mail", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &other, &error) == 1);
	test_assert(mailbox_msg_expunge(other, MSG_COUNT, &error) == 0);
	mailbox_close(&other);
	test_assert(mailbox_sync(box, false, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), MSG_COUNT);
	test_assert(mailbox_msg_is_expunged(box, MSG_COUNT));
	test_assert(mailbox_prefetch(box, MSG_COUNT, 0));
	prefetch_thread_wait_idle(thread);
	prefetch_thread_get_stats(thread, &stats);
	test_assert_int(stats.queued, 0);
	thread_stop(&thread);
}

static void test_setup(void)
{
	char root[512];
	const char *error;

	snprintf(root, sizeof(root), "%s/mail", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	append_messages();
}

static void test_teardown(void)
{
	mailbox_close(&box);
}

TEST_MAIN(
	TEST(test_setup),
	TEST(test_prefetch_without_thread),
	TEST(test_prefetch_on_thread),
	TEST(test_read_ahead_pread),
	TEST(test_prefetch_skips_expunged),
	TEST(test_teardown),
)
