/* Unit tests for index/maildir-watch.c: our announced changes cancel out,
   everything else (foreign changes, failed announcements, too many
   announcements, the directory going away) moves the generation; the
   root watch reports folders made, renamed and removed, and a queue
   overflow before every watch's generation moves. */
#include "test-common.h"
#include "maildir-watch.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char box_path[PATH_MAX];

static void path_in(char *buf, const char *sub, const char *name)
{
	int len = snprintf(buf, PATH_MAX, "%s/%s/%s", box_path, sub, name);
	i_assert(len > 0 && len < PATH_MAX);
}

static void touch(const char *sub, const char *name)
{
	char path[PATH_MAX];

	path_in(path, sub, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	test_assert(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static int rename_in(const char *sub, const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	path_in(a, sub, from);
	path_in(b, sub, to);
	return rename(a, b);
}

/* A fresh Maildir; NULL watch when this file system is not watchable. */
static struct maildir_watch *setup(void)
{
	static const char *const subs[] = { "", "/cur", "/new", "/tmp" };
	char dir[PATH_MAX];

	snprintf(box_path, sizeof(box_path), "%s/box", test_tmpdir());
	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		test_assert(snprintf(dir, sizeof(dir), "%s%s", box_path,
				     subs[i]) > 0);
		test_assert(mkdir(dir, 0700) == 0);
	}
	struct maildir_watch *w = maildir_watch_ref(box_path);
	if (w == NULL)
		printf("SKIP: %s cannot be watched (not a local file system?)\n",
		       box_path);
	return w;
}

static void teardown(struct maildir_watch **w)
{
	maildir_watch_unref(w);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

static void test_own_changes_cancel_out(void)
{
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	touch("cur", "1.a:2,");
	uint64_t gen = maildir_watch_get_gen(w);
	test_assert(gen != 0);   /* the touch was foreign */
	test_assert(maildir_watch_get_gen(w) == gen);

	/* A flag change: one rename announced by both names. */
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "1.a:2,");
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "1.a:2,S");
	test_assert(rename_in("cur", "1.a:2,", "1.a:2,S") == 0);
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) == gen);

	/* A new file and an unlink. */
	maildir_watch_expect(w, MAILDIR_WATCH_NEW, "2.b");
	touch("new", "2.b");
	maildir_watch_settle(w);
	char path[PATH_MAX];
	path_in(path, "cur", "1.a:2,S");
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "1.a:2,S");
	test_assert(unlink(path) == 0);
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) == gen);

	/* A second handle shares the watch. */
	struct maildir_watch *w2 = maildir_watch_ref(box_path);
	test_assert(w2 == w);
	maildir_watch_unref(&w2);
	teardown(&w);
}

static void test_foreign_changes_move_gen(void)
{
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	touch("cur", "1.a:2,");
	uint64_t gen = maildir_watch_get_gen(w);

	/* Another tool renames in cur/ (mutt setting \Seen). */
	test_assert(rename_in("cur", "1.a:2,", "1.a:2,S") == 0);
	test_assert(maildir_watch_get_gen(w) != gen);
	gen = maildir_watch_get_gen(w);

	/* A foreign change inside our own announced window. */
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "1.a:2,S");
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "1.a:2,RS");
	test_assert(rename_in("cur", "1.a:2,S", "1.a:2,RS") == 0);
	touch("new", "3.c");
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) != gen);
	gen = maildir_watch_get_gen(w);

	/* An announcement whose change failed: someone else got there first. */
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "gone:2,");
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "gone:2,S");
	test_assert(rename_in("cur", "gone:2,", "gone:2,S") < 0);
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) != gen);
	gen = maildir_watch_get_gen(w);

	/* The same name announced in the other directory is not ours. */
	maildir_watch_expect(w, MAILDIR_WATCH_NEW, "4.d");
	touch("cur", "4.d");
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) != gen);
	teardown(&w);
}

static void test_too_many_announcements(void)
{
	char name[32];

	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	uint64_t gen = maildir_watch_get_gen(w);
	for (unsigned int i = 0; i <= MAILDIR_WATCH_MAX_EXPECTED; i++) {
		snprintf(name, sizeof(name), "%u.x", i);
		maildir_watch_expect(w, MAILDIR_WATCH_CUR, name);
		touch("cur", name);
	}
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) != gen);
	/* Afterwards it is exact again. */
	gen = maildir_watch_get_gen(w);
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "last");
	touch("cur", "last");
	maildir_watch_settle(w);
	test_assert(maildir_watch_get_gen(w) == gen);
	teardown(&w);
}

static void test_directory_goes_away(void)
{
	char dir[PATH_MAX], moved[PATH_MAX];

	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	uint64_t gen = maildir_watch_get_gen(w);
	test_assert(snprintf(dir, sizeof(dir), "%s/new", box_path) > 0);
	test_assert(snprintf(moved, sizeof(moved), "%s/new.old", box_path) > 0);
	test_assert(rename(dir, moved) == 0);
	test_assert(mkdir(dir, 0700) == 0);
	test_assert(maildir_watch_get_gen(w) != gen);
	/* The dead watch is not handed out again: a new one watches the new
	   directory. */
	struct maildir_watch *w2 = maildir_watch_ref(box_path);
	test_assert(w2 != NULL && w2 != w);
	if (w2 != NULL) {
		gen = maildir_watch_get_gen(w2);
		touch("new", "5.e");
		test_assert(maildir_watch_get_gen(w2) != gen);
		maildir_watch_unref(&w2);
	}
	teardown(&w);
}

/* Trust outlives the handles (a client switching folders), and only the
   most recently used unreferenced watches are kept. */
static void test_trust_kept_between_opens(void)
{
	static const char *const subs[] = { "", "/cur", "/new" };
	char dir[PATH_MAX], paths[MAILDIR_WATCH_MAX_UNUSED + 1][PATH_MAX];

	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	test_assert(!maildir_watch_is_trusted(w, 1, 5));
	maildir_watch_trust(w, maildir_watch_get_gen(w), 1, 5);
	test_assert(maildir_watch_is_trusted(w, 1, 5));
	maildir_watch_unref(&w);
	w = maildir_watch_ref(box_path);
	test_assert(w != NULL && maildir_watch_is_trusted(w, 1, 5));
	/* another index: rebuilt (modseq went back) or another uidvalidity */
	test_assert(maildir_watch_is_trusted(w, 1, 9));
	test_assert(!maildir_watch_is_trusted(w, 1, 4));
	test_assert(!maildir_watch_is_trusted(w, 2, 5));
	touch("new", "1.a");
	test_assert(!maildir_watch_is_trusted(w, 1, 5));
	maildir_watch_unref(&w);

	for (unsigned int i = 0; i <= MAILDIR_WATCH_MAX_UNUSED; i++) {
		test_assert(snprintf(paths[i], PATH_MAX, "%s/f%u", test_tmpdir(),
				     i) > 0);
		for (unsigned int j = 0; j < N_ELEMENTS(subs); j++) {
			test_assert(snprintf(dir, sizeof(dir), "%s%s", paths[i],
					     subs[j]) > 0);
			test_assert(mkdir(dir, 0700) == 0);
		}
		w = maildir_watch_ref(paths[i]);
		test_assert(w != NULL);
		if (w == NULL)
			break;
		maildir_watch_trust(w, maildir_watch_get_gen(w), 1, 5);
		maildir_watch_unref(&w);
	}
	/* the oldest was dropped, with its trust; the newest kept */
	w = maildir_watch_ref(paths[0]);
	test_assert(w != NULL && !maildir_watch_is_trusted(w, 1, 5));
	maildir_watch_unref(&w);
	w = maildir_watch_ref(paths[MAILDIR_WATCH_MAX_UNUSED]);
	test_assert(w != NULL && maildir_watch_is_trusted(w, 1, 5));
	teardown(&w);
}

static unsigned int listener_calls;

static void listener_cb(void *context ATTR_UNUSED)
{
	listener_calls++;
}

/* IDLE's listener hears every change when the events are read; only
   foreign ones move the generation. */
static void test_listener(void)
{
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	struct maildir_watch_listener *l =
		maildir_watch_listen(w, listener_cb, NULL);
	listener_calls = 0;
	test_assert(maildir_watch_fd() != -1);
	/* our own change: heard (another session may idle), trust kept */
	uint64_t gen = maildir_watch_get_gen(w);
	maildir_watch_expect(w, MAILDIR_WATCH_NEW, "own.1");
	touch("new", "own.1");
	maildir_watch_settle(w);
	test_assert_int(listener_calls, 1);
	test_assert(maildir_watch_get_gen(w) == gen);
	touch("new", "foreign.1");
	test_assert_int(listener_calls, 1);   /* not read yet */
	maildir_watch_read();
	test_assert_int(listener_calls, 2);
	test_assert(maildir_watch_get_gen(w) != gen);
	/* the listener holds the watch: an unref leaves it alive */
	maildir_watch_unref(&w);
	touch("cur", "foreign.2");
	maildir_watch_read();
	test_assert_int(listener_calls, 3);
	maildir_watch_unlisten(&l);
	test_assert(l == NULL);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

/* ---- the root watch ---- */

struct root_seen {
	enum maildir_root_event event;
	char dir[64], olddir[64];
};
static struct root_seen root_seen[16];
static unsigned int root_seen_count;

static void root_cb(void *context ATTR_UNUSED, enum maildir_root_event event,
		    const char *dir, const char *olddir)
{
	if (root_seen_count == N_ELEMENTS(root_seen))
		return;
	struct root_seen *r = &root_seen[root_seen_count++];
	r->event = event;
	snprintf(r->dir, sizeof(r->dir), "%s", dir == NULL ? "" : dir);
	snprintf(r->olddir, sizeof(r->olddir), "%s", olddir == NULL ? "" :
		 olddir);
}

static void root_path(char *buf, const char *root, const char *name)
{
	int len = snprintf(buf, PATH_MAX, "%s/%s", root, name);
	i_assert(len > 0 && len < PATH_MAX);
}

static void root_mkdir(const char *root, const char *name)
{
	char path[PATH_MAX];

	root_path(path, root, name);
	test_assert(mkdir(path, 0700) == 0);
}

static bool root_seen_is(unsigned int i, enum maildir_root_event event,
			 const char *dir, const char *olddir)
{
	return i < root_seen_count && root_seen[i].event == event &&
		strcmp(root_seen[i].dir, dir) == 0 &&
		strcmp(root_seen[i].olddir, olddir) == 0;
}

static void test_root_watch(void)
{
	char root[PATH_MAX], a[PATH_MAX], b[PATH_MAX];

	root_path(root, test_tmpdir(), "root");
	test_assert(mkdir(root, 0700) == 0);
	struct maildir_root_watch *rw =
		maildir_root_watch_add(root, root_cb, NULL);
	if (rw == NULL) {
		printf("SKIP: %s cannot be watched\n", root);
		test_tmpdir_cleanup();
		return;
	}
	root_seen_count = 0;
	/* a folder with cur/ at once; files and non-folders are not told */
	root_mkdir(root, ".A");
	root_mkdir(root, ".A/cur");
	root_mkdir(root, "tmp");
	maildir_watch_read();
	test_assert_int(root_seen_count, 1);
	test_assert(root_seen_is(0, MAILDIR_ROOT_CREATED, ".A", ""));
	/* a rename within the root is one event */
	root_path(a, root, ".A");
	root_path(b, root, ".B");
	test_assert(rename(a, b) == 0);
	maildir_watch_read();
	test_assert_int(root_seen_count, 2);
	test_assert(root_seen_is(1, MAILDIR_ROOT_RENAMED, ".B", ".A"));
	/* moved out of the root: deleted; removed: deleted */
	root_path(a, root, "tmp/gone");
	test_assert(rename(b, a) == 0);
	root_mkdir(root, ".C");
	maildir_watch_read();
	/* .C has no cur/ yet: not told until it has */
	test_assert_int(root_seen_count, 3);
	test_assert(root_seen_is(2, MAILDIR_ROOT_DELETED, ".B", ""));
	root_mkdir(root, ".C/new");
	root_mkdir(root, ".C/cur");
	maildir_watch_read();
	test_assert_int(root_seen_count, 4);
	test_assert(root_seen_is(3, MAILDIR_ROOT_CREATED, ".C", ""));
	root_path(a, root, ".C/cur");
	test_assert(rmdir(a) == 0);
	root_path(a, root, ".C/new");
	test_assert(rmdir(a) == 0);
	root_path(a, root, ".C");
	test_assert(rmdir(a) == 0);
	maildir_watch_read();
	test_assert_int(root_seen_count, 5);
	test_assert(root_seen_is(4, MAILDIR_ROOT_DELETED, ".C", ""));
	/* a folder without cur/ that goes away again is never told made */
	root_mkdir(root, ".D");
	maildir_watch_read();
	root_path(a, root, ".D");
	test_assert(rmdir(a) == 0);
	maildir_watch_read();
	test_assert_int(root_seen_count, 6);
	test_assert(root_seen_is(5, MAILDIR_ROOT_DELETED, ".D", ""));
	/* cur/ first, new/ later: made when cur/ comes, completed (its
	   folder watch possible) when new/ does */
	root_mkdir(root, ".G");
	maildir_watch_read();
	test_assert_int(root_seen_count, 6);
	root_mkdir(root, ".G/cur");
	maildir_watch_read();
	test_assert_int(root_seen_count, 7);
	test_assert(root_seen_is(6, MAILDIR_ROOT_CREATED, ".G", ""));
	root_mkdir(root, ".G/tmp");
	maildir_watch_read();
	test_assert_int(root_seen_count, 7);
	root_mkdir(root, ".G/new");
	maildir_watch_read();
	test_assert_int(root_seen_count, 8);
	test_assert(root_seen_is(7, MAILDIR_ROOT_COMPLETED, ".G", ""));
	/* no longer watched: nothing more of it */
	root_mkdir(root, ".G/new/x");
	maildir_watch_read();
	test_assert_int(root_seen_count, 8);
	/* the same, with the root's event read after cur/ is there */
	root_mkdir(root, ".H");
	root_mkdir(root, ".H/cur");
	maildir_watch_read();
	root_mkdir(root, ".H/new");
	maildir_watch_read();
	test_assert_int(root_seen_count, 10);
	test_assert(root_seen_is(8, MAILDIR_ROOT_CREATED, ".H", ""));
	test_assert(root_seen_is(9, MAILDIR_ROOT_COMPLETED, ".H", ""));
	/* cur/ and new/ both there when read: only CREATED */
	root_mkdir(root, ".I");
	root_mkdir(root, ".I/cur");
	root_mkdir(root, ".I/new");
	maildir_watch_read();
	test_assert_int(root_seen_count, 11);
	test_assert(root_seen_is(10, MAILDIR_ROOT_CREATED, ".I", ""));
	maildir_root_watch_remove(&rw);
	test_assert(rw == NULL);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

/* The kernel's queue bound of an inotify instance; 0 if unknown or too
   big to fill in a test. */
static unsigned int max_queued_events(void)
{
	FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
	unsigned int n = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%u", &n) != 1)
		n = 0;
	fclose(f);
	return n > 1000000 ? 0 : n;
}

/* More events than the queue takes while nobody reads: the root's
   callback hears OVERFLOW (the folder made after the flood is lost),
   and every folder watch's listener hears and its generation moves. */
static void test_queue_overflow(void)
{
	char root[PATH_MAX], path[PATH_MAX];
	unsigned int max = max_queued_events();

	if (max == 0) {
		printf("SKIP: fs.inotify.max_queued_events unknown or huge\n");
		return;
	}
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	root_path(root, test_tmpdir(), "root");
	test_assert(mkdir(root, 0700) == 0);
	struct maildir_root_watch *rw =
		maildir_root_watch_add(root, root_cb, NULL);
	if (rw == NULL) {
		printf("SKIP: %s cannot be watched\n", root);
		teardown(&w);
		return;
	}
	struct maildir_watch_listener *l =
		maildir_watch_listen(w, listener_cb, NULL);
	uint64_t gen = maildir_watch_get_gen(w);
	root_seen_count = 0;
	listener_calls = 0;
	/* each file is two events (created, deleted) */
	for (unsigned int i = 0; i <= max / 2; i++) {
		touch("new", "flood");
		path_in(path, "new", "flood");
		test_assert(unlink(path) == 0);
	}
	root_mkdir(root, ".E");
	root_mkdir(root, ".E/cur");
	maildir_watch_read();
	test_assert_int(root_seen_count, 1);
	test_assert(root_seen_is(0, MAILDIR_ROOT_OVERFLOW, "", ""));
	test_assert(listener_calls > 0);
	test_assert(maildir_watch_get_gen(w) != gen);
	/* after it, events are told again */
	root_mkdir(root, ".F");
	root_mkdir(root, ".F/cur");
	maildir_watch_read();
	test_assert(root_seen_is(1, MAILDIR_ROOT_CREATED, ".F", ""));
	maildir_watch_unlisten(&l);
	maildir_root_watch_remove(&rw);
	teardown(&w);
}

static void make_maildir(const char *path)
{
	static const char *const subs[] = { "", "/cur", "/new", "/tmp" };
	char dir[PATH_MAX];

	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		test_assert(snprintf(dir, sizeof(dir), "%s%s", path,
				     subs[i]) > 0);
		test_assert(mkdir(dir, 0700) == 0);
	}
}

/* A folder renamed while its watch is kept unused: the kernel gives the
   new path's watch the same wds (a watch follows the inode). The old
   path's watch is dead then, and freeing it (the unused ones are
   trimmed) must not remove the new one's kernel watches. */
static void test_renamed_folder_shares_wd(void)
{
	char a[PATH_MAX], b[PATH_MAX], other[PATH_MAX];
	char file[PATH_MAX + 16];   /* b and "/new/after" */

	snprintf(a, sizeof(a), "%s/A", test_tmpdir());
	snprintf(b, sizeof(b), "%s/B", test_tmpdir());
	make_maildir(a);
	struct maildir_watch *w = maildir_watch_ref(a);
	if (w == NULL) {
		printf("SKIP: %s cannot be watched\n", a);
		test_tmpdir_cleanup();
		return;
	}
	maildir_watch_unref(&w);   /* kept, unused, with the path A */
	test_assert(rename(a, b) == 0);
	w = maildir_watch_ref(b);
	test_assert(w != NULL);
	struct maildir_watch_listener *l =
		maildir_watch_listen(w, listener_cb, NULL);
	maildir_watch_unref(&w);
	/* more unused watches than are kept: A's goes */
	for (unsigned int i = 0; i <= MAILDIR_WATCH_MAX_UNUSED; i++) {
		snprintf(other, sizeof(other), "%s/O%u", test_tmpdir(), i);
		make_maildir(other);
		struct maildir_watch *o = maildir_watch_ref(other);
		maildir_watch_unref(&o);
	}
	maildir_watch_read();
	listener_calls = 0;
	snprintf(file, sizeof(file), "%s/new/after", b);
	int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	test_assert(fd >= 0);
	if (fd >= 0)
		close(fd);
	maildir_watch_read();
	test_assert_int(listener_calls, 1);
	maildir_watch_unlisten(&l);
	maildir_watch_deinit();
	test_tmpdir_cleanup();
}

/* Trusted at the current generation, as a clean scan leaves it. */
static void trust_now(struct maildir_watch *w)
{
	maildir_watch_trust(w, maildir_watch_get_gen(w), 1, 5);
}

static unsigned int renames_get(struct maildir_watch *w, const char **names)
{
	uint64_t gen;

	return maildir_watch_get_renames(w, 1, 5, names, &gen);
}

/* Another tool's flag renames in cur/ are kept in order with their new
   names, and trusting the generation they reach drops them. */
static void test_renames_kept(void)
{
	static const char *names[MAILDIR_WATCH_MAX_RENAMES];
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	touch("cur", "1.a:2,");
	touch("cur", "2.b:2,");
	trust_now(w);
	test_assert_int(renames_get(w, names), 0);
	test_assert(rename_in("cur", "1.a:2,", "1.a:2,S") == 0);
	test_assert(rename_in("cur", "2.b:2,", "2.b:2,FS") == 0);
	test_assert(rename_in("cur", "1.a:2,S", "1.a:2,") == 0);
	test_assert(!maildir_watch_is_trusted(w, 1, 5));
	test_assert_int(renames_get(w, names), 3);
	test_assert(strcmp(names[0], "1.a:2,S") == 0);
	test_assert(strcmp(names[1], "2.b:2,FS") == 0);
	test_assert(strcmp(names[2], "1.a:2,") == 0);
	/* another index (uidvalidity, an older modseq) has none */
	uint64_t gen;
	test_assert_int(maildir_watch_get_renames(w, 2, 5, names, &gen), 0);
	test_assert_int(maildir_watch_get_renames(w, 1, 4, names, &gen), 0);
	test_assert_int(maildir_watch_get_renames(w, 1, 7, names, &gen), 3);
	/* our own rename in between cancels out and keeps them */
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "2.b:2,FS");
	maildir_watch_expect(w, MAILDIR_WATCH_CUR, "2.b:2,F");
	test_assert(rename_in("cur", "2.b:2,FS", "2.b:2,F") == 0);
	maildir_watch_settle(w);
	test_assert_int(maildir_watch_get_renames(w, 1, 5, names, &gen), 3);
	maildir_watch_trust(w, gen, 1, 6);
	test_assert(maildir_watch_is_trusted(w, 1, 6));
	test_assert_int(renames_get(w, names), 0);
	/* a rename after the gen a trust names is kept */
	uint64_t before = maildir_watch_get_gen(w);
	test_assert(rename_in("cur", "1.a:2,", "1.a:2,R") == 0);
	test_assert(rename_in("cur", "1.a:2,R", "1.a:2,RS") == 0);
	maildir_watch_get_gen(w);
	maildir_watch_trust(w, before + 1, 1, 6);
	test_assert_int(maildir_watch_get_renames(w, 1, 6, names, &gen), 1);
	test_assert(strcmp(names[0], "1.a:2,RS") == 0);
	teardown(&w);
}

/* Anything else since the trust, and there are no renames to apply. */
static void test_renames_odd_events(void)
{
	static const char *names[MAILDIR_WATCH_MAX_RENAMES];
	char path[PATH_MAX];
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	touch("cur", "1.a:2,");
	trust_now(w);
	/* a rename that changes the base */
	test_assert(rename_in("cur", "1.a:2,", "1.b:2,") == 0);
	test_assert_int(renames_get(w, names), 0);
	trust_now(w);
	/* a new file after a rename */
	test_assert(rename_in("cur", "1.b:2,", "1.b:2,S") == 0);
	touch("cur", "3.c:2,");
	test_assert_int(renames_get(w, names), 0);
	trust_now(w);
	/* moved out of cur/ (and back into new/) */
	char a[PATH_MAX], b[PATH_MAX];
	path_in(a, "cur", "3.c:2,");
	path_in(b, "new", "3.c");
	test_assert(rename(a, b) == 0);
	test_assert_int(renames_get(w, names), 0);
	trust_now(w);
	/* an unlink */
	path_in(path, "new", "3.c");
	test_assert(unlink(path) == 0);
	test_assert(rename_in("cur", "1.b:2,S", "1.b:2,") == 0);
	test_assert_int(renames_get(w, names), 0);
	trust_now(w);
	/* a rename without the info part's ':' keeps the base too */
	test_assert(rename_in("cur", "1.b:2,", "1.b") == 0);
	test_assert_int(renames_get(w, names), 1);
	trust_now(w);
	/* more renames than are kept */
	for (unsigned int i = 0; i <= MAILDIR_WATCH_MAX_RENAMES; i++) {
		test_assert(rename_in("cur", i % 2 == 0 ? "1.b" : "1.b:2,S",
				      i % 2 == 0 ? "1.b:2,S" : "1.b") == 0);
		if (i % 256 == 0)
			maildir_watch_read();
	}
	test_assert_int(renames_get(w, names), 0);
	trust_now(w);
	/* the directory went away */
	path_in(a, "cur", "");
	path_in(b, "", "cur2");
	test_assert(rename(a, b) == 0);
	test_assert_int(renames_get(w, names), 0);
	teardown(&w);
}

/* A queue overflow loses events: no rename list stands for them. (The
   kernel's queue holds more renames than MAILDIR_WATCH_MAX_RENAMES, so
   the bound alone would give the same answer here; the overflow path
   itself is test_queue_overflow's.) */
static void test_renames_overflow(void)
{
	static const char *names[MAILDIR_WATCH_MAX_RENAMES];
	unsigned int max = max_queued_events();

	if (max == 0) {
		printf("SKIP: fs.inotify.max_queued_events unknown or huge\n");
		return;
	}
	struct maildir_watch *w = setup();
	if (w == NULL) {
		test_tmpdir_cleanup();
		return;
	}
	touch("cur", "1.a");
	trust_now(w);
	/* each rename is two events; nobody reads until the end */
	for (unsigned int i = 0; i <= max / 2; i++) {
		test_assert(rename_in("cur", i % 2 == 0 ? "1.a" : "1.a:2,S",
				      i % 2 == 0 ? "1.a:2,S" : "1.a") == 0);
	}
	test_assert_int(renames_get(w, names), 0);
	teardown(&w);
}

TEST_MAIN(TEST(test_own_changes_cancel_out),
	  TEST(test_renames_kept),
	  TEST(test_renames_odd_events),
	  TEST(test_renames_overflow),
	  TEST(test_root_watch),
	  TEST(test_queue_overflow),
	  TEST(test_listener),
	  TEST(test_renamed_folder_shares_wd),
	  TEST(test_trust_kept_between_opens),
	  TEST(test_foreign_changes_move_gen),
	  TEST(test_too_many_announcements),
	  TEST(test_directory_goes_away))
