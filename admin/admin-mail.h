#ifndef ADMIN_MAIL_H
#define ADMIN_MAIL_H
/* Shared by moatadm's mail commands (admin-cmd-mail.c, admin-cmd-mailbox.c):
   each asks master for a session of the user's own imap process (MAIL)
   and speaks IMAP over it, so the imap process stays the one writer of
   the user's index (DESIGN.md). */

#include "admin-common.h"
#include "admin-imap.h"
#include "admin-output.h"

/* -u USER (or -A, where all_r is not NULL) before the command's other
   arguments (getopt over argv, whose argv[0] is the subcommand). Returns
   the index of the first other argument, or -1 (usage). */
int admin_mail_user_opt_all(int argc, char **argv, const char **user_r,
			    bool *all_r);
int admin_mail_user_opt(int argc, char **argv, const char **user_r);

/* One user's part of a command: rows to out; returns an exit code (a
   failure already reported). */
typedef int admin_user_func_t(struct admin_ctx *ctx, const char *user,
			      struct admin_output *out, void *context);
/* func for each user of the passwd-file userdbs (-A), rows prefixed with
   the user; a user whose answer is "not found" is skipped, a failing one
   does not stop the others. Up to ADMIN_USERS_PARALLEL users are worked
   on at once, each in a forked moatadm whose rows the parent prints (so
   rows of different users may interleave; each names its user).
   Progress (admin-progress.h) counts the users. Returns the exit code of
   the last failure, 0 if none. admin-users.c. */
int admin_for_users(struct admin_ctx *ctx, struct admin_output *out,
		    admin_user_func_t *func, void *context);

/* A session of user's imap process in *imap_r; else the failure is
   reported and its exit code returned. */
int admin_mail_open(struct admin_ctx *ctx, const char *user,
		    struct admin_imap **imap_r);
/* The exit code and code word for an IMAP answer (0 OK, 1 NO, -1). */
int admin_mail_exit(int ret, const char *text, const char **code_r);
/* Run one command; a failure is reported (what: its context) and its
   exit code returned. */
int admin_mail_run(struct admin_ctx *ctx, struct admin_imap *imap,
		   const char *what, const char *command,
		   admin_imap_untagged_t *cb, void *context);
/* UTF-8 names (argv) as IMAP writes them into names; 0 or the usage
   failure (reported). */
int admin_mailbox_names(struct admin_ctx *ctx, int argc, char **argv,
			const char **names);
/* admin_row_callback_t that prints each row to an admin_output. */
void admin_row_to_output(void *context, const char *const *kv);

#endif
