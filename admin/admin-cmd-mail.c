/* The mail commands: mailbox, quota, search, fetch, expunge. Each asks
   master for a session of the user's own imap process (MAIL) and speaks
   IMAP over it, so the imap process stays the one writer of the user's
   index (DESIGN.md) and its sessions see the change at once. */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-imap.h"
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

/* fetch FIELDS: moatadm's name, the FETCH item, the response's key. */
struct admin_fetch_field {
	const char *name;
	const char *item;
	const char *key;
};
static const struct admin_fetch_field admin_fetch_fields[] = {
	{ "uid", "UID", "UID" },
	{ "flags", "FLAGS", "FLAGS" },
	{ "internaldate", "INTERNALDATE", "INTERNALDATE" },
	{ "savedate", "SAVEDATE", "SAVEDATE" },
	{ "size", "RFC822.SIZE", "RFC822.SIZE" },
	{ "modseq", "MODSEQ", "MODSEQ" },
	{ "hdr", "BODY.PEEK[HEADER]", "BODY[HEADER]" },
	{ "body", "BODY.PEEK[TEXT]", "BODY[TEXT]" },
	{ "text", "BODY.PEEK[]", "BODY[]" },
};

/* -u USER (or -A, where all_r is not NULL) before the command's other
   arguments (getopt over argv, whose argv[0] is the subcommand). Returns
   the index of the first other argument, or -1 (usage). */
static int admin_mail_user_opt_all(int argc, char **argv, const char **user_r,
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

static int admin_mail_user_opt(int argc, char **argv, const char **user_r)
{
	return admin_mail_user_opt_all(argc, argv, user_r, NULL);
}

/* ---- -A: every user of the passwd-file userdbs ---- */

struct admin_users {
	char **names;
	unsigned int count, alloc;
};

static void admin_users_row(void *context, const char *const *kv)
{
	struct admin_users *users = context;

	if (kv[0] == NULL || kv[1] == NULL || strcmp(kv[0], "user") != 0)
		return;
	if (users->count == users->alloc) {
		users->alloc = users->alloc == 0 ? 64 : users->alloc * 2;
		users->names = i_realloc(users->names,
					 i_mul_size(users->alloc, sizeof(char *)));
	}
	users->names[users->count++] = i_strdup(kv[1]);
}

static void admin_users_free(struct admin_users *users)
{
	for (unsigned int i = 0; i < users->count; i++)
		free(users->names[i]);
	free(users->names);
}

typedef int admin_user_func_t(struct admin_ctx *ctx, const char *user,
			      struct admin_output *out, void *context);

/* func for each user, rows prefixed with the user; a user whose answer
   is "not found" (no such mailbox) is skipped. Returns the exit code of
   the last failure, 0 if none. */
static int admin_for_users(struct admin_ctx *ctx, struct admin_output *out,
			   admin_user_func_t *func, void *context)
{
	const char *args[] = { "USERS", NULL };
	struct admin_users users = { .count = 0 };
	const char *code, *text;
	int worst = 0;

	int ret = admin_conn_request(ctx, args, admin_users_row, &users, NULL,
				     &code, &text);
	if (ret != 0) {
		admin_users_free(&users);
		ctx->errors_to_stderr = true;
		return admin_fail(ctx, ret, code, "%s", text);
	}
	ctx->errors_to_stderr = true;
	for (unsigned int i = 0; i < users.count; i++) {
		admin_output_set_prefix(out, "user", users.names[i]);
		ret = func(ctx, users.names[i], out, context);
		if (ret != 0 && ret != ADMIN_EXIT_NOTFOUND)
			worst = ret;
	}
	admin_output_set_prefix(out, NULL, NULL);
	admin_users_free(&users);
	return worst;
}

static int admin_mail_open(struct admin_ctx *ctx, const char *user,
			   struct admin_imap **imap_r)
{
	const char *args[] = { "MAIL", user, NULL };
	const char *code, *text;
	int fd = -1;

	int ret = admin_conn_request(ctx, args, NULL, NULL, &fd, &code, &text);
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
static int admin_mail_exit(int ret, const char *text, const char **code_r)
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
static int admin_mail_run(struct admin_ctx *ctx, struct admin_imap *imap,
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
	struct admin_imap_value name, list, key, value;
	const char *values[N_ELEMENTS(admin_status_items)] = { NULL };

	admin_imap_value_next(pool, &pos, end, &name);
	admin_imap_value_next(pool, &pos, end, &list);
	if (list.type != ADMIN_IMAP_VALUE_LIST)
		return;
	const char *lpos = list.data, *lend = list.data + list.size;
	for (;;) {
		admin_imap_value_next(pool, &lpos, lend, &key);
		admin_imap_value_next(pool, &lpos, lend, &value);
		if (key.type != ADMIN_IMAP_VALUE_ATOM ||
		    value.type != ADMIN_IMAP_VALUE_ATOM)
			break;
		for (unsigned int i = 0; admin_status_items[i] != NULL; i++) {
			if (strcasecmp(key.data, admin_status_items[i]) == 0)
				values[i] = value.data;
		}
	}
	admin_output_row_begin(lctx->out);
	const char *mailbox = admin_imap_mailbox_utf8(pool, name.data);
	admin_output_field(lctx->out, "mailbox", mailbox, strlen(mailbox));
	for (unsigned int i = 0; admin_status_items[i] != NULL; i++) {
		const char *v = values[i] != NULL ? values[i] : "";
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

static int admin_mailbox_names(struct admin_ctx *ctx, int argc, char **argv,
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

static int admin_mailbox_listing(struct admin_ctx *ctx,
				 struct admin_imap *imap, bool status,
				 int argc, char **argv)
{
	struct admin_list_ctx lctx = { .status = status };
	const char **names = p_malloc(ctx->pool, sizeof(char *) * ((size_t)argc + 1));
	int ret;

	if ((ret = admin_mailbox_names(ctx, argc, argv, names)) != 0)
		return ret;
	lctx.out = admin_output_begin(ctx, ADMIN_OUTPUT_TABLE,
				      status ? admin_status_numeric : NULL);
	const char *text = NULL;
	ret = 0;
	if (argc == 0) {
		ret = admin_imap_run(imap, status ?
				     admin_status_command(ctx->pool, NULL) :
				     "LIST \"\" \"*\"",
				     admin_list_untagged, &lctx, &text);
	}
	for (int i = 0; i < argc && ret == 0; i++) {
		const char *cmd = status ? admin_status_command(ctx->pool, names[i]) :
			p_strdup_printf(ctx->pool, "LIST \"\" %s", names[i]);
		ret = admin_imap_run(imap, cmd, admin_list_untagged, &lctx, &text);
	}
	const char *code;
	int exit_code = admin_mail_exit(ret, text, &code);
	return admin_output_end(&lctx.out, exit_code, code, text);
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
		"mailbox list|status -u USER [MAILBOX...] | "
		"mailbox create|delete -u USER MAILBOX... | "
		"mailbox rename -u USER OLD NEW";
	const char *user;
	struct admin_imap *imap;

	if (argc < 2)
		return admin_usage(ctx, usage);
	const char *sub = argv[1];
	int first = admin_mail_user_opt(argc - 1, argv + 1, &user);
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
	    (verb != NULL && strcmp(verb, "RENAME") == 0 && rest_argc != 2))
		return admin_usage(ctx, usage);
	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = verb == NULL ?
		admin_mailbox_listing(ctx, imap, status, rest_argc, rest) :
		admin_mailbox_change(ctx, imap, verb, rest_argc, rest);
	if (ret == 0 && verb != NULL && ctx->json)
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

static void admin_row_to_output(void *context, const char *const *kv)
{
	admin_output_row(context, kv);
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

/* ---- search, fetch, expunge ---- */

/* Open MAILBOX and save the messages QUERY matches as "$" (RFC 5182
   SEARCHRES): the next command works on them without moatadm holding
   the list, which grows with the mailbox. */
static int admin_mail_select_query(struct admin_ctx *ctx,
				   struct admin_imap *imap,
				   const char *mailbox, int argc, char **argv)
{
	const char *program, *error, *name;

	if (admin_query_build(ctx->pool, argc, argv, time(NULL), &program,
			      &error) < 0)
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage", "%s", error);
	if (admin_mailbox_names(ctx, 1, (char **)&mailbox, &name) != 0)
		return ADMIN_EXIT_USAGE;
	int ret = admin_mail_run(ctx, imap, mailbox,
		p_strdup_printf(ctx->pool, "EXAMINE %s", name), NULL, NULL);
	if (ret != 0)
		return ret;
	return admin_mail_run(ctx, imap, "search",
		p_strdup_printf(ctx->pool, "UID SEARCH RETURN (SAVE) %s", program),
		NULL, NULL);
}

struct admin_fetch_ctx {
	struct admin_output *out;
	const char *mailbox;
	/* indexes into admin_fetch_fields, in the order asked */
	unsigned int fields[N_ELEMENTS(admin_fetch_fields)];
	unsigned int field_count;
};

/* N FETCH (KEY value KEY value ...) */
static void admin_fetch_untagged(void *context, const char *resp, size_t len)
{
	struct admin_fetch_ctx *fctx = context;
	pool_t pool = pool_create("admin fetch response", 4096);
	const char *pos = resp, *end = resp + len;
	struct admin_imap_value seq, word, list, key, value;
	struct admin_imap_value found[N_ELEMENTS(admin_fetch_fields)];
	bool have_uid = false;

	memset(found, 0, sizeof(found));
	admin_imap_value_next(pool, &pos, end, &seq);
	admin_imap_value_next(pool, &pos, end, &word);
	if (word.type != ADMIN_IMAP_VALUE_ATOM ||
	    strcasecmp(word.data, "FETCH") != 0) {
		pool_unref(&pool);
		return;
	}
	admin_imap_value_next(pool, &pos, end, &list);
	const char *lpos = list.data, *lend = list.data + list.size;
	while (list.type == ADMIN_IMAP_VALUE_LIST) {
		admin_imap_value_next(pool, &lpos, lend, &key);
		admin_imap_value_next(pool, &lpos, lend, &value);
		if (key.type != ADMIN_IMAP_VALUE_ATOM ||
		    value.type == ADMIN_IMAP_VALUE_END ||
		    value.type == ADMIN_IMAP_VALUE_ERROR)
			break;
		for (unsigned int i = 0; i < N_ELEMENTS(admin_fetch_fields); i++) {
			if (strcasecmp(key.data, admin_fetch_fields[i].key) == 0)
				found[i] = value;
		}
		if (strcasecmp(key.data, "UID") == 0)
			have_uid = true;
	}
	/* Only our UID FETCH's answers: an unsolicited flag update has no
	   UID (we enabled nothing that adds one). */
	if (have_uid && fctx->out != NULL) {
		admin_output_row_begin(fctx->out);
		if (fctx->mailbox != NULL)
			admin_output_field(fctx->out, "mailbox", fctx->mailbox,
					   strlen(fctx->mailbox));
		for (unsigned int i = 0; i < fctx->field_count; i++) {
			unsigned int f = fctx->fields[i];
			admin_output_field(fctx->out, admin_fetch_fields[f].name,
					   found[f].data != NULL ? found[f].data : "",
					   found[f].size);
		}
		admin_output_row_end(fctx->out);
	}
	pool_unref(&pool);
}

/* fetch FIELDS ("uid flags hdr") to the FETCH items; -1 for an unknown. */
static int admin_fetch_parse_fields(struct admin_ctx *ctx, const char *spec,
				    struct admin_fetch_ctx *fctx,
				    const char **items_r)
{
	const char **words = p_strsplit(ctx->pool, spec, ' ');
	char items[512] = "UID";

	for (unsigned int w = 0; words[w] != NULL; w++) {
		if (words[w][0] == '\0')
			continue;
		unsigned int i;
		for (i = 0; i < N_ELEMENTS(admin_fetch_fields); i++) {
			if (strcmp(words[w], admin_fetch_fields[i].name) == 0)
				break;
		}
		if (i == N_ELEMENTS(admin_fetch_fields) ||
		    fctx->field_count == N_ELEMENTS(fctx->fields))
			return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage",
				"unknown or repeated fetch field %s (fields: uid "
				"flags internaldate savedate size modseq hdr "
				"body text)", str_sanitize(ctx->pool, words[w], 32));
		fctx->fields[fctx->field_count++] = i;
		if (i != 0) {
			strncat(items, " ", sizeof(items) - strlen(items) - 1);
			strncat(items, admin_fetch_fields[i].item,
				sizeof(items) - strlen(items) - 1);
		}
	}
	if (fctx->field_count == 0)
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage",
				  "no fetch fields given");
	*items_r = p_strdup(ctx->pool, items);
	return 0;
}

static int admin_search_or_fetch(struct admin_ctx *ctx, int argc, char **argv,
				 bool fetch)
{
	static const char *const numeric[] = { "uid", "size", "modseq", NULL };
	const char *usage = fetch ? "fetch -u USER MAILBOX FIELDS QUERY..." :
		"search -u USER MAILBOX QUERY...";
	struct admin_fetch_ctx fctx = { .field_count = 0 };
	const char *user, *items = "UID", *text, *code;
	struct admin_imap *imap;

	int first = admin_mail_user_opt(argc, argv, &user);
	if (first < 0 || argc - first < (fetch ? 3 : 2))
		return admin_usage(ctx, usage);
	const char *mailbox = argv[first++];
	if (fetch) {
		int ret = admin_fetch_parse_fields(ctx, argv[first++], &fctx, &items);
		if (ret != 0)
			return ret;
	} else {
		fctx.field_count = 1;   /* uid */
		fctx.mailbox = mailbox;
	}
	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = admin_mail_select_query(ctx, imap, mailbox, argc - first,
				      argv + first);
	if (ret != 0) {
		admin_imap_close(&imap);
		return ret;
	}
	fctx.out = admin_output_begin(ctx, fetch ? ADMIN_OUTPUT_RECORDS :
				      ADMIN_OUTPUT_TABLE, numeric);
	ret = admin_imap_run(imap, p_strdup_printf(ctx->pool,
			     "UID FETCH $ (%s)", items),
			     admin_fetch_untagged, &fctx, &text);
	admin_imap_close(&imap);
	int exit_code = admin_mail_exit(ret, text, &code);
	return admin_output_end(&fctx.out, exit_code, code, text);
}

int admin_cmd_search(struct admin_ctx *ctx, int argc, char **argv)
{
	return admin_search_or_fetch(ctx, argc, argv, false);
}

int admin_cmd_fetch(struct admin_ctx *ctx, int argc, char **argv)
{
	return admin_search_or_fetch(ctx, argc, argv, true);
}

/* Expunge works through the mailbox in UID ranges of this many: each
   range's matches (an ESEARCH ALL set) stay small whatever the mailbox
   holds, and moat's UID EXPUNGE takes explicit sets, not "$". */
#define ADMIN_EXPUNGE_UID_RANGE 1000

struct admin_expunge_ctx {
	pool_t pool;
	uint32_t uidnext;
	const char *set;          /* the range's matches, NULL for none */
	unsigned int expunged;
};

/* SELECT's "OK [UIDNEXT n]", ESEARCH's "... ALL set", EXPUNGE lines. */
static void admin_expunge_untagged(void *context, const char *resp, size_t len)
{
	struct admin_expunge_ctx *ectx = context;
	const char *line = p_strndup(ectx->pool, resp, len);
	const char *p;
	unsigned int num;

	if (str_begins(line, "OK [UIDNEXT ", &p)) {
		char *digits = p_strndup(ectx->pool, p, strspn(p, "0123456789"));
		if (str_to_uint(digits, &num) == 0)
			ectx->uidnext = num;
	} else if (str_begins(line, "ESEARCH ", NULL) &&
		   (p = strstr(line, " ALL ")) != NULL) {
		p += 5;
		ectx->set = p_strndup(ectx->pool, p, strspn(p, "0123456789:,"));
	} else if (len > 8 && strcmp(line + len - 8, " EXPUNGE") == 0) {
		ectx->expunged++;
	}
}

static int admin_expunge_range(struct admin_ctx *ctx, struct admin_imap *imap,
			       struct admin_expunge_ctx *ectx, uint32_t lo,
			       const char *program)
{
	uint32_t hi = lo + ADMIN_EXPUNGE_UID_RANGE - 1;
	pool_t pool = pool_create("admin expunge range", 1024);
	int ret;

	ectx->pool = pool;
	ectx->set = NULL;
	ret = admin_mail_run(ctx, imap, "search", p_strdup_printf(pool,
		"UID SEARCH RETURN (ALL) UID %u:%u %s", lo, hi, program),
		admin_expunge_untagged, ectx);
	if (ret == 0 && ectx->set != NULL && ectx->set[0] != '\0') {
		ret = admin_mail_run(ctx, imap, "store", p_strdup_printf(pool,
			"UID STORE %s +FLAGS.SILENT (\\Deleted)", ectx->set),
			NULL, NULL);
		/* UID EXPUNGE (RFC 4315): only the matches go, not other
		   messages someone marked \Deleted. */
		if (ret == 0)
			ret = admin_mail_run(ctx, imap, "expunge",
				p_strdup_printf(pool, "UID EXPUNGE %s", ectx->set),
				admin_expunge_untagged, ectx);
	}
	ectx->pool = ctx->pool;
	pool_unref(&pool);
	return ret;
}

struct admin_expunge_args {
	const char *mailbox, *name, *program;
};

static int admin_expunge_user(struct admin_ctx *ctx, const char *user,
			      struct admin_output *out, void *context)
{
	const struct admin_expunge_args *args = context;
	struct admin_expunge_ctx ectx = { .pool = ctx->pool };
	struct admin_imap *imap;
	char num[32];

	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = admin_mail_run(ctx, imap, args->mailbox,
		p_strdup_printf(ctx->pool, "SELECT %s", args->name),
		admin_expunge_untagged, &ectx);
	/* Messages that arrive meanwhile get UIDs >= uidnext: not ours. */
	for (uint32_t lo = 1; ret == 0 && lo < ectx.uidnext;
	     lo += ADMIN_EXPUNGE_UID_RANGE)
		ret = admin_expunge_range(ctx, imap, &ectx, lo, args->program);
	admin_imap_close(&imap);
	if (ret != 0)
		return ret;
	snprintf(num, sizeof(num), "%u", ectx.expunged);
	admin_output_rowv(out, "mailbox", args->mailbox, "expunged", num, NULL);
	return 0;
}

int admin_cmd_expunge(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = { "expunged", NULL };
	struct admin_expunge_args args;
	const char *user, *error;
	bool all;

	int first = admin_mail_user_opt_all(argc, argv, &user, &all);
	if (first < 0 || argc - first < 2)
		return admin_usage(ctx, "expunge -u USER | -A MAILBOX QUERY...");
	args.mailbox = argv[first++];
	if (admin_query_build(ctx->pool, argc - first, argv + first, time(NULL),
			      &args.program, &error) < 0)
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage", "%s", error);
	if (admin_mailbox_names(ctx, 1, (char **)&args.mailbox, &args.name) != 0)
		return ADMIN_EXIT_USAGE;
	struct admin_output *out = admin_output_begin(ctx,
		all ? ADMIN_OUTPUT_TABLE : ADMIN_OUTPUT_OBJECT, numeric);
	int ret = all ? admin_for_users(ctx, out, admin_expunge_user, &args) :
		admin_expunge_user(ctx, user, out, &args);
	if (ret != 0 && !all) {
		admin_output_abort(&out);   /* reported where it happened */
		return ret;
	}
	return admin_output_end(&out, ret, "failed",
				"some users failed (see above)");
}

/* ---- index check ---- */

int admin_cmd_index(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = {
		"messages", "uidvalidity", "uidnext", NULL
	};
	const char *user, *code, *text;

	if (argc < 2 || strcmp(argv[1], "check") != 0)
		return admin_usage(ctx, "index check -u USER [MAILBOX]");
	int first = admin_mail_user_opt(argc - 1, argv + 1, &user);
	if (first < 0 || argc - 1 - first > 1)
		return admin_usage(ctx, "index check -u USER [MAILBOX]");
	const char *mailbox = argc - 1 - first == 1 ? argv[1 + first] : "";
	const char *args[] = { "MAILOP", user, "index-check", mailbox, NULL };
	struct admin_output *out =
		admin_output_begin(ctx, ADMIN_OUTPUT_TABLE, numeric);
	int ret = admin_conn_request(ctx, args, admin_row_to_output, out, NULL,
				     &code, &text);
	return admin_output_end(&out, ret, code, text);
}
