/* Unit tests: STATUS from the index alone (mailbox-status.c) and its
   fallback to a full open when the Maildir changed behind the index; the
   cached folder list of LIST (mailbox-list-cache.c). */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-list.h"
#include "mail-index.h"

#include <fcntl.h>
#include <sys/stat.h>

#define TEST_MSGS 10
#define TEST_DATE 1000000000

static const char *root_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static void put_file(const char *root, const char *sub, const char *name,
		     const char *data)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s/%s", root, sub, name);
	FILE *f = fopen(path, "w");
	test_assert(f != NULL);
	fputs(data, f);
	fclose(f);
}

/* An hour old, so that a scan trusts (and stamps) these mtimes. The hour
   is counted from one fixed moment: two calls with the same offset must
   set the same mtime even when the clock's second ticks between them. */
static void backdate(const char *path, long offset)
{
	static time_t base;
	struct timespec ts[2];

	if (base == 0)
		base = time(NULL) - 3600;
	ts[0].tv_sec = base + offset;
	ts[0].tv_nsec = 0;
	ts[1] = ts[0];
	test_assert(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static void dirs_backdate(const char *root, long offset)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/cur", root);
	backdate(path, offset);
	snprintf(path, sizeof(path), "%s/new", root);
	backdate(path, offset);
}

/* Message i: "<100+i>.test:2,<flags>", odd ones \Seen, every third one
   \Deleted; i+1 LF-ended lines of 5 bytes (vsize 6 per line). */
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
			 i % 2 == 1 ? "S" : "", i % 3 == 0 ? "T" : "");
		body[0] = '\0';
		for (unsigned int j = 0; j <= i; j++)
			strcat(body, "line\n");
		put_file(root, "cur", name, body);
	}
	dirs_backdate(root, 0);
}

/* What a full open says (SELECT's numbers). */
static void open_counts(const char *root, struct mailbox_status *st_r)
{
	struct mailbox *box;
	const char *error;

	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_status_from_box(box, MAILBOX_STATUS_SIZE,
						st_r, &error), 0);
	mailbox_close(&box);
}

static void status(const char *root, enum mailbox_status_items items,
		   struct mailbox_status *st_r)
{
	const char *error;

	test_assert_int(mailbox_status_get(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
					   items, st_r, &error), 1);
}

static void assert_same(const struct mailbox_status *a,
			const struct mailbox_status *b, bool size)
{
	test_assert_int(a->messages, b->messages);
	test_assert_int(a->uidnext, b->uidnext);
	test_assert_int(a->uidvalidity, b->uidvalidity);
	test_assert_int(a->unseen, b->unseen);
	test_assert_int(a->deleted, b->deleted);
	if (size) {
		test_assert_int(a->size, b->size);
		test_assert_int(a->deleted_size, b->deleted_size);
	}
}

static void test_status_fast(void)
{
	const char *root = root_path("fast");
	struct mailbox_status st, ref;

	make_mailbox(root);
	open_counts(root, &ref);   /* the scan: index + stamp */
	test_assert_int(ref.messages, TEST_MSGS);
	test_assert_int(ref.unseen, TEST_MSGS / 2);
	test_assert_int(ref.deleted, 4);
	test_assert_int(ref.size, 6 * (TEST_MSGS * (TEST_MSGS + 1) / 2));
	/* some, not all, of the size is \Deleted messages' */
	test_assert(ref.deleted_size > 0 && ref.deleted_size < ref.size);

	status(root, 0, &st);
	test_assert(st.from_index);
	assert_same(&st, &ref, false);
	/* the sizes were counted and cached by the full open */
	status(root, MAILBOX_STATUS_SIZE, &st);
	test_assert(st.from_index);
	assert_same(&st, &ref, true);
	/* STATUS takes no \Recent: asking twice gives the same */
	uint32_t recent = st.recent;
	status(root, 0, &st);
	test_assert_int(st.recent, recent);

	const char *error;
	test_assert_int(mailbox_status_get(root, "NoSuchBox", 0, 0, &st,
					   &error), 0);
}

static void test_status_new_file(void)
{
	const char *root = root_path("newfile");
	struct mailbox_status st, ref;

	make_mailbox(root);
	open_counts(root, &ref);
	put_file(root, "new", "200.test", "new\n");
	status(root, MAILBOX_STATUS_SIZE, &st);
	test_assert(!st.from_index);
	test_assert_int(st.messages, TEST_MSGS + 1);
	test_assert_int(st.unseen, TEST_MSGS / 2 + 1);
	test_assert_int(st.size, ref.size + 5);
	test_assert_int(st.uidnext, ref.uidnext + 1);
	/* once the directories settle, the index answers again */
	dirs_backdate(root, 10);
	status(root, MAILBOX_STATUS_SIZE, &st);
	dirs_backdate(root, 10);
	struct mailbox_status st2;
	status(root, MAILBOX_STATUS_SIZE, &st2);
	test_assert(st2.from_index);
	assert_same(&st2, &st, true);
}

static void test_status_external_rename(void)
{
	const char *root = root_path("rename");
	struct mailbox_status st, ref;
	char from[1024], to[1024];

	make_mailbox(root);
	open_counts(root, &ref);
	/* another Maildir client marks message 0 \Seen */
	snprintf(from, sizeof(from), "%s/cur/100.test:2,T", root);
	snprintf(to, sizeof(to), "%s/cur/100.test:2,ST", root);
	test_assert(rename(from, to) == 0);
	status(root, 0, &st);
	test_assert(!st.from_index);
	test_assert_int(st.unseen, ref.unseen - 1);
	test_assert_int(st.messages, ref.messages);
	open_counts(root, &ref);
	assert_same(&st, &ref, false);
}

static void test_status_deleted_index(void)
{
	const char *root = root_path("noindex");
	struct mailbox_status st, ref;
	char path[1024];

	make_mailbox(root);
	open_counts(root, &ref);
	snprintf(path, sizeof(path), "%s/%s", root, MAIL_INDEX_FILE_NAME);
	test_assert(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/%s", root, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(unlink(path) == 0);
	status(root, MAILBOX_STATUS_SIZE, &st);
	test_assert(!st.from_index);
	assert_same(&st, &ref, true);
}

static void test_status_other_session(void)
{
	const char *root = root_path("session");
	struct mailbox_status st, ref;
	struct mailbox *box;
	const char *error;

	make_mailbox(root);
	open_counts(root, &ref);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_msg_set_flags(box, 1, MAIL_SEEN, &error), 0);
	test_assert_int(mailbox_msg_expunge(box, 2, &error), 0);
	test_assert_int(mailbox_sync(box, true, NULL, NULL, &error), 0);
	status(root, MAILBOX_STATUS_SIZE, &st);
	struct mailbox_status mine;
	test_assert_int(mailbox_status_from_box(box, MAILBOX_STATUS_SIZE,
						&mine, &error), 0);
	assert_same(&st, &mine, true);
	test_assert_int(st.messages, ref.messages - 1);
	mailbox_close(&box);
}

/* ---- the handle cache ---- */

static void cstatus(struct mailbox_status_cache *cache, const char *root,
		    struct mailbox_status *st_r)
{
	const char *error;

	test_assert_int(mailbox_status_get_cached(cache, root, "INBOX",
				MAILBOX_OPEN_NO_FSYNC, MAILBOX_STATUS_SIZE,
				st_r, &error), 1);
}

static void test_status_cache(void)
{
	char root[512], root2[512];   /* root_path() reuses its buffer */
	snprintf(root, sizeof(root), "%s", root_path("cache"));
	snprintf(root2, sizeof(root2), "%s", root_path("cache2"));
	struct mailbox_status_cache *cache = mailbox_status_cache_init(1);
	struct mailbox_status st, ref;
	struct mail_index *index;
	const char *error;

	make_mailbox(root);
	open_counts(root, &ref);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	test_assert_int(mailbox_status_cache_count(cache), 1);
	assert_same(&st, &ref, true);
	cstatus(cache, root, &st);
	test_assert(st.from_index);

	/* a change in the log only (another process's flag change) */
	test_assert_int(mail_index_open(root, 0, &index, &error), 1);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_update_flags(t, 1, 1, MAIL_SEEN, 0, 0, 0);
	test_assert_int(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
		NULL, &error), 0);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	test_assert_int(st.unseen, ref.unseen - 1);
	/* one that leaves the log's size and mtime as they were (its record
	   overwrites the zeros ahead; mtime ticks coarsely): still seen */
	char log[1024];
	struct stat log_st, log_st2;
	snprintf(log, sizeof(log), "%s/%s", root, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(stat(log, &log_st) == 0);
	t = mail_index_transaction_begin(index);
	mail_index_update_flags(t, 3, 3, MAIL_SEEN, 0, 0, 0);
	test_assert_int(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
		NULL, &error), 0);
	struct timespec times[2] = { log_st.st_atim, log_st.st_mtim };
	test_assert(utimensat(AT_FDCWD, log, times, 0) == 0);
	test_assert(stat(log, &log_st2) == 0);
	test_assert(log_st2.st_size == log_st.st_size);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	test_assert_int(st.unseen, ref.unseen - 2);
	t = mail_index_transaction_begin(index);
	mail_index_expunge(t, 2, 2);
	test_assert_int(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
		NULL, &error), 0);
	mail_index_close(&index);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	test_assert_int(st.messages, ref.messages - 1);

	/* a file dropped into new/: not from the index until stamped */
	put_file(root, "new", "300.test", "new\n");
	cstatus(cache, root, &st);
	test_assert(!st.from_index);
	dirs_backdate(root, 20);
	open_counts(root, &ref);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	assert_same(&st, &ref, true);

	/* one slot: another mailbox takes it, the first comes back right */
	struct mailbox_status first = ref;
	make_mailbox(root2);
	open_counts(root2, &ref);
	cstatus(cache, root2, &st);
	test_assert(st.from_index);
	assert_same(&st, &ref, true);
	test_assert_int(mailbox_status_cache_count(cache), 1);
	cstatus(cache, root, &st);
	test_assert(st.from_index);
	assert_same(&st, &first, true);

	/* the folder replaced by another one with the same path */
	char old[1024];
	snprintf(old, sizeof(old), "%s.old", root);
	test_assert(rename(root, old) == 0);
	test_assert(rename(root2, root) == 0);
	cstatus(cache, root, &st);
	assert_same(&st, &ref, true);

	test_assert_int(mailbox_status_cache_expire(cache, time(NULL) - 3600), 1);
	test_assert_int(mailbox_status_cache_expire(cache, time(NULL) + 1), 0);
	mailbox_status_cache_deinit(&cache);
	test_assert(cache == NULL);
}

/* ---- LIST's cached folder list ---- */

static bool list_has(const char *root, const char *name,
		     enum mailbox_list_node_flags flags)
{
	struct mailbox_list *list;
	const char *error;

	test_assert_int(mailbox_list_read(root, NULL, &list, &error), 0);
	const struct mailbox_list_node *node = mailbox_list_lookup(list, name);
	bool ret = node != NULL && (node->flags & MAILBOX_NODE_EXISTS) == flags;
	mailbox_list_free(&list);
	return ret;
}

static void mkdir_folder(const char *root, const char *dir, bool cur)
{
	char path[1024];
	const char *const subs[] = { "cur", "new", "tmp" };

	snprintf(path, sizeof(path), "%s/%s", root, dir);
	test_assert(mkdir(path, 0700) == 0);
	for (unsigned int i = 0; cur && i < N_ELEMENTS(subs); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", root, dir, subs[i]);
		test_assert(mkdir(path, 0700) == 0);
	}
}

static void test_list_cache(void)
{
	const char *root = root_path("list");
	enum mailbox_list_error code;
	const char *error;
	char path[1024];
	struct stat st;

	test_assert(mkdir(root, 0700) == 0);
	mkdir_folder(root, "cur", false);
	mkdir_folder(root, "new", false);
	test_assert_int(mailbox_list_create(root, "A", &code, &error), 0);
	test_assert_int(mailbox_list_create(root, "A/B", &code, &error), 0);
	backdate(root, 0);
	test_assert(list_has(root, "A/B", MAILBOX_NODE_SELECTABLE));
	snprintf(path, sizeof(path), "%s/moat.mailboxlist/list", root);
	test_assert(stat(path, &st) == 0);
	/* served from the cache: a second read gives the same */
	test_assert(list_has(root, "A", MAILBOX_NODE_SELECTABLE));

	/* another Maildir tool creates a folder: the root's mtime moves */
	mkdir_folder(root, ".Foo", true);
	test_assert(list_has(root, "Foo", MAILBOX_NODE_SELECTABLE));
	backdate(root, 10);
	test_assert(list_has(root, "Foo", MAILBOX_NODE_SELECTABLE));

	/* DELETE of a parent makes it \Noselect without touching the root's
	   entries: moat invalidates the cache itself */
	backdate(root, 20);
	test_assert(list_has(root, "A", MAILBOX_NODE_SELECTABLE));
	test_assert_int(mailbox_list_delete(root, "A", &code, &error), 0);
	test_assert(list_has(root, "A", MAILBOX_NODE_NOSELECT));
	backdate(root, 30);
	test_assert(list_has(root, "A", MAILBOX_NODE_NOSELECT));
	test_assert_int(mailbox_list_create(root, "A", &code, &error), 0);
	test_assert(list_has(root, "A", MAILBOX_NODE_SELECTABLE));

	/* a garbled cache is ignored */
	backdate(root, 40);
	test_assert(list_has(root, "Foo", MAILBOX_NODE_SELECTABLE));
	FILE *f = fopen(path, "a");
	test_assert(f != NULL);
	fputs("X garbage", f);
	fclose(f);
	test_assert(list_has(root, "A/B", MAILBOX_NODE_SELECTABLE));
	test_assert(list_has(root, "Foo", MAILBOX_NODE_SELECTABLE));
	/* RENAME INBOX leaves the cache in the root */
	test_assert_int(mailbox_list_rename(root, "INBOX", "Old", &code,
					    &error), 0);
	test_assert(list_has(root, "Old", MAILBOX_NODE_SELECTABLE));
	snprintf(path, sizeof(path), "%s/.Old/moat.mailboxlist", root);
	test_assert(stat(path, &st) < 0);
}

TEST_MAIN(TEST(test_status_fast), TEST(test_status_new_file),
	  TEST(test_status_external_rename), TEST(test_status_deleted_index),
	  TEST(test_status_other_session), TEST(test_status_cache),
	  TEST(test_list_cache))
