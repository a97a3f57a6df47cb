/* Unit tests: mailbox-quota.c (the Maildir++ maildirsize file). */
#include "test-common.h"
#include "mailbox-quota.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *root_path(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static void put(const char *root, const char *rel, const char *data)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	test_assert(fd >= 0 && write(fd, data, strlen(data)) == (ssize_t)strlen(data));
	close(fd);
}

static void mkdirs(const char *root, const char *const *dirs)
{
	test_assert(mkdir(root, 0700) == 0);
	for (; *dirs != NULL; dirs++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", root, *dirs);
		test_assert(mkdir(path, 0700) == 0);
	}
}

static const char *file_text(const char *root)
{
	static char buf[8192];
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, MAILBOX_QUOTA_FILE);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_recalc_and_get(void)
{
	static const char *const dirs[] = {
		"cur", "new", "tmp", ".Sent", ".Sent/cur", ".Sent/new",
		".Sent/tmp", ".a.b", ".a.b/cur", NULL
	};
	const char *root = root_path("recalc");
	struct mailbox_quota_limits none = { 0, 0 }, limits, got;
	struct mailbox_quota_usage usage;
	const char *error;

	mkdirs(root, dirs);
	put(root, "cur/1.M1P1.h,S=100:2,S", "ignored: S= says 100");
	put(root, "new/2.M1P1.h", "12345");            /* no S=: stat */
	put(root, "tmp/3.M1P1.h", "not a message yet");
	put(root, ".Sent/cur/4.M1P1.h,S=1000:2,", "x");
	put(root, ".a.b/cur/5.M1P1.h:2,", "abc");
	put(root, "cur/.moat-internal", "not counted");
	/* no file yet: made by walking */
	limits.storage = 1 << 20;
	limits.messages = 10;
	test_assert(mailbox_quota_get(root, &limits, &got, &usage, &error) == 0);
	test_assert_int(usage.storage, 100 + 5 + 1000 + 3);
	test_assert_int(usage.messages, 4);
	test_assert_int(got.storage, 1 << 20);
	test_assert_str(file_text(root), "1048576S,10C\n1108 4\n");

	/* changes append; the sum is the usage */
	test_assert(mailbox_quota_update(root, 500, 1, &error) == 0);
	test_assert(mailbox_quota_update(root, -100, -1, &error) == 0);
	test_assert(mailbox_quota_update(root, 0, 0, &error) == 0);
	test_assert_str(file_text(root), "1048576S,10C\n1108 4\n500 1\n-100 -1\n");
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(usage.storage, 1508);
	test_assert_int(usage.messages, 4);
	/* the file's limits win over the caller's defaults */
	test_assert_int(got.messages, 10);

	/* new limits rewrite the first line, keeping the usage */
	limits.storage = 2000;
	limits.messages = 0;
	test_assert(mailbox_quota_set_limits(root, &limits, &error) == 0);
	test_assert_str(file_text(root), "2000S,0C\n1508 4\n");
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(got.storage, 2000);
	test_assert_int(got.messages, 0);
}

static void test_foreign_and_broken(void)
{
	static const char *const dirs[] = { "cur", "new", NULL };
	const char *root = root_path("foreign");
	struct mailbox_quota_limits none = { 0, 0 }, got;
	struct mailbox_quota_usage usage;
	const char *error;

	mkdirs(root, dirs);
	put(root, "cur/1.x,S=7:2,", "1234567");
	/* Courier's form: only a count limit, and a half-written last line */
	put(root, MAILBOX_QUOTA_FILE, "50C\n10 1\n-3 0\n5 ");
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(got.messages, 50);
	test_assert_int(got.storage, 0);
	test_assert_int(usage.storage, 7);
	test_assert_int(usage.messages, 1);
	/* garbage: recalculated from the folders */
	put(root, MAILBOX_QUOTA_FILE, "hello\nworld\n");
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(usage.storage, 7);
	test_assert_str(file_text(root), "0S,0C\n7 1\n");
	put(root, MAILBOX_QUOTA_FILE, "10S\n99999999999999999999999 1\n");
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(usage.storage, 7);
}

static void test_compaction_under_concurrency(void)
{
	static const char *const dirs[] = { "cur", "new", NULL };
	const char *root = root_path("busy");
	struct mailbox_quota_limits none = { 0, 0 }, got;
	struct mailbox_quota_usage usage;
	const char *error;
	enum { WRITERS = 4, UPDATES = 500 };

	mkdirs(root, dirs);
	test_assert(mailbox_quota_recalc(root, &none, NULL, &error) == 0);
	for (int w = 0; w < WRITERS; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < UPDATES; i++) {
				if (mailbox_quota_update(root, 10, 1, &error) < 0)
					_exit(1);
			}
			_exit(0);
		}
		test_assert(pid > 0);
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		test_assert(wait(&status) > 0 && WIFEXITED(status) &&
			    WEXITSTATUS(status) == 0);
	}
	/* compacted along the way, and no change lost */
	test_assert(strlen(file_text(root)) <= MAILBOX_QUOTA_COMPACT_SIZE + 64);
	test_assert(mailbox_quota_get(root, &none, &got, &usage, &error) == 0);
	test_assert_int(usage.storage, WRITERS * UPDATES * 10);
	test_assert_int(usage.messages, WRITERS * UPDATES);
}

static void test_check(void)
{
	struct mailbox_quota_limits l = { 1000, 10 };
	struct mailbox_quota_usage u = { 900, 5 };

	test_assert(mailbox_quota_check(&l, &u, 0, 100, 1) == 1);  /* exactly */
	test_assert(mailbox_quota_check(&l, &u, 0, 101, 1) == 0);  /* a byte over */
	test_assert(mailbox_quota_check(&l, &u, 100, 200, 1) == 1); /* grace */
	test_assert(mailbox_quota_check(&l, &u, 100, 201, 1) == 0);
	u.storage = 1000;   /* at the limit: the grace is gone */
	test_assert(mailbox_quota_check(&l, &u, 100, 1, 1) == 0);
	test_assert(mailbox_quota_check(&l, &u, 100, 0, 0) == 1);
	u.storage = 0;
	u.messages = 10;
	test_assert(mailbox_quota_check(&l, &u, 0, 1, 1) == 0);
	test_assert(mailbox_quota_check(&l, &u, 0, 1, 0) == 1);
	struct mailbox_quota_limits none = { 0, 0 };
	u.storage = 1LL << 40;
	test_assert(mailbox_quota_check(&none, &u, 0, 1ULL << 40, 1000) == 1);
	/* a usage below zero (drift) counts as zero */
	u.storage = -500;
	test_assert(mailbox_quota_check(&l, &u, 0, 1000, 0) == 1);
}

TEST_MAIN(TEST(test_recalc_and_get), TEST(test_foreign_and_broken),
	  TEST(test_compaction_under_concurrency), TEST(test_check))
