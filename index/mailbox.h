#ifndef MAILBOX_H
#define MAILBOX_H
/* A mailbox opened by one session: a view of the messages of one Maildir
   folder with stable sequence numbers between syncs.

   Ownership: mailbox_open() returns a mailbox the caller owns and frees
   with mailbox_close(). It owns every string it returns, which stay
   valid until the next mailbox_sync() or mailbox_close(). Per-message
   data is read from the mapped moat.index (nothing is copied per
   message). Each session opens its own mailbox; sessions learn of each
   other's changes (and of other Maildir writers) by mailbox_sync().

   Sequence numbers are 1-based and stay the same until a sync that is
   allowed to expunge. INBOX is the Maildir root itself (Maildir++),
   created on first use; other mailboxes are its ".a.b" folders
   (mailbox-name.h, mailbox-list.h). */

#include "mail-flags.h"

#include <stddef.h>
#include <time.h>

struct mailbox;

enum mailbox_open_flags {
	MAILBOX_OPEN_READONLY = 0x01,   /* EXAMINE: never change flags */
	MAILBOX_OPEN_NO_FSYNC = 0x02,   /* mail_fsync = never */
	/* SELECT: this session takes \Recent of the messages it is the
	   first to see (RFC 3501 2.3.2). Without it (EXAMINE, STATUS,
	   APPEND, COPY) messages not yet taken show \Recent and stay so
	   for the next SELECT. */
	MAILBOX_OPEN_SELECT = 0x04,
	/* A session's selected mailbox (SELECT or EXAMINE): a message that
	   another handle of this process expunges stays readable here
	   (mailbox_msg_open() etc.) until this view's sync reports the
	   expunge (RFC 2180 4.1.1; maildir-ghost.h). */
	MAILBOX_OPEN_SESSION = 0x08,
	/* The handle's saves, copies and expunges are counted in the mail
	   root's quota file (mailbox-quota.h): what the user's own
	   processes open. */
	MAILBOX_OPEN_QUOTA = 0x10,
};

/* Names longer than this are refused (file system limits). */
#define MAILBOX_NAME_MAX 1024

/* Parse a mail_location such as "maildir:~/Maildir" (~ = home) into the
   Maildir root. Returns 0, or -1 with *error_r (static string). The
   result is allocated with i_malloc: the caller frees it. */
int mailbox_location_parse(const char *location, const char *home,
			   char **root_r, const char **error_r);

/* name is UTF-8 (mailbox-name.h; the imap layer decodes modified UTF-7).
   Returns 1 and *box_r, 0 if the mailbox does not exist (or is
   \Noselect, or the name is invalid), -1 on error
   (*error_r valid until the next call). Syncs once before returning. */
int mailbox_open(const char *root, const char *name,
		 enum mailbox_open_flags flags, struct mailbox **box_r,
		 const char **error_r);
void mailbox_close(struct mailbox **box);
/* From now on the messages this handle saves (append, copy) and expunges
   are counted in root's quota file (mailbox-quota.h). */
void mailbox_set_quota_root(struct mailbox *box, const char *root);
/* Whether the name refers to an existing mailbox (INBOX always does). */
bool mailbox_name_is_inbox(const char *name);

/* What a sync changed in the view, for the session to report. */
struct mailbox_sync_callbacks {
	/* seq (uid) was removed; later messages moved down by one.
	   Reported in ascending order of the current numbering. */
	void (*expunge)(void *context, uint32_t seq, uint32_t uid);
	/* The flags of seq changed (after all expunges). */
	void (*flags_changed)(void *context, uint32_t seq);
};

/* Bring the view up to date with the disk. When allow_expunge is false,
   vanished messages stay in the view (marked expunged) so sequence
   numbers do not move. Cheap when nothing changed (directory mtimes).
   Returns 0 or -1. */
int mailbox_sync(struct mailbox *box, bool allow_expunge,
		 const struct mailbox_sync_callbacks *callbacks,
		 void *context, const char **error_r);

/* The folder (or its cur/) at the handle's path is no longer the one
   the handle opened (DELETE, RENAME or CREATE by another session or
   process): reopen it by name. */
bool mailbox_is_stale(struct mailbox *box);
bool mailbox_is_readonly(struct mailbox *box);
const char *mailbox_get_name(struct mailbox *box);
/* The Maildir folder (watching new/ and cur/ for changes: IDLE). */
const char *mailbox_get_path(struct mailbox *box);
/* The process's inotify watch of the folder (maildir-watch.h), NULL where
   there can be none (then only polling sees other writers). */
struct maildir_watch;
struct maildir_watch *mailbox_get_watch(struct mailbox *box);
uint32_t mailbox_get_uidvalidity(struct mailbox *box);
uint32_t mailbox_get_next_uid(struct mailbox *box);
uint32_t mailbox_get_count(struct mailbox *box);
/* Messages the view holds as \Recent: with MAILBOX_OPEN_SELECT the
   ones this session took, else the ones nobody took yet. */
uint32_t mailbox_get_recent_count(struct mailbox *box);
/* Sequence of the first message without \Seen, or 0. */
uint32_t mailbox_get_first_unseen_seq(struct mailbox *box);

/* Per message (1 <= seq <= count). */
uint32_t mailbox_msg_uid(struct mailbox *box, uint32_t seq);
enum mail_flags mailbox_msg_flags(struct mailbox *box, uint32_t seq);
/* The message vanished from disk (expunged) but is still in the view,
   with its flags; its data may still be readable (mailbox_msg_open()). */
bool mailbox_msg_is_expunged(struct mailbox *box, uint32_t seq);
/* Size with CRLF line ends (RFC822.SIZE). May read the file once when the
   name does not carry it. Returns 0 or -1 (expunged or I/O error). */
int mailbox_msg_vsize(struct mailbox *box, uint32_t seq, uint64_t *vsize_r,
		      const char **error_r);
/* INTERNALDATE: the file's mtime. Returns 0 or -1. */
int mailbox_msg_internaldate(struct mailbox *box, uint32_t seq,
			     time_t *date_r, const char **error_r);
/* The save date (RFC 8514): when the message was saved into this
   mailbox (APPEND, COPY/MOVE, or found new on disk). Kept in the cache
   (maildir-save.c), so it can be lost: returns 1 with *date_r, 0 if the
   message has none (cache dropped, index rebuilt, or expunged). */
int mailbox_msg_savedate(struct mailbox *box, uint32_t seq, time_t *date_r);
/* Open the message file read-only. Returns the fd (the caller closes it;
   read it with pread(): the fd of an expunged message's kept file shares
   its offset), or -1: errno ENOENT if it was expunged and cannot be read
   any more (logged at debug level), another errno for an error that the
   caller reports as a server error. The caller may learn whether LF line
   ends must be converted with mailbox_msg_is_crlf(). An expunged message
   the view still has (mailbox_msg_is_expunged()) is readable while its
   file is kept (maildir-ghost.h). */
int mailbox_msg_open(struct mailbox *box, uint32_t seq, const char **error_r);
/* True if the file is known to hold CRLF line ends only (size == vsize). */
bool mailbox_msg_is_crlf(struct mailbox *box, uint32_t seq);
/* First uid >= uid, as a sequence; 0 if none. */
uint32_t mailbox_uid_to_seq_ge(struct mailbox *box, uint32_t uid);

/* Replace the permanent flags of seq (renames the file). Returns 0, -1 on
   error; a message that vanished returns -1 with errno ENOENT. */
int mailbox_msg_set_flags(struct mailbox *box, uint32_t seq,
			  enum mail_flags flags, const char **error_r);

/* Remove the message's file. The view keeps it until the next sync that
   may expunge (which reports it); other session views of this process
   that show it can still read it until they report it (maildir-ghost.h).
   Returns 0 or -1 (errno ENOENT if it was gone already). */
int mailbox_msg_expunge(struct mailbox *box, uint32_t seq,
			const char **error_r);
/* Make the expunges done so far durable (one fsync of cur/: a lost
   unlink would bring the message back), unless MAILBOX_OPEN_NO_FSYNC.
   Call before answering OK to what expunged. Returns 0 or -1. */
int mailbox_expunge_sync(struct mailbox *box, const char **error_r);
/* Group commit across folders (imap/imap-commit.h): while deferred, the
   handle's writes are not synced one by one (as MAILBOX_OPEN_NO_FSYNC);
   the caller then makes them durable with mailbox_syncfs() before it
   reports success. Returns true if that changed anything (false for a
   MAILBOX_OPEN_NO_FSYNC handle, which syncs nothing anyway). */
bool mailbox_fsync_defer(struct mailbox *box, bool defer);
/* After that syncfs (or its failure): removes what a deferred commit
   keeps until its changes are durable (the journal of a set that must
   appear all or none, maildir-staged.c). No-op when there is none.
   Returns 0 or -1. */
int mailbox_fsync_deferred_done(struct mailbox *box, const char **error_r);
/* The per-file syncs that make a deferred publish durable without a
   syncfs (doc/durability.md, "The lone commit"): fdatasync of
   moat.uidlist (appended) and of the index log, fsync of cur/ (the new
   names). Descriptors are the caller's (mailbox_sync_targets_close()). */
#define MAILBOX_SYNC_TARGETS_MAX 3
struct mailbox_sync_targets {
	int fds[MAILBOX_SYNC_TARGETS_MAX];
	bool datasync[MAILBOX_SYNC_TARGETS_MAX];   /* else fsync */
	unsigned int count;
};
/* Call while still deferred, after the publish. Returns 1 with
   *targets_r, 0 if the writes since mailbox_fsync_defer() went beyond
   appends to those files (a uidlist rewrite, its Dovecot mirror, a new
   index log or moat.index: only a syncfs covers them), or -1. */
int mailbox_fsync_deferred_targets(struct mailbox *box,
				   struct mailbox_sync_targets *targets_r,
				   const char **error_r);
void mailbox_sync_targets_close(struct mailbox_sync_targets *targets);
/* syncfs(2) of the file system holding the folder: everything written
   there so far is on disk. Returns 0 or -1. */
int mailbox_syncfs(struct mailbox *box, const char **error_r);
/* A descriptor (the caller's, to close) for that syncfs(2) made elsewhere
   (the sync thread), or -1 with *error_r. */
int mailbox_syncfs_fd(struct mailbox *box, const char **error_r);

/* ---- cache (moat.index.cache, mail-cache.h) ----
   Per-message values worth keeping between sessions (ENVELOPE,
   BODYSTRUCTURE, header fields...), by short field names. Only a cache:
   a miss is always possible. */

/* Returns 1 with *data_r (valid until the next sync or cache call), 0 on
   a miss (also for an expunged message). */
int mailbox_msg_cache_lookup(struct mailbox *box, uint32_t seq,
			     const char *field, const void **data_r,
			     size_t *size_r);
/* Queue field of seq; written by the next mailbox_cache_flush() (done by
   mailbox_sync() and mailbox_close() too). Returns 0, or -1 if the name
   or size is not acceptable or the message was expunged. */
int mailbox_msg_cache_add(struct mailbox *box, uint32_t seq,
			  const char *field, const void *data, size_t size,
			  const char **error_r);
/* Write the queued cache values (not fsynced). Returns 0 or -1. */
int mailbox_cache_flush(struct mailbox *box, const char **error_r);
/* Called by a reader in index/ (SEARCH's matcher, the SORT/THREAD key
   reader) right after it read message seq's header from fd, while fd is
   still open: the IMAP layer then fills the cache fields it owns
   (ENVELOPE) from the same file without opening it again, so a FETCH
   after a SEARCH or THREAD parses nothing. fd is the reader's (read it
   with pread; do not close it); the callback must not sync box. */
typedef void mailbox_msg_read_callback_t(struct mailbox *box, uint32_t seq,
					  int fd, void *context);

/* ---- keywords (mailbox-keywords.c) ----
   A mailbox has up to MAILBOX_KEYWORDS_MAX keywords, numbered 0..25;
   per message they are a bitmask (bit i = keyword i). */
#define MAILBOX_KEYWORDS_MAX 26

/* Re-read the keyword names. Returns 1 if they changed, 0 if not, -1. */
int mailbox_keywords_refresh(struct mailbox *box, const char **error_r);
/* Bitmask of the defined keywords; the name of keyword idx (or NULL). */
uint32_t mailbox_keywords_defined(struct mailbox *box);
const char *mailbox_keyword_name(struct mailbox *box, unsigned int idx);
/* Find keyword name (case-insensitive); with create, define it if
   missing. Returns 1 and *idx_r; 0 if it does not exist (!create) or no
   letter is left (create: the caller answers NO [LIMIT]); -1 on error. */
int mailbox_keyword_get(struct mailbox *box, const char *name, bool create,
			unsigned int *idx_r, const char **error_r);
/* Whether name is a valid keyword atom (RFC 9051 flag-keyword). */
bool mailbox_keyword_is_valid(const char *name);

uint32_t mailbox_msg_keywords(struct mailbox *box, uint32_t seq);

enum mailbox_flags_change {
	MAILBOX_FLAGS_REPLACE,
	MAILBOX_FLAGS_ADD,
	MAILBOX_FLAGS_REMOVE,
};
/* Add, remove or replace permanent flags and keywords of seq (one
   rename). ADD and REMOVE apply to what the message's file name says at
   the moment of the rename, not to this handle's view, which may be
   older: a flag another writer set meanwhile is kept. The handle's view
   shows the result at once. Returns 0 or -1 (errno ENOENT if the message
   vanished). */
int mailbox_msg_change_flags(struct mailbox *box, uint32_t seq,
			     enum mailbox_flags_change mode,
			     enum mail_flags flags, uint32_t keywords,
			     const char **error_r);
/* The same if the message's modseq is at most unchanged_since (RFC 7162
   3.1.3 UNCHANGEDSINCE): the view is synced with every committed change
   under the folder's lock first, and the test and the change happen
   under it, so no other writer of this layer slips in between. Returns
   0 when done (or nothing needed changing), 1 if the modseq is higher
   (nothing changed), -1 (errno ENOENT if the message vanished). */
int mailbox_msg_change_flags_cond(struct mailbox *box, uint32_t seq,
				  enum mailbox_flags_change mode,
				  enum mail_flags flags, uint32_t keywords,
				  uint64_t unchanged_since,
				  const char **error_r);
/* One change for many messages (STORE on a range): */
struct mailbox_flags_batch {
	enum mailbox_flags_change mode;
	enum mail_flags flags;
	uint32_t keywords;
	/* UNCHANGEDSINCE: only messages whose modseq is at most this */
	bool conditional;
	uint64_t unchanged_since;
	/* Commit without the log's fdatasync: the caller makes the change
	   durable with mailbox_flags_sync() before it tells anyone it is
	   done (pipelined STOREs share one sync: imap/cmd-store.c). */
	bool defer_sync;
};
enum mailbox_change_result {
	MAILBOX_CHANGE_DONE,		/* changed, in the view already */
	MAILBOX_CHANGE_UNCHANGED,	/* it had those flags already */
	MAILBOX_CHANGE_EXPUNGED,	/* gone: nothing changed */
	MAILBOX_CHANGE_MODIFIED,	/* conditional: modseq was higher */
};
/* Most messages of one mailbox_msgs_change_flags() call: a longer range
   is several calls. Bounded by what the folder's inotify watch can tell
   apart as our own renames (two names each, MAILDIR_WATCH_MAX_EXPECTED). */
#define MAILBOX_CHANGE_BATCH_MAX 128
/* The change of mailbox_msg_change_flags(_cond) for each of seqs[0..count)
   (count <= MAILBOX_CHANGE_BATCH_MAX), under one lock: one rename each,
   then one index transaction, so one log append and one fdatasync for
   all of them. results[i] tells what became of seqs[i]; the view shows
   every change at return, and a later sync does not report them again.
   Returns 0, or -1 on an I/O error (the changes made before it are
   committed; the results are then incomplete). */
int mailbox_msgs_change_flags(struct mailbox *box,
			      const struct mailbox_flags_batch *batch,
			      const uint32_t *seqs, unsigned int count,
			      enum mailbox_change_result *results,
			      const char **error_r);
/* fdatasync the index log if a defer_sync batch committed since the
   last call: their changes are durable at return. A no-op otherwise (and
   for a MAILBOX_OPEN_NO_FSYNC handle, whose commits never sync).
   mailbox_close() does it too, but can only log a failure. Returns 0 or
   -1 (the changes are then in the log, not known to be on disk). */
int mailbox_flags_sync(struct mailbox *box, const char **error_r);
/* Does box owe a mailbox_flags_sync()? */
bool mailbox_flags_unsynced(const struct mailbox *box);
/* For one sync of many handles of a folder (imap/imap-flag-sync.h): box
   owes a sync, and synced's mailbox_flags_sync() just succeeded, after
   box's commits. If both append to the same log file, that fdatasync
   made box's changes durable too: box owes nothing more, and true is
   returned. */
bool mailbox_flags_sync_covered(struct mailbox *box,
				const struct mailbox *synced);
/* Replace both the permanent flags and the keywords of seq (one rename).
   Returns 0 or -1 (errno ENOENT if the message vanished). */
int mailbox_msg_set_flags_keywords(struct mailbox *box, uint32_t seq,
				   enum mail_flags flags, uint32_t keywords,
				   const char **error_r);

/* ---- modseqs (mailbox-modseq.c; RFC 7162 CONDSTORE and QRESYNC) ----
   Every change of a message (append, flags, keywords, expunge) gets the
   mailbox's next modseq; the view holds each message's latest. */

/* The message's modseq (>= 1); for an expunged message the view still
   has, that of its last change before the expunge. */
uint64_t mailbox_msg_modseq(struct mailbox *box, uint32_t seq);
/* HIGHESTMODSEQ: the highest modseq of the view. */
uint64_t mailbox_get_highest_modseq(struct mailbox *box);
/* The highest modseq up to which the session has reported every change:
   below its first expunge not reported yet, else the highest. A client
   told this value after the flag changes of a command that may not
   report expunges loses nothing if the connection then drops (RFC 7162
   3.2, 6). */
uint64_t mailbox_get_reported_modseq(struct mailbox *box);
/* What, besides HIGHESTMODSEQ and the message count, tells how the
   session numbers its messages: how far the view's records are visible
   and which expunges it has not reported (a hash of their uids). Two
   sessions of the folder with the same three number them alike (result
   caches key on it: imap/imap-thread-cache.h). */
uint64_t mailbox_get_numbering_stamp(struct mailbox *box);
/* Expunges with since < modseq <= the view's highest, as runs of uids
   that were messages; uids the session still shows (expunges it has not
   reported) are left out. Returns 1, 0 if the history does not reach
   back to since (mailbox_get_history_base()), -1 on error. */
typedef void mailbox_expunged_func_t(void *context, uint32_t uid1,
				     uint32_t uid2);
int mailbox_expunged_since(struct mailbox *box, uint64_t since,
			   mailbox_expunged_func_t *cb, void *context,
			   const char **error_r);
/* The lowest modseq mailbox_expunged_since() answers for. */
uint64_t mailbox_get_history_base(struct mailbox *box);
/* Runs of uids holding every message whose modseq is above since (and
   maybe others: check each message's modseq). Returns 1, 0 if the
   history does not reach back to since (look at every message), -1 on
   error. O(changes after since). */
int mailbox_changed_since(struct mailbox *box, uint64_t since,
			  mailbox_expunged_func_t *cb, void *context,
			  const char **error_r);

/* ---- copy (maildir-copy.c) ----
   Copying messages into another mailbox (which may be the same folder):
   hard links when possible, else byte copies; flags (not \Recent),
   keywords (by name) and INTERNALDATE are kept. Nothing is visible in the
   target before commit; after a successful commit the new files and
   their UIDs are durable (unless the target was opened NO_FSYNC). */
struct mailbox_copy_ctx;

struct mailbox_copy_ctx *mailbox_copy_begin(struct mailbox *dest);
/* Stage message seq of src. Returns 0, or -1 (errno ENOENT if the
   message was expunged: the caller may skip it). */
int mailbox_copy_add(struct mailbox_copy_ctx *ctx, struct mailbox *src,
		     uint32_t seq, const char **error_r);
/* Number of messages staged. */
unsigned int mailbox_copy_count(struct mailbox_copy_ctx *ctx);
/* Bytes of the staged copies (for the quota). */
uint64_t mailbox_copy_bytes(struct mailbox_copy_ctx *ctx);
/* Publish the staged messages under the target's lock. They get the
   consecutive UIDs *first_uid_r .. + count - 1 in staging order. Frees
   the context either way; on failure nothing stays in the target. */
int mailbox_copy_commit(struct mailbox_copy_ctx **ctx, uint32_t *first_uid_r,
			const char **error_r);
void mailbox_copy_abort(struct mailbox_copy_ctx **ctx);

/* ---- append (maildir-save.c) ---- */
struct mailbox_append_ctx;

/* Start saving a message into box (which may be read-only to the session:
   APPEND does not need SELECT). internal_date (time_t)-1 = now. */
int mailbox_append_begin(struct mailbox *box, enum mail_flags flags,
			 time_t internal_date, struct mailbox_append_ctx **ctx_r,
			 const char **error_r);
/* mailbox_append_begin() for a delivery with an id (MAILDIR_DELIVERY_ID_LEN
   lowercase hex digits, a digest of what was delivered): the file's name
   carries it, so mailbox_find_delivery() can tell a retry from new mail. */
int mailbox_append_begin_delivery(struct mailbox *box, const char *id,
				  struct mailbox_append_ctx **ctx_r,
				  const char **error_r);
/* The delivery ids of the newest messages, newest first, until max_ids
   were found or max_messages read: the callback gets each id
   (NUL-terminated) with the message's uid. Returns 0, or -1 on error. */
typedef void mailbox_delivery_callback_t(const char *id, uint32_t uid,
					 void *context);
int mailbox_scan_deliveries(struct mailbox *box, unsigned int max_ids,
			    unsigned int max_messages,
			    mailbox_delivery_callback_t *callback,
			    void *context, const char **error_r);
/* Keywords (indexes of mailbox_keyword_get()) for the new message. */
void mailbox_append_set_keywords(struct mailbox_append_ctx *ctx,
				 uint32_t keywords);
/* Write the next part of the message. Returns 0 or -1; after -1 the
   context only accepts mailbox_append_abort(). */
int mailbox_append_write(struct mailbox_append_ctx *ctx, const void *data,
			 size_t size, const char **error_r);
/* Make it durable and give it a UID. Frees the context either way. */
int mailbox_append_finish(struct mailbox_append_ctx **ctx,
			  uint32_t *uid_r, const char **error_r);
void mailbox_append_abort(struct mailbox_append_ctx **ctx);

/* ---- status (mailbox-status.c) ----
   STATUS without opening a session view: when the folder's cur/ and new/
   still have the mtimes of the last scan (moat.index.dirs), the counts
   come from moat.index alone (header, plus the records for SIZE); else
   the mailbox is opened and synced once (which also refreshes the index
   and the stamp for the next call). */
enum mailbox_status_items {
	/* Sums of RFC822.SIZE, of all messages and of the \Deleted ones:
	   O(n) over the index records. */
	MAILBOX_STATUS_SIZE = 0x01,
};

struct mailbox_status {
	uint32_t messages, uidnext, uidvalidity;
	uint32_t unseen, deleted, recent;
	uint64_t size;             /* only with MAILBOX_STATUS_SIZE */
	uint64_t deleted_size;     /* the \Deleted ones' (the same) */
	uint64_t highest_modseq;   /* HIGHESTMODSEQ (RFC 7162 3.1.7) */
	/* Answered from the index alone (for tests and statistics). */
	bool from_index;
};

/* Returns 1 and *status_r, 0 if the mailbox does not exist (or is
   \Noselect, or the name is invalid), -1 on error (*error_r valid until
   the next call). flags are those of mailbox_open() for the fallback. */
int mailbox_status_get(const char *root, const char *name,
		       enum mailbox_open_flags flags,
		       enum mailbox_status_items items,
		       struct mailbox_status *status_r, const char **error_r);
/* Index handles kept open between STATUS calls of one process (LRU,
   mailbox-status.c): a STATUS of an unchanged mailbox then costs three
   stat()s. Changes by anyone (other sessions, delivery agents, files
   dropped into new/ or cur/, expunges, DELETE/RENAME) are seen as without
   the cache. Handles of big mailboxes are closed when their records
   together pass 1M. max_handles 0 = keep none. */
#define MAILBOX_STATUS_CACHE_MAX_HANDLES 1024
struct mailbox_status_cache;
struct mailbox_status_cache *mailbox_status_cache_init(unsigned int max_handles);
void mailbox_status_cache_deinit(struct mailbox_status_cache **cache);
/* Close the handles last used before unused_since (time()). Returns how
   many stay open. */
unsigned int mailbox_status_cache_expire(struct mailbox_status_cache *cache,
					 time_t unused_since);
unsigned int mailbox_status_cache_count(const struct mailbox_status_cache *cache);
/* mailbox_status_get() through cache (NULL = none). */
int mailbox_status_get_cached(struct mailbox_status_cache *cache,
			      const char *root, const char *name,
			      enum mailbox_open_flags flags,
			      enum mailbox_status_items items,
			      struct mailbox_status *status_r,
			      const char **error_r);
/* The same from an open view (the selected mailbox: its own numbers).
   Returns 0 or -1. */
int mailbox_status_from_box(struct mailbox *box,
			    enum mailbox_status_items items,
			    struct mailbox_status *status_r,
			    const char **error_r);

#endif
