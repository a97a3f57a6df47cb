#ifndef ADMIN_MAILDIR_H
#define ADMIN_MAILDIR_H
/* moatadm import and export of Maildir++ trees (admin-cmd-maildir.c),
   beside the mbox ones (admin-cmd-mbox.c). */

#include "admin-common.h"
#include "admin-imap.h"
#include "admin-mbox.h"
#include "admin-output.h"

/* Every message of the tree at root: its own folder into mailbox (NULL:
   INBOX), its ".a.b" folders into "a/b" (below mailbox when given),
   created as needed; one row per folder. Returns an exit code (a
   failure reported). */
int admin_maildir_import(struct admin_ctx *ctx, struct admin_imap *imap,
			 const char *root, const char *mailbox,
			 struct admin_output *out);
/* mailbox into the Maildir++ tree at root (its folder created as
   needed): one file per message in cur/, fsync'ed, then a row. */
int admin_maildir_export(struct admin_ctx *ctx, struct admin_imap *imap,
			 const char *root, const char *mailbox,
			 struct admin_output *out);
/* The same; with uidlist also the folder's UIDVALIDITY, UIDNEXT and every
   message's UID as a dovecot-uidlist, so that moat (or Dovecot) opening
   the tree keeps them (moatadm backup). */
int admin_maildir_export_uids(struct admin_ctx *ctx, struct admin_imap *imap,
			      const char *root, const char *mailbox,
			      bool uidlist, struct admin_output *out);

/* Mailboxes one export or backup of a whole user writes (their names are
   held). */
#define ADMIN_EXPORT_MAILBOXES_MAX 10000
/* The selectable mailboxes of the session's user, UTF-8 (LIST "" "*"):
   admin-cmd-mbox.c. */
struct admin_names {
	pool_t pool;
	const char *names[ADMIN_EXPORT_MAILBOXES_MAX];
	unsigned int count;
	bool too_many;
};
int admin_mailbox_list(struct admin_ctx *ctx, struct admin_imap *imap,
		       struct admin_names *names);

/* APPEND msg to name (quoted) with meta's flags and date; 0 OK, 1 NO,
   -1 (admin_imap_run()). admin-cmd-mbox.c. */
int admin_import_append(struct admin_ctx *ctx, struct admin_imap *imap,
			const char *name, const buffer_t *msg,
			const struct admin_mbox_meta *meta, const char **text_r);

#endif
