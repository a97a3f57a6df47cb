/* The user's queue of APPEND and delivery commits (imap-commit.h). */
#include "imap-common.h"
#include "imap-commit.h"
#include "imap-quota.h"
#include "fsync-thread.h"

/* Each step's syncs are either per-file (step 1: each message's file;
   step 3: what the publishes wrote, 3 a folder: the uidlist, the index
   log, cur/) or one syncfs, whichever has cost less lately
   (commit_prefer_files(); doc/durability.md, "The lone commit"). On
   ext4 without a journal every per-file sync is a device flush, a
   syncfs one flush plus everything dirty on the file system (other
   writers' too): which wins depends on the disk and on the neighbours,
   so it is measured, not assumed. The sync thread makes up to three
   per-file syncs at once and the device merges their flushes, so they
   are costed in waves of those made together (commit_waves()).
   Per-file syncs are at most this many (what one job holds); more
   always take the syncfs. */
#define COMMIT_TARGETED_SYNCS_MAX FSYNC_JOB_MAX_OPS
#define COMMIT_DATA_FSYNCS_MAX FSYNC_JOB_MAX_OPS
/* Every this many choices the other kind is made once, so that its cost
   estimate follows the file system's load. */
#define COMMIT_PROBE_EVERY 16
/* A new measurement moves the estimate by 1/this of the difference. */
#define COMMIT_COST_WEIGHT 8

/* A folder's requests in queue order, admitted ones merged into the
   first admitted one's set. */
struct commit_group {
	struct imap_commit_req *head, *base;
	uint64_t bytes, count;
	bool deferred;     /* its syncs wait for the batch's final sync */
	bool targeted;     /* targets cover its publish (else a syncfs) */
	struct mailbox_sync_targets targets;
	bool committed;
};

/* The requests being committed together (imap-commit.h, steps 1-4). */
struct imap_commit_batch {
	struct imap_user *user;
	struct imap_commit_req *reqs;      /* in queue order */
	unsigned int requests, messages;
	struct commit_group *groups;
	unsigned int group_count;
	/* each step's sync: on the thread while async, else on the loop */
	struct fsync_job job;
	int sync_fd;
	/* step 1's descriptors: the messages' files, or one for a syncfs */
	int data_fds[COMMIT_DATA_FSYNCS_MAX];
	unsigned int data_fd_count;
	bool data_syncfs;      /* step 1 is a syncfs, not per-file */
	bool async;
	bool final_syncfs;     /* the final sync is a syncfs, not targets */
	/* the folder whose handle gives the final syncfs */
	struct mailbox *deferred_box;
	/* the next batch: requests that waited in the queue when the final
	   syncfs began, so that it made their data durable too (their
	   files were complete: a request queues once its last message is
	   written), and their own data sync is saved */
	struct imap_commit_req *next_reqs;
	unsigned int next_requests;
};

/* How many waves the thread makes count per-file syncs in (it makes
   fsync_thread_parallel() at once; the loop one after the other). */
static unsigned int commit_waves(const struct imap_commit_batch *batch,
				 unsigned int count)
{
	unsigned int par = batch->async ?
		fsync_thread_parallel(batch->user->commit_thread) : 1;

	return (count + par - 1) / par;
}

/* count per-file syncs (in waves of those made at once) rather than one
   syncfs? By the estimates of what each kind cost lately; a kind not
   measured yet is tried first, and every COMMIT_PROBE_EVERY choices
   (*since_probe: of this step) the other one is, once. */
static bool commit_prefer_files(struct imap_user *user, unsigned int count,
				unsigned int waves, unsigned int *since_probe)
{
	if (count > COMMIT_TARGETED_SYNCS_MAX)
		return false;
	if (user->commit_file_usecs == 0)
		return true;
	if (user->commit_syncfs_usecs == 0)
		return false;
	bool files = (uint64_t)waves * user->commit_file_usecs <=
		user->commit_syncfs_usecs;
	if (++*since_probe >= COMMIT_PROBE_EVERY) {
		*since_probe = 0;
		files = !files;
	}
	return files;
}

/* A finished job's time goes into the estimate of its kind. */
static void commit_cost_learn(struct imap_user *user,
			      const struct fsync_job *job, bool syncfs)
{
	if (job->count == 0 || job->error != 0)
		return;
	/* per-file syncs made at once cost about one: a wave is the unit */
	uint64_t sample = syncfs ? job->usecs : job->usecs / MAX(job->waves, 1);
	uint32_t *avg = syncfs ? &user->commit_syncfs_usecs :
		&user->commit_file_usecs;
	/* 0 means "not measured" */
	sample = MIN(MAX(sample, 1), UINT32_MAX / 2);
	if (*avg == 0)
		*avg = (uint32_t)sample;
	else
		*avg = (uint32_t)((int64_t)*avg +
				  ((int64_t)sample - (int64_t)*avg) /
				  COMMIT_COST_WEIGHT);
	if (*avg == 0)
		*avg = 1;
}

static void commit_batch_start(struct imap_user *user, bool async);
static void commit_batch_begin(struct imap_user *user,
			       struct imap_commit_req *reqs,
			       unsigned int requests, bool async,
			       bool data_synced);

static void commit_flush_deferred(void *context)
{
	struct imap_user *user = context;

	user->to_commit = NULL;
	/* the next batch starts when the one syncing now is done */
	if (user->commit_batch == NULL)
		commit_batch_start(user, true);
}

void imap_commit_init(struct imap_user *user)
{
	user->commit_queue = NULL;
	user->commit_tail = &user->commit_queue;
	user->commit_count = 0;
	user->commit_batch = NULL;
	user->commit_thread = NULL;
	user->commit_thread_failed = false;
	user->commit_file_usecs = 0;
	user->commit_syncfs_usecs = 0;
	user->commit_data_since_probe = 0;
	user->commit_final_since_probe = 0;
}

void imap_commit_queue(struct imap_user *user, struct imap_commit_req *req,
		       struct mailbox *box, struct mailbox_append_multi **save,
		       imap_commit_callback_t *callback, void *context)
{
	i_assert(!req->queued);
	/* the bound of what waits: each request keeps a staged set and an
	   fd open until its commit */
	if (user->commit_count >= user->set->imap_commit_batch_max)
		imap_commit_flush(user);
	req->next = NULL;
	req->box = box;
	req->save = *save;
	*save = NULL;
	req->count = mailbox_append_multi_count(req->save);
	req->bytes = mailbox_append_multi_bytes(req->save);
	req->callback = callback;
	req->context = context;
	req->queued = true;
	req->in_batch = false;
	req->cancelled = false;
	*user->commit_tail = req;
	user->commit_tail = &req->next;
	user->commit_count++;
	/* after the loop has read what else arrived in this turn */
	if (user->to_commit == NULL && user->commit_batch == NULL)
		user->to_commit = io_loop_defer(user->ioloop,
						commit_flush_deferred, user);
}

/* Wait for the batch in progress and complete it on the loop. */
static void commit_batch_finish(struct imap_user *user)
{
	struct imap_commit_batch *batch = user->commit_batch;

	if (batch == NULL)
		return;
	/* the steps still to come run on the loop (and those of the batch
	   that rides along with it) */
	batch->async = false;
	while (user->commit_batch == batch) {
		/* between its steps a batch is always waiting for the thread */
		i_assert(fsync_thread_busy(user->commit_thread));
		fsync_thread_wait(user->commit_thread);
	}
}

void imap_commit_cancel(struct imap_user *user, struct imap_commit_req *req)
{
	if (!req->queued)
		return;
	if (req->in_batch) {
		req->cancelled = true;
		/* it may ride along to the batch after the one in progress */
		while (req->queued) {
			i_assert(user->commit_batch != NULL);
			commit_batch_finish(user);
		}
		return;
	}
	struct imap_commit_req **p = &user->commit_queue;
	while (*p != req)
		p = &(*p)->next;
	*p = req->next;
	if (user->commit_tail == &req->next)
		user->commit_tail = p;
	user->commit_count--;
	req->queued = false;
	mailbox_append_multi_abort(&req->save);
}

unsigned int imap_commit_queue_count(struct imap_user *user)
{
	return user->commit_count;
}

bool imap_commit_busy(struct imap_user *user)
{
	return user->commit_batch != NULL;
}

/* Split the batch by folder, order kept; refuse what the quota does not
   allow (counting what the requests before it add). */
static unsigned int commit_split(struct imap_user *user,
				 struct imap_commit_req *queue,
				 struct commit_group *groups)
{
	unsigned int count = 0;
	uint64_t bytes = 0, messages = 0;

	while (queue != NULL) {
		struct commit_group *g = &groups[count++];
		struct imap_commit_req **gtail = &g->head, *rest = NULL;
		struct imap_commit_req **rtail = &rest;
		const char *path = mailbox_get_path(queue->box);
		memset(g, 0, sizeof(*g));
		for (struct imap_commit_req *r = queue, *next; r != NULL;
		     r = next) {
			next = r->next;
			r->next = NULL;
			if (strcmp(mailbox_get_path(r->box), path) == 0) {
				*gtail = r;
				gtail = &r->next;
			} else {
				*rtail = r;
				rtail = &r->next;
			}
		}
		queue = rest;
		for (struct imap_commit_req *r = g->head; r != NULL; r = r->next) {
			if (r->result != IMAP_COMMIT_OK)
				continue;   /* the data sync failed */
			if (imap_quota_allows(user, bytes + r->bytes,
					      messages + r->count) == 0) {
				r->result = IMAP_COMMIT_OVERQUOTA;
				mailbox_append_multi_abort(&r->save);
				continue;
			}
			bytes += r->bytes;
			messages += r->count;
			g->bytes += r->bytes;
			g->count += r->count;
		}
	}
	return count;
}

static void commit_group_result(struct commit_group *g,
				enum imap_commit_result result,
				uint32_t first_uid)
{
	for (struct imap_commit_req *r = g->head; r != NULL; r = r->next) {
		if (r->result != IMAP_COMMIT_OK)
			continue;
		r->result = result;
		r->first_uid = result == IMAP_COMMIT_OK ?
			first_uid + r->offset : 0;
		if (r->save != NULL)
			mailbox_append_multi_abort(&r->save);
	}
}

static void commit_group_fail(struct commit_group *g,
			      enum imap_commit_result result)
{
	for (struct imap_commit_req *r = g->head; r != NULL; r = r->next) {
		if (r->result == IMAP_COMMIT_OK) {
			r->result = result;
			r->first_uid = 0;
		}
	}
}

static enum imap_commit_result commit_errno_result(int error)
{
	return error == ENOSPC || error == EDQUOT ?
		IMAP_COMMIT_NOSPACE : IMAP_COMMIT_FAILED;
}

/* Merge a folder's admitted requests into one set and publish it. */
static int commit_group(struct commit_group *g, bool defer)
{
	const char *error;

	for (struct imap_commit_req *r = g->head; r != NULL; r = r->next) {
		if (r->result != IMAP_COMMIT_OK)
			continue;
		if (g->base == NULL) {
			g->base = r;
			r->offset = 0;
		} else {
			r->offset = mailbox_append_multi_merge(g->base->save,
							       &r->save);
		}
	}
	if (g->base == NULL)
		return 0;
	/* a MULTIAPPEND's journal is still synced here, on the loop: it
	   must be on disk before its first message is in cur/ (all or none
	   after a power loss too); the rest of its publish waits for the
	   batch's syncfs like everyone's, and the journal stays until then
	   (mailbox_fsync_deferred_done()) */
	struct mailbox *box = g->base->box;
	uint32_t first_uid;
	/* false for a mail_fsync = never handle: nothing to sync later */
	g->deferred = defer && mailbox_fsync_defer(box, true);
	int ret = mailbox_append_multi_commit(&g->base->save, &first_uid,
					      &error);
	/* errno is still the failed call's unless the storage layer made
	   another one after it; a wrong guess only swaps 451 and 452 */
	int saved_errno = errno;
	if (ret == 0 && g->deferred) {
		int tret = mailbox_fsync_deferred_targets(box, &g->targets,
							  &error);
		if (tret < 0)   /* the syncfs still covers it */
			i_error("group commit: %s", error);
		g->targeted = tret > 0;
	}
	(void)mailbox_fsync_defer(box, false);
	if (ret < 0) {
		i_error("saving failed: %s", error);
		g->deferred = false;
		commit_group_result(g, commit_errno_result(saved_errno), 0);
		return -1;
	}
	commit_group_result(g, IMAP_COMMIT_OK, first_uid);
	g->committed = true;
	return 0;
}

/* Step 4: every request answered, the batch freed, the next one
   scheduled if requests queued meanwhile. */
static void commit_batch_complete(struct imap_commit_batch *batch)
{
	struct imap_user *user = batch->user;

	for (unsigned int i = 0; i < batch->group_count; i++) {
		if (batch->groups[i].committed)
			imap_quota_saved(user, batch->groups[i].bytes,
					 batch->groups[i].count);
	}
	i_debug("group commit: %u requests, %u messages, %u folders%s, "
		"publish synced by %s", batch->requests, batch->messages,
		batch->group_count,
		batch->async ? ", synced by the sync thread" : "",
		batch->deferred_box == NULL ? "its own syncs" :
		batch->final_syncfs ? "a syncfs" : "per-file syncs");
	user->commit_batch = NULL;
	/* the next batch first: a callback that cancels one of its
	   requests then finds it in the batch in progress */
	if (batch->next_reqs != NULL) {
		commit_batch_begin(user, batch->next_reqs, batch->next_requests,
				   batch->async, batch->job.error == 0);
	} else if (user->commit_queue != NULL && user->to_commit == NULL) {
		user->to_commit = io_loop_defer(user->ioloop,
						commit_flush_deferred, user);
	}
	/* answered only once the whole batch is on disk; a callback may
	   free its request */
	for (unsigned int i = 0; i < batch->group_count; i++) {
		for (struct imap_commit_req *r = batch->groups[i].head, *next;
		     r != NULL; r = next) {
			next = r->next;
			r->queued = false;
			r->in_batch = false;
			if (r->cancelled)
				continue;
			r->callback(r->context, r->result,
				    r->result == IMAP_COMMIT_OK ? r->first_uid : 0);
		}
	}
	i_free(batch->groups);
	i_free(batch);
}

/* Run batch->job on the thread (callback later) or here (callback now;
   also when there is nothing to sync). */
static void commit_batch_sync(struct imap_commit_batch *batch,
			      fsync_job_callback_t *callback)
{
	if (batch->async && batch->job.count > 0) {
		fsync_thread_submit(batch->user->commit_thread, &batch->job,
				    callback, batch);
	} else {
		fsync_job_run(&batch->job);
		callback(&batch->job, batch);
	}
}

/* The queue rides along with the final syncfs (imap_commit_batch's
   next_reqs). Only on the thread: on the loop the queue is committed
   on its own. */
static void commit_batch_carry(struct imap_commit_batch *batch)
{
	struct imap_user *user = batch->user;

	if (!batch->async || user->commit_queue == NULL)
		return;
	timeout_remove(&user->to_commit);
	batch->next_reqs = user->commit_queue;
	batch->next_requests = user->commit_count;
	for (struct imap_commit_req *r = batch->next_reqs; r != NULL; r = r->next)
		r->in_batch = true;
	user->commit_queue = NULL;
	user->commit_tail = &user->commit_queue;
	user->commit_count = 0;
}

/* After step 3. */
static void commit_final_synced(struct fsync_job *job, void *context)
{
	struct imap_commit_batch *batch = context;

	i_close_fd(&batch->sync_fd);
	commit_cost_learn(batch->user, job, batch->final_syncfs);
	/* durable (or failed): the journals of the deferred publishes have
	   done their work */
	for (unsigned int i = 0; i < batch->group_count; i++) {
		const char *error;
		mailbox_sync_targets_close(&batch->groups[i].targets);
		if (batch->groups[i].deferred &&
		    mailbox_fsync_deferred_done(batch->groups[i].base->box,
						&error) < 0)
			i_error("%s", error);
	}
	if (job->count > 0 && job->error != 0) {
		/* published but maybe not durable: not acknowledged */
		errno = job->error;
		if (batch->final_syncfs) {
			i_error("saving failed: syncfs(%s) failed: %m",
				mailbox_get_path(batch->deferred_box));
		} else {
			i_error("saving failed: syncing a folder's uidlist, "
				"index log or cur/ failed: %m");
		}
		for (unsigned int i = 0; i < batch->group_count; i++) {
			if (batch->groups[i].deferred)
				commit_group_fail(&batch->groups[i],
						  commit_errno_result(job->error));
		}
	}
	commit_batch_complete(batch);
}

/* Step 3 as per-file syncs when every deferred folder has its targets
   and they cost less than a syncfs (commit_prefer_files()); false: a
   syncfs. */
static bool commit_batch_add_targets(struct imap_commit_batch *batch)
{
	unsigned int count = 0;

	for (unsigned int i = 0; i < batch->group_count; i++) {
		const struct commit_group *g = &batch->groups[i];
		if (!g->deferred)
			continue;
		if (!g->targeted)
			return false;
		count += g->targets.count;
	}
	/* the queue rides along with a syncfs only (its data sync saved) */
	if ((batch->async && batch->user->commit_queue != NULL) ||
	    !commit_prefer_files(batch->user, count, commit_waves(batch, count),
				 &batch->user->commit_final_since_probe))
		return false;
	for (unsigned int i = 0; i < batch->group_count; i++) {
		const struct commit_group *g = &batch->groups[i];
		if (!g->deferred)
			continue;
		for (unsigned int j = 0; j < g->targets.count; j++) {
			fsync_job_add(&batch->job, g->targets.fds[j],
				      g->targets.datasync[j] ?
				      FSYNC_OP_FDATASYNC : FSYNC_OP_FSYNC);
		}
	}
	return true;
}

/* Step 2 (after the data sync of step 1), then step 3. */
static void commit_data_synced(struct fsync_job *job, void *context)
{
	struct imap_commit_batch *batch = context;
	const char *error;

	while (batch->data_fd_count > 0)
		i_close_fd(&batch->data_fds[--batch->data_fd_count]);
	commit_cost_learn(batch->user, job, batch->data_syncfs);
	bool data_ok = job->count == 0 || job->error == 0;
	if (!data_ok) {
		errno = job->error;
		i_error("saving failed: syncing the messages' data failed: %m");
	}
	for (struct imap_commit_req *r = batch->reqs; r != NULL; r = r->next) {
		if (data_ok)
			mailbox_append_multi_set_synced(&r->save, 1);
		r->result = data_ok ? IMAP_COMMIT_OK :
			commit_errno_result(job->error);
		if (!data_ok)
			mailbox_append_multi_abort(&r->save);
	}
	batch->groups = i_malloc(i_mul_size(batch->requests,
					    sizeof(*batch->groups)));
	batch->group_count = commit_split(batch->user, batch->reqs,
					  batch->groups);
	batch->reqs = NULL;   /* the groups hold them now */
	/* on the thread every folder's syncs wait for the one syncfs, so
	   that the loop makes none; on the loop a lone message keeps its
	   own (cheaper than writing out the file system) */
	bool defer = batch->async || batch->messages > 1;
	for (unsigned int i = 0; i < batch->group_count; i++) {
		if (commit_group(&batch->groups[i], defer) == 0 &&
		    batch->groups[i].deferred)
			batch->deferred_box = batch->groups[i].base->box;
	}
	memset(&batch->job, 0, sizeof(batch->job));
	/* per-file syncs leave the queue's data unsynced: only a syncfs
	   takes the queue along (commit_batch_carry()) */
	if (batch->deferred_box != NULL && !commit_batch_add_targets(batch)) {
		batch->final_syncfs = true;
		batch->sync_fd = mailbox_syncfs_fd(batch->deferred_box, &error);
		if (batch->sync_fd == -1) {
			i_error("saving failed: %s", error);
			for (unsigned int i = 0; i < batch->group_count; i++) {
				if (batch->groups[i].deferred)
					commit_group_fail(&batch->groups[i],
							  IMAP_COMMIT_FAILED);
			}
		} else {
			fsync_job_add(&batch->job, batch->sync_fd,
				      FSYNC_OP_SYNCFS);
			commit_batch_carry(batch);
		}
	}
	commit_batch_sync(batch, commit_final_synced);
}

/* The sync thread, started on first use (after the seccomp filter is
   in place, which the thread then inherits). */
static bool commit_thread_get(struct imap_user *user)
{
	const char *error;

	if (user->commit_thread != NULL)
		return true;
	if (user->commit_thread_failed)
		return false;
	user->commit_thread = fsync_thread_create(user->ioloop, &error);
	if (user->commit_thread == NULL) {
		/* still correct, only slower: every sync on the loop */
		i_error("group commit: %s: %m; syncing on the event loop", error);
		user->commit_thread_failed = true;
		return false;
	}
	return true;
}

/* Step 1: reqs (taken off the queue) become the batch; its data sync,
   unless the previous batch's final syncfs made it (data_synced). */
static void commit_batch_begin(struct imap_user *user,
			       struct imap_commit_req *reqs,
			       unsigned int requests, bool async,
			       bool data_synced)
{
	const char *error;

	i_assert(user->commit_batch == NULL);
	struct imap_commit_batch *batch = i_malloc(sizeof(*batch));
	batch->user = user;
	batch->reqs = reqs;
	batch->requests = requests;
	batch->sync_fd = -1;
	batch->async = async && commit_thread_get(user);
	user->commit_batch = batch;

	struct mailbox_append_multi **saves =
		i_malloc(i_mul_size(batch->requests, sizeof(*saves)));
	unsigned int n = 0;
	for (struct imap_commit_req *r = batch->reqs; r != NULL; r = r->next) {
		r->in_batch = true;
		batch->messages += r->count;
		saves[n++] = r->save;
	}
	memset(&batch->job, 0, sizeof(batch->job));
	bool use_syncfs = false;
	unsigned int max_files = data_synced ||
		!commit_prefer_files(user, batch->messages,
				     commit_waves(batch, batch->messages),
				     &user->commit_data_since_probe) ? 0 :
		COMMIT_DATA_FSYNCS_MAX;
	int ret = data_synced ? 0 :
		mailbox_append_multi_sync_plan(saves, n, max_files,
					       batch->data_fds,
					       &batch->data_fd_count,
					       &use_syncfs, &error);
	i_free(saves);
	batch->data_syncfs = use_syncfs;
	if (ret > 0) {
		for (unsigned int i = 0; i < batch->data_fd_count; i++) {
			fsync_job_add(&batch->job, batch->data_fds[i],
				      use_syncfs ? FSYNC_OP_SYNCFS :
				      FSYNC_OP_FSYNC);
		}
	} else if (ret < 0) {
		/* no descriptor to sync with: the batch fails as a failed
		   sync would */
		i_error("saving failed: %s", error);
		batch->job.count = 1;
		batch->job.error = EIO;
		commit_data_synced(&batch->job, batch);
		return;
	}
	commit_batch_sync(batch, commit_data_synced);
}

/* The queue becomes the batch. */
static void commit_batch_start(struct imap_user *user, bool async)
{
	struct imap_commit_req *reqs = user->commit_queue;
	unsigned int requests = user->commit_count;

	if (reqs == NULL)
		return;
	user->commit_queue = NULL;
	user->commit_tail = &user->commit_queue;
	user->commit_count = 0;
	commit_batch_begin(user, reqs, requests, async, false);
}

void imap_commit_flush(struct imap_user *user)
{
	timeout_remove(&user->to_commit);
	commit_batch_finish(user);
	commit_batch_start(user, false);
	i_assert(user->commit_batch == NULL);
	/* nothing left that the deferred call would start */
	timeout_remove(&user->to_commit);
}

void imap_commit_deinit(struct imap_user *user)
{
	/* the clients cancelled theirs when they were destroyed */
	i_assert(user->commit_count == 0);
	commit_batch_finish(user);
	timeout_remove(&user->to_commit);
	fsync_thread_destroy(&user->commit_thread);
}
