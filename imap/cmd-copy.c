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
	uint32_t *src_uids;
	uint32_t *src_seqs;
	unsigned int count;
	uint32_t dest_uidvalidity, first_uid;
	bool move;       /* within the one quota root: never over quota */
	bool over_quota;
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

/* "1:3,7" of ascending uids (consecutive runs as ranges). Returns -1 if
   buf is full. */
static int copy_write_uidset(buffer_t *buf, const uint32_t *uids,
			     unsigned int count)
{
	for (unsigned int i = 0; i < count; ) {
		unsigned int j = i;
		while (j + 1 < count && uids[j + 1] == uids[j] + 1)
			j++;
		if ((i > 0 && buffer_append_c(buf, ',') < 0) ||
		    buffer_printf(buf, "%u", uids[i]) < 0 ||
		    (j > i && buffer_printf(buf, ":%u", uids[j]) < 0))
			return -1;
		i = j + 1;
	}
	return 0;
}

/* "COPYUID v src dst" or NULL when it does not fit (then no code). */
static const char *copy_uid_code(struct client_command *cmd,
				 const struct copy_ctx *ctx)
{
	buffer_t buf;

	buffer_init(&buf, COPY_CODE_MAX);
	int ret = buffer_printf(&buf, "COPYUID %u ", ctx->dest_uidvalidity);
	if (ret == 0)
		ret = copy_write_uidset(&buf, ctx->src_uids, ctx->count);
	if (ret == 0)
		ret = buffer_printf(&buf, " %u", ctx->first_uid);
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

	ctx->src_uids = p_malloc(cmd->pool, i_mul_size(total + 1, sizeof(uint32_t)));
	ctx->src_seqs = p_malloc(cmd->pool, i_mul_size(total + 1, sizeof(uint32_t)));
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
			ctx->src_uids[ctx->count] = mailbox_msg_uid(src, seq);
			ctx->src_seqs[ctx->count++] = seq;
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
	/* The wire name is modified UTF-7; an invalid one can't exist. */
	int ret = !imap_mailbox_name_decode(ctx->dest_name, boxname) ? 0 :
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
		imap_notify_path(client->user, path);
	i_free(path);
	return true;
}

/* MOVE: the copies are durable; remove the originals. */
static bool move_expunge(struct client_command *cmd, struct copy_ctx *ctx)
{
	struct mailbox *box = cmd->client->mailbox;
	const char *error;
	bool ok = true;

	/* one already expunged by another session (copied from its kept
	   file) needs nothing more */
	for (unsigned int i = 0; i < ctx->count; i++) {
		if (mailbox_msg_expunge(box, ctx->src_seqs[i], &error) < 0 &&
		    errno != ENOENT) {
			i_error("MOVE: expunging failed: %s", error);
			ok = false;
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

static bool cmd_copy_full(struct client_command *cmd, bool move)
{
	struct copy_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));

	ctx->move = move;
	if (!copy_parse(cmd, ctx))
		return true;
	if (move && mailbox_is_readonly(cmd->client->mailbox)) {
		client_send_tagline(cmd, "NO [CANNOT] Mailbox is read-only.");
		return true;
	}
	if (!copy_to_target(cmd, ctx))
		return true;
	const char *code = ctx->count == 0 ? NULL : copy_uid_code(cmd, ctx);
	if (!move) {
		if (code != NULL)
			client_send_taglinef(cmd, "OK [%s] Copy completed.", code);
		else
			client_send_tagline(cmd, "OK Copy completed.");
		return true;
	}
	if (code != NULL)
		client_send_linef(cmd->client, "* OK [%s] Moved UIDs.", code);
	client_send_tagline(cmd, move_expunge(cmd, ctx) ? "OK Move completed." :
			    "NO [SERVERBUG] Internal error occurred. Refer to "
			    "server log for more information.");
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
