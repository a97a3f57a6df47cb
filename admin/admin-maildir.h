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

/* APPEND msg to name (quoted) with meta's flags and date; 0 OK, 1 NO,
   -1 (admin_imap_run()). admin-cmd-mbox.c. */
int admin_import_append(struct admin_ctx *ctx, struct admin_imap *imap,
			const char *name, const buffer_t *msg,
			const struct admin_mbox_meta *meta, const char **text_r);

#endif
