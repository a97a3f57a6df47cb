#ifndef MAILBOX_PRIVATE_H
#define MAILBOX_PRIVATE_H
/* The body of struct mailbox, shared by mailbox.c, maildir-sync.c and
   maildir-save.c only. */

#include "mailbox.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"
#include "mail-index.h"

#include <sys/stat.h>

#define MAILBOX_ERROR_MAX 512

struct mailbox_msg {
	uint32_t uid;
	enum mail_flags flags;   /* including MAIL_RECENT */
	uint32_t keywords;       /* bit i = letter 'a' + i (maildir-keywords.h) */
	bool expunged;           /* vanished on disk, still in the view */
	uint64_t size, vsize;    /* MAILDIR_SIZE_UNKNOWN if not known */
	int64_t internal_date;   /* from the index record */
	/* In cur/, i_malloc'd; NULL until needed (mailbox_msg_get_fname
	   finds it through the uidlist) or when it may be stale. */
	char *fname;
};

/* Index changes seen by one mail_index_view_sync(), applied afterwards
   (the view's records are final only once the sync returned). */
struct mailbox_uid_array {
	uint32_t *uids;
	unsigned int count, alloc;
};

/* Persisted hint: the cur/ and new/ mtimes at the last directory scan
   whose result the index holds (so a new session need not rescan). */
#define MAILBOX_DIRSTAMP_NAME "moat.index.dirs"
/* Cache field: RFC822.SIZE of a file whose name has no ,W= (u64). */
#define MAILBOX_CACHE_VSIZE "vsize"

struct mailbox {
	char *name;
	char *path;              /* the Maildir folder */
	char *cur_dir, *new_dir, *tmp_dir;
	enum mailbox_open_flags flags;
	struct maildir_uidlist *uidlist;
	struct maildir_keywords *keywords;
	struct maildir_unique unique;
	/* This session's handle of moat.index (mail-index.h). */
	struct mail_index *index;
	struct mail_index_view *view;
	enum mail_index_fsync_mode fsync_mode;
	struct mail_index_transaction *cache_trans;  /* queued cache adds */
	struct mailbox_uid_array ev_expunged, ev_changed, ev_appended;
	bool ev_reset;            /* uidvalidity changed: everything went */
	/* uids our own scan gave out: \Recent in this view */
	uint32_t recent_lo, recent_hi;

	struct mailbox_msg *msgs;   /* ascending uid */
	uint32_t count, alloc;

	/* The directories as of the last full scan. A change inside the
	   mtime's granularity could hide, so a scan that saw an mtime close
	   to "now" leaves the view dirty and the next sync rescans. */
	struct timespec cur_mtime, new_mtime;
	bool scan_dirty;
	bool stamp_saved;        /* MAILBOX_DIRSTAMP_NAME holds the mtimes */
	char error[MAILBOX_ERROR_MAX];
};

const char *mailbox_set_error(struct mailbox *box, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* Make sure the view's message array can hold count messages. */
void mailbox_msgs_reserve(struct mailbox *box, uint32_t count);

/* The message's current file name in cur/ (through the uidlist, read
   lazily; a name guessed from the index flags is verified by the
   caller's open/rename: on ENOENT call mailbox_msg_forget_fname() and
   retry once with rescan = true, which reads cur/). Returns 0, or -1
   with errno ENOENT if it was expunged. */
int mailbox_msg_get_fname(struct mailbox *box, uint32_t seq, bool rescan,
			  const char **fname_r, const char **error_r);
void mailbox_msg_forget_fname(struct mailbox *box, uint32_t seq);
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
/* Flags/keywords of message uid become exactly flags/keywords. */
void mailbox_index_replace_flags(struct mail_index_transaction *t,
				 uint32_t uid, enum mail_flags flags,
				 uint32_t keywords);

#endif
