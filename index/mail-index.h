#ifndef MAIL_INDEX_H
#define MAIL_INDEX_H
/* moat's per-mailbox index: moat.index (fixed records, mmap'd),
   moat.index.log (append-only transaction log, the truth after the last
   index write) and moat.index.cache (mail-cache.h). The formats and the
   locking, durability and recovery rules are in doc/index-format.md.

   Ownership: mail_index_open() returns a handle the caller owns and frees
   with mail_index_close(). A handle has at most one view at a time
   (mail_index_view_open); the view's records and sequence numbers change
   only inside mail_index_view_sync(). Record pointers returned by lookups
   stay valid until the next sync, commit or close of that handle.
   Several handles (in one process or many) may use one directory:
   writers serialize on moat.index.lock, readers never take it. */

#include "mail-flags.h"

#include <stdint.h>
#include <time.h>

#define MAIL_INDEX_FILE_NAME "moat.index"
#define MAIL_INDEX_LOG_FILE_NAME "moat.index.log"
#define MAIL_INDEX_LOG2_FILE_NAME "moat.index.log.2"
#define MAIL_INDEX_CACHE_FILE_NAME "moat.index.cache"
#define MAIL_INDEX_LOCK_FILE_NAME "moat.index.lock"
/* The histories (uid ranges with their modseqs) that outlive the log:
   expunges for QRESYNC's VANISHED, changes for finding what changed
   after a modseq (mail-index-modseq.c, doc/index-format.md). */
#define MAIL_INDEX_MODSEQ_FILE_NAME "moat.index.modseq"
#define MAIL_INDEX_CHANGES_FILE_NAME "moat.index.changes"

/* 32 keyword bits per record; more come with a later extension. */
#define MAIL_INDEX_MAX_KEYWORDS 32
/* IMAP atoms longer than this are not useful as keywords. */
#define MAIL_INDEX_KEYWORD_MAX_LEN 128
/* Writers give up waiting for the lock after this long: another writer
   holds it only for one append (fsync happens after unlock). */
#define MAIL_INDEX_LOCK_TIMEOUT_MS 30000

enum mail_index_open_flags {
	/* Create the files if they are missing. */
	MAIL_INDEX_OPEN_CREATE = 0x01,
	/* Never write the files (EXAMINE by a read-only user). */
	MAIL_INDEX_OPEN_READONLY = 0x02,
};

enum mail_index_fsync_mode {
	/* fdatasync the log before commit returns (the safe default). */
	MAIL_INDEX_FSYNC_ALWAYS = 0,
	/* Leave it to the kernel (mail_fsync = never). */
	MAIL_INDEX_FSYNC_NEVER,
};

/* One message as stored in moat.index (native byte order, 40 bytes). */
struct mail_index_record {
	uint32_t uid;
	uint8_t flags;             /* enum mail_flags, MAIL_FLAGS_PERMANENT */
	uint8_t unused[3];
	uint32_t keywords;         /* bit i = keyword name i */
	uint32_t cache_offset;     /* 0 = nothing cached */
	uint64_t modseq;           /* last change of flags/keywords */
	uint64_t size;             /* RFC822.SIZE, 0 if unknown */
	int64_t internal_date;     /* seconds since the epoch */
};

/* What the caller may read of the header (a copy). */
struct mail_index_status {
	uint32_t uidvalidity;
	uint32_t next_uid;
	uint32_t messages_count;
	uint32_t seen_count;
	uint32_t deleted_count;
	uint32_t first_unseen_uid;  /* 0 if every message is \Seen */
	uint64_t highest_modseq;
	uint32_t keywords_count;
	/* Messages with uid >= this are \Recent for the next SELECT
	   (RFC 3501 2.3.2); raised by mail_index_update_first_recent(). */
	uint32_t first_recent_uid;
};

struct mail_index;
struct mail_index_view;
struct mail_index_transaction;

/* Open the index of dir. Missing files are created with
   MAIL_INDEX_OPEN_CREATE (else: returns 0). A damaged index file is
   logged once and rebuilt from the log; a damaged log is cut at the last
   intact record. Returns 1 and *index_r, 0 if missing, -1 on error
   (*error_r valid until the next call on any handle of this thread). */
int mail_index_open(const char *dir, enum mail_index_open_flags flags,
		    struct mail_index **index_r, const char **error_r);
void mail_index_close(struct mail_index **index);
/* True if open found the index or log unusable and recovered what it
   could: the caller (the mailbox layer) should compare with the Maildir
   (or call mail_index_reset() and re-append everything). */
bool mail_index_was_rebuilt(struct mail_index *index);

/* Throw away every message and start over with a new uidvalidity (the
   mailbox layer then re-appends from the Maildir). Other handles see a
   full resync. Returns 0 or -1. */
int mail_index_reset(struct mail_index *index, uint32_t uidvalidity,
		     uint32_t next_uid, const char **error_r);

/* Write moat.index reflecting the whole log (and rotate the log when it
   is big). Done automatically by syncs; exposed for tests and tools.
   Returns 0 or -1. */
int mail_index_checkpoint(struct mail_index *index, const char **error_r);

/* Tuning (and tests): rotate the log past rotate_bytes, rewrite
   moat.index when checkpoint_bytes of log lie beyond it. 0 = default. */
void mail_index_set_limits(struct mail_index *index, uint32_t rotate_bytes,
			   uint32_t checkpoint_bytes);

/* Keyword names: idx is the bit in mail_index_record.keywords. Lookup
   returns true and *idx_r if the name is defined (case-insensitive).
   Define writes the name to the log if it is new. Returns 0, or -1 if
   all MAIL_INDEX_MAX_KEYWORDS are taken or on I/O error. */
bool mail_index_keyword_lookup(struct mail_index_view *view, const char *name,
			       unsigned int *idx_r);
int mail_index_keyword_define(struct mail_index *index, const char *name,
			      unsigned int *idx_r, const char **error_r);
/* NULL if idx is not defined in the view. */
const char *mail_index_keyword_name(struct mail_index_view *view,
				    unsigned int idx);

/* ---- views (mail-index-view.c) ---- */
struct mail_index_view *mail_index_view_open(struct mail_index *index);
void mail_index_view_close(struct mail_index_view **view);

void mail_index_view_get_status(struct mail_index_view *view,
				struct mail_index_status *status_r);
uint32_t mail_index_view_count(struct mail_index_view *view);
/* 1 <= seq <= count. */
const struct mail_index_record *
mail_index_view_lookup(struct mail_index_view *view, uint32_t seq);
/* Returns the sequence of uid, or 0. */
uint32_t mail_index_view_uid_to_seq(struct mail_index_view *view, uint32_t uid);
/* The first sequence whose uid >= uid, or 0. */
uint32_t mail_index_view_uid_to_seq_ge(struct mail_index_view *view,
				       uint32_t uid);

/* What a sync changed, in log order. Sequences are those of the view at
   the moment of the call (an expunge moves later messages down by one,
   as IMAP EXPUNGE responses do). Any callback may be NULL. */
struct mail_index_sync_callbacks {
	void (*expunge)(void *context, uint32_t seq, uint32_t uid);
	void (*flags_changed)(void *context, uint32_t seq, uint32_t uid);
	void (*appended)(void *context, uint32_t seq, uint32_t uid);
	/* The uidvalidity changed (mail_index_reset by someone): every
	   message was reported expunged before this call. */
	void (*uidvalidity_changed)(void *context, uint32_t uidvalidity);
};

/* Inside a sync callback: the modseq of the change being reported (for
   changes found by a reload, one above the view's previous highest). */
uint64_t mail_index_view_sync_modseq(struct mail_index_view *view);

/* Bring the view up to the end of the log. O(1) when nothing changed
   (one fstat and one stat). Returns 0 or -1. */
int mail_index_view_sync(struct mail_index_view *view,
			 const struct mail_index_sync_callbacks *callbacks,
			 void *context, const char **error_r);

/* ---- modseqs (mail-index-modseq.c) ---- */

/* Call cb for every run of uids expunged with since < modseq <= the
   view's highest modseq (ascending modseq; the runs are disjoint and
   hold only uids that were messages). Returns 1, 0 if the history does
   not reach back to since (it was capped, lost, or the index was reset
   after since: the caller answers without it, RFC 7162 3.2.5.2), or -1
   on an I/O error. */
typedef void mail_index_expunged_func_t(void *context, uint32_t uid1,
					uint32_t uid2);
int mail_index_view_expunged_since(struct mail_index_view *view,
				   uint64_t since,
				   mail_index_expunged_func_t *cb,
				   void *context, const char **error_r);
/* The lowest modseq from which the view's expunge history is complete:
   mail_index_view_expunged_since() answers for since >= this. */
uint64_t mail_index_view_history_base(struct mail_index_view *view);
/* Call cb for runs of uids that hold every message whose modseq is above
   since (appended, or flags or keywords changed after it), ascending
   modseq, possibly overlapping and with uids whose modseq is not above
   since any more (the caller checks each record). Returns 1, 0 if the
   history does not reach back to since (look at every record), -1 on an
   I/O error. O(changes after since), not O(messages). */
int mail_index_view_changed_since(struct mail_index_view *view,
				  uint64_t since,
				  mail_index_expunged_func_t *cb,
				  void *context, const char **error_r);

/* ---- transactions (mail-index-transaction.c) ---- */
struct mail_index_transaction *mail_index_transaction_begin(struct mail_index *index);
/* uid 0: the index assigns the next uid at commit. A nonzero uid must be
   >= next_uid at commit time and ascending within the transaction
   (moat.uidlist gives them), else the commit fails. */
void mail_index_append(struct mail_index_transaction *t, uint32_t uid,
		       enum mail_flags flags, uint32_t keywords,
		       uint64_t size, int64_t internal_date);
/* Add then remove: flags/keywords of every message with uid1 <= uid <= uid2. */
void mail_index_update_flags(struct mail_index_transaction *t,
			     uint32_t uid1, uint32_t uid2,
			     enum mail_flags add, enum mail_flags remove,
			     uint32_t add_keywords, uint32_t remove_keywords);
void mail_index_expunge(struct mail_index_transaction *t,
			uint32_t uid1, uint32_t uid2);
/* Set uidvalidity (0 = keep) and raise next_uid (never lowers it). */
void mail_index_update_header(struct mail_index_transaction *t,
			      uint32_t uidvalidity, uint32_t next_uid);

/* Raise first_recent_uid to uid (never lowers it; no new modseq). The
   commit result tells the value it had just before: the committer owns
   \Recent of [prev_first_recent_uid, uid) if that is not empty. */
void mail_index_update_first_recent(struct mail_index_transaction *t,
				    uint32_t uid);

/* The commit's modseq becomes at least floor, and the histories start
   just below it: for a folder another server served, whose clients may
   hold modseqs up to floor, so that CHANGEDSINCE and QRESYNC with such a
   modseq get every message and the RFC's fallback for expunges instead
   of nothing. */
void mail_index_raise_modseq(struct mail_index_transaction *t,
			     uint64_t floor);

struct mail_index_commit_result {
	uint64_t modseq;            /* given to every change of the commit */
	uint32_t first_uid;         /* uids of the appends, in order */
	uint32_t last_uid;          /* 0 if nothing was appended */
	uint32_t log_file_seq;      /* where the commit ended in the log */
	uint32_t log_file_offset;
	/* first_recent_uid of the log tail before this commit */
	uint32_t prev_first_recent_uid;
};

/* Lock, catch up with the log tail, write one checksummed log record
   holding the whole transaction, unlock, then fdatasync (per mode). The
   view does not change: the next mail_index_view_sync() reports the
   changes. Frees the transaction either way. Returns 0, or -1 (nothing
   of the transaction is in the log). */
int mail_index_transaction_commit(struct mail_index_transaction **t,
				  enum mail_index_fsync_mode fsync_mode,
				  struct mail_index_commit_result *result_r,
				  const char **error_r);
/* The first build of an index that was never written: the log is the
   first one and holds no message, and there is no moat.index and no
   history file yet. Then t's records go straight into moat.index
   (moat.index.tmp, fdatasync, rename) and a new, RESET log starts after
   it (renamed in, then the directory fsynced), instead of the log first
   and moat.index again at the next checkpoint. Every moment is
   crash-safe: before the rename there is no moat.index (the next open
   builds again), after it a complete one (a missing new log is created
   at open). With MAIL_INDEX_FSYNC_NEVER nothing is synced. t may have
   no cached fields and no mail_index_raise_modseq() (their log records
   and histories need the ordinary commit). Returns 1 (t freed, the view
   sees the records at its next sync, as after a reset), 0 if the index
   is not such a fresh one (t untouched: commit it the ordinary way), or
   -1 (t freed, moat.index not replaced). */
int mail_index_transaction_commit_first(struct mail_index_transaction **t,
					enum mail_index_fsync_mode fsync_mode,
					struct mail_index_commit_result *result_r,
					const char **error_r);
void mail_index_transaction_rollback(struct mail_index_transaction **t);
/* fdatasync the log this handle appends to: every commit made through it
   with MAIL_INDEX_FSYNC_NEVER is durable after it. (A log rotated out
   since then needs nothing: the checkpoint that rotated it wrote and
   synced moat.index, which holds every record of it.) Returns 0 or -1. */
int mail_index_sync_log(struct mail_index *index, const char **error_r);
/* Do a and b append to the same log file, so that one fdatasync (of
   either) makes both handles' commits durable? */
bool mail_index_log_same(const struct mail_index *a,
			 const struct mail_index *b);
/* For that fdatasync made elsewhere (the sync thread): a descriptor of
   the log this handle appends to (the caller's, to close) and the log's
   sequence number, or -1 with errno (ENOENT: the handle never had a
   log). */
int mail_index_log_fd_dup(struct mail_index *index, uint32_t *seq_r);
/* The sequence number of the log this handle appends to (0: none). */
uint32_t mail_index_log_seq(struct mail_index *index);

/* Whether view holds everything in the log: the handle's log is still the
   one at its path and no record follows the handle's position. Exact where
   the log's size and mtime are not (appends overwrite the zeros written
   ahead of the records, and mtime ticks coarsely): a stat and a pread. */
bool mail_index_view_at_log_end(struct mail_index_view *view);

/* Full O(n) consistency check of the view (ascending uids, flag bits,
   counts). For tests, fuzzing and the admin tool. */
bool mail_index_view_check(struct mail_index_view *view, const char **error_r);

#endif
