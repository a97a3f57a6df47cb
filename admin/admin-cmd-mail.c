/* search, fetch and expunge: messages chosen by a query (admin-query.h)
   in one of the user's mailboxes. Each asks master for a session of the
   user's own imap process (MAIL) and speaks IMAP over it, so the imap
   process stays the one writer of the user's index (DESIGN.md) and its
   sessions see the change at once. */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-output.h"
#include "admin-query.h"
#include "strfuncs.h"

#include <getopt.h>
#include <time.h>

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
	struct admin_imap_value seq, word, list;
	struct admin_imap_value found[N_ELEMENTS(admin_fetch_fields)];
	const char *keys[N_ELEMENTS(admin_fetch_fields)];

	memset(found, 0, sizeof(found));
	for (unsigned int i = 0; i < N_ELEMENTS(admin_fetch_fields); i++)
		keys[i] = admin_fetch_fields[i].key;
	admin_imap_value_next(pool, &pos, end, &seq);
	admin_imap_value_next(pool, &pos, end, &word);
	if (word.type != ADMIN_IMAP_VALUE_ATOM ||
	    strcasecmp(word.data, "FETCH") != 0) {
		pool_unref(&pool);
		return;
	}
	admin_imap_value_next(pool, &pos, end, &list);
	admin_imap_list_pairs(pool, &list, keys, N_ELEMENTS(keys), found);
	/* Only our UID FETCH's answers: an unsolicited flag update has no
	   UID (we enabled nothing that adds one). admin_fetch_fields[0] is
	   UID. */
	if (found[0].type != ADMIN_IMAP_VALUE_END && fctx->out != NULL) {
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

/* search or fetch in one user's mailbox. */
struct admin_sf_args {
	struct admin_fetch_ctx *fctx;
	const char *mailbox, *items;
	int query_argc;
	char **query_argv;
	/* the failure of a lone user's FETCH, left to admin_output_end() */
	const char *code, *text;
};

static int admin_search_or_fetch_user(struct admin_ctx *ctx, const char *user,
				      struct admin_output *out, void *context)
{
	struct admin_sf_args *args = context;
	struct admin_imap *imap;
	const char *text, *code;

	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	ret = admin_mail_select_query(ctx, imap, args->mailbox,
				      args->query_argc, args->query_argv);
	if (ret != 0) {
		admin_imap_close(&imap);
		return ret;
	}
	args->fctx->out = out;
	ret = admin_imap_run(imap, p_strdup_printf(ctx->pool,
			     "UID FETCH $ (%s)", args->items),
			     admin_fetch_untagged, args->fctx, &text);
	admin_imap_close(&imap);
	int exit_code = admin_mail_exit(ret, text, &code);
	if (exit_code != 0 && ctx->errors_to_stderr)
		return admin_fail(ctx, exit_code, code, "%s: %s", user, text);
	args->code = code;
	args->text = text;
	return exit_code;
}

static int admin_search_or_fetch(struct admin_ctx *ctx, int argc, char **argv,
				 bool fetch)
{
	static const char *const numeric[] = { "uid", "size", "modseq", NULL };
	const char *usage = fetch ?
		"fetch -u USER | -A MAILBOX FIELDS QUERY..." :
		"search -u USER | -A MAILBOX QUERY...";
	struct admin_fetch_ctx fctx = { .field_count = 0 };
	struct admin_sf_args args = { .fctx = &fctx, .items = "UID" };
	const char *user, *program, *error;
	bool all;

	int first = admin_mail_user_opt_all(argc, argv, &user, &all);
	if (first < 0 || argc - first < (fetch ? 3 : 2))
		return admin_usage(ctx, usage);
	args.mailbox = argv[first++];
	if (fetch) {
		int ret = admin_fetch_parse_fields(ctx, argv[first++], &fctx,
						   &args.items);
		if (ret != 0)
			return ret;
	} else {
		fctx.field_count = 1;   /* uid */
		fctx.mailbox = args.mailbox;
	}
	args.query_argc = argc - first;
	args.query_argv = argv + first;
	/* a bad query is a usage error before any user is asked */
	if (admin_query_build(ctx->pool, args.query_argc, args.query_argv,
			      time(NULL), &program, &error) < 0)
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage", "%s", error);
	struct admin_output *out = admin_output_begin(ctx, fetch ?
		ADMIN_OUTPUT_RECORDS : ADMIN_OUTPUT_TABLE, numeric);
	if (all) {
		int ret = admin_for_users(ctx, out, admin_search_or_fetch_user,
					  &args);
		return admin_output_end(&out, ret, ret == 0 ? NULL : "failed",
					"some users failed (see above)");
	}
	int ret = admin_search_or_fetch_user(ctx, user, out, &args);
	if (ret != 0 && args.text == NULL) {
		admin_output_abort(&out);   /* reported where it happened */
		return ret;
	}
	return admin_output_end(&out, ret, args.code, args.text);
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
