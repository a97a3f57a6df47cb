/* mailbox, quota and index: the user's folders and the files the imap
   process keeps beside them (admin-mail.h). */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-output.h"
#include "admin-query.h"
#include "strfuncs.h"

#include <getopt.h>
#include <time.h>

/* The STATUS items of "mailbox status", in output order. */
static const char *const admin_status_items[] = {
	"MESSAGES", "RECENT", "UNSEEN", "UIDNEXT", "UIDVALIDITY", "SIZE",
	"HIGHESTMODSEQ", NULL
};
static const char *const admin_status_numeric[] = {
	"messages", "recent", "unseen", "uidnext", "uidvalidity", "size",
	"highestmodseq", NULL
};

/* ---- mailbox ---- */

struct admin_list_ctx {
	struct admin_output *out;
	bool status;
};

/* LIST (attrs) "delim" name */
static void admin_list_row(struct admin_list_ctx *lctx, pool_t pool,
			   const char *pos, const char *end)
{
	struct admin_imap_value attrs, delim, name;

	admin_imap_value_next(pool, &pos, end, &attrs);
	admin_imap_value_next(pool, &pos, end, &delim);
	admin_imap_value_next(pool, &pos, end, &name);
	if (attrs.type != ADMIN_IMAP_VALUE_LIST ||
	    (name.type != ADMIN_IMAP_VALUE_STRING &&
	     name.type != ADMIN_IMAP_VALUE_ATOM))
		return;
	admin_output_rowv(lctx->out, "mailbox",
			  admin_imap_mailbox_utf8(pool, name.data),
			  "attributes", p_strndup(pool, attrs.data, attrs.size),
			  NULL);
}

/* STATUS name (ITEM n ...) */
static void admin_status_row(struct admin_list_ctx *lctx, pool_t pool,
			     const char *pos, const char *end)
{
	struct admin_imap_value name, list;
	struct admin_imap_value values[N_ELEMENTS(admin_status_items) - 1];

	admin_imap_value_next(pool, &pos, end, &name);
	admin_imap_value_next(pool, &pos, end, &list);
	if (list.type != ADMIN_IMAP_VALUE_LIST)
		return;
	memset(values, 0, sizeof(values));   /* ADMIN_IMAP_VALUE_END */
	admin_imap_list_pairs(pool, &list, admin_status_items,
			      N_ELEMENTS(values), values);
	admin_output_row_begin(lctx->out);
	const char *mailbox = admin_imap_mailbox_utf8(pool, name.data);
	admin_output_field(lctx->out, "mailbox", mailbox, strlen(mailbox));
	for (unsigned int i = 0; i < N_ELEMENTS(values); i++) {
		/* the counts are numbers: atoms */
		const char *v = values[i].type == ADMIN_IMAP_VALUE_ATOM ?
			values[i].data : "";
		admin_output_field(lctx->out, admin_status_numeric[i], v,
				   strlen(v));
	}
	admin_output_row_end(lctx->out);
}

static void admin_list_untagged(void *context, const char *resp, size_t len)
{
	struct admin_list_ctx *lctx = context;
	pool_t pool = pool_create("admin list response", 1024);
	const char *end = resp + len;

	if (!lctx->status && len > 5 && strncasecmp(resp, "LIST ", 5) == 0)
		admin_list_row(lctx, pool, resp + 5, end);
	else if (lctx->status && len > 7 && strncasecmp(resp, "STATUS ", 7) == 0)
		admin_status_row(lctx, pool, resp + 7, end);
	pool_unref(&pool);
}

static const char *admin_status_command(pool_t pool, const char *mailbox)
{
	char items[256] = "";

	for (unsigned int i = 0; admin_status_items[i] != NULL; i++) {
		strncat(items, i == 0 ? "" : " ", sizeof(items) - strlen(items) - 1);
		strncat(items, admin_status_items[i],
			sizeof(items) - strlen(items) - 1);
	}
	if (mailbox == NULL)
		return p_strdup_printf(pool, "LIST \"\" \"*\" RETURN (STATUS (%s))",
				       items);
	return p_strdup_printf(pool, "STATUS %s (%s)", mailbox, items);
}

/* mailbox list|status of one user (names: the mailboxes asked for, as
   IMAP writes them; none = all). */
struct admin_listing_args {
	bool status;
	int count;
	const char **names;
	/* the failure of a lone user, left to admin_output_end() */
	const char *code, *text;
};

static int admin_mailbox_listing_user(struct admin_ctx *ctx, const char *user,
				      struct admin_output *out, void *context)
{
	struct admin_listing_args *args = context;
	struct admin_list_ctx lctx = { .out = out, .status = args->status };
	struct admin_imap *imap;
	const char *text = NULL, *code;

	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	if (args->count == 0) {
		ret = admin_imap_run(imap, args->status ?
				     admin_status_command(ctx->pool, NULL) :
				     "LIST \"\" \"*\"",
				     admin_list_untagged, &lctx, &text);
	}
	for (int i = 0; i < args->count && ret == 0; i++) {
		const char *cmd = args->status ?
			admin_status_command(ctx->pool, args->names[i]) :
			p_strdup_printf(ctx->pool, "LIST \"\" %s", args->names[i]);
		ret = admin_imap_run(imap, cmd, admin_list_untagged, &lctx, &text);
	}
	admin_imap_close(&imap);
	int exit_code = admin_mail_exit(ret, text, &code);
	if (exit_code != 0 && ctx->errors_to_stderr)
		return admin_fail(ctx, exit_code, code, "%s: %s", user, text);
	args->code = code;
	args->text = text;
	return exit_code;
}

static int admin_mailbox_listing(struct admin_ctx *ctx, const char *user,
				 bool status, int argc, char **argv)
{
	struct admin_listing_args args = { .status = status, .count = argc };
	int ret;

	args.names = p_malloc(ctx->pool, sizeof(char *) * ((size_t)argc + 1));
	if ((ret = admin_mailbox_names(ctx, argc, argv, args.names)) != 0)
		return ret;
	struct admin_output *out = admin_output_begin(ctx, ADMIN_OUTPUT_TABLE,
		status ? admin_status_numeric : NULL);
	if (user == NULL) {
		ret = admin_for_users(ctx, out, admin_mailbox_listing_user, &args);
		return admin_output_end(&out, ret, ret == 0 ? NULL : "failed",
					"some users failed (see above)");
	}
	ret = admin_mailbox_listing_user(ctx, user, out, &args);
	if (ret != 0 && args.text == NULL) {
		admin_output_abort(&out);   /* reported where it happened */
		return ret;
	}
	return admin_output_end(&out, ret, args.code, args.text);
}

static int admin_mailbox_change(struct admin_ctx *ctx, struct admin_imap *imap,
				const char *verb, int argc, char **argv)
{
	const char **names = p_malloc(ctx->pool, sizeof(char *) * ((size_t)argc + 1));
	int ret;

	if ((ret = admin_mailbox_names(ctx, argc, argv, names)) != 0)
		return ret;
	if (strcmp(verb, "RENAME") == 0) {
		return admin_mail_run(ctx, imap, "rename",
			p_strdup_printf(ctx->pool, "RENAME %s %s", names[0],
					names[1]), NULL, NULL);
	}
	for (int i = 0; i < argc; i++) {
		ret = admin_mail_run(ctx, imap, argv[i],
			p_strdup_printf(ctx->pool, "%s %s", verb, names[i]),
			NULL, NULL);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int admin_cmd_mailbox(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *usage =
		"mailbox list|status -u USER | -A [MAILBOX...] | "
		"mailbox create|delete -u USER MAILBOX... | "
		"mailbox rename -u USER OLD NEW";
	const char *user;
	struct admin_imap *imap;
	bool all;

	if (argc < 2)
		return admin_usage(ctx, usage);
	const char *sub = argv[1];
	int first = admin_mail_user_opt_all(argc - 1, argv + 1, &user, &all);
	if (first < 0)
		return admin_usage(ctx, usage);
	int rest_argc = argc - 1 - first;
	char **rest = argv + 1 + first;
	bool list = strcmp(sub, "list") == 0, status = strcmp(sub, "status") == 0;
	const char *verb = strcmp(sub, "create") == 0 ? "CREATE" :
		strcmp(sub, "delete") == 0 ? "DELETE" :
		strcmp(sub, "rename") == 0 ? "RENAME" : NULL;
	if ((!list && !status && verb == NULL) ||
	    (verb != NULL && rest_argc == 0) ||
	    (verb != NULL && strcmp(verb, "RENAME") == 0 && rest_argc != 2) ||
	    (verb != NULL && all))
		return admin_usage(ctx, usage);
	if (verb == NULL)
		return admin_mailbox_listing(ctx, user, status, rest_argc, rest);
	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = admin_mailbox_change(ctx, imap, verb, rest_argc, rest);
	if (ret == 0 && ctx->json)
		puts("{\"result\": \"ok\"}");
	admin_imap_close(&imap);
	return ret;
}

/* ---- quota ---- */

/* QUOTA root (RESOURCE usage limit ...) */
static void admin_quota_untagged(void *context, const char *resp, size_t len)
{
	struct admin_output *out = context;
	pool_t pool = pool_create("admin quota response", 1024);
	const char *pos = resp + 6, *end = resp + len;
	struct admin_imap_value root, list, name, usage, limit;

	if (len > 6 && strncasecmp(resp, "QUOTA ", 6) == 0) {
		admin_imap_value_next(pool, &pos, end, &root);
		admin_imap_value_next(pool, &pos, end, &list);
		const char *lpos = list.data, *lend = list.data + list.size;
		while (list.type == ADMIN_IMAP_VALUE_LIST) {
			admin_imap_value_next(pool, &lpos, lend, &name);
			admin_imap_value_next(pool, &lpos, lend, &usage);
			admin_imap_value_next(pool, &lpos, lend, &limit);
			if (name.type != ADMIN_IMAP_VALUE_ATOM ||
			    usage.type != ADMIN_IMAP_VALUE_ATOM ||
			    limit.type != ADMIN_IMAP_VALUE_ATOM)
				break;
			admin_output_rowv(out, "root", root.data != NULL ?
					  root.data : "", "resource", name.data,
					  "usage", usage.data, "limit",
					  limit.data, NULL);
		}
	}
	pool_unref(&pool);
}

/* quota recalc: the imap process walks the Maildir (MAILOP). */
static int admin_quota_recalc_user(struct admin_ctx *ctx, const char *user,
				   struct admin_output *out,
				   void *context ATTR_UNUSED)
{
	const char *args[] = { "MAILOP", user, "quota-recalc", "", NULL };
	const char *code, *text;

	int ret = admin_conn_request(ctx, args, admin_row_to_output, out, NULL,
				     &code, &text);
	if (ret != 0)
		return admin_fail(ctx, ret, code, "%s: %s", user, text);
	return 0;
}

static int admin_quota_get_user(struct admin_ctx *ctx, const char *user,
				struct admin_output *out,
				void *context ATTR_UNUSED)
{
	struct admin_imap *imap;
	const char *text, *code;

	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = admin_imap_run(imap, "GETQUOTAROOT \"INBOX\"",
			     admin_quota_untagged, out, &text);
	admin_imap_close(&imap);
	int exit_code = admin_mail_exit(ret, text, &code);
	if (exit_code != 0)
		return admin_fail(ctx, exit_code, code, "%s: %s", user, text);
	return 0;
}

int admin_cmd_quota(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const get_numeric[] = { "usage", "limit", NULL };
	static const char *const recalc_numeric[] = {
		"storage_bytes", "messages", NULL
	};
	const char *user;
	bool all;

	if (argc < 2 || (strcmp(argv[1], "get") != 0 &&
			 strcmp(argv[1], "recalc") != 0) ||
	    admin_mail_user_opt_all(argc - 1, argv + 1, &user, &all) != argc - 1)
		return admin_usage(ctx, "quota get|recalc -u USER | -A");
	bool recalc = strcmp(argv[1], "recalc") == 0;
	admin_user_func_t *func = recalc ? admin_quota_recalc_user :
		admin_quota_get_user;
	struct admin_output *out = admin_output_begin(ctx,
		recalc && !all ? ADMIN_OUTPUT_OBJECT : ADMIN_OUTPUT_TABLE,
		recalc ? recalc_numeric : get_numeric);
	int ret = all ? admin_for_users(ctx, out, func, NULL) :
		func(ctx, user, out, NULL);
	if (ret != 0 && !all) {
		admin_output_abort(&out);   /* reported where it happened */
		return ret;
	}
	return admin_output_end(&out, ret, ret == 0 ? NULL : "failed",
				"some users failed (see above)");
}

/* ---- index check, index rebuild ---- */

struct admin_index_args {
	const char *op;           /* index-check or index-rebuild */
	const char *mailbox;      /* UTF-8; "" for every one */
	/* the failure of a lone user, left to admin_output_end() */
	const char *code, *text;
};

/* The user's imap process checks or rebuilds (MAILOP). */
static int admin_index_user(struct admin_ctx *ctx, const char *user,
			    struct admin_output *out, void *context)
{
	struct admin_index_args *op = context;
	const char *args[] = { "MAILOP", user, op->op, op->mailbox, NULL };
	const char *code, *text;

	int ret = admin_conn_request(ctx, args, admin_row_to_output, out, NULL,
				     &code, &text);
	if (ret != 0 && ctx->errors_to_stderr)
		return admin_fail(ctx, ret, code, "%s: %s", user, text);
	op->code = code;
	op->text = text;
	return ret;
}

int admin_cmd_index(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = {
		"messages", "uidvalidity", "uidnext", "highestmodseq", NULL
	};
	static const char *usage = "index check|rebuild -u USER | -A [MAILBOX]";
	const char *user;
	bool all;

	if (argc < 2 || (strcmp(argv[1], "check") != 0 &&
			 strcmp(argv[1], "rebuild") != 0))
		return admin_usage(ctx, usage);
	int first = admin_mail_user_opt_all(argc - 1, argv + 1, &user, &all);
	if (first < 0 || argc - 1 - first > 1)
		return admin_usage(ctx, usage);
	struct admin_index_args op = {
		.op = strcmp(argv[1], "check") == 0 ? "index-check" :
			"index-rebuild",
		.mailbox = argc - 1 - first == 1 ? argv[1 + first] : "",
	};
	struct admin_output *out =
		admin_output_begin(ctx, ADMIN_OUTPUT_TABLE, numeric);
	if (all) {
		int ret = admin_for_users(ctx, out, admin_index_user, &op);
		return admin_output_end(&out, ret, ret == 0 ? NULL : "failed",
					"some users failed (see above)");
	}
	int ret = admin_index_user(ctx, user, out, &op);
	return admin_output_end(&out, ret, op.code, op.text);
}
