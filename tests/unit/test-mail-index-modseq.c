/* Unit tests for the expunge history (mail-index-modseq.c): exact runs
   of uids that were messages, kept across checkpoints, log rotation,
   cache compression and new handles; what a lost, stale or torn
   moat.index.modseq and a reset leave; a handle that lags behind. */
#include "test-common.h"
#include "mail-index-private.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#define MODSEQ_TEST_PATH_MAX 600
/* uids of the test mailboxes */
#define MODSEQ_TEST_MESSAGES 200U

/* The expunged uids reported, as a bitmap over 1..MODSEQ_TEST_MESSAGES+. */
struct seen_uids {
	bool uid[MODSEQ_TEST_MESSAGES * 2 + 2];
	unsigned int runs;
	bool bad;
};

static void collect(void *context, uint32_t uid1, uint32_t uid2)
{
	struct seen_uids *s = context;

	s->runs++;
	for (uint32_t uid = uid1; uid <= uid2; uid++) {
		if (uid >= N_ELEMENTS(s->uid) || s->uid[uid])
			s->bad = true;   /* out of range or reported twice */
		if (uid < N_ELEMENTS(s->uid))
			s->uid[uid] = true;
	}
}

static const char *new_dir(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	if (mkdir(path, 0700) < 0)
		abort();
	return path;
}

static void sync_view(struct mail_index_view *view)
{
	const char *error;

	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
}

static uint64_t commit(struct mail_index_transaction **t)
{
	struct mail_index_commit_result result;
	const char *error;

	test_assert(mail_index_transaction_commit(t, MAIL_INDEX_FSYNC_NEVER,
						  &result, &error) == 0);
	return result.modseq;
}

static void build(struct mail_index *index, unsigned int n)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);

	for (unsigned int i = 1; i <= n; i++)
		mail_index_append(t, i, 0, 0, 100, 1700000000);
	commit(&t);
}

static uint64_t expunge(struct mail_index *index, uint32_t uid1, uint32_t uid2)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);

	mail_index_expunge(t, uid1, uid2);
	return commit(&t);
}

/* Flag changes of uid until the log has been rotated past its seq. */
static void churn_until_rotated(struct mail_index *index,
				struct mail_index_view *view, uint32_t uid)
{
	uint32_t seq = index->cursor.file->hdr.file_seq;

	for (unsigned int i = 0; i < 2000 &&
	     index->cursor.file->hdr.file_seq == seq; i++) {
		struct mail_index_transaction *t = mail_index_transaction_begin(index);
		mail_index_update_flags(t, uid, uid, i % 2 ? MAIL_SEEN : 0,
					i % 2 ? 0 : MAIL_SEEN, 0, 0);
		commit(&t);
		sync_view(view);
	}
	test_assert(index->cursor.file->hdr.file_seq != seq);
}

/* expunged_since() of view as a bitmap; returns its result. */
static int since(struct mail_index_view *view, uint64_t modseq,
		 struct seen_uids *s)
{
	const char *error;

	memset(s, 0, sizeof(*s));
	return mail_index_view_expunged_since(view, modseq, collect, s, &error);
}

static bool only(const struct seen_uids *s, const uint32_t *uids,
		 unsigned int count)
{
	unsigned int n = 0;

	if (s->bad)
		return false;
	for (unsigned int i = 0; i < N_ELEMENTS(s->uid); i++)
		n += s->uid[i];
	for (unsigned int i = 0; i < count; i++) {
		if (!s->uid[uids[i]])
			return false;
	}
	return n == count;
}

static struct mail_index *open_dir(const char *dir)
{
	struct mail_index *index;
	const char *error;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index,
				    &error) == 1);
	/* small files: rotations and checkpoints come quickly */
	mail_index_set_limits(index, 4096, 1024);
	return index;
}

static void path_of(const char *dir, const char *name, char *buf)
{
	snprintf(buf, MODSEQ_TEST_PATH_MAX, "%s/%s", dir, name);
}

/* Runs hold uids that were messages only; a range over holes is cut. */
static void test_history_exact_runs(void)
{
	const char *dir = new_dir("exact");
	struct mail_index *index = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct seen_uids s;

	build(index, 20);
	sync_view(view);
	uint64_t m0 = expunge(index, 5, 6);
	expunge(index, 10, 10);
	sync_view(view);
	uint64_t m1 = expunge(index, 1, 12);     /* 5, 6, 10 are gone */
	sync_view(view);
	test_assert(since(view, m0 - 1, &s) == 1);
	static const uint32_t all[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	test_assert(only(&s, all, N_ELEMENTS(all)));
	test_assert(since(view, m1 - 1, &s) == 1);
	static const uint32_t last[] = { 1, 2, 3, 4, 7, 8, 9, 11, 12 };
	test_assert(only(&s, last, N_ELEMENTS(last)));
	test_assert_int(s.runs, 3);              /* 1:4, 7:9, 11:12 */
	test_assert(since(view, m1, &s) == 1 && only(&s, NULL, 0));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* The history outlives checkpoints, rotations (the log that had the
   expunges is gone) and cache compression, for a new handle too. */
static void test_history_across_rotation(void)
{
	const char *dir = new_dir("rotation"), *error;
	struct mail_index *index = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct seen_uids s;

	build(index, MODSEQ_TEST_MESSAGES);
	sync_view(view);
	uint64_t m0 = expunge(index, 7, 9);
	churn_until_rotated(index, view, 1);
	uint64_t m1 = expunge(index, 50, 50);
	churn_until_rotated(index, view, 1);
	/* cache compression rewrites the cache and checkpoints */
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	for (uint32_t uid = 100; uid < 110; uid++)
		test_assert(mail_cache_add(t, uid, "x", "value", 5) == 0);
	commit(&t);
	sync_view(view);
	test_assert(mail_cache_compress(view, &error) == 1);
	sync_view(view);
	uint64_t m2 = expunge(index, 100, 101);
	churn_until_rotated(index, view, 1);
	test_assert(index->cursor.file->hdr.file_seq >= 4);
	mail_index_view_close(&view);
	mail_index_close(&index);

	index = open_dir(dir);
	view = mail_index_view_open(index);
	test_assert(mail_index_view_history_base(view) < m0);
	static const uint32_t all[] = { 7, 8, 9, 50, 100, 101 };
	test_assert(since(view, m0 - 1, &s) == 1);
	test_assert(only(&s, all, N_ELEMENTS(all)));
	test_assert(since(view, m0, &s) == 1);
	test_assert(only(&s, all + 3, 3));
	test_assert(since(view, m1, &s) == 1 && only(&s, all + 4, 2));
	test_assert(since(view, m2, &s) == 1 && only(&s, NULL, 0));
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void copy_file(const char *from, const char *to)
{
	char buf[4096];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT |
						    O_TRUNC, 0600);
	ssize_t n;

	test_assert(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		test_assert(write(out, buf, (size_t)n) == n);
	i_close_fd(&in);
	i_close_fd(&out);
}

/* A lost history file: the history starts at moat.index (older modseqs
   get 0, the caller's fallback); a stale one (older than moat.index) is
   not used; torn bytes past the counted entries are ignored. */
static void test_history_lost_stale_torn(void)
{
	const char *dir = new_dir("lost");
	char path[MODSEQ_TEST_PATH_MAX], copy[MODSEQ_TEST_PATH_MAX + 8];
	struct mail_index *index = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct seen_uids s;

	build(index, 40);
	sync_view(view);
	uint64_t m0 = expunge(index, 3, 3);
	churn_until_rotated(index, view, 1);
	/* torn: bytes after the last entry the header counts */
	path_of(dir, MAIL_INDEX_MODSEQ_FILE_NAME, path);
	int fd = open(path, O_WRONLY | O_APPEND);
	test_assert(fd >= 0 && write(fd, "garbage!garbage!", 16) == 16);
	i_close_fd(&fd);
	snprintf(copy, sizeof(copy), "%s.old", path);
	copy_file(path, copy);
	uint64_t m1 = expunge(index, 4, 4);
	churn_until_rotated(index, view, 1);
	mail_index_view_close(&view);
	mail_index_close(&index);

	index = open_dir(dir);
	view = mail_index_view_open(index);
	static const uint32_t both[] = { 3, 4 };
	test_assert(since(view, m0 - 1, &s) == 1 && only(&s, both, 2));
	mail_index_view_close(&view);
	mail_index_close(&index);

	/* stale: the file from before the second expunge */
	test_assert(rename(copy, path) == 0);
	index = open_dir(dir);
	view = mail_index_view_open(index);
	test_assert(mail_index_view_history_base(view) > m1);
	test_assert(since(view, m0 - 1, &s) == 0);
	mail_index_view_close(&view);
	mail_index_close(&index);

	/* lost: the same, and the next checkpoint starts a new one */
	test_assert(unlink(path) == 0);
	index = open_dir(dir);
	view = mail_index_view_open(index);
	uint64_t base = mail_index_view_history_base(view);
	test_assert(base > m1 && since(view, m1, &s) == 0);
	uint64_t m2 = expunge(index, 30, 31);
	churn_until_rotated(index, view, 1);
	static const uint32_t last[] = { 30, 31 };
	test_assert(since(view, base, &s) == 1 && only(&s, last, 2));
	mail_index_view_close(&view);
	mail_index_close(&index);
	index = open_dir(dir);
	view = mail_index_view_open(index);
	test_assert(since(view, m2 - 1, &s) == 1 && only(&s, last, 2));
	test_assert(since(view, m1, &s) == 0);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A reset drops messages without expunge records: the history restarts
   above every modseq before it, and the reset has a modseq of its own. */
static void test_history_reset(void)
{
	const char *dir = new_dir("reset"), *error;
	struct mail_index *index = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct mail_index_status st;
	struct seen_uids s;

	build(index, 10);
	sync_view(view);
	uint64_t m0 = expunge(index, 2, 2);
	sync_view(view);
	mail_index_view_get_status(view, &st);
	test_assert(mail_index_reset(index, st.uidvalidity, 11, &error) == 0);
	sync_view(view);
	struct mail_index_status after;
	mail_index_view_get_status(view, &after);
	test_assert(after.highest_modseq > st.highest_modseq);
	test_assert(since(view, m0 - 1, &s) == 0);
	test_assert(since(view, st.highest_modseq, &s) == 0);
	test_assert(since(view, after.highest_modseq, &s) == 1 &&
		    only(&s, NULL, 0));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A handle whose view lagged a whole log file behind (reload) or is
   still on the old state answers from what its view has: nothing past
   its own highest modseq. */
static void test_history_lagging_handle(void)
{
	const char *dir = new_dir("lag");
	struct mail_index *a = open_dir(dir), *b;
	struct mail_index_view *va = mail_index_view_open(a), *vb;
	struct seen_uids s;

	build(a, 60);
	sync_view(va);
	b = open_dir(dir);
	vb = mail_index_view_open(b);
	uint64_t m0 = expunge(b, 10, 12);
	/* a has not synced: its view knows of no expunge yet */
	test_assert(since(va, m0 - 1, &s) == 1 && only(&s, NULL, 0));
	churn_until_rotated(b, vb, 1);
	churn_until_rotated(b, vb, 1);
	uint64_t m1 = expunge(b, 20, 20);
	sync_view(vb);
	sync_view(va);
	static const uint32_t all[] = { 10, 11, 12, 20 };
	test_assert(since(va, m0 - 1, &s) == 1 && only(&s, all, 4));
	test_assert(since(va, m1 - 1, &s) == 1 && only(&s, all + 3, 1));
	mail_index_view_close(&vb);
	mail_index_close(&b);
	mail_index_view_close(&va);
	mail_index_close(&a);
}

static void set_flag(struct mail_index *index, uint32_t uid)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);

	mail_index_update_flags(t, uid, uid, MAIL_FLAGGED, 0, 0, 0);
	commit(&t);
}

static int changed(struct mail_index_view *view, uint64_t modseq,
		   struct seen_uids *s)
{
	const char *error;

	memset(s, 0, sizeof(*s));
	return mail_index_view_changed_since(view, modseq, collect, s, &error);
}

/* The change history names every message changed or appended after a
   modseq, across rotation and a new handle, and nothing older; a lost
   file makes it answer "look at every record" for older modseqs. */
static void test_changes_history(void)
{
	const char *dir = new_dir("changes");
	char path[MODSEQ_TEST_PATH_MAX];
	struct mail_index *index = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct mail_index_status st;
	struct seen_uids s;

	build(index, 100);
	sync_view(view);
	mail_index_view_get_status(view, &st);
	uint64_t m0 = st.highest_modseq;
	set_flag(index, 40);
	set_flag(index, 41);
	set_flag(index, 41);            /* no change: no new run */
	churn_until_rotated(index, view, 7);
	mail_index_view_get_status(view, &st);
	uint64_t m1 = st.highest_modseq;
	set_flag(index, 90);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_append(t, 101, 0, 0, 100, 1700000000);
	commit(&t);
	sync_view(view);
	mail_index_view_close(&view);
	mail_index_close(&index);

	index = open_dir(dir);
	view = mail_index_view_open(index);
	static const uint32_t all[] = { 7, 40, 41, 90, 101 };
	test_assert(changed(view, m0, &s) == 1);
	/* runs may repeat (uid 7 many times): as a set */
	for (unsigned int i = 0; i < N_ELEMENTS(all); i++)
		test_assert(s.uid[all[i]]);
	test_assert(!s.uid[1] && !s.uid[39] && !s.uid[42] && !s.uid[100]);
	test_assert(changed(view, m1, &s) == 1);
	test_assert(s.uid[90] && s.uid[101] && !s.uid[40] && !s.uid[7]);
	mail_index_view_close(&view);
	mail_index_close(&index);

	path_of(dir, MAIL_INDEX_CHANGES_FILE_NAME, path);
	test_assert(unlink(path) == 0);
	index = open_dir(dir);
	view = mail_index_view_open(index);
	test_assert(changed(view, m0, &s) == 0);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A modseq floor (a folder another server served): the commit's modseq
   jumps to it, its own changes are in the histories, everything before
   is not (an older modseq gets "unknown", in this handle, in a handle
   that replays the log and after a checkpoint), and later commits
   count on from it. */
static void test_modseq_floor(void)
{
	const char *dir = new_dir("floor");
	struct mail_index *index = open_dir(dir), *other = open_dir(dir);
	struct mail_index_view *view = mail_index_view_open(index);
	struct mail_index_view *oview = mail_index_view_open(other);
	const uint64_t floor = 1ULL << 32;
	struct seen_uids s;

	build(index, 10);
	uint64_t m0 = expunge(index, 3, 3);
	sync_view(oview);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_append(t, 11, 0, 0, 100, 1700000000);
	mail_index_raise_modseq(t, floor);
	uint64_t mf = commit(&t);
	test_assert(mf == floor);
	t = mail_index_transaction_begin(index);
	mail_index_raise_modseq(t, 5);  /* below: no jump, still a change */
	test_assert(commit(&t) == floor + 1);
	uint64_t m1 = expunge(index, 4, 4);
	test_assert(m1 == floor + 2);

	for (int pass = 0; pass < 3; pass++) {
		struct mail_index_view *v = pass == 1 ? oview : view;
		struct mail_index_status st;

		sync_view(v);
		mail_index_view_get_status(v, &st);
		/* pass 2: after the churn of uid 1 */
		test_assert(pass == 2 ? st.highest_modseq > m1 :
			    st.highest_modseq == m1);
		test_assert(mail_index_view_history_base(v) == floor - 1);
		test_assert(since(v, m0 - 1, &s) == 0);
		test_assert(changed(v, m0, &s) == 0);
		test_assert(since(v, floor - 1, &s) == 1 &&
			    only(&s, (const uint32_t[]){ 4 }, 1));
		test_assert(changed(v, floor - 1, &s) == 1 && s.uid[11] &&
			    !s.uid[2] && s.uid[1] == (pass == 2));
		if (pass == 1) {
			/* a checkpoint, then a handle loading moat.index */
			churn_until_rotated(index, view, 1);
			mail_index_view_close(&view);
			mail_index_close(&index);
			index = open_dir(dir);
			view = mail_index_view_open(index);
		}
	}
	mail_index_view_close(&oview);
	mail_index_close(&other);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

TEST_MAIN(TEST(test_history_exact_runs), TEST(test_modseq_floor), TEST(test_changes_history), TEST(test_history_across_rotation),
	  TEST(test_history_lost_stale_torn), TEST(test_history_reset),
	  TEST(test_history_lagging_handle))
