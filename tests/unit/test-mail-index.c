/* Unit tests for mail-index: open/create, transactions, views and their
   sync reports, keywords, checkpoints, rotation, reset, damaged files. */
#include "test-common.h"
#include "mail-index.h"
#include "mail-transaction-log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct events {
	unsigned int expunges, flag_changes, appends, validity;
	uint32_t last_seq, last_uid;
};

static void ev_expunge(void *ctx, uint32_t seq, uint32_t uid)
{
	struct events *ev = ctx;
	ev->expunges++;
	ev->last_seq = seq;
	ev->last_uid = uid;
}

static void ev_flags(void *ctx, uint32_t seq, uint32_t uid)
{
	struct events *ev = ctx;
	ev->flag_changes++;
	ev->last_seq = seq;
	ev->last_uid = uid;
}

static void ev_append(void *ctx, uint32_t seq, uint32_t uid)
{
	struct events *ev = ctx;
	ev->appends++;
	ev->last_seq = seq;
	ev->last_uid = uid;
}

static void ev_validity(void *ctx, uint32_t uidvalidity ATTR_UNUSED)
{
	struct events *ev = ctx;
	ev->validity++;
}

static const struct mail_index_sync_callbacks ev_callbacks = {
	ev_expunge, ev_flags, ev_append, ev_validity
};

static const char *new_dir(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	if (mkdir(path, 0700) < 0)
		abort();
	return path;
}

static void sync_view(struct mail_index_view *view, struct events *ev)
{
	const char *error;

	memset(ev, 0, sizeof(*ev));
	test_assert(mail_index_view_sync(view, &ev_callbacks, ev, &error) == 0);
}

static uint32_t append_n(struct mail_index *index, unsigned int n,
			 enum mail_flags flags)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	struct mail_index_commit_result res;
	const char *error;

	for (unsigned int i = 0; i < n; i++)
		mail_index_append(t, 0, flags, 0, 1000 + i, 1700000000 + i);
	test_assert(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
						  &res, &error) == 0);
	test_assert(res.last_uid - res.first_uid + 1 == n);
	return res.first_uid;
}

static void test_create_append_flags_expunge(void)
{
	const char *dir = new_dir("basic"), *error;
	struct mail_index *index;
	struct mail_index_status st;
	struct events ev;

	test_assert(mail_index_open(dir, 0, &index, &error) == 0);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	mail_index_view_get_status(view, &st);
	test_assert(st.uidvalidity != 0);
	test_assert_int(st.next_uid, 1);
	test_assert_int(mail_index_view_count(view), 0);

	test_assert_int(append_n(index, 3, MAIL_SEEN), 1);
	/* The view does not move until it syncs. */
	test_assert_int(mail_index_view_count(view), 0);
	sync_view(view, &ev);
	test_assert_int(ev.appends, 3);
	test_assert_int(mail_index_view_count(view), 3);
	const struct mail_index_record *rec = mail_index_view_lookup(view, 2);
	test_assert_int(rec->uid, 2);
	test_assert_int(rec->flags, MAIL_SEEN);
	test_assert_int(rec->size, 1001);
	test_assert_int(mail_index_view_uid_to_seq(view, 3), 3);
	test_assert_int(mail_index_view_uid_to_seq(view, 4), 0);

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	struct mail_index_commit_result res;
	mail_index_update_flags(t, 2, 3, MAIL_FLAGGED, MAIL_SEEN, 0, 0);
	test_assert(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_ALWAYS,
						  &res, &error) == 0);
	test_assert_int(res.modseq, 2);
	sync_view(view, &ev);
	test_assert_int(ev.flag_changes, 2);
	mail_index_view_get_status(view, &st);
	test_assert_int(st.seen_count, 1);
	test_assert_int(st.first_unseen_uid, 2);
	test_assert_int(st.highest_modseq, 2);
	test_assert_int(mail_index_view_lookup(view, 3)->modseq, 2);

	t = mail_index_transaction_begin(index);
	mail_index_expunge(t, 1, 2);
	test_assert(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
						  NULL, &error) == 0);
	sync_view(view, &ev);
	test_assert_int(ev.expunges, 2);
	test_assert_int(ev.last_seq, 1);
	test_assert_int(mail_index_view_count(view), 1);
	test_assert_int(mail_index_view_lookup(view, 1)->uid, 3);
	test_assert(mail_index_view_check(view, &error));

	/* uids are never reused */
	test_assert_int(append_n(index, 1, 0), 4);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void test_reopen_and_two_handles(void)
{
	const char *dir = new_dir("reopen"), *error;
	struct mail_index *a, *b;
	struct events ev;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &a, &error) == 1);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &b, &error) == 1);
	struct mail_index_view *va = mail_index_view_open(a);
	struct mail_index_view *vb = mail_index_view_open(b);
	append_n(a, 10, 0);
	append_n(b, 5, MAIL_DRAFT);   /* b's tail catches up first */
	sync_view(va, &ev);
	test_assert_int(ev.appends, 15);
	sync_view(vb, &ev);
	test_assert_int(ev.appends, 15);
	test_assert_int(mail_index_view_lookup(vb, 15)->uid, 15);
	test_assert_int(mail_index_view_lookup(vb, 15)->flags, MAIL_DRAFT);
	test_assert(mail_index_checkpoint(a, &error) == 0);
	mail_index_view_close(&va);
	mail_index_close(&a);

	test_assert(mail_index_open(dir, 0, &a, &error) == 1);
	va = mail_index_view_open(a);
	test_assert_int(mail_index_view_count(va), 15);
	/* A sync with nothing new reports nothing. */
	sync_view(va, &ev);
	test_assert_int(ev.appends + ev.expunges + ev.flag_changes, 0);
	mail_index_view_close(&va);
	mail_index_view_close(&vb);
	mail_index_close(&a);
	mail_index_close(&b);
}

static void test_readonly(void)
{
	const char *dir = new_dir("ro"), *error;
	struct mail_index *index, *ro;
	struct events ev;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_READONLY, &ro, &error) == 0);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	append_n(index, 3, 0);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_READONLY, &ro, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(ro);
	test_assert_int(mail_index_view_count(view), 3);
	append_n(index, 2, 0);
	sync_view(view, &ev);
	test_assert_int(ev.appends, 2);
	struct mail_index_transaction *t = mail_index_transaction_begin(ro);
	mail_index_expunge(t, 1, 1);
	test_assert(mail_index_transaction_commit(&t, 0, NULL, &error) < 0);
	mail_index_view_close(&view);
	mail_index_close(&ro);
	mail_index_close(&index);
}

static void test_keywords(void)
{
	const char *dir = new_dir("kw"), *error;
	struct mail_index *a, *b;
	unsigned int idx, idx2;
	struct events ev;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &a, &error) == 1);
	test_assert(mail_index_open(dir, 0, &b, &error) == 1);
	struct mail_index_view *va = mail_index_view_open(a);
	test_assert(mail_index_keyword_define(a, "$Junk", &idx, &error) == 0);
	test_assert(mail_index_keyword_define(b, "$junk", &idx2, &error) == 0);
	test_assert_int(idx, idx2);
	test_assert(mail_index_keyword_define(b, "Work", &idx2, &error) == 0);
	test_assert_int(idx2, idx + 1);
	append_n(a, 2, 0);
	struct mail_index_transaction *t = mail_index_transaction_begin(a);
	mail_index_update_flags(t, 1, 1, 0, 0, 1U << idx2, 0);
	test_assert(mail_index_transaction_commit(&t, 0, NULL, &error) == 0);
	sync_view(va, &ev);
	test_assert(mail_index_keyword_lookup(va, "WORK", &idx) && idx == idx2);
	test_assert_str(mail_index_keyword_name(va, idx2), "Work");
	test_assert_int(mail_index_view_lookup(va, 1)->keywords, 1U << idx2);
	test_assert(mail_index_keyword_define(a, "", &idx, &error) < 0);
	mail_index_view_close(&va);
	mail_index_close(&a);
	/* Names survive a checkpoint and reopen. */
	test_assert(mail_index_checkpoint(b, &error) == 0);
	test_assert(mail_index_open(dir, 0, &a, &error) == 1);
	va = mail_index_view_open(a);
	test_assert_str(mail_index_keyword_name(va, idx2), "Work");
	mail_index_view_close(&va);
	mail_index_close(&a);
	mail_index_close(&b);
}

static void test_explicit_uids(void)
{
	const char *dir = new_dir("uids"), *error;
	struct mail_index *index;
	struct mail_index_commit_result res;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_append(t, 100, 0, 0, 1, 1);
	mail_index_append(t, 0, 0, 0, 1, 1);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	test_assert_int(res.first_uid, 100);
	test_assert_int(res.last_uid, 101);
	t = mail_index_transaction_begin(index);
	mail_index_append(t, 50, 0, 0, 1, 1);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) < 0);
	t = mail_index_transaction_begin(index);
	mail_index_update_header(t, 0, 500);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	test_assert_int(append_n(index, 1, 0), 500);
	mail_index_close(&index);
}

static void test_rotation_and_lagging_reader(void)
{
	const char *dir = new_dir("rotate"), *error;
	struct mail_index *a, *b;
	struct events ev;
	struct stat st;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &a, &error) == 1);
	test_assert(mail_index_open(dir, 0, &b, &error) == 1);
	mail_index_set_limits(a, 4096, 1024);
	struct mail_index_view *va = mail_index_view_open(a);
	struct mail_index_view *vb = mail_index_view_open(b);
	/* Two rotations while b does not look. */
	for (unsigned int round = 0; round < 2; round++) {
		for (unsigned int i = 0; i < 100; i++)
			append_n(a, 1, 0);
		sync_view(va, &ev);
		test_assert_int(ev.appends, 100);
	}
	test_assert(stat(dir, &st) == 0);
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, MAIL_INDEX_LOG2_FILE_NAME);
	/* Each rotated-out log was more than half of moat.index: no .log.2
	   (doc/index-format.md "Rotation"); test-mail-index-ckpt keeps one. */
	test_assert(stat(path, &st) < 0);
	/* b lost the chain (its file is gone): it reloads and diffs. */
	sync_view(vb, &ev);
	test_assert_int(ev.appends, 200);
	test_assert_int(mail_index_view_count(vb), 200);
	test_assert(mail_index_view_check(vb, &error));
	/* One rotation behind: b follows .log.2 to .log. */
	for (unsigned int i = 0; i < 100; i++)
		append_n(a, 1, MAIL_SEEN);
	sync_view(va, &ev);
	sync_view(vb, &ev);
	test_assert_int(ev.appends, 100);
	test_assert_int(mail_index_view_count(vb), 300);
	mail_index_view_close(&va);
	mail_index_close(&a);
	test_assert(mail_index_open(dir, 0, &a, &error) == 1);
	test_assert(!mail_index_was_rebuilt(a));
	va = mail_index_view_open(a);
	test_assert_int(mail_index_view_count(va), 300);
	test_assert(mail_index_view_check(va, &error));
	mail_index_view_close(&va);
	mail_index_view_close(&vb);
	mail_index_close(&a);
	mail_index_close(&b);
}

static void test_reset(void)
{
	const char *dir = new_dir("reset"), *error;
	struct mail_index *a, *b;
	struct mail_index_status st;
	struct events ev;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &a, &error) == 1);
	test_assert(mail_index_open(dir, 0, &b, &error) == 1);
	struct mail_index_view *vb = mail_index_view_open(b);
	append_n(a, 4, 0);
	sync_view(vb, &ev);
	test_assert(mail_index_reset(a, 12345, 10, &error) == 0);
	sync_view(vb, &ev);
	test_assert_int(ev.expunges, 4);
	test_assert_int(ev.validity, 1);
	mail_index_view_get_status(vb, &st);
	test_assert_int(st.uidvalidity, 12345);
	test_assert_int(st.next_uid, 10);
	test_assert_int(append_n(a, 1, 0), 10);
	sync_view(vb, &ev);
	test_assert_int(ev.appends, 1);
	mail_index_view_close(&vb);
	mail_index_close(&a);
	mail_index_close(&b);
}

static void corrupt_file(const char *dir, const char *name, off_t offset,
			 off_t truncate_to)
{
	char path[600];
	unsigned char c;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR);
	test_assert(fd >= 0);
	if (truncate_to >= 0) {
		test_assert(ftruncate(fd, truncate_to) == 0);
	} else {
		test_assert(pread(fd, &c, 1, offset) == 1);
		c ^= 0x5a;
		test_assert(pwrite(fd, &c, 1, offset) == 1);
	}
	close(fd);
}

static void test_damaged_index(void)
{
	const char *dir = new_dir("damaged"), *error;
	struct mail_index *index;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	append_n(index, 20, MAIL_SEEN);
	test_assert(mail_index_checkpoint(index, &error) == 0);
	mail_index_close(&index);

	/* A flipped header byte and a truncated file: rebuilt from the log. */
	for (int i = 0; i < 2; i++) {
		if (i == 0)
			corrupt_file(dir, MAIL_INDEX_FILE_NAME, 12, -1);
		else
			corrupt_file(dir, MAIL_INDEX_FILE_NAME, 0, 100);
		test_assert(mail_index_open(dir, 0, &index, &error) == 1);
		struct mail_index_view *view = mail_index_view_open(index);
		test_assert_int(mail_index_view_count(view), 20);
		test_assert(mail_index_view_check(view, &error));
		mail_index_view_close(&view);
		mail_index_close(&index);
	}
	/* A garbled log header: a new log continues after the index. */
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	test_assert(mail_index_checkpoint(index, &error) == 0);
	mail_index_view_close(&view);
	mail_index_close(&index);
	corrupt_file(dir, MAIL_INDEX_LOG_FILE_NAME, 4, -1);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	test_assert(mail_index_was_rebuilt(index));
	view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 20);
	test_assert_int(append_n(index, 1, 0), 21);
	mail_index_view_close(&view);
	test_assert(mail_index_checkpoint(index, &error) == 0);

	/* The log deleted under an open handle: its next commit starts a
	   new log instead of writing into the lost file. */
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(unlink(path) == 0);
	test_assert_int(append_n(index, 1, 0), 22);
	mail_index_close(&index);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 22);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void test_many_records(void)
{
	const char *dir = new_dir("many"), *error;
	struct mail_index *index;
	struct events ev;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	append_n(index, 20000, 0);
	sync_view(view, &ev);
	test_assert_int(ev.appends, 20000);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	for (uint32_t uid = 2; uid <= 20000; uid += 2)
		mail_index_expunge(t, uid, uid);
	test_assert(mail_index_transaction_commit(&t, 0, NULL, &error) == 0);
	sync_view(view, &ev);
	test_assert_int(ev.expunges, 10000);
	test_assert_int(mail_index_view_count(view), 10000);
	test_assert_int(mail_index_view_uid_to_seq(view, 19999), 10000);
	test_assert_int(mail_index_view_uid_to_seq_ge(view, 2), 2);
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* Several processes append, flag and sync (checkpointing and rotating
   the log often) at once: no uid is lost or given twice, every view stays
   consistent. */
#define CONC_PROCS 4
#define CONC_APPENDS 300

static int conc_child(const char *dir)
{
	struct mail_index *index;
	const char *error;
	struct mail_index_commit_result res;

	if (mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) != 1)
		return 1;
	mail_index_set_limits(index, 8192, 1024);
	struct mail_index_view *view = mail_index_view_open(index);
	for (unsigned int i = 0; i < CONC_APPENDS; i++) {
		struct mail_index_transaction *t = mail_index_transaction_begin(index);
		mail_index_append(t, 0, 0, 0, i, i);
		if (mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER, &res, &error) < 0)
			return 2;
		t = mail_index_transaction_begin(index);
		mail_index_update_flags(t, res.first_uid, res.first_uid, MAIL_SEEN, 0, 0, 0);
		if (mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER, NULL, &error) < 0)
			return 3;
		if (i % 3 == 0) {
			if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
				return 4;
			uint32_t seq = mail_index_view_uid_to_seq(view, res.first_uid);
			if (seq == 0 || !mail_index_view_check(view, &error))
				return 5;
		}
	}
	mail_index_view_close(&view);
	mail_index_close(&index);
	return 0;
}

/* A writer that never opens a view still keeps the log bounded. */
static void test_viewless_writer_rotates(void)
{
	const char *dir = new_dir("viewless"), *error;
	struct mail_index *index;
	struct stat st;
	char path[700];

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	mail_index_set_limits(index, 4096, 1024);
	for (unsigned int i = 0; i < 500; i++)
		append_n(index, 1, 0);
	mail_index_close(&index);
	snprintf(path, sizeof(path), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	/* its records: the file has zeros written ahead of them */
	test_assert(stat(path, &st) == 0 && test_log_used(path) < 3 * 4096);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 500);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void test_concurrent_processes(void)
{
	const char *dir = new_dir("conc"), *error;
	struct mail_index *index;
	pid_t pids[CONC_PROCS];

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	mail_index_close(&index);
	for (unsigned int i = 0; i < CONC_PROCS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(conc_child(dir));
	}
	for (unsigned int i = 0; i < CONC_PROCS; i++) {
		int status;
		test_assert(waitpid(pids[i], &status, 0) == pids[i]);
		test_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	struct mail_index_status st;
	mail_index_view_get_status(view, &st);
	test_assert_int(st.messages_count, CONC_PROCS * CONC_APPENDS);
	test_assert_int(st.seen_count, CONC_PROCS * CONC_APPENDS);
	test_assert_int(st.next_uid, CONC_PROCS * CONC_APPENDS + 1);
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

TEST_MAIN(TEST(test_create_append_flags_expunge), TEST(test_reopen_and_two_handles), TEST(test_readonly),
	  TEST(test_keywords), TEST(test_explicit_uids),
	  TEST(test_rotation_and_lagging_reader), TEST(test_reset),
	  TEST(test_damaged_index), TEST(test_many_records),
	  TEST(test_viewless_writer_rotates), TEST(test_concurrent_processes))
