/* Unit tests: mailbox-list.c, mailbox-list-ops.c, mailbox-subscriptions.c */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-list.h"
#include "mailbox-list-private.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[512];

static void new_root(const char *name)
{
	snprintf(root, sizeof(root), "%s/%s", test_tmpdir(), name);
	mkdir(root, 0700);
}

static bool path_exists(const char *sub)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, sub);
	return lstat(path, &st) == 0;
}

/* The listing as "name:flags" lines joined by spaces; flags are
   s(electable) n(oselect) u(subscribed) c(hildren) and the special use
   bits. */
static const char *list_str(void)
{
	static char out[4096];
	struct mailbox_list *list;
	const char *error;
	size_t pos = 0;

	out[0] = '\0';
	test_assert(mailbox_list_read(root, &mailbox_special_defaults, &list, &error) == 0);
	for (unsigned int i = 0; i < mailbox_list_count(list); i++) {
		const struct mailbox_list_node *n = mailbox_list_get(list, i);
		pos += (size_t)snprintf(out + pos, sizeof(out) - pos, "%s%s:%s%s%s%s",
			i == 0 ? "" : " ", n->name,
			(n->flags & MAILBOX_NODE_SELECTABLE) != 0 ? "s" : "",
			(n->flags & MAILBOX_NODE_NOSELECT) != 0 ? "n" : "",
			(n->flags & MAILBOX_NODE_SUBSCRIBED) != 0 ? "u" : "",
			(n->flags & MAILBOX_NODE_CHILDREN) != 0 ? "c" : "");
	}
	mailbox_list_free(&list);
	return out;
}

static int create(const char *name, enum mailbox_list_error *code_r)
{
	const char *error;

	*code_r = MAILBOX_LIST_ERR_NONE;
	return mailbox_list_create(root, name, code_r, &error);
}

static void test_create_list(void)
{
	enum mailbox_list_error code;

	new_root("create");
	test_assert_str(list_str(), "INBOX:s");
	test_assert(create("a/b", &code) == 0);
	test_assert(create("a-b", &code) == 0);
	test_assert(create("a.b", &code) == 0);
	test_assert_str(list_str(),
			"INBOX:s a:sc a/b:s a-b:s a.b:s");
	test_assert(path_exists(".a.b/cur") && path_exists(".a~2eb/cur"));
	test_assert(path_exists(".a/moat.uidlist"));
	test_assert(create("a/b", &code) < 0 &&
		    code == MAILBOX_LIST_ERR_EXISTS);
	test_assert(create("inbox", &code) < 0 &&
		    code == MAILBOX_LIST_ERR_EXISTS);
	test_assert(create("INBOX/child", &code) == 0);
	test_assert(path_exists(".INBOX.child/cur"));

	/* foreign directories and files are not mailboxes */
	char path[1024];
	snprintf(path, sizeof(path), "%s/.bad..name", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.file", root);
	fclose(fopen(path, "w"));
	test_assert_str(list_str(),
			"INBOX:sc INBOX/child:s a:sc a/b:s a-b:s a.b:s");
}

static void test_create_invalid(void)
{
	enum mailbox_list_error code;
	static const char *const traversal[] = {
		"..", "../x", "a/../../etc", "a/..", ".", "/etc", "a//b", "",
		"x\n", "x/", "*", "%",
	};

	new_root("invalid");
	for (unsigned int i = 0; i < N_ELEMENTS(traversal); i++) {
		test_assert(create(traversal[i], &code) < 0);
		test_assert_int(code, MAILBOX_LIST_ERR_INVALID);
	}
	char longname[400];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	test_assert(create(longname, &code) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_LIMIT);
	test_assert_str(list_str(), "INBOX:s");
	/* nothing was written outside the root */
	char parent[600];
	snprintf(parent, sizeof(parent), "%s/../etc", root);
	struct stat st;
	test_assert(stat(parent, &st) < 0);
}

static void test_delete(void)
{
	enum mailbox_list_error code;
	const char *error;

	new_root("delete");
	test_assert(create("foo/bar", &code) == 0);
	test_assert(create("blurdybloop", &code) == 0);
	test_assert(mailbox_list_delete(root, "INBOX", &code, &error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_CANNOT);
	test_assert(mailbox_list_delete(root, "nope", &code, &error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_NOTFOUND);
	test_assert(mailbox_list_delete(root, "blurdybloop", &code, &error) == 0);
	test_assert(!path_exists(".blurdybloop"));
	/* with children: emptied, \Noselect */
	test_assert(mailbox_list_delete(root, "foo", &code, &error) == 0);
	test_assert_str(list_str(), "INBOX:s foo:nc foo/bar:s");
	test_assert(mailbox_list_delete(root, "foo", &code, &error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_HASCHILDREN);
	test_assert(mailbox_list_delete(root, "foo/bar", &code, &error) == 0);
	test_assert_str(list_str(), "INBOX:s foo:n");
	test_assert(mailbox_list_delete(root, "foo", &code, &error) == 0);
	test_assert_str(list_str(), "INBOX:s");
	/* a \Noselect name can be created again */
	test_assert(create("foo/bar", &code) == 0);
	test_assert(mailbox_list_delete(root, "foo", &code, &error) == 0);
	test_assert(create("foo", &code) == 0);
	test_assert_str(list_str(), "INBOX:s foo:sc foo/bar:s");
	test_assert(mailbox_list_delete(root, "../x", &code, &error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_INVALID);
}

static uint32_t append_one(const char *name)
{
	struct mailbox *box;
	struct mailbox_append_ctx *ctx;
	const char *error;
	uint32_t uid = 0;

	test_assert(mailbox_open(root, name, MAILBOX_OPEN_NO_FSYNC, &box,
				 &error) == 1);
	test_assert(mailbox_append_begin(box, 0, (time_t)-1, &ctx, &error) == 0);
	test_assert(mailbox_append_write(ctx, "Subject: x\r\n\r\nx\r\n", 17,
					 &error) == 0);
	test_assert(mailbox_append_finish(&ctx, &uid, &error) == 0);
	mailbox_close(&box);
	return uid;
}

static uint32_t box_count(const char *name, uint32_t *uidvalidity_r)
{
	struct mailbox *box;
	const char *error;

	if (mailbox_open(root, name, MAILBOX_OPEN_READONLY, &box, &error) != 1)
		return (uint32_t)-1;
	uint32_t count = mailbox_get_count(box);
	if (uidvalidity_r != NULL)
		*uidvalidity_r = mailbox_get_uidvalidity(box);
	mailbox_close(&box);
	return count;
}

static void test_rename(void)
{
	enum mailbox_list_error code;
	const char *error;

	new_root("rename");
	test_assert(create("foo/bar", &code) == 0);
	test_assert(create("foo-x", &code) == 0);
	append_one("foo/bar");
	test_assert(mailbox_list_rename(root, "foo", "zap/zowie", &code,
					&error) == 0);
	test_assert_str(list_str(),
			"INBOX:s foo-x:s zap:sc zap/zowie:sc zap/zowie/bar:s");
	test_assert_int(box_count("zap/zowie/bar", NULL), 1);
	test_assert(mailbox_list_rename(root, "nope", "x", &code, &error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_NOTFOUND);
	test_assert(mailbox_list_rename(root, "foo-x", "zap", &code,
					&error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_EXISTS);
	test_assert(mailbox_list_rename(root, "foo-x", "inbox", &code,
					&error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_EXISTS);
	test_assert(mailbox_list_rename(root, "zap", "zap/in", &code,
					&error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_CANNOT);
	test_assert(mailbox_list_rename(root, "foo-x", "../x", &code,
					&error) < 0);
	test_assert_int(code, MAILBOX_LIST_ERR_INVALID);
}

static void test_rename_inbox(void)
{
	enum mailbox_list_error code;
	const char *error;
	uint32_t uv1, uv2, uv3;

	new_root("rename-inbox");
	append_one("INBOX");
	append_one("INBOX");
	test_assert(create("INBOX/bar", &code) == 0);
	test_assert_int(box_count("INBOX", &uv1), 2);
	test_assert(mailbox_list_rename(root, "INBOX", "old-mail", &code,
					&error) == 0);
	test_assert_str(list_str(), "INBOX:sc INBOX/bar:s old-mail:s");
	test_assert_int(box_count("old-mail", &uv2), 2);
	test_assert_int(box_count("INBOX", &uv3), 0);
	test_assert_int(uv1, uv2);
	test_assert(uv3 != uv1);
	/* new INBOX works and starts from UID 1 with its new UIDVALIDITY */
	test_assert_int(append_one("INBOX"), 1);
}

static void test_recreate_uidvalidity(void)
{
	enum mailbox_list_error code;
	const char *error;
	uint32_t uv1, uv2;

	new_root("recreate");
	test_assert(create("x", &code) == 0);
	append_one("x");
	test_assert_int(box_count("x", &uv1), 1);
	test_assert(mailbox_list_delete(root, "x", &code, &error) == 0);
	test_assert(create("x", &code) == 0);
	test_assert_int(box_count("x", &uv2), 0);
	test_assert(uv1 != uv2);
}

static void test_subscriptions(void)
{
	enum mailbox_list_error code;
	const char *error;

	new_root("subs");
	test_assert(create("a", &code) == 0);
	test_assert(mailbox_list_subscribe(root, "a", true, &code, &error) == 0);
	test_assert(mailbox_list_subscribe(root, "a", true, &code, &error) == 0);
	test_assert(mailbox_list_subscribe(root, "x/y", true, &code,
					   &error) == 0);
	test_assert(mailbox_list_subscribe(root, "inbox", true, &code,
					   &error) == 0);
	test_assert(mailbox_list_subscribe(root, "../x", true, &code,
					   &error) < 0);
	test_assert_str(list_str(), "INBOX:su a:su x: x/y:u");
	test_assert(mailbox_list_subscribe(root, "a", false, &code,
					   &error) == 0);
	test_assert(mailbox_list_subscribe(root, "nope", false, &code,
					   &error) == 0);
	test_assert_str(list_str(), "INBOX:su a:s x: x/y:u");
	/* the memo's answer follows the file, existing folder or not */
	test_assert(mailbox_list_is_subscribed(root, "INBOX"));
	test_assert(mailbox_list_is_subscribed(root, "x/y"));
	test_assert(!mailbox_list_is_subscribed(root, "a"));
	test_assert(!mailbox_list_is_subscribed(root, "x"));
	test_assert(mailbox_list_subscribe(root, "a", true, &code,
					   &error) == 0);
	test_assert(mailbox_list_is_subscribed(root, "a"));
	test_assert(mailbox_list_subscribe(root, "a", false, &code,
					   &error) == 0);
	test_assert(!mailbox_list_is_subscribed(root, "a"));
	/* garbage lines in the file are skipped */
	char path[1024];
	snprintf(path, sizeof(path), "%s/subscriptions", root);
	FILE *f = fopen(path, "a");
	fputs("../etc\n\n\x01\nb\n", f);
	fclose(f);
	test_assert_str(list_str(), "INBOX:su a:s b:u x: x/y:u");
}

static void test_autocreate(void)
{
	const char *error;
	enum mailbox_list_error code;

	new_root("auto");
	test_assert(mailbox_list_autocreate(root, &mailbox_special_defaults, &error) == 0);
	test_assert_str(list_str(),
		"INBOX:s Archive:su Drafts:su Junk:su Sent:su Trash:su");
	test_assert(mailbox_list_delete(root, "Junk", &code, &error) == 0);
	test_assert(mailbox_list_autocreate(root, &mailbox_special_defaults, &error) == 0);
	test_assert(path_exists(".Junk/cur"));
	test_assert_int(mailbox_special_use_of(&mailbox_special_defaults, "Sent"),
			MAILBOX_SPECIAL_SENT);
	test_assert_int(mailbox_special_use_of(&mailbox_special_defaults, "sent"),
			MAILBOX_SPECIAL_NONE);
	test_assert_str(mailbox_special_use_attr(MAILBOX_SPECIAL_JUNK), "\\Junk");
	/* configured names; "" = no such folder */
	struct mailbox_special_names names = {
		{ "Entw\xc3\xbcrfe", "", "INBOX/Trash", NULL, "Archive" }
	};
	new_root("auto2");
	test_assert(mailbox_list_autocreate(root, &names, &error) == 0);
	test_assert_str(list_str(),
		"INBOX:sc INBOX/Trash:su Archive:su Entw\xc3\xbcrfe:su");
	test_assert_int(mailbox_special_use_of(&names, "INBOX/Trash"),
			MAILBOX_SPECIAL_TRASH);
}

static void test_open_folder(void)
{
	enum mailbox_list_error code;
	struct mailbox *box;
	const char *error;

	new_root("open");
	test_assert(create("Entw\xc3\xbcrfe/x.y", &code) == 0);
	test_assert(path_exists(".Entw&APw-rfe.x~2ey/cur"));
	test_assert_int(append_one("Entw\xc3\xbcrfe/x.y"), 1);
	test_assert(mailbox_open(root, "nope", 0, &box, &error) == 0);
	test_assert(mailbox_open(root, "..", 0, &box, &error) == 0);
	test_assert(mailbox_open(root, "Entw\xc3\xbcrfe/../..", 0, &box,
				 &error) == 0);
	test_assert(mailbox_open(root, "Entw\xc3\xbcrfe/x.y", 0, &box,
				 &error) == 1);
	test_assert_str(mailbox_get_name(box), "Entw\xc3\xbcrfe/x.y");
	test_assert_int(mailbox_get_count(box), 1);
	mailbox_close(&box);
	/* a \Noselect folder can't be opened */
	test_assert(mailbox_list_delete(root, "Entw\xc3\xbcrfe", &code,
					&error) == 0);
	test_assert(mailbox_open(root, "Entw\xc3\xbcrfe", 0, &box,
				 &error) == 0);
	test_assert(create("p/q", &code) == 0);
	test_assert(mailbox_list_delete(root, "p", &code, &error) == 0);
	test_assert(mailbox_open(root, "p", 0, &box, &error) == 0);
}

/* ---- RENAME crash safety: a child stops (_exit, as if killed) after
   step k of a rename; the next LIST must finish it. */
#define CRASH_EXIT 42
#define CRASH_STEPS_MAX 64

static unsigned int crash_at;

static void crash_hook(unsigned int step)
{
	if (step == crash_at)
		_exit(CRASH_EXIT);
}

/* Run fn in a child that dies at step k. Returns true if it died there,
   false if it got through every step. */
static bool run_crashing(unsigned int k, void (*fn)(void))
{
	pid_t pid = fork();
	int status;

	test_assert(pid >= 0);
	if (pid == 0) {
		crash_at = k;
		mailbox_list_rename_set_hook(crash_hook);
		fn();
		_exit(0);
	}
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status));
	return WEXITSTATUS(status) == CRASH_EXIT;
}

static void rename_foo(void)
{
	enum mailbox_list_error code;
	const char *error;

	(void)mailbox_list_rename(root, "foo", "zap/zowie", &code, &error);
}

static void rename_inbox(void)
{
	enum mailbox_list_error code;
	const char *error;

	(void)mailbox_list_rename(root, "INBOX", "old/mail", &code, &error);
}

static void recover(void)
{
	(void)mailbox_list_rename_recover(root);
}

static void setup_foo(unsigned int k)
{
	enum mailbox_list_error code;
	char name[64];

	snprintf(name, sizeof(name), "rename-crash-%u", k);
	new_root(name);
	test_assert(create("foo/bar/baz", &code) == 0);
	test_assert(create("foo/qux", &code) == 0);
	test_assert(create("foo-x", &code) == 0);
	append_one("foo");
	append_one("foo/bar");
	append_one("foo/bar");
}

static void check_foo_renamed(uint32_t uv_bar)
{
	uint32_t uv;

	test_assert_str(list_str(), "INBOX:s foo-x:s zap:sc zap/zowie:sc "
			"zap/zowie/bar:sc zap/zowie/bar/baz:s zap/zowie/qux:s");
	test_assert_int(box_count("zap/zowie", NULL), 1);
	test_assert_int(box_count("zap/zowie/bar", &uv), 2);
	test_assert_int(uv, uv_bar);
	test_assert(!path_exists(MAILBOX_RENAME_JOURNAL));
}

static void test_rename_crash(void)
{
	unsigned int k, crashes = 0;
	uint32_t uv_bar;

	for (k = 1; k < CRASH_STEPS_MAX; k++) {
		setup_foo(k);
		box_count("foo/bar", &uv_bar);
		if (!run_crashing(k, rename_foo))
			break;
		crashes++;
		test_assert(path_exists(MAILBOX_RENAME_JOURNAL));
		/* and the recovery itself dies once, at its first step */
		test_assert(run_crashing(1, recover));
		test_assert(path_exists(MAILBOX_RENAME_JOURNAL));
		check_foo_renamed(uv_bar);
	}
	/* journal, parents, four folders, journal removal */
	test_assert(crashes >= 6);
	test_assert(k < CRASH_STEPS_MAX);
	check_foo_renamed(uv_bar);
}

static void test_rename_inbox_crash(void)
{
	enum mailbox_list_error code;
	unsigned int k, crashes = 0;
	uint32_t uv1, uv2, uv3;
	char name[64];

	for (k = 1; k < CRASH_STEPS_MAX; k++) {
		snprintf(name, sizeof(name), "rename-inbox-crash-%u", k);
		new_root(name);
		append_one("INBOX");
		append_one("INBOX");
		test_assert(create("INBOX/bar", &code) == 0);
		test_assert_int(box_count("INBOX", &uv1), 2);
		if (!run_crashing(k, rename_inbox))
			break;
		crashes++;
		test_assert(path_exists(MAILBOX_RENAME_JOURNAL));
		test_assert_str(list_str(),
				"INBOX:sc INBOX/bar:s old:sc old/mail:s");
		test_assert(!path_exists(MAILBOX_RENAME_JOURNAL));
		test_assert_int(box_count("old/mail", &uv2), 2);
		test_assert_int(box_count("INBOX", &uv3), 0);
		test_assert_int(uv1, uv2);
		test_assert(uv3 != uv1);
		test_assert_int(append_one("INBOX"), 1);
	}
	test_assert(crashes >= 7);
	test_assert(k < CRASH_STEPS_MAX);
}

static void write_journal(const char *text)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/" MAILBOX_RENAME_JOURNAL, root);
	FILE *f = fopen(path, "w");
	test_assert(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* A journal whose writer is alive (locked) is left alone; a garbled one
   is removed without touching any folder. */
static void test_rename_journal_busy(void)
{
	enum mailbox_list_error code;
	char path[1024];

	new_root("rename-busy");
	test_assert(create("foo/bar", &code) == 0);
	write_journal("F\tfoo\tzap\n");
	snprintf(path, sizeof(path), "%s/" MAILBOX_RENAME_JOURNAL, root);
	int fd = open(path, O_RDONLY);
	test_assert(fd != -1 && flock(fd, LOCK_EX) == 0);
	test_assert_str(list_str(), "INBOX:s foo:sc foo/bar:s");
	close(fd);
	test_assert_str(list_str(), "INBOX:s zap:sc zap/bar:s");
	test_assert(!path_exists(MAILBOX_RENAME_JOURNAL));

	write_journal("F\tzap\t../../etc\n");
	test_assert_str(list_str(), "INBOX:s zap:sc zap/bar:s");
	test_assert(!path_exists(MAILBOX_RENAME_JOURNAL));
	write_journal("X\tzap\tfoo\n");
	test_assert_str(list_str(), "INBOX:s zap:sc zap/bar:s");
}

TEST_MAIN(TEST(test_create_list), TEST(test_create_invalid),
	  TEST(test_delete), TEST(test_rename), TEST(test_rename_inbox),
	  TEST(test_recreate_uidvalidity), TEST(test_subscriptions),
	  TEST(test_autocreate), TEST(test_open_folder),
	  TEST(test_rename_crash), TEST(test_rename_inbox_crash),
	  TEST(test_rename_journal_busy))
