/* COPY, UID COPY (RFC 9051 6.4.7, RFC 4315 COPYUID) and MOVE, UID MOVE
   (RFC 6851). The copies are durable in the target before the reply (and
   before MOVE removes anything from the source); MOVE then sends
   "* OK [COPYUID ...]" and the EXPUNGEs of the moved messages. */
#include "imap-common.h"
#include "imap-mailbox.h"
#include "imap-commands.h"
#include "imap-quota.h"
#include "imap-notify.h"
#include "imap-search.h"
#include "imap-seqset.h"

/* "[COPYUID <uidvalidity> <set> <set>]": the sets come from the view,
   compressed into ranges; bounded by the reply line. */
#define COPY_CODE_MAX (CLIENT_REPLY_LINE_MAX - 64)

struct copy_ctx {
	struct seq_range *ranges;
	unsigned int range_count;
	const char *dest_name;
	/* the source uids as ranges, written as they are staged (nothing
	   per message is kept: memory does not grow with the set) */
	buffer_t src_set;
	uint32_t run_first, run_last;   /* the run not written yet */
	bool set_full;                  /* too long: no COPYUID */
	unsigned int count;
	uint32_t dest_uidvalidity, first_uid;
	bool move;       /* within the one quota root: never over quota */
	bool over_quota;
	bool over_limit;
	bool gone;
};

static bool copy_parse(struct client_command *cmd, struct copy_ctx *ctx)
{
	const char *set;

	/* "$" is the SEARCHRES result (imap-search.h) */
	if (!imap_arg_get_atom(&cmd->args[0], &set) ||
	    (strcmp(set, "$") != 0 &&
	     imap_seqset_parse(cmd->pool, set, &ctx->ranges,
			       &ctx->range_count) < 0) ||
	    imap_search_seqset(cmd, set, &ctx->ranges, &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return false;
	}
	if (!imap_arg_get_astring(&cmd->args[1], &ctx->dest_name) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid arguments.");
		return false;
	}
	return true;
}

/* Write the pending run of source uids ("5" or "5:9") to the set. */
static void copy_flush_run(struct copy_ctx *ctx)
{
	if (ctx->run_first == 0 || ctx->set_full)
		return;
	if ((ctx->src_set.used > 0 && buffer_append_c(&ctx->src_set, ',') < 0) ||
	    buffer_printf(&ctx->src_set, "%u", ctx->run_first) < 0 ||
	    (ctx->run_last > ctx->run_first &&
	     buffer_printf(&ctx->src_set, ":%u", ctx->run_last) < 0))
		ctx->set_full = true;
	ctx->run_first = 0;
}

/* One more staged source uid (ascending: the ranges are sorted). */
static void copy_add_uid(struct copy_ctx *ctx, uint32_t uid)
{
	if (ctx->run_first != 0 && uid == ctx->run_last + 1) {
		ctx->run_last = uid;
		return;
	}
	copy_flush_run(ctx);
	ctx->run_first = ctx->run_last = uid;
}

/* "COPYUID v src dst" or NULL when it does not fit (then no code). */
static const char *copy_uid_code(struct client_command *cmd,
				 struct copy_ctx *ctx)
{
	buffer_t buf;

	copy_flush_run(ctx);
	if (ctx->set_full)
		return NULL;
	buffer_init(&buf, COPY_CODE_MAX);
	int ret = buffer_printf(&buf, "COPYUID %u %s %u", ctx->dest_uidvalidity,
				(const char *)ctx->src_set.data, ctx->first_uid);
	if (ret == 0 && ctx->count > 1)
		ret = buffer_printf(&buf, ":%u", ctx->first_uid + ctx->count - 1);
	const char *code = ret < 0 ? NULL : p_strdup(cmd->pool, buf.data);
	buffer_free(&buf);
	return code;
}

static unsigned int copy_range_total(const struct copy_ctx *ctx)
{
	unsigned int total = 0;

	for (unsigned int i = 0; i < ctx->range_count; i++)
		total += ctx->ranges[i].seq2 - ctx->ranges[i].seq1 + 1;
	return total;
}

/* Stage and commit. Returns 0, -1 (logged) or 0 with ctx->gone when a
   message could not be read because its file is gone: then nothing is
   copied (RFC 2180 4.4.1; a message another session of this process
   expunged is still read from its kept file, 4.4.2). */
static int copy_messages(struct client_command *cmd, struct copy_ctx *ctx,
			 struct mailbox *dest)
{
	struct mailbox *src = cmd->client->mailbox;
	struct mailbox_copy_ctx *copy = mailbox_copy_begin(dest);
	unsigned int total = copy_range_total(ctx);
	const char *error;

	unsigned int limit = cmd->client->user->set->mailbox_max_messages;

	/* RFC 5530 LIMIT: the whole COPY is refused, nothing is staged */
	if (limit != 0 && (uint64_t)mailbox_get_count(dest) + total > limit) {
		mailbox_copy_abort(&copy);
		ctx->over_limit = true;
		return -1;
	}
	for (unsigned int i = 0; i < ctx->range_count; i++) {
		for (uint32_t seq = ctx->ranges[i].seq1;
		     seq <= ctx->ranges[i].seq2; seq++) {
			if (mailbox_copy_add(copy, src, seq, &error) < 0) {
				bool gone = errno == ENOENT;
				if (gone)
					i_debug("COPY %u: %s", seq, error);
				else
					i_error("COPY failed: %s", error);
				mailbox_copy_abort(&copy);
				ctx->gone = gone;
				return gone ? 0 : -1;
			}
			copy_add_uid(ctx, mailbox_msg_uid(src, seq));
			ctx->count++;
		}
	}
	uint64_t bytes = mailbox_copy_bytes(copy);
	unsigned int count = mailbox_copy_count(copy);
	if (!ctx->move && imap_quota_allows(cmd->client->user, bytes, count) == 0) {
		mailbox_copy_abort(&copy);
		ctx->over_quota = true;
		return -1;
	}
	if (mailbox_copy_commit(&copy, &ctx->first_uid, &error) < 0) {
		i_error("COPY failed: %s", error);
		return -1;
	}
	if (!ctx->move)
		imap_quota_saved(cmd->client->user, bytes, count);
	return 0;
}

/* Open the target, copy, close it. Answers NO itself; returns success. */
static bool copy_to_target(struct client_command *cmd, struct copy_ctx *ctx)
{
	struct client *client = cmd->client;
	struct mailbox *dest;
	const char *error;
	enum mailbox_open_flags flags = MAILBOX_OPEN_QUOTA;

	if (client->user->set->mail_fsync == MOAT_FSYNC_NEVER)
		flags |= MAILBOX_OPEN_NO_FSYNC;
	char boxname[MAILBOX_NAME_MAX + 1];
	/* An invalid wire name (in the client's mode) can't exist. */
	int ret = !imap_mailbox_name_decode(client, ctx->dest_name,
					    boxname) ? 0 :
		mailbox_open(client->user->mail_root, boxname, flags, &dest, &error);
	if (ret == 0) {
		client_send_tagline(cmd, "NO [TRYCREATE] Mailbox doesn't exist.");
		return false;
	}
	if (ret < 0) {
		i_error("Opening mailbox failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred.");
		return false;
	}
	ctx->dest_uidvalidity = mailbox_get_uidvalidity(dest);
	ret = copy_messages(cmd, ctx, dest);
	char *path = i_strdup(mailbox_get_path(dest));
	mailbox_close(&dest);
	if (ret < 0) {
		i_free(path);
		client_send_tagline(cmd, ctx->over_quota ?
				    "NO [OVERQUOTA] Quota exceeded." :
				    ctx->over_limit ?
				    "NO [LIMIT] Too many messages in the target "
				    "mailbox." :
				    "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return false;
	}
	if (ctx->gone) {
		i_free(path);
		client_send_tagline(cmd, "NO [EXPUNGEISSUED] Some of the "
				    "requested messages no longer exist");
		return false;
	}
	if (ctx->count > 0)
		imap_notify_message_new(client->user, client, boxname, path);
	i_free(path);
	return true;
}

/* MOVE: the copies are durable; remove the originals. */
static bool move_expunge(struct client_command *cmd, struct copy_ctx *ctx)
{
	struct mailbox *box = cmd->client->mailbox;
	const char *error;
	bool ok = true;

	/* every message of the ranges was copied (or none: a failure ends
	   the command before); one already expunged by another session
	   (copied from its kept file) needs nothing more */
	for (unsigned int i = 0; i < ctx->range_count; i++) {
		for (uint32_t seq = ctx->ranges[i].seq1;
		     seq <= ctx->ranges[i].seq2; seq++) {
			if (mailbox_msg_expunge(box, seq, &error) < 0 &&
			    errno != ENOENT) {
				i_error("MOVE: expunging failed: %s", error);
				ok = false;
			}
		}
	}
	if (mailbox_expunge_sync(box, &error) < 0) {
		i_error("MOVE: %s", error);
		ok = false;
	}
	if (ctx->count > 0)
		imap_notify_changed(cmd->client);
	return ok;
}

static void cmd_copy_run(struct client_command *cmd, struct copy_ctx *ctx,
			 bool move)
{
	if (!copy_parse(cmd, ctx))
		return;
	if (move && mailbox_is_readonly(cmd->client->mailbox)) {
		client_send_tagline(cmd, "NO [CANNOT] Mailbox is read-only.");
		return;
	}
	if (!copy_to_target(cmd, ctx))
		return;
	const char *code = ctx->count == 0 ? NULL : copy_uid_code(cmd, ctx);
	if (!move) {
		if (code != NULL)
			client_send_taglinef(cmd, "OK [%s] Copy completed.", code);
		else
			client_send_tagline(cmd, "OK Copy completed.");
		return;
	}
	if (code != NULL)
		client_send_linef(cmd->client, "* OK [%s] Moved UIDs.", code);
	client_send_tagline(cmd, move_expunge(cmd, ctx) ? "OK Move completed." :
			    "NO [SERVERBUG] Internal error occurred. Refer to "
			    "server log for more information.");
}

static bool cmd_copy_full(struct client_command *cmd, bool move)
{
	struct copy_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));

	ctx->move = move;
	buffer_init(&ctx->src_set, COPY_CODE_MAX);
	cmd_copy_run(cmd, ctx, move);
	buffer_free(&ctx->src_set);
	return true;
}

bool cmd_copy(struct client_command *cmd)
{
	return cmd_copy_full(cmd, false);
}

bool cmd_move(struct client_command *cmd)
{
	return cmd_copy_full(cmd, true);
}
