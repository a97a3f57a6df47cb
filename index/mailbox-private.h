#ifndef MAILBOX_PRIVATE_H
#define MAILBOX_PRIVATE_H
/* The body of struct mailbox, shared by mailbox.c, maildir-sync.c and
   maildir-save.c only. */

#include "mailbox.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"

#include <sys/stat.h>

#define MAILBOX_ERROR_MAX 512

struct mailbox_msg {
	uint32_t uid;
	enum mail_flags flags;   /* including MAIL_RECENT */
	uint32_t keywords;       /* bit i = letter 'a' + i (maildir-keywords.h) */
	bool expunged;           /* vanished on disk, still in the view */
	uint64_t size, vsize;    /* MAILDIR_SIZE_UNKNOWN if not known */
	char *fname;             /* in cur/, i_malloc'd; NULL if expunged */
};

struct mailbox {
	char *name;
	char *path;              /* the Maildir folder */
	char *cur_dir, *new_dir, *tmp_dir;
	enum mailbox_open_flags flags;
	struct maildir_uidlist *uidlist;
	struct maildir_keywords *keywords;
	struct maildir_unique unique;

	struct mailbox_msg *msgs;   /* ascending uid */
	uint32_t count, alloc;

	/* The directories as of the last full scan. A change inside the
	   mtime's granularity could hide, so a scan that saw an mtime close
	   to "now" leaves the view dirty and the next sync rescans. */
	struct timespec cur_mtime, new_mtime;
	bool scan_dirty;
	char error[MAILBOX_ERROR_MAX];
};

const char *mailbox_set_error(struct mailbox *box, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* Make sure the view's message array can hold count messages. */
void mailbox_msgs_reserve(struct mailbox *box, uint32_t count);

#endif
