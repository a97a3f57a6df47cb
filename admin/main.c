/* moatadm: the admin tool (doc/moatadm.8).

   SECURITY: run by root or a member of admin_group. It reads moat.conf
   (for base_dir), talks to master over the admin socket, whose mode
   (0660 root:admin_group) and peer-credential check decide who may, and
   for mail commands speaks IMAP to the user's own imap process over a
   session master hands it: moatadm itself never opens a user's mail
   files and needs no privileges beyond reaching the socket. import,
   export and backup open only the mbox files and Maildir trees named on
   the command line, with the invoker's rights. restore is the one
   command that writes a user's mail root: a user's that has no mail and
   no imap process yet, from a child that has become that user (so it
   needs root, or to be run by that user); config-from-dovecot reads
   text and needs no socket. "pw" runs moat-pw, which needs none at
   all. */
#include "admin-common.h"
#include "admin-output.h"

#include <getopt.h>
#include <stdarg.h>

struct admin_cmd {
	const char *name;
	admin_cmd_func_t *func;
	bool needs_config;
};

/* Sorted by name. */
static const struct admin_cmd admin_cmds[] = {
	{ "auth", admin_cmd_auth, true },
	{ "backup", admin_cmd_backup, true },
	{ "config-from-dovecot", admin_cmd_config_from_dovecot, false },
	{ "expunge", admin_cmd_expunge, true },
	{ "export", admin_cmd_export, true },
	{ "fetch", admin_cmd_fetch, true },
	{ "import", admin_cmd_import, true },
	{ "index", admin_cmd_index, true },
	{ "kick", admin_cmd_kick, true },
	{ "log", admin_cmd_log, true },
	{ "mailbox", admin_cmd_mailbox, true },
	{ "pw", admin_cmd_pw, false },
	{ "quota", admin_cmd_quota, true },
	{ "reload", admin_cmd_reload, true },
	{ "restore", admin_cmd_restore, true },
	{ "search", admin_cmd_search, true },
	{ "stats", admin_cmd_stats, true },
	{ "stop", admin_cmd_stop, true },
	{ "user", admin_cmd_user, true },
	{ "who", admin_cmd_who, true },
};

static void ATTR_NORETURN usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
		"usage: moatadm [-c CONFIG] [--json] [--quiet] COMMAND [ARGS]\n"
		"commands:\n"
		"  who | kick USER [REASON] | reload | stop | log | stats [auth]\n"
		"  user USER | auth test USER [PASSWORD] | pw [moat-pw options]\n"
		"  config-from-dovecot [DOVECONF-N-OUTPUT|-]\n"
		"  mailbox list|status -u USER | -A [MAILBOX...]\n"
		"  mailbox create|delete|rename -u USER ...\n"
		"  quota get|recalc -u USER | -A\n"
		"  index check|rebuild -u USER | -A [MAILBOX]\n"
		"  search -u USER | -A MAILBOX QUERY...\n"
		"  fetch -u USER | -A MAILBOX FIELDS QUERY...\n"
		"  expunge -u USER | -A MAILBOX QUERY...\n"
		"  import -u USER [-m MAILBOX] MBOX|MAILDIR\n"
		"  export -u USER [-m MAILBOX] [--format mboxrd|mboxcl2|maildir] DEST\n"
		"  backup -u USER | -A DEST | restore -u USER SRC\n"
		"see moatadm(8)\n");
	exit(code);
}

int admin_exit_code(const char *fail_code)
{
	if (fail_code == NULL)
		return ADMIN_EXIT_SOFTWARE;
	if (strcmp(fail_code, "usage") == 0)
		return ADMIN_EXIT_USAGE;
	if (strcmp(fail_code, "notfound") == 0)
		return ADMIN_EXIT_NOTFOUND;
	if (strcmp(fail_code, "refused") == 0)
		return ADMIN_EXIT_REFUSED;
	if (strcmp(fail_code, "tempfail") == 0)
		return ADMIN_EXIT_TEMPFAIL;
	if (strcmp(fail_code, "failed") == 0)
		return ADMIN_EXIT_FAILED;
	return ADMIN_EXIT_SOFTWARE;
}

int admin_fail(struct admin_ctx *ctx, int exit_code, const char *code,
	       const char *fmt, ...)
{
	char text[1024];
	va_list va;

	va_start(va, fmt);
	vsnprintf(text, sizeof(text), fmt, va);
	va_end(va);
	if (ctx->json && !ctx->errors_to_stderr) {
		fputs("{\"error\": {\"code\": ", stdout);
		admin_json_string(code != NULL ? code : "error",
				  strlen(code != NULL ? code : "error"));
		fputs(", \"exit_code\": ", stdout);
		printf("%d, \"message\": ", exit_code);
		admin_json_string(text, strlen(text));
		fputs("}}\n", stdout);
		fflush(stdout);
	} else {
		fprintf(stderr, "moatadm: %s\n", text);
	}
	return exit_code;
}

int admin_usage(struct admin_ctx *ctx, const char *text)
{
	return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage", "usage: moatadm %s",
			  text);
}

int main(int argc, char *argv[])
{
	static const struct option long_opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct admin_ctx ctx = { .config_path = MOAT_SYSCONFDIR "/moat.conf" };
	const char *error;
	int c;

	log_init("moatadm: ", false);
	/* Options stop at the command: its own (-u) follow it. */
	while ((c = getopt_long(argc, argv, "+c:jqh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'c': ctx.config_path = optarg; break;
		case 'j': ctx.json = true; break;
		case 'q': ctx.quiet = true; break;
		case 'h': usage(0);
		case 'V': printf("moatadm %s\n", PACKAGE_VERSION); return 0;
		default: usage(ADMIN_EXIT_USAGE);
		}
	}
	if (optind >= argc)
		usage(ADMIN_EXIT_USAGE);
	const struct admin_cmd *cmd = NULL;
	for (unsigned int i = 0; i < N_ELEMENTS(admin_cmds); i++) {
		if (strcmp(admin_cmds[i].name, argv[optind]) == 0)
			cmd = &admin_cmds[i];
	}
	ctx.pool = pool_create("moatadm", 4096);
	if (cmd == NULL) {
		int ret = admin_fail(&ctx, ADMIN_EXIT_USAGE, "usage",
				     "unknown command %s (see moatadm --help)",
				     argv[optind]);
		pool_unref(&ctx.pool);
		return ret;
	}
	if (cmd->needs_config &&
	    moat_settings_read(ctx.config_path, &ctx.set, &error) < 0) {
		int ret = admin_fail(&ctx, ADMIN_EXIT_USAGE, "usage", "%s",
				     error);
		pool_unref(&ctx.pool);
		return ret;
	}
	/* getopt of the command starts afresh at its own arguments. */
	int cmd_argc = argc - optind;
	char **cmd_argv = argv + optind;
	optind = 0;
	int ret = cmd->func(&ctx, cmd_argc, cmd_argv);
	fflush(stdout);
	if (ctx.set != NULL)
		moat_settings_free(&ctx.set);
	pool_unref(&ctx.pool);
	return ret;
}
