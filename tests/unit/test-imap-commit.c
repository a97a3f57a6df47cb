/* Unit tests: imap/imap-commit.c, the group commit of APPENDs. */
#include "test-common.h"
#include "imap-common.h"
#include "imap-commit.h"
#include "ioloop.h"
#include "mailbox-list.h"

#include <dirent.h>
#include <sys/stat.h>

#define COMMIT_MSG "Subject: group\r\n\r\nbody\r\n"

struct commit_result {
	struct imap_commit_req req;
	unsigned int calls;
	enum imap_commit_result result;
	uint32_t first_uid;
	unsigned int queue_then;   /* imap_commit_queue_count() at the answer */
};

static struct imap_user commit_user;
static struct moat_settings *commit_set;
/* callbacks run so far, and the count at which one stops the loop */
static unsigned int commit_calls, commit_stop_at;

/* A batch not done after this long is stuck: fail the test. */
#define COMMIT_GUARD_MSECS 20000

static const char *commit_root(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static void commit_user_init(const char *root)
{
	memset(&commit_user, 0, sizeof(commit_user));
	commit_set = moat_settings_defaults();
	commit_user.ioloop = io_loop_create();
	commit_user.set = commit_set;
	commit_user.username = "testuser";
	commit_user.mail_root = root;
	commit_calls = 0;
	commit_stop_at = 0;
	imap_commit_init(&commit_user);
}

static void commit_user_deinit(void)
{
	imap_commit_deinit(&commit_user);
	io_loop_destroy(&commit_user.ioloop);
	moat_settings_free(&commit_set);
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

static struct mailbox *commit_open(const char *root, const char *name)
{
	struct mailbox *box;
	const char *error;

	test_assert(mailbox_open(root, name, MAILBOX_OPEN_QUOTA, &box,
				 &error) == 1);
	return box;
}

/* An APPEND of count messages staged on box. */
static struct mailbox_append_multi *commit_stage(struct mailbox *box,
						 unsigned int count)
{
	struct mailbox_append_multi *save =
		mailbox_append_multi_begin_group(box);
	const char *error;

	for (unsigned int i = 0; i < count; i++) {
		test_assert(mailbox_append_multi_next(save, 0, 0, (time_t)-1,
						      &error) == 0);
		test_assert(mailbox_append_multi_write(save, COMMIT_MSG,
			strlen(COMMIT_MSG), &error) == 0);
		test_assert(mailbox_append_multi_end(save, &error) == 0);
	}
	return save;
}

static void commit_cb(void *context, enum imap_commit_result result,
		      uint32_t first_uid)
{
	struct commit_result *res = context;

	/* the request is no longer queued when it is answered */
	test_assert(!res->req.queued);
	res->calls++;
	res->queue_then = imap_commit_queue_count(&commit_user);
	res->result = result;
	res->first_uid = first_uid;
	if (++commit_calls == commit_stop_at)
		io_loop_stop(commit_user.ioloop);
}

static void commit_guard(void *context)
{
	struct timeout **to = context;

	*to = NULL;
	test_assert(!"the group commit never answered");
	io_loop_stop(commit_user.ioloop);
}

/* Run the loop until calls callbacks in all have run. */
static void commit_run_until(unsigned int calls)
{
	static struct timeout *to;

	if (commit_calls >= calls)
		return;
	commit_stop_at = calls;
	to = timeout_add(commit_user.ioloop, COMMIT_GUARD_MSECS, commit_guard,
			 &to);
	io_loop_run(commit_user.ioloop);
	timeout_remove(&to);
	commit_stop_at = 0;
}

static void commit_queue(struct mailbox *box, unsigned int count,
			 struct commit_result *res)
{
	struct mailbox_append_multi *save = commit_stage(box, count);

	imap_commit_queue(&commit_user, &res->req, box, &save, commit_cb, res);
	test_assert(save == NULL);
	test_assert(res->req.queued);
}

static uint32_t box_count(const char *root, const char *name)
{
	struct mailbox *box = commit_open(root, name);
	uint32_t count = mailbox_get_count(box);

	mailbox_close(&box);
	return count;
}

/* Two sessions' handles of INBOX and one of another folder: the queue
   answers nothing until the loop has run, then gives consecutive UIDs
   per folder in queue order. */
static void test_commit_groups(void)
{
	const char *root = commit_root("groups"), *error;
	enum mailbox_list_error code;
	struct commit_result a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

	commit_user_init(root);
	struct mailbox *inbox1 = commit_open(root, "INBOX");
	struct mailbox *inbox2 = commit_open(root, "INBOX");
	test_assert(mailbox_list_create(root, "Other", &code, &error) == 0);
	struct mailbox *other = commit_open(root, "Other");

	commit_queue(inbox1, 1, &a);
	commit_queue(other, 1, &c);
	commit_queue(inbox2, 3, &b);      /* a MULTIAPPEND */
	commit_queue(inbox1, 1, &d);
	test_assert_int(imap_commit_queue_count(&commit_user), 4);
	/* nothing is visible, nothing answered before the loop runs */
	test_assert_int(dir_file_count(root, "cur"), 0);
	test_assert_int(a.calls + b.calls + c.calls + d.calls, 0);

	/* the syncs run on the thread: the answers come from the loop */
	commit_run_until(4);

	test_assert_int(imap_commit_queue_count(&commit_user), 0);
	test_assert_int(a.calls, 1);
	test_assert_int(b.calls, 1);
	test_assert_int(c.calls, 1);
	test_assert_int(d.calls, 1);
	test_assert_int(a.result, IMAP_COMMIT_OK);
	test_assert_int(b.result, IMAP_COMMIT_OK);
	test_assert_int(c.result, IMAP_COMMIT_OK);
	test_assert_int(d.result, IMAP_COMMIT_OK);
	test_assert_int(a.first_uid, 1);
	test_assert_int(b.first_uid, 2);   /* 2:4 */
	test_assert_int(d.first_uid, 5);
	test_assert_int(c.first_uid, 1);
	test_assert_int(dir_file_count(root, "cur"), 5);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	test_assert_int(dir_file_count(root, ".Other/cur"), 1);

	/* every handle sees them; so does a new one */
	test_assert(mailbox_sync(inbox2, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(inbox2), 5);
	test_assert_int(mailbox_msg_uid(inbox2, 3), 3);
	test_assert(mailbox_sync(inbox1, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(inbox1), 5);
	mailbox_close(&inbox1);
	mailbox_close(&inbox2);
	mailbox_close(&other);
	test_assert_int(box_count(root, "INBOX"), 5);
	test_assert_int(box_count(root, "Other"), 1);
	commit_user_deinit();
}

/* A cancelled request (its client went away) is dropped with its
   staged files and never answered; the others are committed. */
static void test_commit_cancel(void)
{
	const char *root = commit_root("cancel");
	struct commit_result a = { 0 }, b = { 0 }, c = { 0 };

	commit_user_init(root);
	struct mailbox *box1 = commit_open(root, "INBOX");
	struct mailbox *box2 = commit_open(root, "INBOX");
	commit_queue(box1, 2, &a);
	commit_queue(box2, 1, &b);
	commit_queue(box1, 1, &c);
	test_assert_int(dir_file_count(root, "tmp"), 4);
	imap_commit_cancel(&commit_user, &a.req);
	test_assert(!a.req.queued);
	test_assert_int(dir_file_count(root, "tmp"), 2);
	/* the last one too: the tail must follow */
	imap_commit_cancel(&commit_user, &c.req);
	test_assert_int(imap_commit_queue_count(&commit_user), 1);
	/* not queued: nothing happens */
	imap_commit_cancel(&commit_user, &c.req);
	struct commit_result e = { 0 };
	commit_queue(box1, 1, &e);
	imap_commit_flush(&commit_user);

	test_assert_int(a.calls, 0);
	test_assert_int(c.calls, 0);
	test_assert_int(b.calls, 1);
	test_assert_int(e.calls, 1);
	test_assert_int(b.first_uid, 1);
	test_assert_int(e.first_uid, 2);
	test_assert_int(dir_file_count(root, "cur"), 2);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	mailbox_close(&box1);
	mailbox_close(&box2);
	test_assert_int(box_count(root, "INBOX"), 2);
	commit_user_deinit();
}

/* imap_commit_batch_max bounds what waits: the next request commits
   the queue first, and is itself only queued. */
static void test_commit_limit(void)
{
	const char *root = commit_root("limit");
	struct commit_result r[5];

	memset(r, 0, sizeof(r));
	commit_user_init(root);
	commit_set->imap_commit_batch_max = 2;
	struct mailbox *box = commit_open(root, "INBOX");
	commit_queue(box, 1, &r[0]);
	commit_queue(box, 1, &r[1]);
	test_assert_int(imap_commit_queue_count(&commit_user), 2);
	commit_queue(box, 1, &r[2]);
	test_assert_int(imap_commit_queue_count(&commit_user), 1);
	test_assert_int(r[0].calls, 1);
	test_assert_int(r[1].calls, 1);
	test_assert_int(r[2].calls, 0);
	test_assert_int(r[1].first_uid, 2);
	test_assert_int(dir_file_count(root, "cur"), 2);
	commit_queue(box, 1, &r[3]);
	commit_queue(box, 1, &r[4]);
	test_assert_int(imap_commit_queue_count(&commit_user), 1);
	test_assert_int(r[3].calls, 1);
	imap_commit_flush(&commit_user);
	for (unsigned int i = 0; i < N_ELEMENTS(r); i++) {
		test_assert_int(r[i].calls, 1);
		test_assert_int(r[i].result, IMAP_COMMIT_OK);
		test_assert_int(r[i].first_uid, i + 1);
	}
	mailbox_close(&box);
	test_assert_int(box_count(root, "INBOX"), 5);
	commit_user_deinit();
}

/* The quota counts what the requests before it in the same batch add:
   the one that does not fit is refused alone. */
static void test_commit_quota(void)
{
	const char *root = commit_root("quota"), *error;
	struct commit_result a = { 0 }, b = { 0 }, c = { 0 };

	commit_user_init(root);
	struct mailbox *box = commit_open(root, "INBOX");
	commit_user.quota.messages = 3;
	test_assert(mailbox_quota_set_limits(root, &commit_user.quota,
					     &error) == 0);
	commit_queue(box, 2, &a);
	commit_queue(box, 2, &b);    /* 4 > 3 */
	commit_queue(box, 1, &c);    /* 3 fits */
	imap_commit_flush(&commit_user);
	test_assert_int(a.result, IMAP_COMMIT_OK);
	test_assert_int(b.result, IMAP_COMMIT_OVERQUOTA);
	test_assert_int(b.first_uid, 0);
	test_assert_int(c.result, IMAP_COMMIT_OK);
	test_assert_int(c.first_uid, 3);
	test_assert_int(dir_file_count(root, "cur"), 3);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	mailbox_close(&box);
	commit_user_deinit();
}

struct commit_async_ctx {
	struct mailbox *box;
	struct commit_result *first, *second;
	bool busy, answered;
	unsigned int queued;
};

/* Deferred after the commit's own: the batch has started by now. */
static void commit_async_check(void *context)
{
	struct commit_async_ctx *ctx = context;

	ctx->busy = imap_commit_busy(&commit_user);
	ctx->answered = ctx->first->calls > 0;
	/* arrives while the batch syncs: waits for the next one */
	commit_queue(ctx->box, 1, ctx->second);
	ctx->queued = imap_commit_queue_count(&commit_user);
}

/* The loop goes on while the thread syncs: the batch is in progress and
   unanswered when the loop next runs, a request queued meanwhile forms
   the next batch (riding along with the first one's final syncfs: it
   is no longer in the queue when the first is answered), and both are
   answered with consecutive UIDs. */
static void test_commit_async(void)
{
	const char *root = commit_root("async");
	struct commit_result a = { 0 }, b = { 0 };

	commit_user_init(root);
	struct mailbox *box = commit_open(root, "INBOX");
	struct commit_async_ctx ctx = { .box = box, .first = &a, .second = &b };
	commit_queue(box, 1, &a);
	(void)io_loop_defer(commit_user.ioloop, commit_async_check, &ctx);
	commit_run_until(2);
	test_assert(ctx.busy);
	test_assert(!ctx.answered);
	test_assert_int(ctx.queued, 1);
	test_assert(!imap_commit_busy(&commit_user));
	test_assert_int(a.calls, 1);
	test_assert_int(b.calls, 1);
	test_assert_int(a.result, IMAP_COMMIT_OK);
	test_assert_int(b.result, IMAP_COMMIT_OK);
	test_assert_int(a.first_uid, 1);
	test_assert_int(b.first_uid, 2);
	test_assert_int(a.queue_then, 0);
	test_assert_int(dir_file_count(root, "cur"), 2);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	mailbox_close(&box);
	test_assert_int(box_count(root, "INBOX"), 2);
	commit_user_deinit();
}

struct commit_cancel_ctx {
	struct commit_result *victim, *other;
	bool busy;
};

static void commit_cancel_check(void *context)
{
	struct commit_cancel_ctx *ctx = context;

	ctx->busy = imap_commit_busy(&commit_user);
	imap_commit_cancel(&commit_user, &ctx->victim->req);
}

/* A request cancelled while its batch syncs: the batch is completed
   inside the call, the other request answered, the cancelled one not
   (its message may be saved: nobody was told). */
static void test_commit_cancel_in_batch(void)
{
	const char *root = commit_root("cancel-batch");
	struct commit_result a = { 0 }, b = { 0 };

	commit_user_init(root);
	struct mailbox *box1 = commit_open(root, "INBOX");
	struct mailbox *box2 = commit_open(root, "INBOX");
	struct commit_cancel_ctx ctx = { .victim = &a, .other = &b };
	commit_queue(box1, 1, &a);
	commit_queue(box2, 1, &b);
	(void)io_loop_defer(commit_user.ioloop, commit_cancel_check, &ctx);
	commit_run_until(1);
	test_assert(ctx.busy);
	test_assert(!a.req.queued);
	test_assert(!imap_commit_busy(&commit_user));
	test_assert_int(a.calls, 0);
	test_assert_int(b.calls, 1);
	test_assert_int(b.result, IMAP_COMMIT_OK);
	test_assert_int(b.first_uid, 2);
	test_assert_int(dir_file_count(root, "cur"), 2);
	test_assert_int(dir_file_count(root, "tmp"), 0);
	mailbox_close(&box1);
	mailbox_close(&box2);
	commit_user_deinit();
}

/* fd is open on path (the same inode). */
static bool fd_is(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* A deferred publish that only appended: its per-file syncs are cur/,
   the index log and moat.uidlist; one that created moat.uidlist (the
   folder's first message: tmp + rename) needs the syncfs. */
static void test_commit_sync_targets(void)
{
	const char *root = commit_root("targets"), *error;
	struct mailbox_sync_targets targets;
	char path[600];
	uint32_t uid;

	commit_user_init(root);
	struct mailbox *box = commit_open(root, "INBOX");
	struct mailbox_append_multi *save = commit_stage(box, 1);
	test_assert(mailbox_fsync_defer(box, true));
	test_assert(mailbox_append_multi_commit(&save, &uid, &error) == 0);
	test_assert_int(mailbox_fsync_deferred_targets(box, &targets, &error), 0);
	test_assert(mailbox_fsync_defer(box, false));

	save = commit_stage(box, 2);
	test_assert(mailbox_fsync_defer(box, true));
	test_assert(mailbox_append_multi_commit(&save, &uid, &error) == 0);
	test_assert_int(uid, 2);
	test_assert_int(mailbox_fsync_deferred_targets(box, &targets, &error), 1);
	test_assert(mailbox_fsync_defer(box, false));
	test_assert_int(targets.count, 3);
	snprintf(path, sizeof(path), "%s/cur", root);
	test_assert(fd_is(targets.fds[0], path) && !targets.datasync[0]);
	snprintf(path, sizeof(path), "%s/moat.index.log", root);
	test_assert(fd_is(targets.fds[1], path) && targets.datasync[1]);
	snprintf(path, sizeof(path), "%s/moat.uidlist", root);
	test_assert(fd_is(targets.fds[2], path) && targets.datasync[2]);
	for (unsigned int i = 0; i < targets.count; i++)
		test_assert(fsync(targets.fds[i]) == 0);
	mailbox_sync_targets_close(&targets);
	test_assert_int(targets.count, 0);

	/* nothing written while deferred: cur/ and the log only */
	test_assert(mailbox_fsync_defer(box, true));
	test_assert_int(mailbox_fsync_deferred_targets(box, &targets, &error), 1);
	test_assert(mailbox_fsync_defer(box, false));
	test_assert_int(targets.count, 2);
	mailbox_sync_targets_close(&targets);
	mailbox_close(&box);
	commit_user_deinit();
}

TEST_MAIN(TEST(test_commit_groups), TEST(test_commit_cancel),
	  TEST(test_commit_limit), TEST(test_commit_quota),
	  TEST(test_commit_async), TEST(test_commit_cancel_in_batch),
	  TEST(test_commit_sync_targets))
