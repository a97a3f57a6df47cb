/* IDLE (RFC 2177, RFC 9051 6.3.13): after "+ idling", changes of the
   selected mailbox are pushed as they happen: from sessions in this
   process at once (imap-notify.c) and from other writers through the
   process's inotify watch of new/ and cur/ (maildir-watch.h: one inotify
   instance per process, however many clients idle), or by polling where
   there is no watch (network file systems, inotify limits reached).
   "DONE" ends it with the tagged OK, any other line with BAD. The session
   is kept alive past imap_idle_timeout with a periodic "* OK Still here"
   (NATs drop silent connections). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-sync.h"

#include "maildir-watch.h"

#include <strings.h>

/* "DONE" CRLF; longer lines are not DONE. */
#define IDLE_LINE_MAX 64
/* Keepalive interval: well inside common NAT timeouts. */
#define IDLE_KEEPALIVE_MSECS (2 * 60 * 1000)
/* Wakeups within this delay are handled by one sync (a burst of renames
   makes one update). */
#define IDLE_SYNC_DELAY_MSECS 10
/* Without a watch other writers are seen by looking this often (as
   Dovecot's mailbox_idle_check_interval). */
#define IDLE_POLL_MSECS (30 * 1000)

struct idle_ctx {
	struct client_command *cmd;
	struct maildir_watch_listener *listener;
	struct timeout *to_sync, *to_keepalive, *to_poll;
	unsigned int keepalive_msecs;
	char line[IDLE_LINE_MAX + 1];
	size_t line_len;
	bool line_too_long;
};

static void idle_free(struct idle_ctx *ctx)
{
	if (ctx->listener != NULL) {
		maildir_watch_unlisten(&ctx->listener);
		imap_notify_watch_unref(ctx->cmd->client->user);
	}
	timeout_remove(&ctx->to_sync);
	timeout_remove(&ctx->to_keepalive);
	timeout_remove(&ctx->to_poll);
}

static void cmd_idle_cancel(struct client_command *cmd)
{
	idle_free(cmd->context);
}

static void idle_sync_timeout(void *context)
{
	struct idle_ctx *ctx = context;
	struct client *client = ctx->cmd->client;

	ctx->to_sync = NULL;
	if (client->disconnected)
		return;
	o_stream_cork(client->output);
	imap_sync_send(client, true);
	o_stream_uncork(client->output);
}

static struct idle_ctx *idle_get(struct client *client)
{
	struct client_command *cmd = client->cmd;

	if (cmd == NULL || cmd->def == NULL || cmd->def->func != cmd_idle)
		return NULL;
	return cmd->context;
}

bool imap_idle_is_active(struct client *client)
{
	return idle_get(client) != NULL;
}

void imap_idle_wakeup(struct client *client)
{
	struct idle_ctx *ctx = idle_get(client);

	if (ctx != NULL && ctx->to_sync == NULL)
		ctx->to_sync = timeout_add(client->user->ioloop,
					   IDLE_SYNC_DELAY_MSECS,
					   idle_sync_timeout, ctx);
}

/* Called while the watch's events are read: only schedules the sync. */
static void idle_watch_changed(void *context)
{
	struct idle_ctx *ctx = context;

	imap_idle_wakeup(ctx->cmd->client);
}

static void idle_poll(void *context)
{
	struct idle_ctx *ctx = context;

	ctx->to_poll = timeout_add(ctx->cmd->client->user->ioloop,
				   IDLE_POLL_MSECS, idle_poll, ctx);
	imap_idle_wakeup(ctx->cmd->client);
}

static void idle_keepalive(void *context)
{
	struct idle_ctx *ctx = context;
	struct client *client = ctx->cmd->client;

	ctx->to_keepalive = timeout_add(client->user->ioloop,
					ctx->keepalive_msecs, idle_keepalive,
					ctx);
	client_send_line(client, "* OK Still here");
	/* an IDLE client is not inactive */
	if (client->to_idle != NULL)
		timeout_reset(client->to_idle);
}

/* Listen to the selected folder's watch, or poll without one. */
static void idle_watch(struct idle_ctx *ctx, struct mailbox *box)
{
	struct imap_user *user = ctx->cmd->client->user;
	struct maildir_watch *watch = mailbox_get_watch(box);

	if (watch != NULL && maildir_watch_fd() != -1) {
		ctx->listener = maildir_watch_listen(watch, idle_watch_changed,
						     ctx);
		imap_notify_watch_ref(user);
	} else {
		ctx->to_poll = timeout_add(user->ioloop, IDLE_POLL_MSECS,
					   idle_poll, ctx);
	}
}

static bool idle_end(struct client_command *cmd, struct idle_ctx *ctx)
{
	bool done = !ctx->line_too_long &&
		strcasecmp(ctx->line, "DONE") == 0;

	idle_free(ctx);
	cmd->context = NULL;
	if (done)
		client_send_tagline(cmd, "OK Idle completed.");
	else
		client_send_command_error(cmd, "Expected DONE.");
	return true;
}

/* Collect the client's line (every byte is consumed, so the input loop
   never sees the same bytes twice). */
static bool cmd_idle_continue(struct client_command *cmd)
{
	struct idle_ctx *ctx = cmd->context;
	struct client *client = cmd->client;
	size_t size, i;
	const unsigned char *data = i_stream_get_data(client->input, &size);

	for (i = 0; i < size && data[i] != '\n'; i++) {
		if (data[i] == '\r')
			continue;
		if (ctx->line_len < IDLE_LINE_MAX)
			ctx->line[ctx->line_len++] = (char)data[i];
		else
			ctx->line_too_long = true;
	}
	ctx->line[ctx->line_len] = '\0';
	if (i == size) {
		i_stream_skip(client->input, size);
		cmd->wait = CLIENT_WAIT_INPUT;
		return false;
	}
	i_stream_skip(client->input, i + 1);
	return idle_end(cmd, ctx);
}

bool cmd_idle(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct idle_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));

	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "IDLE takes no arguments.");
		return true;
	}
	ctx->cmd = cmd;
	cmd->context = ctx;
	cmd->cancel = cmd_idle_cancel;
	cmd->func = cmd_idle_continue;
	/* RFC 5465 4: a NOTIFY set without SELECTED wants nothing of it */
	if (client->mailbox != NULL && imap_notify_idle_wants_selected(client))
		idle_watch(ctx, client->mailbox);
	/* below the inactivity timeout too, which each keepalive resets */
	unsigned int keepalive = IDLE_KEEPALIVE_MSECS;
	ctx->keepalive_msecs = MIN(keepalive,
		client->user->set->imap_idle_timeout * 1000 / 2);
	ctx->to_keepalive = timeout_add(client->user->ioloop,
		ctx->keepalive_msecs, idle_keepalive, ctx);
	client_send_line(client, "+ idling");
	/* what happened since the last reply goes out now */
	if (imap_notify_idle_wants_selected(client))
		imap_sync_send(client, true);
	return cmd_idle_continue(cmd);
}
