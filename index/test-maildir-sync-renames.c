/* Unit tests for index/maildir-sync-renames.c: another tool's flag
   renames in cur/, seen by the process's watch, reach the index without
   a readdir of cur/, and the flags are the ones a full scan takes from
   the names; anything the renames cannot account for scans. */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-private.h"
#include "maildir-keywords.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

/* Messages of the generated Maildir. */
#define TEST_MSGS 400

/* short, so that every path below it fits PATH_MAX */
static char root[512];
/* each message's current name in cur/, uid i + 1 */
static char names[TEST_MSGS][128];

static void cur_path(char *buf, const char *name)
{
	test_assert(snprintf(buf, PATH_MAX, "%s/cur/%s", root, name) <
		    PATH_MAX);
}

/* Names like a deliverer's: time, microseconds, pid, counter, host;
   sorted as generated, so message i gets uid i + 1. */
static void make_maildir(void)
{
	static const char *const subs[] = { "cur", "new", "tmp" };
	char path[PATH_MAX];

	snprintf(root, sizeof(root), "%s/mail", test_tmpdir());
	test_assert(mkdir(root, 0700) == 0);
	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, subs[i]);
		test_assert(mkdir(path, 0700) == 0);
	}
	for (unsigned int i = 0; i < TEST_MSGS; i++) {
		snprintf(names[i], sizeof(names[i]),
			 "17000%05u.M%06uP%uQ%u.host,S=%u:2,%s", i,
			 (i * 7919) % 1000000, 4000 + i % 13, i, 100 + i,
			 i % 3 == 0 ? "S" : "");
		cur_path(path, names[i]);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		test_assert(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
}

/* What a full scan takes from message i's name. */
static void name_flags(unsigned int i, enum mail_flags *flags_r,
		       uint32_t *keywords_r)
{
	struct maildir_filename fn;

	test_assert(maildir_filename_parse(names[i], &fn));
	*flags_r = fn.flags & MAIL_FLAGS_PERMANENT;
	*keywords_r = maildir_keywords_from_letters(fn.other_flags);
}

/* Every message's flags and keywords as its name says. */
static void check_flags(struct mailbox *box)
{
	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	for (uint32_t seq = 1; seq <= mailbox_get_count(box); seq++) {
		unsigned int i = mailbox_msg_uid(box, seq) - 1;
		enum mail_flags flags;
		uint32_t keywords;
		test_assert(i < TEST_MSGS);
		if (i >= TEST_MSGS)
			return;
		name_flags(i, &flags, &keywords);
		test_assert_int(mailbox_msg_flags(box, seq) &
				MAIL_FLAGS_PERMANENT, flags);
		test_assert_int(mailbox_msg_keywords(box, seq), keywords);
	}
}

/* Rename message i to the given info part, as another tool would. */
static void foreign_rename(unsigned int i, const char *info)
{
	char from[PATH_MAX], to[PATH_MAX], name[128];
	size_t base_len = strcspn(names[i], ":");

	snprintf(name, sizeof(name), "%.*s:2,%s", (int)base_len, names[i],
		 info);
	cur_path(from, names[i]);
	cur_path(to, name);
	test_assert(rename(from, to) == 0);
	memcpy(names[i], name, sizeof(name));
}

/* Info parts in ASCII order, keywords included. */
static const char *const infos[] = {
	"", "S", "FS", "RS", "DFRST", "Sa", "Fbc", "PS", "T"
};

static struct mailbox *open_synced(void)
{
	struct mailbox *box;
	const char *error;

	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SESSION, &box, &error), 1);
	test_assert_int(mailbox_sync(box, true, NULL, NULL, &error), 0);
	return box;
}

static bool sync_ok(struct mailbox *box)
{
	const char *error;

	return mailbox_sync(box, true, NULL, NULL, &error) == 0;
}

/* A new Maildir, opened and synced with its watch; NULL (after cleaning
   up, the test skipped) where the file system cannot be watched. */
static struct mailbox *open_watched(void)
{
	make_maildir();
	struct mailbox *box = open_synced();
	if (box->watch == NULL) {
		printf("SKIP: %s cannot be watched\n", root);
		mailbox_close(&box);
		maildir_watch_deinit();
		test_tmpdir_cleanup();
		return NULL;
	}
	return box;
}

/* Many renames, some messages more than once, some back to what the
   index had: applied without a scan, the names' flags in the index. */
static void test_renames_applied(void)
{
	struct mailbox *box = open_watched();
	if (box == NULL)
		return;
	check_flags(box);
	unsigned int scans = box->scan_count;
	uint32_t state = 12345;
	for (unsigned int n = 0; n < 600; n++) {
		state = state * 1103515245U + 12345U;
		unsigned int i = (state >> 8) % TEST_MSGS;
		foreign_rename(i, infos[(state >> 20) % N_ELEMENTS(infos)]);
	}
	test_assert(sync_ok(box));
	test_assert_int(box->scan_count, scans);
	check_flags(box);
	/* the watch trusts the index again: nothing to do next time */
	test_assert(sync_ok(box));
	test_assert_int(box->scan_count, scans);
	/* a second handle (a new session) sees the same from the index */
	struct mailbox *box2 = open_synced();
	check_flags(box2);
	test_assert_int(box2->scan_count, 0);
	mailbox_close(&box2);
	/* the names as a fresh process's full scan reads them */
	mailbox_close(&box);
	maildir_watch_deinit();
	char stamp[PATH_MAX];
	snprintf(stamp, sizeof(stamp), "%s/%s", root, MAILBOX_DIRSTAMP_NAME);
	(void)unlink(stamp);
	box = open_synced();
	test_assert(box->scan_count > 0);
	check_flags(box);
	mailbox_close(&box);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

/* After each odd change the sync scans, and the flags are still the
   names'. */
static void test_odd_events_scan(void)
{
	char path[PATH_MAX], other[PATH_MAX];

	struct mailbox *box = open_watched();
	if (box == NULL)
		return;
	/* a rename and a delivery straight into cur/ */
	unsigned int scans = box->scan_count;
	foreign_rename(5, "FS");
	cur_path(path, "1800000000.M1P1Q1.host:2,");
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	test_assert(fd >= 0);
	if (fd >= 0)
		close(fd);
	test_assert(sync_ok(box));
	test_assert(box->scan_count > scans);
	test_assert_int(mailbox_get_count(box), TEST_MSGS + 1);
	test_assert(unlink(path) == 0);
	test_assert(sync_ok(box));
	check_flags(box);

	/* a rename that changes the base: the old message is gone, a new
	   one came (checked last: message 7 has another uid then) */
	scans = box->scan_count;
	foreign_rename(7, "S");
	cur_path(path, names[7]);
	cur_path(other, "1.renamed:2,S");
	test_assert(rename(path, other) == 0);
	test_assert(sync_ok(box));
	test_assert(box->scan_count > scans);
	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	test_assert_int(mailbox_msg_uid(box, TEST_MSGS), TEST_MSGS + 2);
	test_assert(rename(other, path) == 0);

	/* more renames than the watch keeps */
	scans = box->scan_count;
	for (unsigned int n = 0; n <= MAILDIR_WATCH_MAX_RENAMES; n++) {
		foreign_rename(n % TEST_MSGS, infos[n % N_ELEMENTS(infos)]);
		if (n % 256 == 0)
			maildir_watch_read();
	}
	test_assert(sync_ok(box));
	test_assert(box->scan_count > scans);
	test_assert_int(mailbox_get_count(box), TEST_MSGS);
	mailbox_close(&box);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

/* A rename the index cannot place: an index of another uidvalidity, or
   a base the uidlist does not have (the uidlist replaced behind the
   watch's back) scans. */
static void test_unknown_base_scans(void)
{
	char path[PATH_MAX];

	struct mailbox *box = open_watched();
	if (box == NULL)
		return;
	/* moat.uidlist without message 3's line: its base is unknown */
	snprintf(path, sizeof(path), "%s/%s", root, MAILDIR_UIDLIST_NAME);
	FILE *f = fopen(path, "r");
	test_assert(f != NULL);
	char *lines = i_malloc(1024 * 1024);
	size_t len = f == NULL ? 0 : fread(lines, 1, 1024 * 1024 - 1, f);
	if (f != NULL)
		fclose(f);
	lines[len] = '\0';
	char *line3 = strstr(lines, "\n3 ");
	test_assert(line3 != NULL);
	if (line3 != NULL) {
		char *end = strchr(line3 + 1, '\n');
		memmove(line3, end, strlen(end) + 1);
	}
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	test_assert(f != NULL);
	if (f != NULL) {
		fputs(lines, f);
		fclose(f);
	}
	i_free(lines);
	test_assert(rename(tmp, path) == 0);
	unsigned int scans = box->scan_count;
	foreign_rename(2, "FS");
	test_assert(sync_ok(box));
	test_assert(box->scan_count > scans);
	mailbox_close(&box);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_renames_applied),
	  TEST(test_odd_events_scan),
	  TEST(test_unknown_base_scans))
