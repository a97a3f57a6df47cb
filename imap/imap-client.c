/* Per-connection state and the input loop: read, feed the parser, send
   continuations, dispatch commands, answer errors (imap-client.h). */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-commands.h"
#include "imap-sync.h"
#include "imap-condstore.h"
#include "imap-search.h"
#include "imap-compress.h"
#include "imap-uidonly.h"
#include "imap-context.h"
#include "imap-preview-lazy.h"
#include "imap-stats.h"
#include "imap-notify.h"
#include "imap-flag-sync.h"
#include "ktls.h"
#include "sock-linger.h"

/* Nesting of lists in a command (FETCH (BODY[...] ...), SEARCH ...). */
#define CLIENT_MAX_LIST_DEPTH 32

static void client_input(void *context);
static void client_input_pending(void *context);
static void client_handle_input(struct client *client);

static void client_idle_timeout(void *context)
{
	struct client *client = context;

	client->to_idle = NULL;
	client_disconnect(client, "Disconnected for inactivity.",
			  "Inactivity timeout");
}

static void client_io_update(struct client *client)
{
	/* Level-triggered reads: stop reading while a command runs that
	   does not want input, or pipelined input would spin the loop, and
	   while the client does not read its replies (backpressure). */
	bool want = !client->disconnected &&
		(client->cmd == NULL ? !client->pipeline_blocked :
		 client->cmd->wait == CLIENT_WAIT_INPUT);

	if (want && client->io == NULL)
		client->io = io_add(client->user->ioloop, client->fd, IO_READ,
				    client_input, client);
	else if (!want)
		io_remove(&client->io);
	/* inflate may hold input the socket will not announce again */
	if (want && client->compress != NULL && client->to_input == NULL &&
	    imap_compress_input_pending(client->compress))
		client->to_input = io_loop_defer(client->user->ioloop,
						 client_input_pending, client);
}

static void client_command_free(struct client_command **_cmd)
{
	struct client_command *cmd = *_cmd;
	struct client *client = cmd->client;

	*_cmd = NULL;
	client->cmd = NULL;
	client->unread_replies++;
	/* known commands only: a name a client made up is no label */
	if (cmd->def != NULL)
		imap_stats_command_done(client->user, cmd->def,
					imap_stats_now_us() - cmd->started_us);
	pool_unref(&cmd->pool);
	imap_parser_reset(client->parser);
	client->line_head_len = 0;
}

static void client_continue_timeout(void *context);
static void client_compress_start(struct client *client);

/* Run the command once more; free it when done. */
static void client_command_run(struct client_command *cmd)
{
	struct client *client = cmd->client;

	cmd->wait = CLIENT_WAIT_NONE;
	o_stream_cork(client->output);
	bool finished = cmd->func(cmd);
	o_stream_uncork(client->output);
	/* A finished command freed its own state; when its reply
	   disconnected the client (the bad-command limit) it stays until
	   client_destroy(), which must not cancel it a second time. */
	if (finished)
		cmd->cancel = NULL;
	if (client->disconnected)
		return;
	if (finished) {
		imap_notify_command_done(client, cmd);
		client_command_free(&client->cmd);
		/* COMPRESS finished with its OK on the socket: the streams
		   change now, outside the command's cork (or at the end of
		   the batch, client_batch_end()) */
		if (client->compress_start && !client->batch_corked)
			client_compress_start(client);
		return;
	}
	/* The flush callback only comes when something is buffered. */
	if (cmd->wait == CLIENT_WAIT_NONE ||
	    (cmd->wait == CLIENT_WAIT_OUTPUT &&
	     o_stream_get_buffer_used(client->output) == 0)) {
		if (client->to_continue == NULL)
			client->to_continue = io_loop_defer(client->user->ioloop,
				client_continue_timeout, client);
	}
}

void client_command_run_internal(struct client *client,
				 struct client_command *cmd)
{
	i_assert(client->cmd == NULL);
	client->cmd = cmd;
	client_command_run(cmd);
	if (!client->disconnected)
		client_io_update(client);
}

static void client_resume(struct client *client)
{
	if (client->cmd != NULL && client->cmd->wait != CLIENT_WAIT_INPUT)
		client_command_run(client->cmd);
	if (!client->disconnected && client->cmd == NULL)
		client_handle_input(client);
	client_io_update(client);
}

static void client_continue_timeout(void *context)
{
	struct client *client = context;

	client->to_continue = NULL;
	if (!client->disconnected)
		client_resume(client);
}

void client_command_wakeup(struct client_command *cmd)
{
	struct client *client = cmd->client;

	i_assert(client->cmd == cmd);
	if (cmd->wait != CLIENT_WAIT_WAKEUP || client->disconnected)
		return;
	cmd->wait = CLIENT_WAIT_NONE;
	if (client->to_continue == NULL)
		client->to_continue = io_loop_defer(client->user->ioloop,
			client_continue_timeout, client);
}

static void client_output_flushed(void *context)
{
	struct client *client = context;

	if (client->disconnected)
		return;
	if (o_stream_is_failed(client->output)) {
		client_disconnect(client, NULL, o_stream_get_error(client->output));
		return;
	}
	if (client->to_idle != NULL)
		timeout_reset(client->to_idle);
	imap_notify_output_drained(client);
	if (client->cmd != NULL && client->cmd->wait == CLIENT_WAIT_OUTPUT)
		client_resume(client);
	else if (client->cmd == NULL && client->pipeline_blocked) {
		/* the client read its replies: take the next commands */
		client->pipeline_blocked = false;
		client_resume(client);
	}
}

void client_send_line(struct client *client, const char *line)
{
	if (client->disconnected)
		return;
	/* One write for the line and its CRLF. */
	o_stream_cork(client->output);
	int ret = o_stream_send_str(client->output, line) < 0 ||
		o_stream_send(client->output, "\r\n", 2) < 0 ? -1 : 0;
	o_stream_uncork(client->output);
	if (ret < 0) {
		client_disconnect(client, NULL, o_stream_is_failed(client->output) ?
				  o_stream_get_error(client->output) :
				  "Output buffer full");
	}
}

void client_send_linef(struct client *client, const char *fmt, ...)
{
	char line[CLIENT_REPLY_LINE_MAX];
	va_list args;

	va_start(args, fmt);
	vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	client_send_line(client, line);
}

/* "tag text": the tag is sent as is, whatever its length (a tag is
   bounded only by the command line limit), not through a line buffer. */
static void client_send_tagged(struct client *client, const char *tag,
			       const char *text)
{
	if (client->disconnected)
		return;
	o_stream_cork(client->output);
	if (o_stream_send_str(client->output, tag) < 0 ||
	    o_stream_send(client->output, " ", 1) < 0) {
		o_stream_uncork(client->output);
		client_disconnect(client, NULL, o_stream_is_failed(client->output) ?
				  o_stream_get_error(client->output) :
				  "Output buffer full");
		return;
	}
	client_send_line(client, text);
	o_stream_uncork(client->output);
}

void client_send_tagline(struct client_command *cmd, const char *text)
{
	struct client *client = cmd->client;

	char line[CLIENT_REPLY_LINE_MAX];

	if (client->mailbox != NULL &&
	    (strncmp(text, "OK", 2) == 0 || strncmp(text, "NO", 2) == 0)) {
		bool allow_expunge = cmd->uid || cmd->def == NULL ||
			(cmd->def->flags & CMD_FLAG_USES_SEQS) == 0;
		imap_sync_send(client, allow_expunge);
		/* RFC 7162 3.2, 6: MODSEQs went out while expunges wait to
		   be reported: the client must not count past them */
		struct mailbox *box = client->mailbox;
		if (client->modseq_sent && mailbox_get_reported_modseq(box) <
		    mailbox_get_highest_modseq(box))
			imap_send_highestmodseq(client);
		if (cmd->reply_highestmodseq && strncmp(text, "OK ", 3) == 0) {
			snprintf(line, sizeof(line), "OK [HIGHESTMODSEQ %llu] %s",
				 (unsigned long long)
				 mailbox_get_reported_modseq(box), text + 3);
			text = line;
		}
	}
	client->modseq_sent = false;
	if (cmd->tag[0] != '\0')
		client_send_tagged(client, cmd->tag, text);
}

void client_send_taglinef(struct client_command *cmd, const char *fmt, ...)
{
	char line[CLIENT_REPLY_LINE_MAX];
	va_list args;

	va_start(args, fmt);
	vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	client_send_tagline(cmd, line);
}

static void client_count_bad(struct client *client)
{
	if (++client->bad_counter >= client->user->set->imap_max_bad_commands)
		client_disconnect(client, "Too many invalid commands.",
				  "Too many invalid commands");
}

void client_send_command_error(struct client_command *cmd, const char *text)
{
	char line[CLIENT_REPLY_LINE_MAX];
	snprintf(line, sizeof(line), "BAD %s", text);
	client_send_tagged(cmd->client, cmd->tag[0] != '\0' ? cmd->tag : "*", line);
	client_count_bad(cmd->client);
}

/* A parse error of a line that did not become a command. */
static void client_parse_error(struct client *client)
{
	bool fatal;
	const char *error = imap_parser_get_error(client->parser, &fatal);
	const char *tag = imap_parser_get_tag(client->parser);

	if (fatal) {
		client_disconnect(client, error, error);
		return;
	}
	client_send_linef(client, "%s BAD %s", tag != NULL ? tag : "*", error);
	client->unread_replies++;
	client_count_bad(client);
}

void client_command_parse_error(struct client_command *cmd)
{
	bool fatal;
	const char *error = imap_parser_get_error(cmd->client->parser, &fatal);

	if (fatal)
		client_disconnect(cmd->client, error, error);
	else
		client_send_command_error(cmd, error);
}

/* Is the current line an APPEND (judged from its first bytes)? */
static bool client_line_is_literal_size(struct client *client,
					const unsigned char *data, size_t size)
{
	char head[CLIENT_LINE_HEAD_MAX + 1];
	size_t len = client->line_head_len;

	memcpy(head, client->line_head, len);
	size_t add = MIN(size, sizeof(head) - 1 - len);
	memcpy(head + len, data, add);
	head[len + add] = '\0';

	char *sp = strchr(head, ' ');
	if (sp == NULL)
		return false;
	char *name = sp + 1;
	name[strcspn(name, " \r\n")] = '\0';
	const struct command *def = command_find(name);
	return def != NULL && (def->flags & CMD_FLAG_LITERAL_SIZE) != 0;
}

enum imap_parse_result
client_parse_input(struct client *client, enum imap_parser_flags flags,
		   const struct imap_arg **args_r)
{
	size_t size, consumed;
	const unsigned char *data = i_stream_get_data(client->input, &size);

	*args_r = NULL;
	if (size == 0)
		return IMAP_PARSE_MORE;
	/* RFC 6855 section 3 and RFC 9051's quoted: UTF-8, checked */
	if (client->utf8 || client->imap4rev2)
		flags |= IMAP_PARSE_FLAG_UTF8_QUOTED;
	enum imap_parse_result ret =
		imap_parser_feed(client->parser, flags, data, size, &consumed,
				 args_r);
	size_t add = MIN(consumed, sizeof(client->line_head) -
			 client->line_head_len);
	memcpy(client->line_head + client->line_head_len, data, add);
	client->line_head_len += add;
	i_stream_skip(client->input, consumed);
	return ret;
}

static bool client_command_check(struct client_command *cmd,
				 const struct imap_arg *args)
{
	const char *name;

	if (!imap_arg_get_atom(&args[0], &name)) {
		client_send_command_error(cmd, "Missing command name.");
		return false;
	}
	cmd->name = p_strdup(cmd->pool, name);
	cmd->args = &args[1];
	if (strcasecmp(name, "UID") == 0) {
		if (!imap_arg_get_atom(&args[1], &name)) {
			client_send_command_error(cmd, "Missing UID command name.");
			return false;
		}
		cmd->uid = true;
		cmd->args = &args[2];
	}
	cmd->def = command_find(name);
	if (cmd->def == NULL || (cmd->uid &&
	    (cmd->def->flags & CMD_FLAG_UID_ALLOWED) == 0)) {
		cmd->def = NULL;
		client_send_command_error(cmd, "Unknown command.");
		return false;
	}
	if (cmd->literal_size &&
	    (cmd->def->flags & CMD_FLAG_LITERAL_SIZE) == 0) {
		client_send_command_error(cmd, "Unexpected literal.");
		return false;
	}
	if ((cmd->def->flags & CMD_FLAG_NEEDS_SELECTED) != 0 &&
	    cmd->client->mailbox == NULL) {
		client_send_command_error(cmd, "No mailbox selected.");
		return false;
	}
	/* RFC 9586 3.2, 3.8: only the UID form once UIDONLY is on */
	if (cmd->client->uidonly && !cmd->uid &&
	    (cmd->def->flags & CMD_FLAG_SEQSET) != 0) {
		client_send_command_error(cmd, IMAP_UIDREQUIRED_TEXT);
		return false;
	}
	return true;
}

/* args[0] is the tag (the parser's first argument of the line). */
static void client_command_start(struct client *client,
				 const struct imap_arg *args, bool literal_size)
{
	pool_t pool = pool_create("imap command", 1024);
	struct client_command *cmd = p_malloc(pool, sizeof(*cmd));
	const char *tag = imap_parser_get_tag(client->parser);

	cmd->client = client;
	cmd->pool = pool;
	cmd->started_us = imap_stats_now_us();
	cmd->literal_size = literal_size;
	client->cmd = cmd;
	if (tag == NULL) {
		cmd->tag = "*";
		client_send_command_error(cmd, "Invalid tag.");
	} else {
		cmd->tag = p_strdup(pool, tag);
		if (client_command_check(cmd, &args[1])) {
			cmd->func = cmd->def->func;
			client_command_run(cmd);
			return;
		}
	}
	if (client->cmd != NULL)
		client_command_free(&client->cmd);
}

/* Parse one piece of input. Returns false when more input is needed. */
static bool client_handle_line(struct client *client)
{
	size_t size;
	const struct imap_arg *args;

	const unsigned char *data = i_stream_get_data(client->input, &size);
	enum imap_parser_flags flags = 0;

	if (size == 0)
		return false;
	if (client_line_is_literal_size(client, data, size))
		flags |= IMAP_PARSE_FLAG_LITERAL_SIZE;
	switch (client_parse_input(client, flags, &args)) {
	case IMAP_PARSE_MORE:
		return false;
	case IMAP_PARSE_NEED_CONTINUATION:
		client_send_line(client, "+ OK");
		return true;
	case IMAP_PARSE_DONE:
		if (args == NULL) {
			/* the rest of a bad line was skipped */
			imap_parser_reset(client->parser);
			client->line_head_len = 0;
		} else {
			client_command_start(client, args, false);
		}
		return true;
	case IMAP_PARSE_LITERAL_SIZE:
		client_command_start(client, args, true);
		return true;
	case IMAP_PARSE_ERROR:
		client_parse_error(client);
		return true;
	}
	i_unreached();
}

/* Whether the client left too many replies unread to start another
   command (imap_max_pipelined_commands, CLIENT_OUTPUT_PIPELINE_MAX).
   Pipelined input then waits in the input buffer and the socket until
   the output drained (client_output_flushed), which bounds what one
   connection can queue without failing a client that is merely slow. */
static bool client_pipeline_full(struct client *client)
{
	size_t used = o_stream_get_buffer_used(client->output);

	if (used == 0) {
		client->unread_replies = 0;
		return false;
	}
	return client->unread_replies >=
		client->user->set->imap_max_pipelined_commands ||
		used >= CLIENT_OUTPUT_PIPELINE_MAX;
}

/* The STOREs of a batch commit without the log's fdatasync
   (cmd-store.c): their OKs wait in the corked output, and one sync makes
   all of them true before any byte of the batch leaves. At the batch's
   end that is the turn's sync of all sessions (imap-flag-sync.h); this
   one runs before what would send or lose them otherwise: closing the
   mailbox, a disconnect. Returns false if a sync failed, now or
   earlier. */
static bool client_flags_sync(struct client *client)
{
	const char *error;

	imap_flag_sync_cancel(client);
	if (client->mailbox != NULL &&
	    mailbox_flags_sync(client->mailbox, &error) < 0) {
		i_error("STORE: %s", error);
		client->flags_sync_failed = true;
	}
	return !client->flags_sync_failed;
}

/* After a batch of pipelined commands ran under one cork: the uncork
   writes their replies, maybe all of them, and then no flush callback
   comes, so what waited for the output to drain goes on here. */
void client_batch_finish(struct client *client)
{
	if (!client->disconnected && !client_flags_sync(client))
		client_disconnect(client, NULL, "Flag changes not synced");
	client->batch_corked = false;
	o_stream_uncork(client->output);
	if (client->compress_start && !client->disconnected) {
		/* the OK is on the socket now; what follows it is deflated
		   (client_io_update() reads what inflate already holds) */
		client_compress_start(client);
		return;
	}
	if (client->disconnected ||
	    o_stream_get_buffer_used(client->output) != 0)
		return;
	imap_notify_output_drained(client);
	bool resume = client->cmd != NULL ?
		client->cmd->wait == CLIENT_WAIT_OUTPUT :
		client->pipeline_blocked;
	if (!resume)
		return;
	client->pipeline_blocked = false;
	if (client->to_continue == NULL)
		client->to_continue = io_loop_defer(client->user->ioloop,
			client_continue_timeout, client);
}

/* Flag changes of the batch not yet durable: the replies wait for the
   turn's sync of all sessions. */
static void client_batch_end(struct client *client)
{
	if (!client->disconnected && !client->flags_sync_failed &&
	    client->mailbox != NULL &&
	    mailbox_flags_unsynced(client->mailbox)) {
		imap_flag_sync_wait(client);
		return;
	}
	client_batch_finish(client);
}

/* Every complete command in the input buffer, their replies corked
   together: a pipelining client gets one write for a batch, not one per
   command (the pipeline limits still bound what is buffered). */
static void client_handle_input(struct client *client)
{
	if (client->flag_sync_wait) {
		/* the batch's OKs are not out yet: the next commands come
		   after them (client_batch_finish() resumes) */
		client->pipeline_blocked = true;
		return;
	}
	client->batch_clean = o_stream_get_buffer_used(client->output) == 0;
	o_stream_cork(client->output);
	client->batch_corked = true;
	while (!client->disconnected && !client->compress_start) {
		struct client_command *cmd = client->cmd;
		size_t size;

		if (cmd != NULL) {
			if (cmd->wait != CLIENT_WAIT_INPUT)
				break;
			(void)i_stream_get_data(client->input, &size);
			if (size == 0)
				break;
			client_command_run(cmd);
			continue;
		}
		if (client_pipeline_full(client)) {
			client->pipeline_blocked = true;
			break;
		}
		if (!client_handle_line(client))
			break;
	}
	client_batch_end(client);
}

static void client_input(void *context)
{
	struct client *client = context;
	ssize_t ret = i_stream_read(client->input);

	if (client->to_idle != NULL)
		timeout_reset(client->to_idle);
	if (ret == -1) {
		client_disconnect(client, NULL, i_stream_is_eof(client->input) ?
				  "Connection closed" :
				  i_stream_get_error(client->input));
		return;
	}
	client_handle_input(client);
	if (!client->disconnected)
		client_io_update(client);
}

static void client_input_pending(void *context)
{
	struct client *client = context;

	client->to_input = NULL;
	if (!client->disconnected)
		client_input(client);
}

static void client_compress_start(struct client *client)
{
	struct stream_transport t;
	size_t size;
	const unsigned char *data = i_stream_get_data(client->input, &size);

	i_assert(client->compress == NULL);
	i_assert(o_stream_get_buffer_used(client->output) == 0);
	client->compress_start = false;
	client->compress = imap_compress_create(client->fd, client->ktls,
						data, size);
	imap_compress_get_transport(client->compress, &t);
	i_stream_destroy(&client->input);
	client->input = i_stream_create_transport(&t, CLIENT_INPUT_BUFFER_MAX);
	o_stream_destroy(&client->output);
	client->output = o_stream_create_transport(client->user->ioloop, &t,
						   CLIENT_OUTPUT_BUFFER_MAX);
	o_stream_set_io_fd(client->output, client->fd);
	o_stream_set_flush_callback(client->output, client_output_flushed,
				    client);
	imap_stats_count_bytes(client->user, client->input, client->output);
}

struct client *client_create(struct imap_user *user, int fd, const char *tag,
			     const void *prefix, size_t prefix_size,
			     const char *remote_ip)
{
	pool_t pool = pool_create("imap client", 2048);
	struct client *client = p_malloc(pool, sizeof(*client));
	const struct moat_settings *set = user->set;
	struct imap_parser_settings pset = {
		.max_line_length = (size_t)set->imap_max_line_length,
		.max_literal_size = set->imap_max_literal_size,
		.max_list_depth = CLIENT_MAX_LIST_DEPTH,
		.literal_minus = set->imap_literal_minus,
	};

	client->pool = pool;
	client->user = user;
	client->fd = fd;
	client->session = p_strdup(pool, remote_ip);
	fd_set_tcp_nodelay(fd);
	client->ktls = ktls_is_active(fd);
	if (client->ktls) {
		struct stream_transport t = {
			.read = ktls_read, .ctx = (void *)(intptr_t)fd,
		};
		client->input = i_stream_create_transport(&t,
						CLIENT_INPUT_BUFFER_MAX);
	} else {
		client->input = i_stream_create_fd(fd, CLIENT_INPUT_BUFFER_MAX);
	}
	client->output = o_stream_create_fd(user->ioloop, fd,
					    CLIENT_OUTPUT_BUFFER_MAX);
	o_stream_set_flush_callback(client->output, client_output_flushed, client);
	imap_stats_count_bytes(user, client->input, client->output);
	client->parser = imap_parser_create(&pset);
	client->to_idle = timeout_add(user->ioloop,
				      set->imap_idle_timeout * 1000,
				      client_idle_timeout, client);
	client->next = user->clients;
	if (user->clients != NULL)
		user->clients->prev = client;
	user->clients = client;
	user->client_count++;

	if (prefix_size > 0 &&
	    i_stream_prepend(client->input, prefix, prefix_size) < 0) {
		client_disconnect(client, "Too much input.", "Handoff too large");
		return client;
	}
	if (tag[0] != '\0') {
		char caps[IMAP_CAPABILITY_MAX];
		imap_capability_get(set, caps);
		client_send_linef(client, "%s OK [CAPABILITY %s] Logged in",
				  tag, caps);
	}
	i_info("Logged in from %s%s", str_sanitize(pool, remote_ip, 64),
	       client->ktls ? " (kTLS)" : "");
	client_handle_input(client);
	client_io_update(client);
	return client;
}

void client_unselect(struct client *client)
{
	if (client->mailbox != NULL) {
		/* a failure here is the batch's to answer (client_batch_end) */
		(void)client_flags_sync(client);
		mailbox_close(&client->mailbox);
	}
	imap_search_saved_clear(client);
	imap_context_clear(client);
	imap_preview_lazy_clear(client);
	client->exists_sent = client->recent_sent = 0;
	client->keywords_sent = 0;
}

void client_destroy(struct client *client)
{
	struct imap_user *user = client->user;

	if (client->cmd != NULL) {
		if (client->cmd->cancel != NULL)
			client->cmd->cancel(client->cmd);
		client_command_free(&client->cmd);
	}
	imap_notify_client_free(client);
	imap_flag_sync_cancel(client);
	client_unselect(client);
	if (client->append_box != NULL)
		mailbox_close(&client->append_box);
	io_remove(&client->io);
	timeout_remove(&client->to_idle);
	timeout_remove(&client->to_continue);
	timeout_remove(&client->to_destroy);
	timeout_remove(&client->to_input);
	imap_parser_destroy(&client->parser);
	/* A BYE that is in the kernel while the client still sends (a
	   literal flood) must not be lost to a reset: lib/sock-linger.h. */
	bool linger = client->disconnected && client->fd >= 0 &&
		!o_stream_is_failed(client->output) &&
		o_stream_get_buffer_used(client->output) == 0 &&
		!i_stream_is_eof(client->input) && user->lingers != NULL;
	i_stream_destroy(&client->input);
	o_stream_destroy(&client->output);
	imap_compress_destroy(&client->compress);
	if (client->ktls && client->fd >= 0)
		ktls_send_close_notify(client->fd);
	if (linger)
		sock_linger_close(user->lingers, &client->fd);
	else
		i_close_fd(&client->fd);

	if (client->prev != NULL)
		client->prev->next = client->next;
	else
		user->clients = client->next;
	if (client->next != NULL)
		client->next->prev = client->prev;
	user->client_count--;
	pool_unref(&client->pool);
	imap_user_client_gone(user);
}

static void client_destroy_timeout(void *context)
{
	struct client *client = context;

	client->to_destroy = NULL;
	client_destroy(client);
}

void client_disconnect(struct client *client, const char *bye,
		       const char *log_reason)
{
	if (client->disconnected)
		return;
	if (!client_flags_sync(client)) {
		/* the OKs of STOREs that are not on disk must not go out;
		   a BYE only where the buffer held whole lines of this batch */
		o_stream_clear(client->output);
		bye = client->batch_clean ?
			"Internal error: flag changes could not be saved." : NULL;
	}
	client->disconnected = true;
	if (bye != NULL) {
		/* best effort: the socket buffer normally takes it */
		(void)o_stream_send_str(client->output, "* BYE ");
		(void)o_stream_send_str(client->output, bye);
		(void)o_stream_send(client->output, "\r\n", 2);
	}
	(void)o_stream_flush(client->output);
	i_info("Disconnected: %s", str_sanitize(client->pool, log_reason, 128));
	io_remove(&client->io);
	timeout_remove(&client->to_continue);
	timeout_remove(&client->to_input);
	client->to_destroy = io_loop_defer(client->user->ioloop,
					   client_destroy_timeout, client);
}
