#ifndef IMAP_COMMIT_H
#define IMAP_COMMIT_H
/* Group commit of APPENDs and LMTP deliveries across the sessions and
   delivery connections of the user's process (doc/durability.md, "Group
   commit"). A request whose messages are all staged in tmp/ queues its
   commit here and waits; once the loop has read everything else that
   arrived in the same turn, the queue becomes a batch:

   1. the sync thread makes the data of every message durable (an fsync
      of each file or one syncfs, whichever cost less lately);
   2. back on the loop, per folder, the batch's requests become one
      staged set (mailbox_append_multi_merge()), published under one
      uidlist lock with consecutive UIDs, its own syncs deferred;
   3. the sync thread makes the publishes durable: the per-file syncs of
      what they wrote (uidlist, index log, cur/), or one syncfs, by the
      same choice (at most two folders' per-file syncs);
   4. only then does each request get its callback, so an OK or a 250
      still means on disk.

   While the thread syncs, the loop serves every other session and
   queues what arrives; that queue is the next batch, started when this
   one is done. What waits in the queue when a step 3 that is a syncfs
   begins rides along with it: that syncfs makes the data of its
   (complete) files durable too, so that batch skips step 1. Under load
   every batch of many folders then costs one syncfs. Without the thread (it could not be created) the same
   steps run on the loop, one batch at a time. */

#include "imap-common.h"
#include "mailbox-append-multi.h"

enum imap_commit_result {
	IMAP_COMMIT_OK,
	IMAP_COMMIT_OVERQUOTA,
	IMAP_COMMIT_FAILED,
	/* failed for lack of space (ENOSPC, EDQUOT) as far as errno tells */
	IMAP_COMMIT_NOSPACE,
};

/* first_uid: the UID of the request's first message (IMAP_COMMIT_OK). */
typedef void imap_commit_callback_t(void *context,
				    enum imap_commit_result result,
				    uint32_t first_uid);

/* One queued commit. The caller owns the memory and must keep it until
   the callback ran or imap_commit_cancel() returned. */
struct imap_commit_req {
	struct imap_commit_req *next;
	struct mailbox *box;
	struct mailbox_append_multi *save;   /* the queue's while queued */
	unsigned int count;
	uint64_t bytes;
	imap_commit_callback_t *callback;
	void *context;
	/* set while the batch is committed */
	unsigned int offset;     /* of its first message in the merged set */
	uint32_t first_uid;
	enum imap_commit_result result;
	bool queued;             /* until the callback (or cancel) */
	bool in_batch;           /* its batch is being committed */
	bool cancelled;          /* in a batch, but nobody wants the answer */
};

/* An empty queue for user (before the first imap_commit_queue()). The
   sync thread is started by the first batch, after the process installed
   its seccomp filter. */
void imap_commit_init(struct imap_user *user);
/* Queue the staged messages of *save (begun with
   mailbox_append_multi_begin_group() on box, which must stay open until
   the callback). Takes *save. When imap_commit_batch_max requests wait
   already, the batch in progress and those are committed first, on the
   loop (the callbacks of the others run from inside this call). The
   callback never runs from inside this call for req itself. */
void imap_commit_queue(struct imap_user *user, struct imap_commit_req *req,
		       struct mailbox *box, struct mailbox_append_multi **save,
		       imap_commit_callback_t *callback, void *context);
/* The caller no longer wants req's answer: the callback never runs for
   it. A request still waiting is dropped with its messages; one whose
   batch is being committed is completed first (this call then waits for
   the sync in progress, and the other requests' callbacks run from
   inside it): its messages may be saved, nobody was told. No-op when it
   is not queued. */
void imap_commit_cancel(struct imap_user *user, struct imap_commit_req *req);
/* Requests waiting for the next batch now. */
unsigned int imap_commit_queue_count(struct imap_user *user);
/* Is a batch being committed (its syncs in progress)? */
bool imap_commit_busy(struct imap_user *user);
/* Complete the batch in progress, then commit everything queued, on the
   loop and before returning (tests, and the queue's bound). */
void imap_commit_flush(struct imap_user *user);
/* At exit, after every client and delivery connection is gone. */
void imap_commit_deinit(struct imap_user *user);

#endif
