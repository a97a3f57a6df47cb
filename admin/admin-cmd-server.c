/* The commands master answers itself: who, kick, reload, stop, log,
   stats, user, auth test (doc/moatadm.8). */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-output.h"
#include "strfuncs.h"

#include <termios.h>

/* A password read from the terminal or stdin: auth's SASL limit. */
#define ADMIN_PASSWORD_MAX 8192
#define ADMIN_KICK_DEFAULT_REASON "Disconnected by the administrator."

static void admin_row_to_output(void *context, const char *const *kv)
{
	admin_output_row(context, kv);
}

/* One request whose ROWs are the output. */
static int admin_request_print(struct admin_ctx *ctx, const char *const *args,
			       enum admin_output_shape shape,
			       const char *const *numeric_keys)
{
	struct admin_output *out = admin_output_begin(ctx, shape, numeric_keys);
	const char *code, *text;

	int ret = admin_conn_request(ctx, args, admin_row_to_output, out, NULL,
				     &code, &text);
	return admin_output_end(&out, ret, code, text);
}

/* A request that answers nothing but DONE: {"result": "ok"} in JSON. */
static int admin_request_ok(struct admin_ctx *ctx, const char *const *args)
{
	const char *code, *text;

	int ret = admin_conn_request(ctx, args, NULL, NULL, NULL, &code, &text);
	if (ret != 0)
		return admin_fail(ctx, ret, code, "%s", text);
	if (ctx->json)
		puts("{\"result\": \"ok\"}");
	return 0;
}

int admin_cmd_who(struct admin_ctx *ctx, int argc, char **argv ATTR_UNUSED)
{
	static const char *const numeric[] = {
		"pid", "rss_kib", "sessions", NULL
	};
	const char *args[] = { "WHO", NULL };

	if (argc != 1)
		return admin_usage(ctx, "who");
	return admin_request_print(ctx, args, ADMIN_OUTPUT_TABLE, numeric);
}

struct admin_kick_result {
	struct admin_output *out;
	unsigned int sessions;
};

static void admin_kick_row(void *context, const char *const *kv)
{
	struct admin_kick_result *result = context;

	for (unsigned int i = 0; kv[i] != NULL && kv[i + 1] != NULL; i += 2) {
		if (strcmp(kv[i], "sessions") == 0)
			(void)str_to_uint(kv[i + 1], &result->sessions);
	}
	admin_output_row(result->out, kv);
}

int admin_cmd_kick(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = { "sessions", NULL };
	struct admin_kick_result result = { 0 };
	const char *code, *text;

	if (argc != 2 && argc != 3)
		return admin_usage(ctx, "kick USER [REASON]");
	const char *args[] = {
		"KICK", argv[1], argc == 3 ? argv[2] : ADMIN_KICK_DEFAULT_REASON,
		NULL
	};
	result.out = admin_output_begin(ctx, ADMIN_OUTPUT_OBJECT, numeric);
	int ret = admin_conn_request(ctx, args, admin_kick_row, &result, NULL,
				     &code, &text);
	if (ret == 0 && result.sessions == 0) {
		/* Scripts can tell "nothing to do" from "done". */
		return admin_output_end(&result.out, ADMIN_EXIT_NOTFOUND,
			"notfound", p_strdup_printf(ctx->pool,
				"user %s has no sessions", argv[1]));
	}
	return admin_output_end(&result.out, ret, code, text);
}

int admin_cmd_reload(struct admin_ctx *ctx, int argc, char **argv ATTR_UNUSED)
{
	const char *args[] = { "RELOAD", NULL };

	if (argc != 1)
		return admin_usage(ctx, "reload");
	return admin_request_ok(ctx, args);
}

int admin_cmd_stop(struct admin_ctx *ctx, int argc, char **argv ATTR_UNUSED)
{
	const char *args[] = { "STOP", NULL };

	if (argc != 1)
		return admin_usage(ctx, "stop");
	return admin_request_ok(ctx, args);
}

int admin_cmd_log(struct admin_ctx *ctx, int argc, char **argv ATTR_UNUSED)
{
	const char *args[] = { "LOG", NULL };

	if (argc != 1)
		return admin_usage(ctx, "log");
	return admin_request_print(ctx, args, ADMIN_OUTPUT_TABLE, NULL);
}

int admin_cmd_stats(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = {
		"uptime_secs", "logins_ok", "logins_failed",
		"imap_login_processes", "imap_login_clients", "imap_processes",
		"imap_sessions", "imap_sessions_total", "lmtp_processes",
		"lmtp_recipients_total", "imap_login_rss_bytes",
		"imap_rss_bytes", "imap_login_connections_total",
		"tls_handshakes_ok", "tls_handshakes_failed",
		"imap_login_received_bytes", "imap_login_sent_bytes",
		"imap_received_bytes", "imap_sent_bytes",
		"preauth_disconnects_logout", "preauth_disconnects_closed",
		"preauth_disconnects_timeout", "preauth_disconnects_tls",
		"preauth_disconnects_limit", "preauth_disconnects_bad_commands",
		"preauth_disconnects_shutdown", "preauth_disconnects_other",
		"lmtp_delivered", "lmtp_tempfail", "lmtp_permfail", NULL
	};
	static const char *const auth_numeric[] = {
		"ok", "failed", "duration_seconds_sum", NULL
	};

	if (argc == 2 && strcmp(argv[1], "auth") == 0) {
		const char *args[] = { "STATS-AUTH", NULL };
		return admin_request_print(ctx, args, ADMIN_OUTPUT_TABLE,
					   auth_numeric);
	}
	if (argc != 1)
		return admin_usage(ctx, "stats [auth]");
	const char *args[] = { "STATS", NULL };
	return admin_request_print(ctx, args, ADMIN_OUTPUT_OBJECT, numeric);
}

int admin_cmd_user(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = {
		"uid", "gid", "quota_storage", "quota_messages", "imap_pid", NULL
	};

	if (argc != 2)
		return admin_usage(ctx, "user USER");
	const char *args[] = { "USER", argv[1], NULL };
	return admin_request_print(ctx, args, ADMIN_OUTPUT_OBJECT, numeric);
}

/* The password from the terminal (no echo) or the first line of stdin. */
static int admin_read_password(char *buf, size_t size)
{
	struct termios old, noecho;
	bool tty = isatty(STDIN_FILENO) != 0;

	if (tty) {
		fputs("Password: ", stderr);
		fflush(stderr);
		(void)tcgetattr(STDIN_FILENO, &old);
		noecho = old;
		noecho.c_lflag &= ~ECHO;
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &noecho);
	}
	char *ret = fgets(buf, (int)size, stdin);
	if (tty) {
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (ret == NULL)
		return -1;
	size_t len = strlen(buf);
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (len == size - 1)
		return -1;   /* longer than any password auth takes */
	return 0;
}

int admin_cmd_auth(struct admin_ctx *ctx, int argc, char **argv)
{
	char password[ADMIN_PASSWORD_MAX + 2];

	if ((argc != 3 && argc != 4) || strcmp(argv[1], "test") != 0)
		return admin_usage(ctx, "auth test USER [PASSWORD]");
	if (argc == 4) {
		snprintf(password, sizeof(password), "%s", argv[3]);
	} else if (admin_read_password(password, sizeof(password)) < 0) {
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage",
				  "no password given (argument, terminal or stdin)");
	}
	char *b64 = p_base64_encode(ctx->pool, password, strlen(password));
	safe_memset(password, 0, sizeof(password));
	const char *args[] = { "AUTH-TEST", argv[2], b64, NULL };
	int ret = admin_request_print(ctx, args, ADMIN_OUTPUT_OBJECT, NULL);
	safe_memset(b64, 0, strlen(b64));
	return ret;
}
