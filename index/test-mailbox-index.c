/* Unit tests: the mailbox layer on top of moat.index (mailbox.c,
   maildir-sync.c): a synced mailbox reopens from the index alone, external
   Maildir changes are reconciled, a lost or garbled index is rebuilt, and
   the cache wrappers work. */
#include "test-common.h"
#include "mailbox.h"
#include "mail-index.h"
#include "maildir-watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define TEST_MSGS 12
/* a date far from "now": the files' own mtimes are changed later */
#define TEST_DATE 1000000000

static const char *root_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static void put_file(const char *root, const char *sub, const char *name,
		     const char *data, time_t mtime)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s/%s", root, sub, name);
	FILE *f = fopen(path, "w");
	fputs(data, f);
	fclose(f);
	if (mtime != 0) {
		struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
		test_assert(utimensat(AT_FDCWD, path, ts, 0) == 0);
	}
}

/* Settled directories: mtimes an hour old, so a scan trusts them. */
static void dirs_backdate(const char *root, long offset)
{
	const char *const subs[] = { "cur", "new" };
	char path[1024];
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 3600 - offset;
	ts[0].tv_nsec = 0;
	ts[1] = ts[0];
	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, subs[i]);
		test_assert(utimensat(AT_FDCWD, path, ts, 0) == 0);
	}
}

/* Message i: "<i>.test:2,<flags>" with odd ones \Seen, every third one
   \Flagged; the file holds i+1 LF-ended lines. */
static void make_mailbox(const char *root)
{
	struct mailbox *box;
	const char *error;
	char name[64], body[256];

	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	mailbox_close(&box);
	for (unsigned int i = 0; i < TEST_MSGS; i++) {
		snprintf(name, sizeof(name), "%u.test:2,%s%s", 100 + i,
			 i % 3 == 0 ? "F" : "", i % 2 == 1 ? "S" : "");
		body[0] = '\0';
		for (unsigned int j = 0; j <= i; j++)
			strcat(body, "line\n");
		put_file(root, "cur", name, body, TEST_DATE + i);
	}
	dirs_backdate(root, 0);
}

static enum mail_flags expected_flags(unsigned int i)
{
	return (i % 3 == 0 ? MAIL_FLAGGED : 0) | (i % 2 == 1 ? MAIL_SEEN : 0);
}

static void check_mailbox(struct mailbox *box, bool check_files)
{
	const char *error;

	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	for (unsigned int i = 0; i < TEST_MSGS && i < mailbox_get_count(box);
	     i++) {
		uint32_t seq = i + 1;
		uint64_t vsize;
		time_t date;
		test_assert_int(mailbox_msg_uid(box, seq), i + 1);
		test_assert_int(mailbox_msg_flags(box, seq) & ~MAIL_RECENT,
				expected_flags(i));
		test_assert(mailbox_msg_vsize(box, seq, &vsize, &error) == 0);
		test_assert_int(vsize, 6 * (i + 1));
		test_assert(mailbox_msg_internaldate(box, seq, &date,
						     &error) == 0);
		test_assert_int(date, TEST_DATE + i);
		if (check_files) {
			int fd = mailbox_msg_open(box, seq, &error);
			test_assert(fd >= 0);
			if (fd >= 0)
				close(fd);
		}
	}
}

/* Change what per-message file access would see: truncate every file,
   give it another mtime, and hide an extra file in cur/ behind the old
   directory mtime. */
static void tamper_files(const char *root)
{
	char dir_path[1024], path[2048];
	struct stat st;

	snprintf(dir_path, sizeof(dir_path), "%s/cur", root);
	test_assert(stat(dir_path, &st) == 0);
	DIR *dir = opendir(dir_path);
	struct dirent *d;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir_path, d->d_name);
		test_assert(truncate(path, 0) == 0);
		struct timespec ts[2] = { { 5, 0 }, { 5, 0 } };
		test_assert(utimensat(AT_FDCWD, path, ts, 0) == 0);
	}
	closedir(dir);
	put_file(root, "cur", "999.hidden:2,", "x\n", 0);
	struct timespec ts[2] = { st.st_atim, st.st_mtim };
	test_assert(utimensat(AT_FDCWD, dir_path, ts, 0) == 0);
}

static void test_reopen_from_index(void)
{
	const char *root = root_path("Reopen"), *error;
	struct mailbox *box;

	make_mailbox(root);
	/* first open: scans and builds the index */
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SELECT, &box, &error), 1);
	check_mailbox(box, true);
	test_assert_int(mailbox_get_recent_count(box), TEST_MSGS);
	mailbox_close(&box);

	/* second open: from the index only (as another process would:
	   this one's inotify watch would see the tampering) */
	maildir_watch_deinit();
	tamper_files(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SELECT, &box, &error), 1);
	check_mailbox(box, false);
	test_assert_int(mailbox_get_recent_count(box), 0);
	test_assert_int(mailbox_get_next_uid(box), TEST_MSGS + 1);
	/* opening a message still finds its file through the uidlist */
	int fd = mailbox_msg_open(box, 3, &error);
	test_assert(fd >= 0);
	if (fd >= 0)
		close(fd);
	mailbox_close(&box);

	/* touching cur/ makes the next open (of another process) scan: the
	   hidden file appears */
	maildir_watch_deinit();
	dirs_backdate(root, 10);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), TEST_MSGS + 1);
	test_assert_int(mailbox_msg_uid(box, TEST_MSGS + 1), TEST_MSGS + 1);
	mailbox_close(&box);
}

struct change_log {
	unsigned int expunges, flag_changes;
};

static void log_expunge(void *context, uint32_t seq ATTR_UNUSED,
			uint32_t uid ATTR_UNUSED)
{
	((struct change_log *)context)->expunges++;
}

static void log_flags(void *context, uint32_t seq ATTR_UNUSED)
{
	((struct change_log *)context)->flag_changes++;
}

static const struct mailbox_sync_callbacks change_cb = {
	.expunge = log_expunge, .flags_changed = log_flags,
};

static void external_rename(const char *root, const char *from, const char *to)
{
	char a[1024], b[1024];
	snprintf(a, sizeof(a), "%s/cur/%s", root, from);
	snprintf(b, sizeof(b), "%s/cur/%s", root, to);
	test_assert(rename(a, b) == 0);
}

static void test_external_changes(void)
{
	const char *root = root_path("External"), *error;
	struct mailbox *box, *box2;
	struct change_log log;
	char path[1024];

	make_mailbox(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SELECT, &box, &error), 1);
	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	/* another Maildir client: a flag rename, a removal, a delivery */
	external_rename(root, "100.test:2,F", "100.test:2,FRS");
	snprintf(path, sizeof(path), "%s/cur/101.test:2,S", root);
	test_assert(unlink(path) == 0);
	put_file(root, "new", "500.new", "new\n", TEST_DATE);
	dirs_backdate(root, 20);

	memset(&log, 0, sizeof(log));
	test_assert(mailbox_sync(box, true, &change_cb, &log, &error) == 0);
	test_assert_int(log.expunges, 1);
	test_assert_int(log.flag_changes, 1);
	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	test_assert_int(mailbox_msg_flags(box, 1) & ~MAIL_RECENT,
			MAIL_FLAGGED | MAIL_ANSWERED | MAIL_SEEN);
	test_assert_int(mailbox_msg_uid(box, 2), 3);
	test_assert_int(mailbox_msg_uid(box, TEST_MSGS), TEST_MSGS + 1);

	/* another session learns our STORE and EXPUNGE from the log */
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box2, &error), 1);
	test_assert_int(mailbox_get_count(box2), TEST_MSGS);
	test_assert(mailbox_msg_set_flags(box, 2, MAIL_DELETED, &error) == 0);
	test_assert(mailbox_msg_expunge(box, 3, &error) == 0);
	memset(&log, 0, sizeof(log));
	test_assert(mailbox_sync(box2, true, &change_cb, &log, &error) == 0);
	test_assert_int(log.expunges, 1);
	test_assert_int(log.flag_changes, 1);
	test_assert_int(mailbox_msg_flags(box2, 2), MAIL_DELETED);
	test_assert_int(mailbox_get_count(box2), TEST_MSGS - 1);
	mailbox_close(&box2);
	mailbox_close(&box);
}

static void unlink_index(const char *root)
{
	const char *const names[] = {
		MAIL_INDEX_FILE_NAME, MAIL_INDEX_LOG_FILE_NAME,
		MAIL_INDEX_LOG2_FILE_NAME, MAIL_INDEX_CACHE_FILE_NAME,
	};
	char path[1024];

	for (unsigned int i = 0; i < N_ELEMENTS(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, names[i]);
		(void)unlink(path);
	}
}

static void garble(const char *root, const char *name)
{
	char path[1024], junk[4096];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	int fd = open(path, O_WRONLY);
	test_assert(fd >= 0);
	memset(junk, 0x5a, sizeof(junk));
	test_assert(pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
	close(fd);
}

static void test_rebuild(void)
{
	const char *root = root_path("Rebuild"), *error;
	struct mailbox *box;

	make_mailbox(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	uint32_t uidvalidity = mailbox_get_uidvalidity(box);
	mailbox_close(&box);

	/* deleted: rebuilt from the Maildir and the uidlist */
	unlink_index(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	check_mailbox(box, true);
	test_assert_int(mailbox_get_uidvalidity(box), uidvalidity);
	mailbox_close(&box);

	/* garbled index file, then garbled log as well */
	garble(root, MAIL_INDEX_FILE_NAME);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	check_mailbox(box, true);
	mailbox_close(&box);
	garble(root, MAIL_INDEX_FILE_NAME);
	garble(root, MAIL_INDEX_LOG_FILE_NAME);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	check_mailbox(box, true);
	test_assert_int(mailbox_get_uidvalidity(box), uidvalidity);
	test_assert_int(mailbox_get_next_uid(box), TEST_MSGS + 1);
	mailbox_close(&box);
}

static void test_lost_uidlist(void)
{
	const char *root = root_path("LostUidlist"), *error;
	struct mailbox *box;
	char path[600];

	make_mailbox(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	uint32_t uidvalidity = mailbox_get_uidvalidity(box);
	mailbox_close(&box);

	/* The UIDs die with the uidlist: RFC 3501 2.3.1.1 wants a greater
	   UIDVALIDITY, even within the same second.
	   (Until the directories change, the index alone serves the
	   mailbox and its UIDs stay; a new delivery forces the rescan.) */
	snprintf(path, sizeof(path), "%s/moat.uidlist", root);
	test_assert(unlink(path) == 0);
	put_file(root, "new", "9999.M1P1.host", "Subject: new\n\nnew\n", time(NULL));
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert(mailbox_get_uidvalidity(box) > uidvalidity);
	test_assert_int(mailbox_get_count(box), TEST_MSGS + 1);
	test_assert_int(mailbox_get_next_uid(box), TEST_MSGS + 2);
	uint32_t second = mailbox_get_uidvalidity(box);
	mailbox_close(&box);

	/* and it stays once written */
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_uidvalidity(box), second);
	test_assert_int(mailbox_get_count(box), TEST_MSGS + 1);
	mailbox_close(&box);
}

static void test_cache(void)
{
	const char *root = root_path("Cache"), *error;
	struct mailbox *box;
	const void *data;
	size_t size;

	make_mailbox(root);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_msg_cache_lookup(box, 2, "envelope", &data,
						 &size), 0);
	test_assert(mailbox_msg_cache_add(box, 2, "envelope", "(NIL)", 5,
					  &error) == 0);
	test_assert(mailbox_msg_cache_add(box, 2, "a-field-name-much-longer-than-the-limit-of-the-cache", "x", 1,
					  &error) < 0);
	test_assert(mailbox_cache_flush(box, &error) == 0);
	mailbox_close(&box);

	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_msg_cache_lookup(box, 2, "envelope", &data,
						 &size), 1);
	test_assert(size == 5 && memcmp(data, "(NIL)", 5) == 0);
	test_assert_int(mailbox_msg_cache_lookup(box, 1, "envelope", &data,
						 &size), 0);
	mailbox_close(&box);
}

TEST_MAIN(TEST(test_reopen_from_index), TEST(test_external_changes),
	  TEST(test_rebuild), TEST(test_lost_uidlist), TEST(test_cache))
