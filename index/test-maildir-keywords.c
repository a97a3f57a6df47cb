/* Unit tests: maildir-keywords.c and keywords through mailbox.h */
#include "test-common.h"
#include "mailbox.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kw_dir(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	(void)mkdir(path, 0700);
	return path;
}

static void test_keyword_valid(void)
{
	test_assert(maildir_keyword_is_valid("$Forwarded"));
	test_assert(maildir_keyword_is_valid("Junk"));
	test_assert(maildir_keyword_is_valid("a.b-c_d[1"));
	test_assert(!maildir_keyword_is_valid(""));
	test_assert(!maildir_keyword_is_valid("\\Seen"));
	test_assert(!maildir_keyword_is_valid("a b"));
	test_assert(!maildir_keyword_is_valid("a]"));
	test_assert(!maildir_keyword_is_valid("a*"));
	test_assert(!maildir_keyword_is_valid("a%"));
	test_assert(!maildir_keyword_is_valid("(a"));
	test_assert(!maildir_keyword_is_valid("a\"b"));
	test_assert(!maildir_keyword_is_valid("a{"));
	test_assert(!maildir_keyword_is_valid("caf\xc3\xa9"));
	char long_name[MAILDIR_KEYWORD_NAME_MAX + 2];
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	test_assert(!maildir_keyword_is_valid(long_name));
	long_name[MAILDIR_KEYWORD_NAME_MAX] = '\0';
	test_assert(maildir_keyword_is_valid(long_name));
}

static void test_letters(void)
{
	char buf[MAILDIR_KEYWORDS_MAX + 1];

	test_assert_int(maildir_keywords_from_letters("acPz"),
			(1U << 0) | (1U << 2) | (1U << 25));
	maildir_keywords_to_letters((1U << 1) | (1U << 25), buf);
	test_assert_str(buf, "bz");
	maildir_keywords_to_letters(0, buf);
	test_assert_str(buf, "");
}

static void test_add_persist(void)
{
	const char *dir = kw_dir("kw1"), *error;
	struct maildir_keywords *kw = maildir_keywords_init(dir, true);
	unsigned int idx;

	test_assert(maildir_keywords_refresh(kw, &error) == 0);
	test_assert(maildir_keywords_lookup(kw, "Junk") == -1);
	test_assert(maildir_keywords_add(kw, "Junk", &idx, &error) == 1);
	test_assert_int(idx, 0);
	test_assert(maildir_keywords_add(kw, "$Label1", &idx, &error) == 1);
	test_assert_int(idx, 1);
	/* case-insensitive: the same keyword */
	test_assert(maildir_keywords_add(kw, "junk", &idx, &error) == 1);
	test_assert_int(idx, 0);
	test_assert_int(maildir_keywords_defined(kw), 0x3);

	struct maildir_keywords *kw2 = maildir_keywords_init(dir, false);
	test_assert(maildir_keywords_refresh(kw2, &error) == 1);
	test_assert_str(maildir_keywords_name(kw2, 1), "$Label1");
	test_assert(maildir_keywords_lookup(kw2, "JUNK") == 0);
	test_assert(maildir_keywords_refresh(kw2, &error) == 0);
	/* another writer adds one: a refresh sees it */
	test_assert(maildir_keywords_add(kw, "Work", &idx, &error) == 1);
	test_assert(maildir_keywords_refresh(kw2, &error) == 1);
	test_assert_str(maildir_keywords_name(kw2, 2), "Work");
	maildir_keywords_deinit(&kw2);
	maildir_keywords_deinit(&kw);
}

static void test_limit(void)
{
	const char *dir = kw_dir("kw2"), *error;
	struct maildir_keywords *kw = maildir_keywords_init(dir, false);
	unsigned int idx;
	char name[32];

	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		snprintf(name, sizeof(name), "kw%u", i);
		test_assert(maildir_keywords_add(kw, name, &idx, &error) == 1);
		test_assert_int(idx, i);
	}
	test_assert(maildir_keywords_add(kw, "one-more", &idx, &error) == 0);
	test_assert(maildir_keywords_add(kw, "KW7", &idx, &error) == 1);
	test_assert_int(idx, 7);
	maildir_keywords_deinit(&kw);
}

static void test_broken_lines(void)
{
	const char *dir = kw_dir("kw3"), *error;
	char path[600];

	snprintf(path, sizeof(path), "%s/" MAILDIR_KEYWORDS_NAME, dir);
	FILE *f = fopen(path, "w");
	fputs("3 Good\nx Bad\n99 Range\n4 \\Seen\n5 good\n6\n7 Last", f);
	fclose(f);
	struct maildir_keywords *kw = maildir_keywords_init(dir, false);
	test_assert(maildir_keywords_refresh(kw, &error) == 1);
	test_assert_int(maildir_keywords_defined(kw), 1U << 3);
	test_assert_str(maildir_keywords_name(kw, 3), "Good");
	maildir_keywords_deinit(&kw);
}

static void test_mailbox_keywords(void)
{
	const char *root = kw_dir("mbox"), *error;
	struct mailbox *box;
	struct mailbox_append_ctx *save;
	unsigned int idx;
	uint32_t uid;

	test_assert(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC, &box,
				 &error) == 1);
	test_assert(mailbox_keyword_get(box, "Todo", false, &idx, &error) == 0);
	test_assert(mailbox_keyword_get(box, "Todo", true, &idx, &error) == 1);
	test_assert_int(idx, 0);
	test_assert(mailbox_append_begin(box, MAIL_SEEN, (time_t)-1, &save,
					 &error) == 0);
	mailbox_append_set_keywords(save, 1U << idx);
	test_assert(mailbox_append_write(save, "Subject: x\r\n\r\nx\r\n", 17,
					 &error) == 0);
	test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), 1);
	test_assert_int(mailbox_msg_keywords(box, 1), 1);

	/* a second view sees the name and the keyword */
	struct mailbox *box2;
	test_assert(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC, &box2,
				 &error) == 1);
	test_assert(mailbox_keywords_refresh(box2, &error) == 1);
	test_assert_str(mailbox_keyword_name(box2, 0), "Todo");
	test_assert_int(mailbox_msg_keywords(box2, 1), 1);

	/* change both flags and keywords; the other view notices */
	test_assert(mailbox_keyword_get(box, "Later", true, &idx, &error) == 1);
	test_assert(mailbox_msg_set_flags_keywords(box, 1, MAIL_FLAGGED,
						   1U << idx, &error) == 0);
	test_assert_int(mailbox_msg_flags(box, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	test_assert(mailbox_sync(box2, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_msg_keywords(box2, 1), 1U << idx);
	test_assert_int(mailbox_msg_flags(box2, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	/* a plain flag change keeps the keywords */
	test_assert(mailbox_msg_set_flags(box, 1, MAIL_SEEN, &error) == 0);
	test_assert(mailbox_sync(box2, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_msg_keywords(box2, 1), 1U << idx);
	mailbox_close(&box2);
	mailbox_close(&box);
}

/* The file name in dir/cur of the message whose body is tag, or NULL. */
static const char *find_file(const char *dir, const char *tag)
{
	static char name[256];
	char path[1024], data[256];
	struct dirent *d;
	DIR *dirp;

	snprintf(path, sizeof(path), "%s/cur", dir);
	if ((dirp = opendir(path)) == NULL)
		return NULL;
	while ((d = readdir(dirp)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/cur/%s", dir, d->d_name);
		FILE *f = fopen(path, "r");
		size_t n = f == NULL ? 0 : fread(data, 1, sizeof(data) - 1, f);
		if (f != NULL)
			fclose(f);
		data[n] = '\0';
		if (strstr(data, tag) != NULL) {
			snprintf(name, sizeof(name), "%s", d->d_name);
			closedir(dirp);
			return name;
		}
	}
	closedir(dirp);
	return NULL;
}

static void batch_append(struct mailbox *box, unsigned int n)
{
	struct mailbox_append_ctx *save;
	const char *error;
	char text[64];
	uint32_t uid;

	for (unsigned int i = 1; i <= n; i++) {
		int len = snprintf(text, sizeof(text),
				   "Subject: %u\r\n\r\nbody-%u.\r\n", i, i);
		test_assert(mailbox_append_begin(box, 0, (time_t)-1, &save,
						 &error) == 0);
		test_assert(mailbox_append_write(save, text, (size_t)len,
						 &error) == 0);
		test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
	}
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
}

/* mailbox_msgs_change_flags(): one call for many messages; a foreign
   change of a file is kept, a vanished file is reported, the view and
   another session agree with the files. */
static void test_batch_change(void)
{
	const char *root = kw_dir("batch"), *error, *name;
	struct mailbox *box, *box2;
	unsigned int idx;
	char from[1024], to[1024];

	test_assert(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC, &box,
				 &error) == 1);
	batch_append(box, 6);
	test_assert(mailbox_keyword_get(box, "Todo", true, &idx, &error) == 1);
	test_assert(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC, &box2,
				 &error) == 1);
	test_assert(mailbox_sync(box2, true, NULL, NULL, &error) == 0);

	/* another tool: message 3 gets \Seen, message 4 is deleted */
	name = find_file(root, "body-3.");
	test_assert(name != NULL && strstr(name, ":2,") != NULL);
	snprintf(from, sizeof(from), "%s/cur/%s", root, name);
	snprintf(to, sizeof(to), "%s/cur/%sS", root, name);
	test_assert(rename(from, to) == 0);
	name = find_file(root, "body-4.");
	snprintf(from, sizeof(from), "%s/cur/%s", root, name);
	test_assert(unlink(from) == 0);

	const struct mailbox_flags_batch add = {
		.mode = MAILBOX_FLAGS_ADD, .flags = MAIL_FLAGGED,
		.keywords = 1U << idx,
	};
	const uint32_t seqs[] = { 1, 2, 3, 4, 5 };
	enum mailbox_change_result results[5];
	test_assert(mailbox_msgs_change_flags(box, &add, seqs, 5, results,
					      &error) == 0);
	test_assert_int(results[0], MAILBOX_CHANGE_DONE);
	test_assert_int(results[2], MAILBOX_CHANGE_DONE);
	test_assert_int(results[3], MAILBOX_CHANGE_EXPUNGED);
	test_assert_int(results[4], MAILBOX_CHANGE_DONE);
	for (uint32_t seq = 1; seq <= 5; seq++) {
		if (seq == 4)
			continue;
		test_assert_int(mailbox_msg_flags(box, seq) & MAIL_FLAGS_PERMANENT,
				seq == 3 ? MAIL_FLAGGED | MAIL_SEEN : MAIL_FLAGGED);
		test_assert_int(mailbox_msg_keywords(box, seq), 1U << idx);
	}
	test_assert_int(mailbox_msg_flags(box, 6) & MAIL_FLAGS_PERMANENT, 0);
	/* the files say so: flags and keyword letter */
	name = find_file(root, "body-3.");
	test_assert(name != NULL && strstr(name, ":2,FSa") != NULL);
	name = find_file(root, "body-5.");
	test_assert(name != NULL && strstr(name, ":2,Fa") != NULL);

	/* the same again changes nothing */
	test_assert(mailbox_msgs_change_flags(box, &add, seqs + 4, 1, results,
					      &error) == 0);
	test_assert_int(results[0], MAILBOX_CHANGE_UNCHANGED);

	/* the other session sees every change */
	test_assert(mailbox_sync(box2, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_msg_flags(box2, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	test_assert_int(mailbox_msg_keywords(box2, 2), 1U << idx);

	/* UNCHANGEDSINCE below a message's modseq: that one is left */
	uint64_t modseq1 = mailbox_msg_modseq(box, 1);
	const struct mailbox_flags_batch cond = {
		.mode = MAILBOX_FLAGS_REMOVE, .flags = MAIL_FLAGGED,
		.conditional = true, .unchanged_since = modseq1 - 1,
	};
	const uint32_t seqs2[] = { 1, 6 };
	test_assert(mailbox_msgs_change_flags(box, &cond, seqs2, 2, results,
					      &error) == 0);
	test_assert_int(results[0], MAILBOX_CHANGE_MODIFIED);
	test_assert_int(results[1], MAILBOX_CHANGE_UNCHANGED);
	test_assert_int(mailbox_msg_flags(box, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	mailbox_close(&box2);
	mailbox_close(&box);
}

TEST_MAIN(TEST(test_keyword_valid), TEST(test_letters), TEST(test_add_persist),
	  TEST(test_limit), TEST(test_broken_lines), TEST(test_mailbox_keywords),
	  TEST(test_batch_change))
