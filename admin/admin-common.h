#ifndef ADMIN_COMMON_H
#define ADMIN_COMMON_H
/* moatadm: the admin tool (doc/moatadm.8). It talks to master over the
   admin socket (master/master-admin.h) and, for mail commands, speaks
   IMAP to the user's own imap process over a session master hands it,
   so the imap process stays the one writer of the user's index. */

#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "moat-settings.h"

/* Exit codes, sysexits(3) style as moat-lda's. */
#define ADMIN_EXIT_OK 0
#define ADMIN_EXIT_USAGE 64       /* EX_USAGE: bad command line */
#define ADMIN_EXIT_FAILED 65      /* EX_DATAERR: the server refused the
				     operation (mailbox exists ...) */
#define ADMIN_EXIT_NOTFOUND 67    /* EX_NOUSER: no such user or mailbox */
#define ADMIN_EXIT_SOFTWARE 70    /* EX_SOFTWARE: master or imap misbehaved */
#define ADMIN_EXIT_CANTCREAT 73   /* EX_CANTCREAT: the target exists already */
#define ADMIN_EXIT_TEMPFAIL 75    /* EX_TEMPFAIL: not running, timeout */
#define ADMIN_EXIT_REFUSED 77     /* EX_NOPERM: not allowed, auth failed */

struct admin_ctx {
	const char *config_path;
	struct moat_settings *set;
	bool json;
	bool quiet;               /* --quiet: no progress on stderr */
	/* -A runs one command per user into one document: a user's failure
	   goes to stderr as text, not as the document */
	bool errors_to_stderr;
	pool_t pool;              /* lives for the whole run */
};

/* One command: argv[0] is its first word ("who", "mailbox"). Returns an
   exit code; output goes through admin-output.h. */
typedef int admin_cmd_func_t(struct admin_ctx *ctx, int argc, char **argv);

/* Print "moatadm: <text>" to stderr (text mode) or the JSON error
   document (--json) and return exit_code. */
int admin_fail(struct admin_ctx *ctx, int exit_code, const char *code,
	       const char *fmt, ...) ATTR_FORMAT(4, 5);
/* "usage: moatadm ..." on stderr; returns ADMIN_EXIT_USAGE. */
int admin_usage(struct admin_ctx *ctx, const char *usage);
/* The exit code for a FAIL code of master ("notfound" ...). */
int admin_exit_code(const char *fail_code);

/* admin-cmd-server.c */
int admin_cmd_who(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_kick(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_reload(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_stop(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_log(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_stats(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_user(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_auth(struct admin_ctx *ctx, int argc, char **argv);
/* admin-cmd-dovecot.c */
int admin_cmd_config_from_dovecot(struct admin_ctx *ctx, int argc, char **argv);
/* admin-cmd-pw.c */
int admin_cmd_pw(struct admin_ctx *ctx, int argc, char **argv);
/* admin-cmd-mail.c */
int admin_cmd_mailbox(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_quota(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_search(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_fetch(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_expunge(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_index(struct admin_ctx *ctx, int argc, char **argv);
/* admin-cmd-mbox.c */
int admin_cmd_import(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_export(struct admin_ctx *ctx, int argc, char **argv);
/* admin-cmd-backup.c */
int admin_cmd_backup(struct admin_ctx *ctx, int argc, char **argv);
int admin_cmd_restore(struct admin_ctx *ctx, int argc, char **argv);

#endif
