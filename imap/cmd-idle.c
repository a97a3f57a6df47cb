/* IDLE (RFC 2177, RFC 9051 6.3.13): after "+ idling", changes of the
   selected mailbox are pushed as they happen: from sessions in this
   process at once (imap-notify.c) and from other writers through inotify
   on new/ and cur/. "DONE" ends it with the tagged OK, any other line
   with BAD. The session is kept alive past imap_idle_timeout with a
   periodic "* OK Still here" (NATs drop silent connections). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-sync.h"

#include <strings.h>
#include <sys/inotify.h>

/* "DONE" CRLF; longer lines are not DONE. */
#define IDLE_LINE_MAX 64
/* Keepalive interval: well inside common NAT timeouts. */
#define IDLE_KEEPALIVE_MSECS (2 * 60 * 1000)
/* Wakeups within this delay are handled by one sync (a burst of renames
   makes one update). */
#define IDLE_SYNC_DELAY_MSECS 10
/* inotify events read per call; each is at most sizeof + NAME_MAX + 1. */
#define IDLE_INOTIFY_BUF (16 * (sizeof(struct inotify_event) + NAME_MAX + 1))

struct idle_ctx {
	struct client_command *cmd;
	int inotify_fd;
	struct io *io_inotify;
	struct timeout *to_sync, *to_keepalive;
	unsigned int keepalive_msecs;
	char line[IDLE_LINE_MAX + 1];
	size_t line_len;
	bool line_too_long;
};

static void idle_free(struct idle_ctx *ctx)
{
	io_remove(&ctx->io_inotify);
	if (ctx->inotify_fd != -1)
		i_close_fd(&ctx->inotify_fd);
	timeout_remove(&ctx->to_sync);
	timeout_remove(&ctx->to_keepalive);
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

void imap_idle_wakeup(struct client *client)
{
	struct idle_ctx *ctx = idle_get(client);

	if (ctx != NULL && ctx->to_sync == NULL)
		ctx->to_sync = timeout_add(client->user->ioloop,
					   IDLE_SYNC_DELAY_MSECS,
					   idle_sync_timeout, ctx);
}

static void idle_inotify_input(void *context)
{
	struct idle_ctx *ctx = context;
	char buf[IDLE_INOTIFY_BUF]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t ret;

	/* the events only say "something changed": drain them all */
	while ((ret = read(ctx->inotify_fd, buf, sizeof(buf))) > 0)
		;
	if (ret < 0 && errno != EAGAIN && errno != EINTR) {
		i_error("read(inotify) failed: %m");
		io_remove(&ctx->io_inotify);
	}
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

/* Watch the selected folder. Without inotify IDLE still works for
   changes made in this process. */
static void idle_watch(struct idle_ctx *ctx, struct mailbox *box)
{
	const uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
		IN_DELETE | IN_ONLYDIR;
	static const char *const subdirs[] = { "new", "cur" };
	char path[PATH_MAX];

	ctx->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ctx->inotify_fd == -1) {
		i_error("inotify_init1() failed: %m");
		return;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(subdirs); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", mailbox_get_path(box),
			     subdirs[i]) >= (int)sizeof(path) ||
		    inotify_add_watch(ctx->inotify_fd, path, mask) < 0)
			i_error("inotify_add_watch(%s) failed: %m", path);
	}
	ctx->io_inotify = io_add(ctx->cmd->client->user->ioloop,
				 ctx->inotify_fd, IO_READ, idle_inotify_input,
				 ctx);
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
	ctx->inotify_fd = -1;
	cmd->context = ctx;
	cmd->cancel = cmd_idle_cancel;
	cmd->func = cmd_idle_continue;
	if (client->mailbox != NULL)
		idle_watch(ctx, client->mailbox);
	/* below the inactivity timeout too, which each keepalive resets */
	unsigned int keepalive = IDLE_KEEPALIVE_MSECS;
	ctx->keepalive_msecs = MIN(keepalive,
		client->user->set->imap_idle_timeout * 1000 / 2);
	ctx->to_keepalive = timeout_add(client->user->ioloop,
		ctx->keepalive_msecs, idle_keepalive, ctx);
	client_send_line(client, "+ idling");
	/* what happened since the last reply goes out now */
	imap_sync_send(client, true);
	return cmd_idle_continue(cmd);
}
