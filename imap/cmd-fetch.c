/* FETCH and UID FETCH (RFC 3501 6.4.5, 6.4.8): parse every item first,
   then let imap-fetch.c write the answer in slices. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-fetch.h"

#include <strings.h>

static bool fetch_add(struct imap_fetch_ctx *ctx, enum imap_fetch_item_type type,
		      const char *name)
{
	if (ctx->item_count == IMAP_FETCH_MAX_ITEMS)
		return false;
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		if (type != IMAP_FETCH_BODY && ctx->items[i].type == type)
			return true;   /* asked twice: answer once */
	}
	struct imap_fetch_item *item = &ctx->items[ctx->item_count++];
	memset(item, 0, sizeof(*item));
	item->type = type;
	item->name = name;
	if (type == IMAP_FETCH_FLAGS)
		ctx->flags_requested = true;
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

static bool fetch_parse_body(struct imap_fetch_ctx *ctx, const char *atom)
{
	pool_t pool = ctx->cmd->pool;
	bool peek;
	const char *rest;

	if (strncasecmp(atom, "BODY[]", 6) == 0) {
		peek = false;
		rest = atom + 6;
	} else if (strncasecmp(atom, "BODY.PEEK[]", 11) == 0) {
		peek = true;
		rest = atom + 11;
	} else {
		return false;
	}
	if (!fetch_add(ctx, IMAP_FETCH_BODY, NULL))
		return false;
	struct imap_fetch_item *item = &ctx->items[ctx->item_count - 1];
	if (!fetch_parse_partial(rest, item))
		return false;
	/* the reply names only the origin octet: BODY[]<0> */
	item->name = item->partial ?
		p_strdup_printf(pool, "BODY[]<%llu>",
				(unsigned long long)item->start) : "BODY[]";
	if (!peek)
		ctx->set_seen = true;
	return true;
}

static bool fetch_parse_item(struct imap_fetch_ctx *ctx, const char *atom)
{
	if (strcasecmp(atom, "UID") == 0)
		return fetch_add(ctx, IMAP_FETCH_UID, "UID");
	if (strcasecmp(atom, "FLAGS") == 0)
		return fetch_add(ctx, IMAP_FETCH_FLAGS, "FLAGS");
	if (strcasecmp(atom, "RFC822.SIZE") == 0)
		return fetch_add(ctx, IMAP_FETCH_RFC822_SIZE, "RFC822.SIZE");
	if (strcasecmp(atom, "INTERNALDATE") == 0)
		return fetch_add(ctx, IMAP_FETCH_INTERNALDATE, "INTERNALDATE");
	if (strcasecmp(atom, "RFC822") == 0) {
		ctx->set_seen = true;
		return fetch_add(ctx, IMAP_FETCH_BODY, "RFC822");
	}
	if (strcasecmp(atom, "FAST") == 0) {
		return fetch_parse_item(ctx, "FLAGS") &&
			fetch_parse_item(ctx, "INTERNALDATE") &&
			fetch_parse_item(ctx, "RFC822.SIZE");
	}
	return fetch_parse_body(ctx, atom);
}

static bool fetch_parse_items(struct imap_fetch_ctx *ctx,
			      const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *atom;

	if (ctx->cmd->uid && !fetch_add(ctx, IMAP_FETCH_UID, "UID"))
		return false;
	if (imap_arg_get_atom(arg, &atom))
		return fetch_parse_item(ctx, atom);
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
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
	if (!imap_arg_get_atom(&cmd->args[0], &set) ||
	    imap_seqset_parse(cmd->pool, set, &ctx->ranges,
			      &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	if (!fetch_parse_items(ctx, &cmd->args[1]) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid or unsupported "
					  "fetch attribute.");
		return true;
	}
	if (imap_seqset_resolve(ctx->box, cmd->uid, ctx->ranges,
				&ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	cmd->context = ctx;
	cmd->func = cmd_fetch_continue;
	cmd->cancel = cmd_fetch_cancel;
	return imap_fetch_run(ctx);
}
