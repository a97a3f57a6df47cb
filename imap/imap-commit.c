/* The user's queue of APPEND commits (imap-commit.h). */
#include "imap-common.h"
#include "imap-commit.h"
#include "imap-quota.h"

static void commit_flush_deferred(void *context)
{
	struct imap_user *user = context;

	user->to_commit = NULL;
	imap_commit_flush(user);
}

void imap_commit_init(struct imap_user *user)
{
	user->commit_queue = NULL;
	user->commit_tail = &user->commit_queue;
	user->commit_count = 0;
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
	*user->commit_tail = req;
	user->commit_tail = &req->next;
	user->commit_count++;
	/* after the loop has read what else arrived in this turn */
	if (user->to_commit == NULL)
		user->to_commit = io_loop_defer(user->ioloop,
						commit_flush_deferred, user);
}

void imap_commit_cancel(struct imap_user *user, struct imap_commit_req *req)
{
	if (!req->queued)
		return;
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

/* A folder's requests in queue order, admitted ones merged into the
   first admitted one's set. */
struct commit_group {
	struct imap_commit_req *head, *base;
	uint64_t bytes, count;
	bool multi;        /* a MULTIAPPEND is in it */
	bool deferred;     /* its syncs wait for the batch's syncfs */
	bool committed;
};

/* Split the queue by folder, order kept; refuse what the quota does not
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
			g->multi = g->multi || r->count > 1;
			r->result = IMAP_COMMIT_OK;
		}
	}
	return count;
}

/* One sync for the data of every admitted message of the batch. */
static int commit_sync_data(struct commit_group *groups, unsigned int count,
			    unsigned int requests)
{
	struct mailbox_append_multi **saves =
		i_malloc(i_mul_size(requests, sizeof(*saves)));
	unsigned int n = 0;
	const char *error;

	for (unsigned int i = 0; i < count; i++) {
		for (struct imap_commit_req *r = groups[i].head; r != NULL;
		     r = r->next) {
			if (r->result == IMAP_COMMIT_OK)
				saves[n++] = r->save;
		}
	}
	int ret = mailbox_append_multi_sync_data(saves, n, &error);
	if (ret < 0)
		i_error("APPEND failed: %s", error);
	i_free(saves);
	return ret;
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

static void commit_group_fail(struct commit_group *g)
{
	for (struct imap_commit_req *r = g->head; r != NULL; r = r->next) {
		if (r->result == IMAP_COMMIT_OK) {
			r->result = IMAP_COMMIT_FAILED;
			r->first_uid = 0;
		}
	}
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
	/* a MULTIAPPEND keeps its own syncs: its journal must be on disk
	   before its first message is in cur/ (all or none after a power
	   loss too) */
	struct mailbox *box = g->base->box;
	uint32_t first_uid;
	/* false for a mail_fsync = never handle: nothing to sync later */
	g->deferred = defer && !g->multi && mailbox_fsync_defer(box, true);
	int ret = mailbox_append_multi_commit(&g->base->save, &first_uid,
					      &error);
	(void)mailbox_fsync_defer(box, false);
	if (ret < 0) {
		i_error("APPEND failed: %s", error);
		g->deferred = false;
		commit_group_result(g, IMAP_COMMIT_FAILED, 0);
		return -1;
	}
	commit_group_result(g, IMAP_COMMIT_OK, first_uid);
	g->committed = true;
	return 0;
}

void imap_commit_flush(struct imap_user *user)
{
	struct imap_commit_req *queue = user->commit_queue;
	unsigned int requests = user->commit_count, messages = 0;

	timeout_remove(&user->to_commit);
	if (queue == NULL)
		return;
	user->commit_queue = NULL;
	user->commit_tail = &user->commit_queue;
	user->commit_count = 0;
	for (struct imap_commit_req *r = queue; r != NULL; r = r->next)
		messages += r->count;

	struct commit_group *groups =
		i_malloc(i_mul_size(requests, sizeof(*groups)));
	unsigned int count = commit_split(user, queue, groups);
	/* one sync makes every message's data durable before any name is
	   in cur/; with several messages the folders' own syncs (uidlist,
	   log, cur/) wait for one more syncfs at the end */
	bool data_ok = commit_sync_data(groups, count, requests) == 0;
	bool defer = messages > 1;
	struct mailbox *deferred_box = NULL;
	for (unsigned int i = 0; i < count; i++) {
		if (!data_ok) {
			commit_group_result(&groups[i], IMAP_COMMIT_FAILED, 0);
			continue;
		}
		if (commit_group(&groups[i], defer) == 0 && groups[i].deferred)
			deferred_box = groups[i].base->box;
	}
	const char *error;
	if (deferred_box != NULL && mailbox_syncfs(deferred_box, &error) < 0) {
		/* published but maybe not durable: not acknowledged */
		i_error("APPEND failed: %s", error);
		for (unsigned int i = 0; i < count; i++) {
			if (groups[i].deferred)
				commit_group_fail(&groups[i]);
		}
	}
	for (unsigned int i = 0; i < count; i++) {
		if (groups[i].committed)
			imap_quota_saved(user, groups[i].bytes, groups[i].count);
	}
	i_debug("group commit: %u APPENDs, %u messages, %u folders",
		requests, messages, count);
	/* answered only once the whole batch is on disk; a callback may
	   free its request */
	for (unsigned int i = 0; i < count; i++) {
		for (struct imap_commit_req *r = groups[i].head, *next;
		     r != NULL; r = next) {
			next = r->next;
			r->queued = false;
			r->callback(r->context, r->result,
				    r->result == IMAP_COMMIT_OK ? r->first_uid : 0);
		}
	}
	i_free(groups);
}

void imap_commit_deinit(struct imap_user *user)
{
	/* the clients cancelled theirs when they were destroyed */
	i_assert(user->commit_count == 0);
	timeout_remove(&user->to_commit);
}
