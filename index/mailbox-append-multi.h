#ifndef MAILBOX_APPEND_MULTI_H
#define MAILBOX_APPEND_MULTI_H
/* Appending several messages as one unit (MULTIAPPEND, RFC 3502): each
   message is written to tmp/ and made durable there; commit then moves
   them all into cur/ under one uidlist lock with consecutive UIDs. Either
   all of them become visible or none: a failure removes the ones already
   moved, and abort removes every staged file. One message is the plain
   APPEND case. */

#include "mailbox.h"

struct mailbox_append_multi;

struct mailbox_append_multi *mailbox_append_multi_begin(struct mailbox *box);
/* The same for a group commit of messages from several sources (LMTP
   deliveries that arrived together): the messages are not fsynced one by
   one; commit makes them all durable with one syncfs(2) (an fsync for a
   single one) before publishing them. */
struct mailbox_append_multi *
mailbox_append_multi_begin_group(struct mailbox *box);
/* Start the next message. internal_date (time_t)-1 = now; keywords are
   indexes of mailbox_keyword_get(). Returns 0 or -1. */
int mailbox_append_multi_next(struct mailbox_append_multi *ctx,
			      enum mail_flags flags, uint32_t keywords,
			      time_t internal_date, const char **error_r);
/* The next message is a delivery with an id (mailbox_append_begin_delivery()). */
int mailbox_append_multi_next_delivery(struct mailbox_append_multi *ctx,
				       const char *id, const char **error_r);
/* Write the next part of the current message. Returns 0 or -1; after -1
   the context only accepts mailbox_append_multi_abort(). */
int mailbox_append_multi_write(struct mailbox_append_multi *ctx,
			       const void *data, size_t size,
			       const char **error_r);
/* The current message is complete: fsync it, set its INTERNALDATE. */
int mailbox_append_multi_end(struct mailbox_append_multi *ctx,
			     const char **error_r);
/* Messages staged (ended) so far. */
unsigned int mailbox_append_multi_count(struct mailbox_append_multi *ctx);
/* Bytes written so far (for the quota). */
uint64_t mailbox_append_multi_bytes(struct mailbox_append_multi *ctx);
/* Group commit of several commands into one folder: moves every staged
   message of *src to the end of dst and frees *src. Both are complete
   (no message open, none failed), both began with
   mailbox_append_multi_begin_group() on handles of the same folder.
   Returns the index in dst of src's first message: after the commit its
   UID is dst's first UID plus that. */
unsigned int mailbox_append_multi_merge(struct mailbox_append_multi *dst,
					struct mailbox_append_multi **src);
/* Make the staged messages of several group contexts (of any folders of
   one file system) durable with one sync, so that their commits need not:
   an fsync when there is one message in all, else one syncfs(2).
   Returns 0 or -1 (the contexts are unchanged: commit syncs them). */
int mailbox_append_multi_sync_data(struct mailbox_append_multi *const *ctxs,
				   unsigned int count, const char **error_r);
/* The same sync for a caller that makes it elsewhere (the sync thread,
   lib/fsync-thread.h): returns 1 with *fd_count_r descriptors in fds_r
   (room for max_files; the caller's, to close): one per message to
   fsync(2) when there are at most max_files messages, else one to
   syncfs(2) (*syncfs_r); 0 if nothing needs a sync; -1 on error. Once
   the syncs succeeded, mailbox_append_multi_set_synced() tells the
   contexts (also after 0), so that their commits do not sync again. */
int mailbox_append_multi_sync_plan(struct mailbox_append_multi *const *ctxs,
				   unsigned int count, unsigned int max_files,
				   int *fds_r, unsigned int *fd_count_r,
				   bool *syncfs_r, const char **error_r);
void mailbox_append_multi_set_synced(struct mailbox_append_multi *const *ctxs,
				     unsigned int count);
/* Publish every staged message: UIDs *first_uid_r .. + count - 1 in
   staging order. Frees the context either way. */
int mailbox_append_multi_commit(struct mailbox_append_multi **ctx,
				uint32_t *first_uid_r, const char **error_r);
void mailbox_append_multi_abort(struct mailbox_append_multi **ctx);

#endif
