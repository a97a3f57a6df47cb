/* Sending a NOTIFY session's events (imap-notify.h): the selected
   mailbox's sync and MessageNew FETCH, STATUS and LIST responses, and
   the overflow. */
#include "imap-common.h"
#include "imap-notify-private.h"
#include "imap-commands.h"
#include "imap-fetch-now.h"
#include "imap-list.h"
#include "imap-status.h"
#include "imap-sync.h"
#include "mailbox-list.h"

#include <strings.h>

/* "N FETCH lo:hi " and the fetch-atts */
#define NOTIFY_FETCH_LINE_MAX (IMAP_NOTIFY_FETCH_ATTS_MAX + 64)
/* PREVIEW (LAZY) is the deepest fetch-att */
#define NOTIFY_FETCH_LIST_DEPTH 4

static void notify_pending_clear(struct imap_notify_state *st)
{
	for (unsigned int i = 0; i < st->pending_count; i++) {
		i_free(st->pending[i].name);
		i_free(st->pending[i].oldname);
	}
	st->pending_count = 0;
}

static void notify_state_free(struct imap_notify_state **_st)
{
	struct imap_notify_state *st = *_st;

	*_st = NULL;
	notify_pending_clear(st);
	timeout_remove(&st->to_flush);
	imap_notify_watch_remove(st, &st->selected);
	imap_notify_root_unref(st);
	struct imap_user *user = st->client->user;
	imap_notify_set_free(&st->set);
	/* client->notify is NULL now: the folders only st covered go */
	imap_notify_user_unref(user);
	if (st->fetch_parser != NULL)
		imap_parser_destroy(&st->fetch_parser);
	i_free(st->fetch_path);
	i_free(st);
}

/* RFC 5465 5.8: as if NOTIFY NONE had been received. */
static void notify_overflow(struct client *client)
{
	notify_state_free(&client->notify);
	client_send_line(client, "* OK [NOTIFICATIONOVERFLOW] Too many "
			 "notifications waiting to be read; NOTIFY is off.");
}

/* FETCH as an internal command: no tag, no tagged reply; by sequence
   numbers, so that its end reports no expunge (SELECTED-DELAYED: RFC
   5465 6.1.2; with SELECTED the next flush does). Between
   commands it runs as the client's command, in slices as the client
   reads; during IDLE it must be written at once (imap-fetch-now.h).
   Returns false if it could not be. */
static bool notify_fetch_run(struct imap_notify_state *st,
			     const struct imap_arg *args)
{
	struct client *client = st->client;

	if (client->cmd != NULL)
		return imap_fetch_now_args(client, &args[2]);
	client_command_run_internal(client, imap_fetch_internal_command(
		client, &args[2], "notify fetch"));
	return true;
}

/* MessageNew's fetch-atts for what the client was told about since the
   last time (RFC 5465 5.2: after the EXISTS). Returns false when the
   FETCH could not be written whole (the client does not read). */
static bool notify_fetch_new(struct imap_notify_state *st)
{
	struct client *client = st->client;
	struct mailbox *box = client->mailbox;

	if (box == NULL || st->set->fetch_atts == NULL ||
	    (st->set->selected_events & IMAP_NOTIFY_MESSAGE_NEW) == 0 ||
	    client->exists_sent == 0 || st->fetch_path == NULL ||
	    strcmp(st->fetch_path, mailbox_get_path(box)) != 0)
		return true;
	uint32_t last = client->exists_sent, first = last + 1;
	/* the new ones are at the end: as many steps as there are */
	while (first > 1 && mailbox_msg_uid(box, first - 1) >= st->fetch_uid_next)
		first--;
	if (first > last)
		return true;
	st->fetch_uid_next = mailbox_msg_uid(box, last) + 1;

	char line[NOTIFY_FETCH_LINE_MAX];
	int len = snprintf(line, sizeof(line), "N FETCH %u:%u %s\r\n",
			   first, last, st->set->fetch_atts);
	i_assert(len > 0 && (size_t)len < sizeof(line));
	struct imap_parser_settings pset = {
		.max_line_length = sizeof(line),
		.max_literal_size = 1,
		.max_list_depth = NOTIFY_FETCH_LIST_DEPTH,
	};
	const struct imap_arg *args;
	size_t consumed;
	/* the args live until the next FETCH: a FETCH between commands
	   runs on after this returns (none runs when this is called) */
	if (st->fetch_parser == NULL)
		st->fetch_parser = imap_parser_create(&pset);
	imap_parser_reset(st->fetch_parser);
	/* the atts were checked by NOTIFY SET and written back by us */
	if (imap_parser_feed(st->fetch_parser, 0, (const unsigned char *)line,
			     (size_t)len,
			     &consumed, &args) != IMAP_PARSE_DONE ||
	    args == NULL) {
		i_error("NOTIFY: cannot parse our own FETCH: %s", line);
		return true;
	}
	return notify_fetch_run(st, args);
}

/* The STATUS of an event in another mailbox (RFC 5465 5.1-5.3). */
static void notify_send_status(struct client *client, const char *name)
{
	enum imap_status_items items = IMAP_STATUS_MESSAGES |
		IMAP_STATUS_UIDNEXT | IMAP_STATUS_UIDVALIDITY |
		IMAP_STATUS_UNSEEN;

	if (client->condstore)
		items |= IMAP_STATUS_HIGHESTMODSEQ;
	/* a mailbox gone since is no event to tell */
	(void)imap_status_send(client, name, items);
}

static void notify_send_pending(struct imap_notify_state *st)
{
	struct client *client = st->client;
	pool_t pool = pool_create("notify send", 1024);

	for (unsigned int i = 0; i < st->pending_count; i++) {
		const struct imap_notify_pending *p = &st->pending[i];

		if (!p->list)
			notify_send_status(client, p->name);
		else
			imap_list_send_notify(client, pool, p->name,
					      p->oldname);
		pool_clear(pool);
	}
	pool_unref(&pool);
	notify_pending_clear(st);
}

static void notify_flush(struct imap_notify_state *st)
{
	struct client *client = st->client;
	bool idle = imap_idle_is_active(client);

	timeout_remove(&st->to_flush);
	if (client->disconnected)
		return;
	/* during a command (other than IDLE) its tagged reply comes first:
	   imap_notify_command_done() flushes */
	if (client->cmd != NULL && !idle)
		return;
	if (st->overflow) {
		notify_overflow(client);
		return;
	}
	/* the client does not read: events wait (and overflow if they
	   pile up) until the output drained */
	if (o_stream_get_buffer_used(client->output) >
	    client->user->set->imap_notify_max_buffer) {
		st->wait_output = true;
		return;
	}
	o_stream_cork(client->output);
	if (st->selected_pending) {
		st->selected_pending = false;
		/* RFC 5465 6.1.2: SELECTED-DELAYED holds expunges until a
		   command that may report them (IDLE may) */
		imap_sync_send(client, !st->set->selected_delayed || idle);
	}
	notify_send_pending(st);
	/* last: between commands it may go on as the client reads */
	bool ok = notify_fetch_new(st);
	o_stream_uncork(client->output);
	/* during IDLE a FETCH that does not fit cannot be taken back; the
	   output ends inside it, where a BYE would be literal bytes */
	if (!ok)
		client_disconnect(client, NULL,
				  "NOTIFY FETCH does not fit the output buffer");
}

void imap_notify_flush_timeout(void *context)
{
	struct imap_notify_state *st = context;

	st->to_flush = NULL;
	notify_flush(st);
}

/* Where MessageNew's FETCH starts: after what the client knows now. */
static void notify_fetch_reset(struct imap_notify_state *st)
{
	struct mailbox *box = st->client->mailbox;

	i_free(st->fetch_path);
	if (box != NULL) {
		st->fetch_path = i_strdup(mailbox_get_path(box));
		st->fetch_uid_next = st->client->exists_sent == 0 ? 1 :
			mailbox_msg_uid(box, st->client->exists_sent) + 1;
	}
}

void imap_notify_command_done(struct client *client,
			      struct client_command *cmd)
{
	struct imap_notify_state *st = client->notify;
	struct mailbox *box = client->mailbox;

	if (st == NULL || client->disconnected)
		return;
	/* another mailbox selected (or none): fetch from its end */
	if (box == NULL || st->fetch_path == NULL ||
	    strcmp(st->fetch_path, mailbox_get_path(box)) != 0)
		notify_fetch_reset(st);
	/* RFC 5465 5.2: no FETCH for messages this session added */
	else if (cmd->def != NULL && (cmd->def->func == cmd_append ||
		 cmd->def->func == cmd_copy || cmd->def->func == cmd_move))
		notify_fetch_reset(st);
	imap_notify_watch_selected(st);
	/* after the command is freed: from the loop */
	if (st->to_flush == NULL)
		st->to_flush = io_loop_defer(client->user->ioloop,
					     imap_notify_flush_timeout, st);
}

void imap_notify_client_free(struct client *client)
{
	if (client->notify != NULL)
		notify_state_free(&client->notify);
}

bool imap_notify_idle_wants_selected(struct client *client)
{
	return client->notify == NULL ||
		client->notify->set->selected_events != 0;
}

/* NOTIFY SET STATUS (RFC 5465 3.1) and the watches, in one pass over
   the folders. */
static void notify_scan_folders(struct imap_notify_state *st)
{
	struct client *client = st->client;
	struct imap_user *user = client->user;
	struct mailbox_list *list;
	const char *error;

	if (mailbox_list_read(user->mail_root, NULL, &list, &error) < 0) {
		i_error("NOTIFY: %s", error);
		return;
	}
	unsigned int count = mailbox_list_count(list);
	for (unsigned int i = 0; i < count; i++) {
		const struct mailbox_list_node *node = mailbox_list_get(list, i);
		bool sub = (node->flags & MAILBOX_NODE_SUBSCRIBED) != 0;

		if ((node->flags & MAILBOX_NODE_SELECTABLE) == 0 ||
		    (imap_notify_set_events(st->set, user->set, node->name,
					    sub) &
		     IMAP_NOTIFY_MESSAGE_EVENTS) == 0)
			continue;
		/* the selected mailbox is SELECTED's (RFC 5465 3.1) */
		if (st->set->status && (client->mailbox == NULL ||
		    strcmp(mailbox_get_name(client->mailbox), node->name) != 0))
			notify_send_status(client, node->name);
		imap_notify_watch_folder(st, node->name);
	}
	mailbox_list_free(&list);
}

void imap_notify_set_client(struct client *client, struct imap_notify_set *set)
{
	if (client->notify != NULL)
		notify_state_free(&client->notify);
	if (set == NULL)
		return;
	struct imap_notify_state *st = i_malloc(sizeof(*st));
	st->client = client;
	st->set = set;
	client->notify = st;
	imap_notify_user_ref(st);
	notify_fetch_reset(st);
	imap_notify_watch_selected(st);
	notify_scan_folders(st);
	/* other writers' folders: one watch of the root (Maildir++), for
	   their names and to watch the ones made later */
	for (unsigned int i = 0; i < set->group_count; i++) {
		if ((set->groups[i].events & (IMAP_NOTIFY_MAILBOX_NAME |
					      IMAP_NOTIFY_MESSAGE_EVENTS)) != 0)
			imap_notify_root_ref(st);
	}
}
