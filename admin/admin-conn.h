#ifndef ADMIN_CONN_H
#define ADMIN_CONN_H
/* moatadm's side of the admin socket (master/master-admin.h). */

#include "admin-common.h"

/* kv: a ROW's key, value pairs, NULL-terminated; valid during the call. */
typedef void admin_row_callback_t(void *context, const char *const *kv);

/* The longest moatadm waits for master's answer: above master's own
   limits (10 s for auth and imap answers, 600 s for a MAILOP). */
#define ADMIN_CONN_TIMEOUT_MSECS 660000

/* Send one request (args: the record, NULL-terminated) and read the
   answer: row() for each ROW, then DONE (returns ADMIN_EXIT_OK) or FAIL
   (returns its exit code with *code_r and *text_r, in ctx->pool). A
   MAIL-OK's descriptor goes to *fd_r (fd_r may be NULL for other
   requests). Not being able to connect is refused (EACCES) or tempfail
   (no master). */
int admin_conn_request(struct admin_ctx *ctx, const char *const *args,
		       admin_row_callback_t *row, void *context, int *fd_r,
		       const char **code_r, const char **text_r);

#endif
