/* Unit tests: maildir-save-multi.c (mailbox_append_multi_*) */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-append-multi.h"
#include "maildir-watch.h"

#include <dirent.h>
#include <sys/stat.h>

#define MULTI_MSG "Subject: multi\n\nbody\n"

static const char *multi_root(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static unsigned int dir_file_count(const char *root, const char *sub)
{
	char path[600];
	unsigned int n = 0;
	struct dirent *d;

	snprintf(path, sizeof(path), "%s/%s", root, sub);
	DIR *dir = opendir(path);
	if (dir == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.')
			n++;
	}
	closedir(dir);
	return n;
}

static void multi_stage(struct mailbox_append_multi *ctx,
			enum mail_flags flags, time_t date)
{
	const char *error;

	test_assert(mailbox_append_multi_next(ctx, flags, 0, date,
					      &error) == 0);
	test_assert(mailbox_append_multi_write(ctx, MULTI_MSG,
					       strlen(MULTI_MSG), &error) == 0);
	test_assert(mailbox_append_multi_end(ctx, &error) == 0);
}

static void test_multi_commit(void)
{
	const char *root = multi_root("commit"), *error;
	struct mailbox *box;
	uint32_t first_uid = 0;
	uint64_t vsize;
	time_t date;

	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	struct mailbox_append_multi *ctx = mailbox_append_multi_begin(box);
	multi_stage(ctx, MAIL_SEEN, 1000000000);
	multi_stage(ctx, MAIL_FLAGGED | MAIL_RECENT, (time_t)-1);
	multi_stage(ctx, 0, 1100000000);
	test_assert_int(mailbox_append_multi_count(ctx), 3);
	/* nothing visible before the commit */
	test_assert_int(dir_file_count(root, "cur"), 0);
	test_assert(mailbox_append_multi_commit(&ctx, &first_uid, &error) == 0);
	test_assert(ctx == NULL);
	test_assert_int(first_uid, 1);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), 3);
	test_assert_int(mailbox_msg_uid(box, 3), 3);
	test_assert((mailbox_msg_flags(box, 1) & MAIL_SEEN) != 0);
	/* \Recent is not a permanent flag */
	test_assert((mailbox_msg_flags(box, 2) & MAIL_FLAGGED) != 0);
	test_assert(mailbox_msg_internaldate(box, 3, &date, &error) == 0);
	test_assert_int(date, 1100000000);
	test_assert(mailbox_msg_vsize(box, 1, &vsize, &error) == 0);
	test_assert_int(vsize, strlen(MULTI_MSG) + 3);
	mailbox_close(&box);
}

static void test_multi_abort(void)
{
	const char *root = multi_root("abort"), *error;
	struct mailbox *box;

	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	struct mailbox_append_multi *ctx = mailbox_append_multi_begin(box);
	multi_stage(ctx, 0, (time_t)-1);
	multi_stage(ctx, 0, (time_t)-1);
	/* a third one half written */
	test_assert(mailbox_append_multi_next(ctx, 0, 0, (time_t)-1,
					      &error) == 0);
	test_assert(mailbox_append_multi_write(ctx, "Sub", 3, &error) == 0);
	test_assert_int(mailbox_append_multi_count(ctx), 2);
	mailbox_append_multi_abort(&ctx);
	test_assert(ctx == NULL);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	test_assert_int(dir_file_count(root, "cur"), 0);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), 0);
	/* the UIDs were not used */
	ctx = mailbox_append_multi_begin(box);
	multi_stage(ctx, 0, (time_t)-1);
	uint32_t uid;
	test_assert(mailbox_append_multi_commit(&ctx, &uid, &error) == 0);
	test_assert_int(uid, 1);
	mailbox_close(&box);
}

static void test_multi_empty_commit(void)
{
	const char *root = multi_root("empty"), *error;
	struct mailbox *box;
	uint32_t uid = 5;

	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	struct mailbox_append_multi *ctx = mailbox_append_multi_begin(box);
	test_assert(mailbox_append_multi_commit(&ctx, &uid, &error) == 0);
	test_assert_int(uid, 0);
	mailbox_close(&box);
}

static void write_file(const char *root, const char *name, const char *text)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	FILE *f = fopen(path, "w");
	test_assert(f != NULL);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* A set cut short by a crash (journal left, part of it still in tmp/) is
   finished by the next process's sync; a journal that is not ours is
   removed and changes nothing. */
static void test_multi_crash_roll_forward(void)
{
	const char *root = multi_root("crash"), *error;
	struct mailbox *box;
	uint32_t first_uid;
	char path[600];
	struct stat st;

	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	struct mailbox_append_multi *ctx = mailbox_append_multi_begin(box);
	for (unsigned int i = 0; i < 4; i++)
		multi_stage(ctx, 0, (time_t)-1);
	test_assert(mailbox_append_multi_commit(&ctx, &first_uid, &error) == 0);
	mailbox_close(&box);
	snprintf(path, sizeof(path), "%s/cur/.moat.staged", root);
	test_assert(stat(path, &st) < 0 && errno == ENOENT);

	/* a publisher died after renaming the first of three */
	write_file(root, "cur/100.M1P1Q1.test,S=6:2,S", "body1\n");
	write_file(root, "tmp/100.M1P1Q2.test,S=6", "body2\n");
	write_file(root, "tmp/100.M1P1Q3.test,S=6", "body3\n");
	write_file(root, "cur/.moat.staged", "moat-staged 1\n"
		   "100.M1P1Q1.test,S=6 100.M1P1Q1.test,S=6:2,S\n"
		   "100.M1P1Q2.test,S=6 100.M1P1Q2.test,S=6:2,\n"
		   "100.M1P1Q3.test,S=6 100.M1P1Q3.test,S=6:2,F\n"
		   "../../etc/passwd ../x:2,\n");
	/* as a new process would: this one's watch trusts the index */
	maildir_watch_deinit();
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	test_assert_int(mailbox_get_count(box), 7);
	test_assert_int(dir_file_count(root, "cur"), 7);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	test_assert((mailbox_msg_flags(box, 7) & MAIL_FLAGGED) != 0);
	test_assert(stat(path, &st) < 0 && errno == ENOENT);
	mailbox_close(&box);

	write_file(root, "cur/.moat.staged", "something else\n");
	maildir_watch_deinit();
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	test_assert_int(mailbox_get_count(box), 7);
	test_assert(stat(path, &st) < 0 && errno == ENOENT);
	mailbox_close(&box);
}

TEST_MAIN(TEST(test_multi_commit), TEST(test_multi_abort),
	  TEST(test_multi_empty_commit), TEST(test_multi_crash_roll_forward))
