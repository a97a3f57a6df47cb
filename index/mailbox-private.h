#ifndef MAILBOX_PRIVATE_H
#define MAILBOX_PRIVATE_H
/* The body of struct mailbox, shared by the mailbox-*.c and maildir-*.c
   files of index/ only. */

#include "mailbox.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-watch.h"
#include "maildir-ghost.h"
#include "maildir-keywords.h"
#include "maildir-uidlist-lookup.h"
#include "mailbox-uidset.h"
#include "mailbox-read-ahead.h"
#include "mail-index.h"

#include <stdio.h>
#include <sys/stat.h>

#define MAILBOX_ERROR_MAX 512

/* A message expunged from the index that the session has not reported
   yet: it keeps its sequence number until a sync that may expunge. */
struct mailbox_expunged {
	uint32_t uid;
	enum mail_flags flags;    /* permanent flags when it went */
	uint32_t keywords;
	/* RFC822.SIZE and INTERNALDATE as the index had them (0 = not
	   known: read from the kept file, maildir-ghost.h) */
	uint64_t vsize;
	int64_t internal_date;
	uint64_t modseq;          /* of its last change before it went */
	uint64_t expunge_modseq;  /* of the expunge (RFC 7162 3.2) */
};

/* Recently used file names (a message is opened, then renamed...);
   direct-mapped by uid. A handle that queues files for the read-ahead
   thread grows it to MAILBOX_FNAME_CACHE_AHEAD, the widest reading ahead
   (MAIL_SORT_KEYS_PREFETCH), so a name looked up to queue a file is
   still here at the message's turn. */
#define MAILBOX_FNAME_CACHE_SIZE 16
#define MAILBOX_FNAME_CACHE_AHEAD 64
struct mailbox_fname_cache {
	uint32_t uid;             /* 0 = empty */
	uint64_t size;            /* uidlist S=, or MAILDIR_SIZE_UNKNOWN */
	char name[MAILDIR_FILENAME_MAX + 1];
};

/* Persisted hint: the cur/ and new/ mtimes at the last directory scan
   whose result the index holds (so a new session need not rescan). */
#define MAILBOX_DIRSTAMP_NAME "moat.index.dirs"
/* Cache field: RFC822.SIZE of a file whose name has no ,W= (u64). */
#define MAILBOX_CACHE_VSIZE "vsize"
/* Cache field: the save date (RFC 8514), i64 seconds since the epoch,
   added in the commit that appends the message (maildir-save.c). */
#define MAILBOX_CACHE_SAVEDATE "savedate"
/* Cache field: the EMAILID (RFC 8474), its 17 characters, added the
   first time it is asked for (mailbox-objectid.c). It is derived from
   the file's base name, which never changes, so no value can be stale. */
#define MAILBOX_CACHE_EMAILID "emailid"
/* Cache field: INTERNALDATE (i64, the file's mtime) of a message indexed
   with internal_date 0, i.e. without a stat() (maildir-sync.c). */
#define MAILBOX_CACHE_DATE "date"

struct mailbox {
	char *name;
	char *path;              /* the Maildir folder */
	/* the mail root whose maildirsize counts this folder's messages,
	   or NULL (mailbox_set_quota_root()) */
	char *quota_root;
	char *cur_dir, *new_dir, *tmp_dir;
	/* O_PATH fds of the folder and of its cur/ (for opening messages),
	   opened at mailbox_open() without following any symlink below the
	   mail root (safe-open.h), so every later open relative to them
	   stays in this folder; -1 until then */
	int dir_fd, cur_fd;
	/* a symlink in cur/ or new/ was skipped by a scan: logged once */
	bool symlink_logged;
	enum mailbox_open_flags flags;
	struct maildir_uidlist *uidlist;
	struct maildir_keywords *keywords;
	struct maildir_unique unique;
	/* This session's handle of moat.index (mail-index.h). */
	struct mail_index *index;
	struct mail_index_view *view;
	enum mail_index_fsync_mode fsync_mode;
	struct mail_index_transaction *cache_trans;  /* queued cache adds */
	/* The session's messages: the view's records with uid <
	   visible_next_uid (later ones show up at the next mailbox_sync),
	   merged by uid with the pending expunges. Nothing per message is
	   copied: 600k messages cost the mapping only. */
	uint32_t visible_next_uid;
	struct mailbox_expunged *pending;   /* ascending uid */
	unsigned int pending_count, pending_alloc;
	bool pending_revived;     /* some came back: compact after the sync */
	/* Flag changes seen by view syncs, reported by the next
	   mailbox_sync (uids below visible_next_uid). */
	struct uidset ev_changed;
	/* \Recent in this session (claimed or, read-only, observed). */
	struct uidset recent;
	struct mailbox_fname_cache *fnames;  /* lazily, fname_slots of them */
	unsigned int fname_slots;
	struct maildir_uidlist_lookup *uidlookup;
	/* RFC822.SIZE counted for a name without ,W= (until cached) */
	uint32_t vsize_uid;
	uint64_t vsize_value;
	/* counting sizes message after message reads the next files ahead */
	struct mailbox_read_ahead vsize_read_ahead;
	/* cur/ for the process's read-ahead thread (mailbox-read-ahead.h),
	   made on first use; failed: the dup did not work, read ahead here */
	struct prefetch_dir *prefetch_dir;
	bool prefetch_dir_failed;
	/* EMAILIDs queued in cache_trans (mailbox-objectid.c) */
	unsigned int emailid_queued;

	/* The directories as of the last full scan. A change inside the
	   mtime's granularity could hide, so a scan that saw an mtime close
	   to "now" leaves the view dirty and the next sync rescans. */
	struct timespec cur_mtime, new_mtime;
	bool scan_dirty;
	/* Full scans of cur/ this handle made (tests tell a sync that
	   applied the watch's renames from one that read cur/) */
	unsigned int scan_count;
	/* The process's inotify watch of cur/ and new/ (maildir-watch.h),
	   NULL where there is none. Every rename, link or unlink this
	   process makes in cur/ or new/ is announced with
	   maildir_watch_expect(box->watch, ...) before it and followed by
	   maildir_watch_settle(box->watch); unannounced ones cost a rescan. */
	struct maildir_watch *watch;
	bool watch_tried;
	/* The process's kept files of this folder's expunged messages
	   (maildir-ghost.h); a MAILBOX_OPEN_SESSION handle is registered
	   there and may hold some of them. */
	struct maildir_ghosts *ghosts;
	bool staged_journaled;   /* maildir-staged.c wrote the journal */
	bool stamp_saved;        /* MAILBOX_DIRSTAMP_NAME holds the mtimes */
	bool unlinks_unsynced;   /* expunges since mailbox_expunge_sync() */
	bool fsync_deferred;     /* mailbox_fsync_defer() */
	uint32_t defer_log_seq;  /* the index log's when the deferral began */
	bool flags_unsynced;     /* defer_sync commits since mailbox_flags_sync() */
	time_t stamp_checked_at; /* last sync_stamp_refresh() look */
	/* Set by mailbox_import_foreign(): the first index commit makes
	   the messages below this uid not \Recent (0 = nothing to do). */
	uint32_t import_first_recent;
	/* Set by mailbox_import_foreign() for a folder Dovecot served: the
	   first index commit raises the modseq to it (0 = nothing to do). */
	uint64_t import_modseq_floor;
	char error[MAILBOX_ERROR_MAX];
};

const char *mailbox_set_error(struct mailbox *box, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* The index record of seq, or NULL with *exp_r for a pending expunge. */
const struct mail_index_record *
mailbox_seq_lookup(struct mailbox *box, uint32_t seq,
		   const struct mailbox_expunged **exp_r);
/* Messages of the view that the session sees (without pending ones). */
uint32_t mailbox_visible_count(struct mailbox *box);
/* Visible view records with uid below uid. */
uint32_t mailbox_visible_below(struct mailbox *box, uint32_t uid);
/* Pending expunges (box->pending, sorted by uid) with a uid below uid. */
unsigned int mailbox_pending_below(struct mailbox *box, uint32_t uid);
/* Tries at a message's file: the name guessed from the index, then names
   read from cur/ (another writer may rename it between our readdir and
   our rename or unlink). */
#define MAILBOX_FNAME_ATTEMPTS 4
/* Remember the name a rename gave the message. */
void mailbox_msg_set_fname(struct mailbox *box, uint32_t uid,
			   const char *fname);

/* The message's current file name in cur/ (through the uidlist, read
   lazily; a name guessed from the index flags is verified by the
   caller's open/rename: on ENOENT call mailbox_msg_forget_fname() and
   retry once with rescan = true, which reads cur/). Returns 0, or -1
   with errno ENOENT if it was expunged. */
int mailbox_msg_get_fname(struct mailbox *box, uint32_t seq, bool rescan,
			  const char **fname_r, const char **error_r);
void mailbox_msg_forget_fname(struct mailbox *box, uint32_t seq);
/* Forget uid's cached name (it was renamed or expunged). */
void mailbox_fname_forget_uid(struct mailbox *box, uint32_t uid);
/* Make the name cache hold at least slots names (the ones held stay). */
void mailbox_fname_cache_grow(struct mailbox *box, unsigned int slots);
/* The size on disk (uidlist S=), or MAILDIR_SIZE_UNKNOWN. */
uint64_t mailbox_msg_phys_size(struct mailbox *box, uint32_t seq);

/* maildir-sync.c: bring the view up to the end of the index log and
   report to cb. Returns 0 or -1. */
int mailbox_index_catch_up(struct mailbox *box, bool allow_expunge,
			   const struct mailbox_sync_callbacks *cb,
			   void *context, const char **error_r);
/* Open this session's index handle and load the view (mailbox.c). */
int mailbox_index_open(struct mailbox *box, const char **error_r);
/* Commit t (one operation of this layer); logs and returns -1 on error. */
int mailbox_index_commit(struct mailbox *box,
			 struct mail_index_transaction **t,
			 const char **error_r);
/* The first build of a never-written index straight into moat.index
   (mail_index_transaction_commit_first()). Returns 1 (t committed), 0
   (not a fresh index: t kept for mailbox_index_commit()), -1 (logged). */
int mailbox_index_commit_first(struct mailbox *box,
			       struct mail_index_transaction **t,
			       const char **error_r);
/* mailbox_index_commit() without the log's fdatasync: box->flags_unsynced
   says a mailbox_flags_sync() is owed (a defer_sync flag batch). */
int mailbox_index_commit_unsynced(struct mailbox *box,
				  struct mail_index_transaction **t,
				  const char **error_r);
/* After committing a flag change of uid: bring the view up to date so
   the session sees it, without reporting it back. Returns 0 or -1. */
int mailbox_view_refresh_own(struct mailbox *box, uint32_t uid,
			     const char **error_r);
/* Flags/keywords of message uid become exactly flags/keywords. */
void mailbox_index_replace_flags(struct mail_index_transaction *t,
				 uint32_t uid, enum mail_flags flags,
				 uint32_t keywords);
/* Queue the save date of message uid (appended by t) for t's commit
   (maildir-save.c). */
void mailbox_index_add_savedate(struct mail_index_transaction *t,
				uint32_t uid, time_t save_date);

/* mailbox-import.c: a folder moat never indexed that another server
   served gets its moat.uidlist (and keywords) from that server's files
   (maildir-import.h). Called by a full sync before it scans. Returns 0
   (also when there is nothing to import) or -1. */
int mailbox_import_foreign(struct mailbox *box, const char **error_r);

/* mailbox-quota-account.c: a change of the folder's messages, counted in
   its quota root's maildirsize (if it has one); a failure is logged (the
   next recalc fixes the count). */
void mailbox_quota_account(struct mailbox *box, int64_t storage,
			   int64_t messages);

/* Publish staged messages (COPY, MULTIAPPEND): publish() gives them UIDs
   and moves them into box's cur/ while the uidlist lock is held; then
   cur/ is fsynced unless MAILBOX_OPEN_NO_FSYNC, so 0 means durable. A
   publish() of more than one message journals the set with
   mailbox_staged_begin() before its first rename, so that a crash leaves
   all of it (maildir-staged.c); this removes the journal afterwards. */
typedef int mailbox_publish_func_t(void *context, uint32_t *first_uid_r,
				   const char **error_r);
int mailbox_publish_staged(struct mailbox *box, mailbox_publish_func_t *publish,
			   void *context, uint32_t *first_uid_r,
			   const char **error_r);
/* maildir-staged.c. pair() gives message i's name in tmp/ and in cur/.
   begin returns 1 if the journal was written, 0 if not needed (count <
   2), -1. end removes it. recover_locked (uidlist locked) and recover
   (takes the lock; a sync before scanning) finish what a publisher that
   died left: the rest of its set goes to cur/. */
typedef void mailbox_staged_pair_func_t(void *context, unsigned int i,
					const char **tmp_name_r,
					const char **cur_name_r);
int mailbox_staged_begin(struct mailbox *box, mailbox_staged_pair_func_t *pair,
			 void *context, unsigned int count,
			 const char **error_r);
int mailbox_staged_end(struct mailbox *box, const char **error_r);
/* COPY's journal, written as it stages (memory independent of the
   count): spool_create makes tmp/<unique>.copy with the journal header;
   the caller appends "<tmp name> <cur name> <internal date>" lines.
   begin_spool makes it durable and renames it into place as the journal
   (under the uidlist lock); spool_rewind goes back to its first line. A
   spool left by a process that died while staging is a file in tmp/
   like the staged messages: the 36-hour tmp/ cleanup removes them all. */
FILE *mailbox_staged_spool_create(struct mailbox *box, const char *unique,
				   char *path_r, size_t path_size,
				   const char **error_r);
void mailbox_staged_spool_rewind(FILE *spool);
int mailbox_staged_begin_spool(struct mailbox *box, FILE *spool,
			       const char *spool_path, const char **error_r);
int mailbox_staged_recover_locked(struct mailbox *box, const char **error_r);
int mailbox_staged_recover(struct mailbox *box, const char **error_r);

#endif
