/* STORE and UID STORE (RFC 9051 6.4.6, RFC 3501 6.4.6): FLAGS, +FLAGS,
   -FLAGS, each with .SILENT, on system flags and keywords. Each message
   is one rename of its file; other sessions see the change at their next
   sync. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-flags.h"
#include "imap-search.h"
#include "imap-seqset.h"
#include "imap-notify.h"

#include <strings.h>

enum store_mode { STORE_REPLACE, STORE_ADD, STORE_REMOVE };

struct store_ctx {
	enum store_mode mode;
	bool silent;
	struct imap_flag_list list;
	struct seq_range *ranges;
	unsigned int range_count;
	uint32_t keywords;
	bool some_expunged;
};

static bool store_parse_item(const char *item, struct store_ctx *ctx)
{
	if (*item == '+') {
		ctx->mode = STORE_ADD;
		item++;
	} else if (*item == '-') {
		ctx->mode = STORE_REMOVE;
		item++;
	} else {
		ctx->mode = STORE_REPLACE;
	}
	if (strcasecmp(item, "FLAGS") == 0)
		return true;
	if (strcasecmp(item, "FLAGS.SILENT") == 0) {
		ctx->silent = true;
		return true;
	}
	return false;
}

/* Everything before acting: BAD for any syntax error. */
static bool store_parse(struct client_command *cmd, struct store_ctx *ctx)
{
	const char *set, *item, *error;

	/* "$" is the SEARCHRES result (imap-search.h) */
	if (!imap_arg_get_atom(&cmd->args[0], &set) ||
	    (strcmp(set, "$") != 0 &&
	     imap_seqset_parse(cmd->pool, set, &ctx->ranges,
			       &ctx->range_count) < 0)) {
		client_send_command_error(cmd, "Invalid messageset.");
		return false;
	}
	if (!imap_arg_get_atom(&cmd->args[1], &item) ||
	    !store_parse_item(item, ctx)) {
		client_send_command_error(cmd, "Invalid STORE data item.");
		return false;
	}
	if (imap_flag_list_parse(&cmd->args[2], true, &ctx->list, &error) < 0) {
		client_send_command_error(cmd, error);
		return false;
	}
	if (imap_search_seqset(cmd, set, &ctx->ranges, &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return false;
	}
	return true;
}

static void store_send_fetch(struct client_command *cmd, uint32_t seq)
{
	struct client *client = cmd->client;
	buffer_t buf;

	buffer_init(&buf, IMAP_FLAGS_STR_MAX + 64);
	if (buffer_printf(&buf, "* %u FETCH (", seq) < 0 ||
	    /* RFC 9051 7.5.2: IMAP4rev2 FETCH updates carry the UID */
	    ((cmd->uid || client->imap4rev2) &&
	     buffer_printf(&buf, "UID %u ",
			   mailbox_msg_uid(client->mailbox, seq)) < 0) ||
	    buffer_append_str(&buf, "FLAGS ") < 0 ||
	    imap_write_msg_flags(&buf, client->mailbox, seq,
				 !client->imap4rev2) < 0 ||
	    buffer_append_c(&buf, ')') < 0)
		i_unreached();
	client_send_line(client, buf.data);
	buffer_free(&buf);
}

/* Returns false after an I/O error (logged). */
static bool store_msg(struct client_command *cmd, struct store_ctx *ctx,
		      uint32_t seq, bool *changed_r)
{
	static const enum mailbox_flags_change modes[] = {
		[STORE_REPLACE] = MAILBOX_FLAGS_REPLACE,
		[STORE_ADD] = MAILBOX_FLAGS_ADD,
		[STORE_REMOVE] = MAILBOX_FLAGS_REMOVE,
	};
	struct mailbox *box = cmd->client->mailbox;
	enum mail_flags old = mailbox_msg_flags(box, seq) & MAIL_FLAGS_PERMANENT;
	uint32_t old_kw = mailbox_msg_keywords(box, seq);
	const char *error;

	if (mailbox_msg_is_expunged(box, seq)) {
		/* its flags can no longer change (RFC 2180 4.2) */
		ctx->some_expunged = true;
		return true;
	}
	/* +FLAGS/-FLAGS apply to the file's flags at the time of the change,
	   so another writer's concurrent change of other flags survives. */
	if (mailbox_msg_change_flags(box, seq, modes[ctx->mode],
				     ctx->list.flags, ctx->keywords,
				     &error) < 0) {
		if (errno == ENOENT) {
			ctx->some_expunged = true;
			return true;
		}
		i_error("STORE failed: %s", error);
		return false;
	}
	if ((mailbox_msg_flags(box, seq) & MAIL_FLAGS_PERMANENT) != old ||
	    mailbox_msg_keywords(box, seq) != old_kw)
		*changed_r = true;
	/* RFC 9051 6.4.6: the new flags as if FETCH FLAGS was done */
	if (!ctx->silent)
		store_send_fetch(cmd, seq);
	return true;
}

bool cmd_store(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct store_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *error;
	bool changed = false, ok = true;

	if (!store_parse(cmd, ctx))
		return true;
	if (mailbox_is_readonly(client->mailbox)) {
		client_send_tagline(cmd, "NO [CANNOT] Mailbox is read-only.");
		return true;
	}
	/* -FLAGS never defines keywords; the others may hit the limit */
	int ret = imap_flag_list_keywords(client->mailbox, &ctx->list,
					  ctx->mode != STORE_REMOVE,
					  &ctx->keywords, &error);
	if (ret <= 0) {
		if (ret < 0)
			i_error("STORE failed: %s", error);
		client_send_tagline(cmd, ret == 0 ?
			"NO [LIMIT] Too many keywords in this mailbox." :
			"NO [SERVERBUG] Internal error occurred.");
		return true;
	}
	/* a new keyword is announced before the FETCHes that show it */
	imap_sync_keywords(client);
	for (unsigned int i = 0; i < ctx->range_count && ok; i++) {
		for (uint32_t seq = ctx->ranges[i].seq1;
		     seq <= ctx->ranges[i].seq2 && ok; seq++)
			ok = store_msg(cmd, ctx, seq, &changed);
	}
	if (changed)
		imap_notify_changed(client);
	/* RFC 2180 4.2.1-4.2.3: .SILENT is OK for what could be stored;
	   otherwise a message that is gone is a tagged NO (by UID it is
	   simply not there, and its EXPUNGE comes with this reply) */
	if (!ok) {
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error "
				    "occurred. Refer to server log for more "
				    "information.");
	} else if (ctx->some_expunged && !ctx->silent && !cmd->uid) {
		client_send_tagline(cmd, "NO [EXPUNGEISSUED] Some of the "
				    "requested messages no longer exist");
	} else {
		client_send_tagline(cmd, "OK Store completed.");
	}
	return true;
}
