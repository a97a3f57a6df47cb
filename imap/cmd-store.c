/* STORE and UID STORE (RFC 9051 6.4.6, RFC 3501 6.4.6): FLAGS, +FLAGS,
   -FLAGS, each with .SILENT, on system flags and keywords, and the
   UNCHANGEDSINCE modifier (RFC 7162 3.1.3: each message is tested and
   changed atomically; those that fail are listed in [MODIFIED]). Each
   message is one rename of its file; the messages of a command are
   committed to the index together (one log append per
   MAILBOX_CHANGE_BATCH_MAX messages). The log's fdatasync is left to
   the end of the batch of pipelined commands (client_batch_end()): one
   sync for all the STOREs of the batch, before any of their replies
   leaves the corked output, so an OK still means on disk. Other
   sessions see the change at their next sync. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-uidonly.h"
#include "imap-flags.h"
#include "imap-search.h"
#include "imap-seqset.h"
#include "imap-notify.h"
#include "imap-condstore.h"
#include "imap-context.h"

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
	/* UNCHANGEDSINCE (RFC 7162 3.1.3) */
	bool conditional;
	uint64_t unchanged_since;
	/* the messages that failed it, as numbers of the reply */
	struct uidset modified;
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
	const struct imap_arg *args = &cmd->args[1];
	if (args->type == IMAP_ARG_LIST) {
		/* store-modifiers: only UNCHANGEDSINCE is known */
		const struct imap_arg *list;
		unsigned int count;
		if (!imap_arg_get_list(args, &list, &count) || count != 2 ||
		    !imap_arg_atom_equals(&list[0], "UNCHANGEDSINCE") ||
		    !imap_arg_get_modseq(&list[1], true,
					 &ctx->unchanged_since)) {
			client_send_command_error(cmd, "Invalid STORE modifier.");
			return false;
		}
		ctx->conditional = true;
		args++;
	}
	if (!imap_arg_get_atom(&args[0], &item) ||
	    !store_parse_item(item, ctx)) {
		client_send_command_error(cmd, "Invalid STORE data item.");
		return false;
	}
	if (imap_flag_list_parse(&args[1], true, &ctx->list, &error) < 0) {
		client_send_command_error(cmd, error);
		return false;
	}
	if (imap_search_seqset(cmd, set, &ctx->ranges, &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return false;
	}
	return true;
}

/* "* n FETCH (UID u FLAGS (...) MODSEQ (m))": UID for UID STORE and in
   IMAP4rev2 (RFC 9051 7.5.2), UID and MODSEQ with CONDSTORE (RFC 7162
   3.2.4); FLAGS unless flags is false (.SILENT). */
static void store_send_fetch(struct client_command *cmd, uint32_t seq,
			     bool flags)
{
	struct client *client = cmd->client;
	struct mailbox *box = client->mailbox;
	buffer_t buf;

	buffer_init(&buf, IMAP_FLAGS_STR_MAX + 96);
	int ret = imap_fetch_resp_begin(client, seq, &buf);
	if ((cmd->uid || client->imap4rev2 || client->condstore) &&
	    imap_fetch_resp_wants_uid(client))
		ret |= buffer_printf(&buf, "UID %u", mailbox_msg_uid(box, seq));
	if (flags) {
		ret |= buffer_append_str(&buf, buf.data[buf.used - 1] == '(' ?
					 "FLAGS " : " FLAGS ");
		ret |= imap_write_msg_flags(&buf, box, seq, !client->imap4rev2);
	}
	if (client->condstore) {
		ret |= buffer_printf(&buf, " MODSEQ (%llu)", (unsigned long long)
				     mailbox_msg_modseq(box, seq));
		client->modseq_sent = true;
	}
	ret |= buffer_append_c(&buf, ')');
	i_assert(ret == 0);
	client_send_line(client, buf.data);
	buffer_free(&buf);
}

/* The flags a message with flags/kw has after this STORE. */
static void store_expected(const struct store_ctx *ctx, enum mail_flags *flags,
			   uint32_t *kw)
{
	enum mail_flags f = ctx->list.flags & MAIL_FLAGS_PERMANENT;

	switch (ctx->mode) {
	case STORE_REPLACE:
		*flags = f;
		*kw = ctx->keywords;
		break;
	case STORE_ADD:
		*flags |= f;
		*kw |= ctx->keywords;
		break;
	case STORE_REMOVE:
		*flags &= ~f;
		*kw &= ~ctx->keywords;
		break;
	}
}

/* One batch of messages: their numbers and their flags before it. */
struct store_batch {
	uint32_t seqs[MAILBOX_CHANGE_BATCH_MAX];
	enum mail_flags old_flags[MAILBOX_CHANGE_BATCH_MAX];
	uint32_t old_kw[MAILBOX_CHANGE_BATCH_MAX];
	enum mailbox_change_result results[MAILBOX_CHANGE_BATCH_MAX];
	unsigned int count;
};

/* The reply for one message of a committed batch. */
static void store_report(struct client_command *cmd, struct store_ctx *ctx,
			 const struct store_batch *b, unsigned int i,
			 bool *changed_r)
{
	struct mailbox *box = cmd->client->mailbox;
	uint32_t seq = b->seqs[i];

	switch (b->results[i]) {
	case MAILBOX_CHANGE_EXPUNGED:
		/* its flags can no longer change (RFC 2180 4.2) */
		ctx->some_expunged = true;
		return;
	case MAILBOX_CHANGE_MODIFIED:
		/* RFC 7162 3.1.3, example 10: the client learns the state
		   that made it fail without asking */
		uidset_add(&ctx->modified, cmd->uid ?
			   mailbox_msg_uid(box, seq) : seq);
		store_send_fetch(cmd, seq, true);
		return;
	case MAILBOX_CHANGE_DONE:
	case MAILBOX_CHANGE_UNCHANGED:
		break;
	}
	enum mail_flags now = mailbox_msg_flags(box, seq) & MAIL_FLAGS_PERMANENT;
	uint32_t now_kw = mailbox_msg_keywords(box, seq);
	if (now != b->old_flags[i] || now_kw != b->old_kw[i]) {
		*changed_r = true;
		/* the sync does not report our own change */
		imap_context_flags_changed(cmd->client, seq);
	}
	/* RFC 9051 6.4.6: the new flags as if FETCH FLAGS was done; with
	   CONDSTORE a .SILENT one still tells the new MODSEQ (RFC 7162
	   3.1.3, 6). The change applied to what the file had: if another
	   writer's change came with it, a .SILENT reply must show FLAGS
	   too, or the client would take the new MODSEQ as covering flags
	   it never saw. */
	enum mail_flags want_flags = b->old_flags[i];
	uint32_t want_kw = b->old_kw[i];
	store_expected(ctx, &want_flags, &want_kw);
	bool foreign = now != want_flags || now_kw != want_kw;
	if (!ctx->silent || foreign || cmd->client->condstore)
		store_send_fetch(cmd, seq, !ctx->silent || foreign);
}

/* Change and report the messages collected in b: one commit for all of
   them. Returns false after an I/O error (logged). */
static bool store_flush(struct client_command *cmd, struct store_ctx *ctx,
			struct store_batch *b, bool *changed_r)
{
	static const enum mailbox_flags_change modes[] = {
		[STORE_REPLACE] = MAILBOX_FLAGS_REPLACE,
		[STORE_ADD] = MAILBOX_FLAGS_ADD,
		[STORE_REMOVE] = MAILBOX_FLAGS_REMOVE,
	};
	/* +FLAGS/-FLAGS apply to the file's flags at the time of the
	   change, so another writer's concurrent change of other flags
	   survives. */
	const struct mailbox_flags_batch batch = {
		.mode = modes[ctx->mode],
		.flags = ctx->list.flags,
		.keywords = ctx->keywords,
		.conditional = ctx->conditional,
		.unchanged_since = ctx->unchanged_since,
		/* the batch syncs once before its replies leave
		   (client_batch_end()), so pipelined STOREs share it */
		.defer_sync = cmd->client->batch_corked,
	};
	const char *error;
	unsigned int count = b->count;

	b->count = 0;
	if (mailbox_msgs_change_flags(cmd->client->mailbox, &batch, b->seqs,
				      count, b->results, &error) < 0) {
		i_error("STORE failed: %s", error);
		*changed_r = true;	/* some may have changed before it */
		return false;
	}
	for (unsigned int i = 0; i < count; i++)
		store_report(cmd, ctx, b, i, changed_r);
	return true;
}

/* Every message of the set, MAILBOX_CHANGE_BATCH_MAX at a time, so that
   memory stays bounded whatever the range. Returns false after an I/O
   error. */
static bool store_all(struct client_command *cmd, struct store_ctx *ctx,
		      bool *changed_r)
{
	struct mailbox *box = cmd->client->mailbox;
	struct store_batch *b = p_malloc(cmd->pool, sizeof(*b));
	bool ok = true;

	for (unsigned int i = 0; i < ctx->range_count && ok; i++) {
		for (uint32_t seq = ctx->ranges[i].seq1;
		     seq <= ctx->ranges[i].seq2 && ok; seq++) {
			if (mailbox_msg_is_expunged(box, seq)) {
				/* its flags can no longer change (RFC 2180
				   4.2) */
				ctx->some_expunged = true;
				continue;
			}
			b->seqs[b->count] = seq;
			b->old_flags[b->count] = mailbox_msg_flags(box, seq) &
				MAIL_FLAGS_PERMANENT;
			b->old_kw[b->count] = mailbox_msg_keywords(box, seq);
			if (++b->count == MAILBOX_CHANGE_BATCH_MAX)
				ok = store_flush(cmd, ctx, b, changed_r);
			if (seq == UINT32_MAX)
				break;
		}
	}
	if (ok && b->count > 0)
		ok = store_flush(cmd, ctx, b, changed_r);
	return ok;
}

/* "[MODIFIED set] " for the tagged reply, or "". */
static const char *store_modified_code(struct client_command *cmd,
				       struct store_ctx *ctx)
{
	buffer_t buf;

	if (ctx->modified.count == 0)
		return "";
	/* the tagged line is bounded: a longer set is cut (the FETCHes
	   sent for each failed message tell the rest) */
	buffer_init(&buf, CLIENT_REPLY_LINE_MAX - 128);
	int ret = buffer_append_str(&buf, "[MODIFIED ");
	for (unsigned int i = 0; i < ctx->modified.count && ret == 0; i++) {
		const struct uidset_range *r = &ctx->modified.ranges[i];
		ret = r->lo == r->hi ?
			buffer_printf(&buf, "%s%u", i == 0 ? "" : ",", r->lo) :
			buffer_printf(&buf, "%s%u:%u", i == 0 ? "" : ",",
				      r->lo, r->hi);
	}
	if (ret == 0)
		ret = buffer_append_str(&buf, "] ");
	const char *code = ret == 0 ? p_strdup(cmd->pool, buf.data) : "";
	buffer_free(&buf);
	return code;
}

bool cmd_store(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct store_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *error;
	bool changed = false, ok = true;

	if (!store_parse(cmd, ctx))
		return true;
	/* an enabling command (RFC 7162 3.1) */
	if (ctx->conditional)
		imap_condstore_enable(client);
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
	ok = store_all(cmd, ctx, &changed);
	if (changed)
		imap_notify_flags_changed(client);
	/* RFC 2180 4.2.1-4.2.3: .SILENT is OK for what could be stored;
	   otherwise a message that is gone is a tagged NO (by UID it is
	   simply not there, and its EXPUNGE comes with this reply) */
	const char *modified = store_modified_code(cmd, ctx);
	uidset_free(&ctx->modified);
	if (!ok) {
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error "
				    "occurred. Refer to server log for more "
				    "information.");
	} else if (ctx->some_expunged && !ctx->silent && !cmd->uid) {
		/* RFC 7162 example 11: MODIFIED may come with a NO */
		client_send_taglinef(cmd, "NO %s%s", *modified != '\0' ?
			modified : "[EXPUNGEISSUED] ",
			"Some of the requested messages no longer exist");
	} else if (*modified != '\0') {
		client_send_taglinef(cmd, "OK %sConditional STORE failed.",
				     modified);
	} else {
		client_send_tagline(cmd, "OK Store completed.");
	}
	return true;
}
