/* APPEND (RFC 9051 6.3.12) with MULTIAPPEND (RFC 3502), APPENDUID (RFC
   4315) and APPENDLIMIT (RFC 7889). Each message literal is streamed
   from the connection to a file in tmp/: the line is parsed with
   IMAP_PARSE_FLAG_LITERAL_SIZE, so the parser stops at every literal and
   we read its bytes ourselves. All messages of the command are staged
   and published together (mailbox-append-multi.h): all or none. The
   commit waits in the user's queue (imap-commit.h), so that APPENDs of
   other sessions that complete in the same turn of the loop share its
   syncs; the OK goes out once it is on disk. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-commit.h"
#include "imap-date.h"
#include "imap-flags.h"
#include "imap-mailbox.h"
#include "imap-quota.h"
#include "mailbox-append-multi.h"

/* tag and "APPEND" come before the command's own arguments */
#define APPEND_ARGS_OFFSET 2
/* Messages in one MULTIAPPEND: each is a staged file until commit. */
#define APPEND_MESSAGES_MAX 1000

struct append_ctx {
	struct mailbox_append_multi *save;
	struct mailbox *box;      /* the selected one or client->append_box */
	uint32_t box_count;       /* its messages when the command began */
	uint64_t left;            /* literal bytes still to read */
	unsigned int next_idx;    /* first arg of the next message */
	bool failed;              /* a write failed: answer NO at the end */
	bool in_literal;
	/* the args index of the last message's UTF8 "(" literal8 ")" list
	   (RFC 6855 section 4), 0 if it had none: checked to hold just the
	   literal once the parser has seen its ")" */
	unsigned int utf8_list_idx;
	/* queued for the group commit; committed once result is set */
	struct imap_commit_req commit;
	bool committed;
	enum imap_commit_result result;
	uint32_t first_uid;
	char boxname[MAILBOX_NAME_MAX + 1];
};

static void append_abort(struct client_command *cmd, struct append_ctx *ctx)
{
	imap_commit_cancel(cmd->client->user, &ctx->commit);
	if (ctx->save != NULL)
		mailbox_append_multi_abort(&ctx->save);
}

static void cmd_append_cancel(struct client_command *cmd)
{
	append_abort(cmd, cmd->context);
}

/* Answer and end the command, dropping every staged message. */
static bool append_fail(struct client_command *cmd, struct append_ctx *ctx,
			bool bad, const char *text)
{
	append_abort(cmd, ctx);
	if (bad)
		client_send_command_error(cmd, text);
	else
		client_send_tagline(cmd, text);
	return true;
}

/* The selected mailbox if it is name, else client->append_box (kept open
   for the next APPEND to the same mailbox). Returns 1, 0 if the mailbox
   doesn't exist, -1 on error. */
static int append_get_box(struct client *client, const char *name,
			  struct mailbox **box_r, const char **error_r)
{
	if (client->mailbox != NULL &&
	    strcmp(mailbox_get_name(client->mailbox), name) == 0) {
		*box_r = client->mailbox;
		return 1;
	}
	if (client->append_box != NULL &&
	    (strcmp(mailbox_get_name(client->append_box), name) != 0 ||
	     mailbox_is_stale(client->append_box)))
		mailbox_close(&client->append_box);
	if (client->append_box == NULL) {
		int ret = mailbox_open(client->user->mail_root, name,
				       imap_mailbox_open_flags(client, false),
				       &client->append_box, error_r);
		if (ret <= 0)
			return ret;
	} else if (mailbox_sync(client->append_box, true, NULL, NULL,
				error_r) < 0) {
		/* kept open: its count must include the last APPENDs
		   (mailbox_max_messages) */
		return -1;
	}
	*box_r = client->append_box;
	return 1;
}

/* The answer, once the group commit that holds the command is done. */
static bool cmd_append_reply(struct client_command *cmd)
{
	struct append_ctx *ctx = cmd->context;
	unsigned int count = ctx->commit.count;

	if (!ctx->committed) {
		cmd->wait = CLIENT_WAIT_WAKEUP;
		return false;
	}
	switch (ctx->result) {
	case IMAP_COMMIT_OVERQUOTA:
		client_send_tagline(cmd, "NO [OVERQUOTA] Quota exceeded.");
		break;
	case IMAP_COMMIT_FAILED:
	case IMAP_COMMIT_NOSPACE:
		client_send_tagline(cmd, "NO [SERVERBUG] Saving the message failed.");
		break;
	case IMAP_COMMIT_OK:
		imap_notify_message_new(cmd->client->user, cmd->client,
					mailbox_get_name(ctx->box),
					mailbox_get_path(ctx->box));
		if (count == 1) {
			client_send_taglinef(cmd, "OK [APPENDUID %u %u] Append "
				"completed.", mailbox_get_uidvalidity(ctx->box),
				ctx->first_uid);
		} else {
			client_send_taglinef(cmd, "OK [APPENDUID %u %u:%u] Append "
				"completed.", mailbox_get_uidvalidity(ctx->box),
				ctx->first_uid, ctx->first_uid + count - 1);
		}
		break;
	}
	return true;
}

static void append_committed(void *context, enum imap_commit_result result,
			     uint32_t first_uid)
{
	struct client_command *cmd = context;
	struct append_ctx *ctx = cmd->context;

	ctx->committed = true;
	ctx->result = result;
	ctx->first_uid = first_uid;
	client_command_wakeup(cmd);
}

/* Queue the staged messages for the group commit and wait for it. */
static bool append_commit(struct client_command *cmd, struct append_ctx *ctx)
{
	imap_commit_queue(cmd->client->user, &ctx->commit, ctx->box,
			  &ctx->save, append_committed, cmd);
	cmd->func = cmd_append_reply;
	cmd->wait = CLIENT_WAIT_WAKEUP;
	return false;
}

/* "UTF8" SP "(" literal8 ")" at args[*idx] (RFC 6855 section 4): only
   after ENABLE UTF8=ACCEPT. Sets ctx->utf8_list_idx and *idx to the
   list. Returns 0, or -1 after answering BAD. While the literal streams
   the list is still open (its only element so far is the literal); the
   ")" is checked by append_utf8_list_check(). */
static int append_parse_utf8(struct client_command *cmd,
			     struct append_ctx *ctx,
			     const struct imap_arg *args, unsigned int *idx)
{
	const struct imap_arg *list = &args[*idx + 1];

	if (!cmd->client->utf8) {
		append_fail(cmd, ctx, true, "UTF8 APPEND data needs "
			    "ENABLE UTF8=ACCEPT first.");
		return -1;
	}
	if (list->type != IMAP_ARG_LIST || list->list_count == 0 ||
	    (list->list[0].type != IMAP_ARG_LITERAL_SIZE &&
	     list->list[0].type != IMAP_ARG_LITERAL) ||
	    !list->list[0].literal8) {
		append_fail(cmd, ctx, true, "UTF8 needs (~{n} message).");
		return -1;
	}
	*idx += 1;
	ctx->utf8_list_idx = *idx;
	return 0;
}

/* The UTF8 list of the message before ctx->next_idx, now that the
   parser is past it: nothing but the literal8. Returns false after
   answering BAD. */
static bool append_utf8_list_check(struct client_command *cmd,
				   struct append_ctx *ctx,
				   const struct imap_arg *args)
{
	if (ctx->utf8_list_idx == 0)
		return true;
	if (args[ctx->utf8_list_idx].list_count != 1) {
		append_fail(cmd, ctx, true, "UTF8 needs (~{n} message).");
		return false;
	}
	ctx->utf8_list_idx = 0;
	return true;
}

/* Flags and date of the message at args[*idx], then its literal. Returns
   the literal arg, or NULL after answering (and aborting). */
static const struct imap_arg *
append_parse_message(struct client_command *cmd, struct append_ctx *ctx,
		     const struct imap_arg *args, unsigned int idx,
		     struct imap_flag_list *flags, time_t *date_r)
{
	const char *date, *error;

	memset(flags, 0, sizeof(*flags));
	*date_r = (time_t)-1;
	if (args[idx].type == IMAP_ARG_LIST) {
		if (imap_flag_list_parse(&args[idx++], false, flags,
					 &error) < 0) {
			append_fail(cmd, ctx, true, error);
			return NULL;
		}
	}
	if (args[idx].type == IMAP_ARG_STRING) {
		if (!imap_arg_get_string(&args[idx++], &date) ||
		    !imap_datetime_parse(date, date_r)) {
			append_fail(cmd, ctx, true, "Invalid date-time.");
			return NULL;
		}
	}
	ctx->utf8_list_idx = 0;
	if (imap_arg_atom_equals(&args[idx], "UTF8")) {
		if (append_parse_utf8(cmd, ctx, args, &idx) < 0)
			return NULL;
	} else if (args[idx].type != IMAP_ARG_LITERAL_SIZE &&
		   args[idx].type != IMAP_ARG_LITERAL) {
		append_fail(cmd, ctx, true, "Missing message literal.");
		return NULL;
	}
	const struct imap_arg *lit = ctx->utf8_list_idx != 0 ?
		&args[idx].list[0] : &args[idx];
	if (lit->literal_size == 0) {
		/* RFC 3502: an empty message cancels the APPEND */
		append_fail(cmd, ctx, false, "NO Empty message: append cancelled.");
		return NULL;
	}
	if (lit->literal_size > cmd->client->user->set->imap_max_append_size) {
		append_fail(cmd, ctx, false, "NO [TOOBIG] Message too large.");
		return NULL;
	}
	if (mailbox_append_multi_count(ctx->save) >= APPEND_MESSAGES_MAX) {
		append_fail(cmd, ctx, false, "NO [LIMIT] Too many messages "
			    "in one APPEND.");
		return NULL;
	}
	unsigned int limit = cmd->client->user->set->mailbox_max_messages;
	if (limit != 0 && (uint64_t)ctx->box_count +
	    mailbox_append_multi_count(ctx->save) >= limit) {
		/* RFC 5530 LIMIT; the staged ones go too (all or none) */
		append_fail(cmd, ctx, false, "NO [LIMIT] Too many messages "
			    "in the mailbox.");
		return NULL;
	}
	ctx->next_idx = idx + 1;
	return lit;
}

/* Start staging the message whose arguments begin at args[idx]. Returns
   the literal arg (its data is still to be written), or NULL after
   answering. */
static const struct imap_arg *
append_start_message(struct client_command *cmd, struct append_ctx *ctx,
		     const struct imap_arg *args, unsigned int idx)
{
	struct imap_flag_list flags;
	const char *error;
	uint32_t keywords = 0;
	time_t date;

	const struct imap_arg *msg =
		append_parse_message(cmd, ctx, args, idx, &flags, &date);
	if (msg == NULL)
		return NULL;
	int ret = imap_flag_list_keywords(ctx->box, &flags, true, &keywords,
					  &error);
	if (ret == 0) {
		append_fail(cmd, ctx, false, "NO [LIMIT] Too many keywords in "
			    "this mailbox.");
		return NULL;
	}
	if (ret < 0 || mailbox_append_multi_next(ctx->save, flags.flags,
						 keywords, date, &error) < 0) {
		i_error("APPEND failed: %s", error);
		append_fail(cmd, ctx, false,
			    "NO [SERVERBUG] Saving the message failed.");
		return NULL;
	}
	return msg;
}

static void append_write(struct append_ctx *ctx, const void *data, size_t size)
{
	const char *error;

	if (size > 0 && !ctx->failed &&
	    mailbox_append_multi_write(ctx->save, data, size, &error) < 0) {
		/* read the rest anyway, then answer NO */
		i_error("APPEND failed: %s", error);
		ctx->failed = true;
	}
}

static bool append_end_message(struct append_ctx *ctx)
{
	const char *error;

	if (ctx->failed)
		return false;
	if (mailbox_append_multi_end(ctx->save, &error) < 0) {
		i_error("APPEND failed: %s", error);
		ctx->failed = true;
		return false;
	}
	return true;
}

/* Walk the messages of a parsed args array from ctx->next_idx: inline
   literals are written at once; a LITERAL_SIZE one starts streaming.
   Returns true when the command is done. */
static bool append_messages(struct client_command *cmd, struct append_ctx *ctx,
			    const struct imap_arg *args, bool line_done)
{
	for (;;) {
		if (!append_utf8_list_check(cmd, ctx, args))
			return true;
		if (line_done && imap_arg_is_eol(&args[ctx->next_idx])) {
			if (mailbox_append_multi_count(ctx->save) == 0)
				return append_fail(cmd, ctx, true,
						   "Missing message literal.");
			return append_commit(cmd, ctx);
		}
		const struct imap_arg *msg =
			append_start_message(cmd, ctx, args, ctx->next_idx);
		if (msg == NULL)
			return true;
		if (msg->type == IMAP_ARG_LITERAL) {
			append_write(ctx, msg->str, msg->str_len);
			if (!append_end_message(ctx))
				return append_fail(cmd, ctx, false,
					"NO [SERVERBUG] Saving the message failed.");
			continue;
		}
		/* LITERAL_SIZE: always the last arg parsed so far */
		ctx->left = msg->literal_size;
		ctx->in_literal = true;
		if (!msg->literal_nonsync)
			client_send_line(cmd->client, "+ OK");
		return false;
	}
}

/* Copy what is buffered of the current literal. Returns false while
   more of it is to come. */
static bool append_read_literal(struct client_command *cmd,
				struct append_ctx *ctx)
{
	struct client *client = cmd->client;
	size_t size;
	const unsigned char *data = i_stream_get_data(client->input, &size);
	size_t n = (size_t)MIN((uint64_t)size, ctx->left);

	append_write(ctx, data, n);
	i_stream_skip(client->input, n);
	ctx->left -= n;
	if (ctx->left > 0)
		return false;
	ctx->in_literal = false;
	/* before any answer: a reset now skips the rest of the line */
	imap_parser_continue_line(client->parser);
	(void)append_end_message(ctx);
	return true;
}

static bool cmd_append_continue(struct client_command *cmd)
{
	struct append_ctx *ctx = cmd->context;
	const struct imap_arg *args;

	for (;;) {
		if (ctx->in_literal && !append_read_literal(cmd, ctx)) {
			cmd->wait = CLIENT_WAIT_INPUT;
			return false;
		}
		if (ctx->failed)
			return append_fail(cmd, ctx, false,
				"NO [SERVERBUG] Saving the message failed.");
		switch (client_parse_input(cmd->client,
					   IMAP_PARSE_FLAG_LITERAL_SIZE, &args)) {
		case IMAP_PARSE_MORE:
		case IMAP_PARSE_NEED_CONTINUATION:
			cmd->wait = CLIENT_WAIT_INPUT;
			return false;
		case IMAP_PARSE_LITERAL_SIZE:
			if (append_messages(cmd, ctx, args + APPEND_ARGS_OFFSET,
					    false))
				return true;
			break;
		case IMAP_PARSE_ERROR:
			append_abort(cmd, ctx);
			client_command_parse_error(cmd);
			return true;
		case IMAP_PARSE_DONE:
			return append_messages(cmd, ctx,
					       args + APPEND_ARGS_OFFSET, true);
		}
	}
}

bool cmd_append(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct append_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *name, *error;

	/* a rejected literal: for {n} the client sends nothing more, for
	   {n+} the parser reset skips its data (RFC 7888 4) */
	if (!imap_arg_get_astring(&cmd->args[0], &name))
		return append_fail(cmd, ctx, true, "Invalid mailbox name.");
	int ret = !imap_mailbox_name_decode(client, name, ctx->boxname) ? 0 :
		append_get_box(client, ctx->boxname, &ctx->box, &error);
	if (ret == 0)
		return append_fail(cmd, ctx, false,
				   "NO [TRYCREATE] Mailbox doesn't exist");
	if (ret < 0) {
		i_error("APPEND: opening mailbox failed: %s", error);
		return append_fail(cmd, ctx, false, "NO [SERVERBUG] Internal "
			"error occurred. Refer to server log for more "
			"information.");
	}
	ctx->box_count = mailbox_get_count(ctx->box);
	ctx->save = mailbox_append_multi_begin_group(ctx->box);
	ctx->next_idx = 1;
	cmd->context = ctx;
	cmd->cancel = cmd_append_cancel;
	if (append_messages(cmd, ctx, cmd->args, !cmd->literal_size))
		return true;
	if (cmd->func == cmd_append_reply)
		return false;   /* queued for the commit */
	cmd->func = cmd_append_continue;
	return cmd_append_continue(cmd);
}
