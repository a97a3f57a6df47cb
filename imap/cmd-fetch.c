/* FETCH and UID FETCH (RFC 3501 6.4.5, 6.4.8): parse every item first,
   then let imap-fetch.c write the answer in slices. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-fetch.h"
#include "imap-search.h"

#include <strings.h>

static bool fetch_add(struct imap_fetch_ctx *ctx, enum imap_fetch_item_type type,
		      const char *name)
{
	if (ctx->item_count == ctx->item_cap)
		return false;
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		/* asked twice: answer once */
		if (type != IMAP_FETCH_BODY && type != IMAP_FETCH_BINARY_SIZE &&
		    ctx->items[i].type == type &&
		    strcmp(ctx->items[i].name, name) == 0)
			return true;
	}
	struct imap_fetch_item *item = &ctx->items[ctx->item_count++];
	memset(item, 0, sizeof(*item));
	item->type = type;
	item->name = name;
	item->section.part = "";
	if (type == IMAP_FETCH_FLAGS)
		ctx->flags_requested = true;
	item->extended = strcmp(name, "BODYSTRUCTURE") == 0;
	/* from the cache when it has them (imap-fetch-cache.h) */
	if (type == IMAP_FETCH_ENVELOPE)
		ctx->need_texts |= 1U << IMAP_MSG_TEXT_ENVELOPE;
	else if (type == IMAP_FETCH_BODYSTRUCTURE)
		ctx->need_texts |= 1U << (item->extended ?
			IMAP_MSG_TEXT_BODYSTRUCTURE : IMAP_MSG_TEXT_BODY);
	return true;
}

/* "<start.count>" after BODY[]; count must be nonzero. */
static bool fetch_parse_partial(const char *p, struct imap_fetch_item *item)
{
	char *end;

	if (*p == '\0')
		return true;
	if (*p != '<' || p[1] < '0' || p[1] > '9')
		return false;
	errno = 0;
	item->start = strtoull(p + 1, &end, 10);
	if (errno != 0 || *end != '.' || end[1] < '1' || end[1] > '9')
		return false;
	item->count = strtoull(end + 1, &end, 10);
	if (errno != 0 || strcmp(end, ">") != 0)
		return false;
	item->partial = true;
	return true;
}

/* BODY[section]<partial> and its BODY.PEEK, BINARY and BINARY.PEEK
   forms (RFC 3516), and BINARY.SIZE[section]. */
static const struct fetch_section_form {
	const char *prefix, *reply;
	bool peek, binary, size;
} fetch_section_forms[] = {
	{ "BODY[", "BODY", false, false, false },
	{ "BODY.PEEK[", "BODY", true, false, false },
	{ "BINARY[", "BINARY", false, true, false },
	{ "BINARY.PEEK[", "BINARY", true, true, false },
	{ "BINARY.SIZE[", "BINARY.SIZE", true, true, true },
};

static bool fetch_parse_section(struct imap_fetch_ctx *ctx, const char *atom)
{
	const struct fetch_section_form *form = NULL;
	pool_t pool = ctx->cmd->pool;
	const char *spec, *end, *echo;

	for (unsigned int i = 0; i < N_ELEMENTS(fetch_section_forms); i++) {
		if (strncasecmp(atom, fetch_section_forms[i].prefix,
				strlen(fetch_section_forms[i].prefix)) == 0)
			form = &fetch_section_forms[i];
	}
	if (form == NULL)
		return false;
	spec = atom + strlen(form->prefix);
	/* a partial after the section holds no ']' */
	if ((end = strrchr(spec, ']')) == NULL)
		return false;
	if (!fetch_add(ctx, form->size ? IMAP_FETCH_BINARY_SIZE :
		       IMAP_FETCH_BODY, form->reply))
		return false;
	struct imap_fetch_item *item = &ctx->items[ctx->item_count - 1];
	if (imap_section_parse(pool, p_strndup(pool, spec, (size_t)(end - spec)),
			       form->binary, &item->section, &echo) < 0)
		return false;
	if (form->size ? end[1] != '\0' : !fetch_parse_partial(end + 1, item))
		return false;
	/* the reply names only the origin octet: BODY[]<0> */
	item->name = item->partial ?
		p_strdup_printf(pool, "%s[%s]<%llu>", form->reply, echo,
				(unsigned long long)item->start) :
		p_strdup_printf(pool, "%s[%s]", form->reply, echo);
	if (imap_section_needs_structure(&item->section))
		ctx->need_structure = true;
	if (!form->peek)
		ctx->set_seen = true;
	return true;
}

/* RFC822, RFC822.HEADER, RFC822.TEXT: BODY[], BODY.PEEK[HEADER] and
   BODY[TEXT] under their old names. */
static bool fetch_add_rfc822(struct imap_fetch_ctx *ctx, const char *name,
			     enum imap_section_text text, bool seen)
{
	if (!fetch_add(ctx, IMAP_FETCH_BODY, name))
		return false;
	ctx->items[ctx->item_count - 1].section.text = text;
	if (text != IMAP_SECTION_BODY)
		ctx->need_structure = true;
	if (seen)
		ctx->set_seen = true;
	return true;
}

static bool fetch_parse_item(struct imap_fetch_ctx *ctx, const char *atom)
{
	static const struct {
		const char *name;
		enum imap_fetch_item_type type;
	} simple[] = {
		{ "UID", IMAP_FETCH_UID },
		{ "FLAGS", IMAP_FETCH_FLAGS },
		{ "RFC822.SIZE", IMAP_FETCH_RFC822_SIZE },
		{ "INTERNALDATE", IMAP_FETCH_INTERNALDATE },
		{ "SAVEDATE", IMAP_FETCH_SAVEDATE },
		{ "ENVELOPE", IMAP_FETCH_ENVELOPE },
		{ "BODY", IMAP_FETCH_BODYSTRUCTURE },
		{ "BODYSTRUCTURE", IMAP_FETCH_BODYSTRUCTURE },
	};

	for (unsigned int i = 0; i < N_ELEMENTS(simple); i++) {
		if (strcasecmp(atom, simple[i].name) == 0)
			return fetch_add(ctx, simple[i].type, simple[i].name);
	}
	if (strcasecmp(atom, "RFC822") == 0)
		return fetch_add_rfc822(ctx, "RFC822", IMAP_SECTION_BODY, true);
	if (strcasecmp(atom, "RFC822.HEADER") == 0)
		return fetch_add_rfc822(ctx, "RFC822.HEADER",
					IMAP_SECTION_HEADER, false);
	if (strcasecmp(atom, "RFC822.TEXT") == 0)
		return fetch_add_rfc822(ctx, "RFC822.TEXT",
					IMAP_SECTION_TEXT, true);
	/* the macros (RFC 3501 6.4.5) */
	if (strcasecmp(atom, "FAST") == 0 || strcasecmp(atom, "ALL") == 0 ||
	    strcasecmp(atom, "FULL") == 0) {
		if (!fetch_parse_item(ctx, "FLAGS") ||
		    !fetch_parse_item(ctx, "INTERNALDATE") ||
		    !fetch_parse_item(ctx, "RFC822.SIZE"))
			return false;
		if (strcasecmp(atom, "FAST") == 0)
			return true;
		if (!fetch_parse_item(ctx, "ENVELOPE"))
			return false;
		return strcasecmp(atom, "ALL") == 0 ||
			fetch_parse_item(ctx, "BODY");
	}
	return fetch_parse_section(ctx, atom);
}

/* Room for what atom_count atoms can add: a macro (FULL) adds five
   items, and UID FETCH one more. */
#define FETCH_ITEMS_PER_ATOM 5
static void fetch_items_alloc(struct imap_fetch_ctx *ctx,
			      unsigned int atom_count)
{
	unsigned int cap = IMAP_FETCH_MAX_ITEMS;

	if (atom_count < (IMAP_FETCH_MAX_ITEMS - 1) / FETCH_ITEMS_PER_ATOM)
		cap = atom_count * FETCH_ITEMS_PER_ATOM + 1;
	ctx->items = p_malloc(ctx->cmd->pool, sizeof(*ctx->items) * cap);
	ctx->item_cap = cap;
}

static bool fetch_parse_items(struct imap_fetch_ctx *ctx,
			      const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *atom;

	if (imap_arg_get_atom(arg, &atom)) {
		fetch_items_alloc(ctx, 1);
		if (ctx->cmd->uid && !fetch_add(ctx, IMAP_FETCH_UID, "UID"))
			return false;
		return fetch_parse_item(ctx, atom);
	}
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return false;
	fetch_items_alloc(ctx, count);
	if (ctx->cmd->uid && !fetch_add(ctx, IMAP_FETCH_UID, "UID"))
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&list[i], &atom) ||
		    !fetch_parse_item(ctx, atom))
			return false;
	}
	return true;
}

static bool cmd_fetch_continue(struct client_command *cmd)
{
	return imap_fetch_run(cmd->context);
}

static void cmd_fetch_cancel(struct client_command *cmd)
{
	imap_fetch_deinit(cmd->context);
}

bool cmd_fetch(struct client_command *cmd)
{
	struct imap_fetch_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *set;

	ctx->cmd = cmd;
	ctx->box = cmd->client->mailbox;
	ctx->body_fd = -1;
	/* "$" is the SEARCHRES result (imap-search.h) */
	if (!imap_arg_get_atom(&cmd->args[0], &set) ||
	    (strcmp(set, "$") != 0 &&
	     imap_seqset_parse(cmd->pool, set, &ctx->ranges,
			       &ctx->range_count) < 0)) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	if (!fetch_parse_items(ctx, &cmd->args[1]) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid or unsupported "
					  "fetch attribute.");
		return true;
	}
	if (imap_search_seqset(cmd, set, &ctx->ranges,
			       &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	cmd->context = ctx;
	cmd->func = cmd_fetch_continue;
	cmd->cancel = cmd_fetch_cancel;
	return imap_fetch_run(ctx);
}
