/* What the mail commands share (admin-mail.h): -u/-A, the session of the
   user's imap process, IMAP answers to exit codes (-A's loop over the
   users: admin-users.c). */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-output.h"
#include "admin-query.h"
#include "strfuncs.h"

#include <getopt.h>
#include <time.h>

/* -u USER (or -A, where all_r is not NULL) before the command's other
   arguments (getopt over argv, whose argv[0] is the subcommand). Returns
   the index of the first other argument, or -1 (usage). */
int admin_mail_user_opt_all(int argc, char **argv, const char **user_r,
				   bool *all_r)
{
	bool all = false;
	int c;

	*user_r = NULL;
	optind = 0;
	while ((c = getopt(argc, argv, all_r != NULL ? "+u:A" : "+u:")) != -1) {
		if (c == 'u')
			*user_r = optarg;
		else if (c == 'A')
			all = true;
		else
			return -1;
	}
	if (all_r != NULL)
		*all_r = all;
	if ((*user_r == NULL) == !all)
		return -1;   /* one of -u and -A */
	return optind;
}

int admin_mail_user_opt(int argc, char **argv, const char **user_r)
{
	return admin_mail_user_opt_all(argc, argv, user_r, NULL);
}

int admin_mail_open(struct admin_ctx *ctx, const char *user,
			   struct admin_imap **imap_r)
{
	const char *args[] = { "MAIL", user, NULL };
	const char *code, *text;
	int fd = -1;

	int ret = admin_conn_request(ctx, args, NULL, NULL, &fd, &code, &text);
	if (ret != 0 && ctx->errors_to_stderr)   /* -A: say whose */
		return admin_fail(ctx, ret, code, "%s: %s", user, text);
	if (ret != 0)
		return admin_fail(ctx, ret, code, "%s", text);
	if (fd < 0)
		return admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "tempfail",
				  "master sent no session");
	*imap_r = admin_imap_open(fd, ctx->set->imap_max_append_size +
				  ADMIN_IMAP_RESPONSE_SLACK, ctx->pool, &text);
	if (*imap_r == NULL)
		return admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				  "session of %s: %s", user, text);
	return 0;
}

/* The exit code and code word for an IMAP answer (0 OK, 1 NO, -1). */
int admin_mail_exit(int ret, const char *text, const char **code_r)
{
	if (ret == 0) {
		*code_r = NULL;
		return ADMIN_EXIT_OK;
	}
	if (ret > 0 && str_begins(text, "[NONEXISTENT]", NULL)) {
		*code_r = "notfound";
		return ADMIN_EXIT_NOTFOUND;
	}
	if (ret > 0 && (str_begins(text, "[UNAVAILABLE]", NULL) ||
			str_begins(text, "[SERVERBUG]", NULL))) {
		*code_r = "tempfail";
		return ADMIN_EXIT_TEMPFAIL;
	}
	*code_r = ret > 0 ? "failed" : "error";
	return ret > 0 ? ADMIN_EXIT_FAILED : ADMIN_EXIT_SOFTWARE;
}

/* Run one command and turn a failure into the command's exit code. */
int admin_mail_run(struct admin_ctx *ctx, struct admin_imap *imap,
			  const char *what, const char *command,
			  admin_imap_untagged_t *cb, void *context)
{
	const char *text, *code;

	int ret = admin_imap_run(imap, command, cb, context, &text);
	int exit_code = admin_mail_exit(ret, text, &code);
	if (exit_code != 0)
		return admin_fail(ctx, exit_code, code, "%s: %s", what, text);
	return 0;
}

int admin_mailbox_names(struct admin_ctx *ctx, int argc, char **argv,
			       const char **names)
{
	for (int i = 0; i < argc; i++) {
		names[i] = admin_imap_mailbox(ctx->pool, argv[i]);
		if (names[i] == NULL)
			return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage",
					  "mailbox name is not UTF-8: %s",
					  str_sanitize(ctx->pool, argv[i], 64));
	}
	return 0;
}

void admin_row_to_output(void *context, const char *const *kv)
{
	admin_output_row(context, kv);
}
