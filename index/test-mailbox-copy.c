/* Unit tests: maildir-copy.c (mailbox_copy_*) */
#include "test-common.h"
#include "mailbox.h"
#include "maildir-watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define COPY_MSG "Subject: copy me\r\n\r\nbody\r\n"

static const char *copy_root(const char *name)
{
	static char path[2][512];
	static unsigned int n;
	char *p = path[n++ % 2];

	snprintf(p, sizeof(path[0]), "%s/%s", test_tmpdir(), name);
	return p;
}

static uint32_t copy_append(struct mailbox *box, enum mail_flags flags,
			    uint32_t keywords, time_t date)
{
	struct mailbox_append_ctx *save;
	const char *error;
	uint32_t uid = 0;

	test_assert(mailbox_append_begin(box, flags, date, &save, &error) == 0);
	mailbox_append_set_keywords(save, keywords);
	test_assert(mailbox_append_write(save, COPY_MSG, strlen(COPY_MSG),
					 &error) == 0);
	test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
	return uid;
}

static void test_copy_keeps_everything(void)
{
	struct mailbox *src, *dst;
	const char *error;
	unsigned int idx;

	test_assert(mailbox_open(copy_root("src"), "INBOX", 0, &src,
				 &error) == 1);
	test_assert(mailbox_open(copy_root("dst"), "INBOX", 0, &dst,
				 &error) == 1);
	/* the target already has a keyword: names are mapped, not letters */
	test_assert(mailbox_keyword_get(dst, "Other", true, &idx, &error) == 1);
	test_assert(mailbox_keyword_get(src, "Todo", true, &idx, &error) == 1);
	test_assert_int(idx, 0);
	(void)copy_append(src, MAIL_SEEN | MAIL_FLAGGED, 1, 1000000000);
	(void)copy_append(src, MAIL_DELETED, 0, 1100000000);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(src), 2);

	struct mailbox_copy_ctx *ctx = mailbox_copy_begin(dst);
	test_assert(mailbox_copy_add(ctx, src, 1, &error) == 0);
	test_assert(mailbox_copy_add(ctx, src, 2, &error) == 0);
	test_assert_int(mailbox_copy_count(ctx), 2);
	uint32_t first_uid;
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert_int(first_uid, 1);

	test_assert(mailbox_keywords_refresh(dst, &error) >= 0);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 2);
	test_assert_int(mailbox_msg_uid(dst, 2), 2);
	test_assert_int(mailbox_msg_flags(dst, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_SEEN | MAIL_FLAGGED);
	test_assert_int(mailbox_msg_flags(dst, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_DELETED);
	test_assert(mailbox_keyword_get(dst, "todo", false, &idx, &error) == 1);
	test_assert_int(idx, 1);
	test_assert_int(mailbox_msg_keywords(dst, 1), 1U << idx);
	test_assert_int(mailbox_msg_keywords(dst, 2), 0);

	time_t date;
	test_assert(mailbox_msg_internaldate(dst, 1, &date, &error) == 0);
	test_assert_int(date, 1000000000);
	test_assert(mailbox_msg_internaldate(dst, 2, &date, &error) == 0);
	test_assert_int(date, 1100000000);
	uint64_t vsize;
	test_assert(mailbox_msg_vsize(dst, 1, &vsize, &error) == 0);
	test_assert_int(vsize, strlen(COPY_MSG));

	/* same file system: a hard link */
	int fd = mailbox_msg_open(dst, 1, &error);
	struct stat st;
	test_assert(fd != -1 && fstat(fd, &st) == 0);
	test_assert_int(st.st_nlink, 2);
	char buf[128];
	ssize_t n = read(fd, buf, sizeof(buf));
	test_assert_int(n, strlen(COPY_MSG));
	test_assert(n > 0 && memcmp(buf, COPY_MSG, (size_t)n) == 0);
	close(fd);

	/* changing the copy's flags leaves the original alone */
	test_assert(mailbox_msg_set_flags_keywords(dst, 1, 0, 0, &error) == 0);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_msg_flags(src, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_SEEN | MAIL_FLAGGED);
	test_assert_int(mailbox_msg_keywords(src, 1), 1);

	/* an expunged source message is reported as such */
	test_assert(mailbox_msg_expunge(src, 2, &error) == 0);
	ctx = mailbox_copy_begin(dst);
	errno = 0;
	test_assert(mailbox_copy_add(ctx, src, 2, &error) < 0);
	test_assert_int(errno, ENOENT);
	test_assert_int(mailbox_copy_count(ctx), 0);
	test_assert(mailbox_copy_add(ctx, src, 1, &error) == 0);
	mailbox_copy_abort(&ctx);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 2);
	mailbox_close(&src);
	mailbox_close(&dst);
}

static void test_copy_same_mailbox(void)
{
	struct mailbox *box, *box2;
	const char *error;
	uint32_t first_uid;

	test_assert(mailbox_open(copy_root("same"), "INBOX",
				 MAILBOX_OPEN_NO_FSYNC, &box, &error) == 1);
	test_assert(mailbox_open(copy_root("same"), "INBOX",
				 MAILBOX_OPEN_NO_FSYNC, &box2, &error) == 1);
	(void)copy_append(box, MAIL_ANSWERED, 0, (time_t)-1);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	struct mailbox_copy_ctx *ctx = mailbox_copy_begin(box2);
	test_assert(mailbox_copy_add(ctx, box, 1, &error) == 0);
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert_int(first_uid, 2);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), 2);
	test_assert_int(mailbox_msg_uid(box, 2), 2);
	test_assert_int(mailbox_msg_flags(box, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_ANSWERED);
	/* an empty commit is fine */
	ctx = mailbox_copy_begin(box2);
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert_int(first_uid, 0);
	mailbox_close(&box2);
	mailbox_close(&box);
}

/* Entries of dir not starting with '.' (and the name of one that ends
   with suffix, into found). */
static unsigned int copy_count_dir(const char *dir, const char *suffix,
				   char *found, size_t found_size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	test_assert(d != NULL);
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		size_t len = strlen(e->d_name);
		if (suffix != NULL && len > strlen(suffix) &&
		    strcmp(e->d_name + len - strlen(suffix), suffix) == 0)
			snprintf(found, found_size, "%s", e->d_name);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

static size_t copy_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? 0 : (size_t)st.st_size;
}

/* A rename into cur/ fails in the middle of the commit (a directory was
   put where the 4th message goes): the three renamed ones leave cur/,
   the rest leave tmp/, the uidlist is cut back, no journal stays, and
   the target shows what it had before. */
static void test_copy_failure_cleans_up(void)
{
	struct mailbox *src, *dst;
	const char *error;
	char path[1024], spool[256] = "", line[1100];

	test_assert(mailbox_open(copy_root("fail-src"), "INBOX", 0, &src,
				 &error) == 1);
	test_assert(mailbox_open(copy_root("fail-dst"), "INBOX", 0, &dst,
				 &error) == 1);
	(void)copy_append(dst, MAIL_SEEN, 0, 1000000000);
	for (unsigned int i = 0; i < 6; i++)
		(void)copy_append(src, 0, 0, 1000000000 + i);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	const char *dst_root = copy_root("fail-dst");
	char cur[512], tmp[512], uidlist[512];
	snprintf(cur, sizeof(cur), "%s/cur", dst_root);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dst_root);
	snprintf(uidlist, sizeof(uidlist), "%s/moat.uidlist", dst_root);
	size_t uidlist_size = copy_file_size(uidlist);

	struct mailbox_copy_ctx *ctx = mailbox_copy_begin(dst);
	for (uint32_t seq = 1; seq <= 6; seq++)
		test_assert(mailbox_copy_add(ctx, src, seq, &error) == 0);
	/* staged: six files and the spool in tmp/, nothing new in cur/ */
	test_assert_int(copy_count_dir(tmp, ".copy", spool, sizeof(spool)), 7);
	test_assert_int(copy_count_dir(cur, NULL, NULL, 0), 1);
	/* the 4th message's staged file: a link to the source, so it has
	   the source's mtime (its INTERNALDATE); flags none: ":2," */
	char cur_name[300] = "";
	DIR *d = opendir(tmp);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name);
		if (e->d_name[0] != '.' && strcmp(e->d_name, spool) != 0 &&
		    stat(path, &st) == 0 && st.st_mtime == 1000000003)
			snprintf(cur_name, sizeof(cur_name), "%s:2,", e->d_name);
	}
	if (d != NULL)
		closedir(d);
	test_assert(cur_name[0] != '\0');
	snprintf(path, sizeof(path), "%s/%s", cur, cur_name);
	test_assert(mkdir(path, 0700) == 0);
	snprintf(line, sizeof(line), "%s/keep", path);
	int fd = open(line, O_WRONLY | O_CREAT, 0600);
	test_assert(fd != -1);
	close(fd);

	uint32_t first_uid;
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) < 0);
	test_assert(strstr(error, "rename") != NULL);
	test_assert(unlink(line) == 0 && rmdir(path) == 0);
	test_assert_int(copy_count_dir(tmp, NULL, NULL, 0), 0);
	test_assert_int(copy_count_dir(cur, NULL, NULL, 0), 1);
	snprintf(path, sizeof(path), "%s/.moat.staged", cur);
	test_assert(access(path, F_OK) < 0);
	test_assert_int(copy_file_size(uidlist), uidlist_size);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 1);

	/* and the next copy works */
	ctx = mailbox_copy_begin(dst);
	test_assert(mailbox_copy_add(ctx, src, 1, &error) == 0);
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 2);
	test_assert_int(copy_count_dir(tmp, NULL, NULL, 0), 0);
	mailbox_close(&src);
	mailbox_close(&dst);
	test_tmpdir_cleanup();
}

/* More than one slice (COPY_SLICE is 1024): every UID once, in order,
   and the index has them all. */
static void test_copy_many_slices(void)
{
	struct mailbox *src, *dst;
	const char *error;

	test_assert(mailbox_open(copy_root("many-src"), "INBOX", MAILBOX_OPEN_NO_FSYNC,
				 &src, &error) == 1);
	test_assert(mailbox_open(copy_root("many-dst"), "INBOX", MAILBOX_OPEN_NO_FSYNC,
				 &dst, &error) == 1);
	for (unsigned int i = 0; i < 2100; i++)
		(void)copy_append(src, i % 2 == 0 ? MAIL_SEEN : 0, 0,
				  1000000000 + i);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	struct mailbox_copy_ctx *ctx = mailbox_copy_begin(dst);
	for (uint32_t seq = 1; seq <= 2100; seq++)
		test_assert(mailbox_copy_add(ctx, src, seq, &error) == 0);
	uint32_t first_uid;
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert_int(first_uid, 1);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 2100);
	test_assert_int(mailbox_msg_uid(dst, 2100), 2100);
	test_assert_int(mailbox_msg_flags(dst, 1025) & MAIL_FLAGS_PERMANENT,
			MAIL_SEEN);
	time_t date;
	test_assert(mailbox_msg_internaldate(dst, 2050, &date, &error) == 0);
	test_assert_int(date, 1000000000 + 2049);
	mailbox_close(&src);
	mailbox_close(&dst);
	/* a fresh open finds the same (uidlist and index agree) */
	test_assert(mailbox_open(copy_root("many-dst"), "INBOX", 0, &dst,
				 &error) == 1);
	test_assert_int(mailbox_get_count(dst), 2100);
	test_assert_int(mailbox_get_next_uid(dst), 2101);
	mailbox_close(&dst);
	test_tmpdir_cleanup();
}

static void copy_write_file(const char *root, const char *name,
			    const char *text)
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

/* A COPY cut short by a crash during its commit: its journal has a third
   field (the INTERNALDATE); the next open publishes the rest, each
   message once. */
static void test_copy_crash_roll_forward(void)
{
	const char *root = copy_root("crash"), *error;
	struct mailbox *box;
	char path[600];

	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	(void)copy_append(box, 0, 0, 1000000000);
	mailbox_close(&box);
	/* renamed the first of three, then died */
	copy_write_file(root, "cur/200.M1P1Q1.test,S=6:2,S", "body1\n");
	copy_write_file(root, "tmp/200.M1P1Q2.test,S=6", "body2\n");
	copy_write_file(root, "tmp/200.M1P1Q3.test,S=6", "body3\n");
	copy_write_file(root, "cur/.moat.staged", "moat-staged 1\n"
		   "200.M1P1Q1.test,S=6 200.M1P1Q1.test,S=6:2,S 1000000001\n"
		   "200.M1P1Q2.test,S=6 200.M1P1Q2.test,S=6:2, 1000000002\n"
		   "200.M1P1Q3.test,S=6 200.M1P1Q3.test,S=6:2,F 1000000003\n");
	/* as a new process would: this one's watch trusts the index */
	maildir_watch_deinit();
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	test_assert_int(mailbox_get_count(box), 4);
	test_assert((mailbox_msg_flags(box, 4) & MAIL_FLAGGED) != 0);
	snprintf(path, sizeof(path), "%s/tmp", root);
	test_assert_int(copy_count_dir(path, NULL, NULL, 0), 0);
	snprintf(path, sizeof(path), "%s/cur", root);
	test_assert_int(copy_count_dir(path, NULL, NULL, 0), 4);
	snprintf(path, sizeof(path), "%s/cur/.moat.staged", root);
	test_assert(access(path, F_OK) < 0);
	mailbox_close(&box);
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_copy_keeps_everything), TEST(test_copy_same_mailbox),
	  TEST(test_copy_failure_cleans_up), TEST(test_copy_many_slices),
	  TEST(test_copy_crash_roll_forward))
