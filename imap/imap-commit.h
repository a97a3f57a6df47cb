#ifndef IMAP_COMMIT_H
#define IMAP_COMMIT_H
/* Group commit of APPENDs across the sessions of the user's process
   (doc/durability.md, "Group commit of APPENDs"). An APPEND whose
   messages are all staged queues its commit here and waits; once the
   loop has read everything else that arrived in the same turn, the queue
   is committed folder by folder: the APPENDs of one folder become one
   staged set (mailbox_append_multi_merge()), made durable with one sync
   of their data, published under one uidlist lock with one uidlist
   fdatasync, one index log fdatasync and one fsync of cur/. Only then
   does each get its callback, so an OK still means on disk. */

#include "imap-common.h"
#include "mailbox-append-multi.h"

enum imap_commit_result {
	IMAP_COMMIT_OK,
	IMAP_COMMIT_OVERQUOTA,
	IMAP_COMMIT_FAILED,
};

/* first_uid: the UID of the request's first message (IMAP_COMMIT_OK). */
typedef void imap_commit_callback_t(void *context,
				    enum imap_commit_result result,
				    uint32_t first_uid);

/* One queued commit. The caller owns the memory and must keep it until
   the callback ran or imap_commit_cancel() removed it. */
struct imap_commit_req {
	struct imap_commit_req *next;
	struct mailbox *box;
	struct mailbox_append_multi *save;   /* the queue's while queued */
	unsigned int count;
	uint64_t bytes;
	imap_commit_callback_t *callback;
	void *context;
	/* set while the queue is committed */
	unsigned int offset;     /* of its first message in the merged set */
	uint32_t first_uid;
	enum imap_commit_result result;
	bool queued;
};

/* An empty queue for user (before the first imap_commit_queue()). */
void imap_commit_init(struct imap_user *user);
/* Queue the staged messages of *save (begun with
   mailbox_append_multi_begin_group() on box, which must stay open until
   the callback). Takes *save. When imap_commit_batch_max requests wait
   already, those are committed first (the callbacks of the others run
   from inside this call). The callback never runs from inside this call
   for req itself. */
void imap_commit_queue(struct imap_user *user, struct imap_commit_req *req,
		       struct mailbox *box, struct mailbox_append_multi **save,
		       imap_commit_callback_t *callback, void *context);
/* Remove a request whose callback has not run: its messages are
   dropped, the callback never runs. No-op when it is not queued. */
void imap_commit_cancel(struct imap_user *user, struct imap_commit_req *req);
/* Requests waiting now. */
unsigned int imap_commit_queue_count(struct imap_user *user);
/* Commit everything queued now (the deferred callback does this). */
void imap_commit_flush(struct imap_user *user);
/* At exit, after every client is gone. */
void imap_commit_deinit(struct imap_user *user);

#endif
