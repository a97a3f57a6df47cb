/* APPEND (RFC 3501 6.3.11) with APPENDUID (RFC 4315). The message literal
   is streamed from the connection to a file in tmp/: the line is parsed
   with IMAP_PARSE_FLAG_LITERAL_SIZE, so the parser stops at the literal
   and we read its bytes ourselves. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-date.h"
#include "imap-flags.h"
#include "imap-mailbox.h"

#include <strings.h>

/* tag and "APPEND" come before the command's own arguments */
#define APPEND_ARGS_OFFSET 2

struct append_ctx {
	struct mailbox_append_ctx *save;
	uint64_t left;            /* literal bytes still to read */
	unsigned int msg_idx;     /* index of the literal in cmd->args */
	bool failed;
	bool line_end;            /* literal read; parsing the line end */
	struct imap_flag_list flags;
	struct mailbox *box;      /* the selected one or client->append_box */
	char boxname[MAILBOX_NAME_MAX + 1];
};

static void append_abort(struct append_ctx *ctx)
{
	if (ctx->save != NULL)
		mailbox_append_abort(&ctx->save);
}

static void cmd_append_cancel(struct client_command *cmd)
{
	append_abort(cmd->context);
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
	    strcmp(mailbox_get_name(client->append_box), name) != 0)
		mailbox_close(&client->append_box);
	if (client->append_box == NULL) {
		int ret = mailbox_open(client->user->mail_root, name,
				       imap_mailbox_open_flags(client, false),
				       &client->append_box, error_r);
		if (ret <= 0)
			return ret;
	}
	*box_r = client->append_box;
	return 1;
}

static bool append_finish(struct client_command *cmd, struct append_ctx *ctx,
			  const struct imap_arg *args)
{
	struct mailbox *box = ctx->box;
	const char *error;
	uint32_t uid;

	if (!imap_arg_is_eol(&args[ctx->msg_idx + 1])) {
		append_abort(ctx);
		client_send_command_error(cmd, "Unexpected arguments after "
					  "the message.");
		return true;
	}
	if (ctx->failed) {
		append_abort(ctx);
		client_send_tagline(cmd, "NO [SERVERBUG] Saving the message failed.");
		return true;
	}
	if (mailbox_append_finish(&ctx->save, &uid, &error) < 0) {
		i_error("APPEND failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Saving the message failed.");
		return true;
	}
	client_send_taglinef(cmd, "OK [APPENDUID %u %u] Append completed.",
			     mailbox_get_uidvalidity(box), uid);
	return true;
}

/* The literal was read: parse the rest of the line. */
static bool append_line_end(struct client_command *cmd, struct append_ctx *ctx)
{
	const struct imap_arg *args;

	switch (client_parse_input(cmd->client, IMAP_PARSE_FLAG_LITERAL_SIZE,
				   &args)) {
	case IMAP_PARSE_MORE:
	case IMAP_PARSE_NEED_CONTINUATION:
		cmd->wait = CLIENT_WAIT_INPUT;
		return false;
	case IMAP_PARSE_LITERAL_SIZE:
		append_abort(ctx);
		client_send_command_error(cmd, "MULTIAPPEND is not supported.");
		return true;
	case IMAP_PARSE_ERROR:
		append_abort(ctx);
		client_command_parse_error(cmd);
		return true;
	case IMAP_PARSE_DONE:
		break;
	}
	return append_finish(cmd, ctx, args + APPEND_ARGS_OFFSET);
}

static bool cmd_append_continue(struct client_command *cmd)
{
	struct append_ctx *ctx = cmd->context;
	struct client *client = cmd->client;
	const char *error;
	size_t size;

	if (!ctx->line_end) {
		const unsigned char *data = i_stream_get_data(client->input, &size);
		size_t n = (size_t)MIN((uint64_t)size, ctx->left);
		if (n > 0 && !ctx->failed &&
		    mailbox_append_write(ctx->save, data, n, &error) < 0) {
			/* read the rest anyway, then answer NO */
			i_error("APPEND failed: %s", error);
			ctx->failed = true;
		}
		i_stream_skip(client->input, n);
		ctx->left -= n;
		if (ctx->left > 0) {
			cmd->wait = CLIENT_WAIT_INPUT;
			return false;
		}
		imap_parser_continue_line(client->parser);
		ctx->line_end = true;
	}
	return append_line_end(cmd, ctx);
}

/* Check everything before the literal. Returns the message arg or NULL
   after answering. */
static const struct imap_arg *
append_parse(struct client_command *cmd, struct append_ctx *ctx,
	     enum mail_flags *flags_r, time_t *date_r)
{
	const struct imap_arg *args = cmd->args;
	const char *name, *date, *error;
	unsigned int i = 1;

	*flags_r = 0;
	*date_r = (time_t)-1;
	if (!imap_arg_get_astring(&args[0], &name)) {
		client_send_command_error(cmd, "Invalid mailbox name.");
		return NULL;
	}
	if (args[i].type == IMAP_ARG_LIST) {
		if (imap_flag_list_parse(&args[i++], false, &ctx->flags,
					 &error) < 0) {
			client_send_command_error(cmd, error);
			return NULL;
		}
		*flags_r = ctx->flags.flags;
	}
	if (args[i].type == IMAP_ARG_STRING) {
		if (!imap_arg_get_string(&args[i++], &date) ||
		    !imap_datetime_parse(date, date_r)) {
			client_send_command_error(cmd, "Invalid date-time.");
			return NULL;
		}
	}
	if (args[i].type != IMAP_ARG_LITERAL_SIZE &&
	    args[i].type != IMAP_ARG_LITERAL) {
		client_send_command_error(cmd, "Missing message literal.");
		return NULL;
	}
	ctx->msg_idx = i;
	int ret = !imap_mailbox_name_decode(name, ctx->boxname) ? 0 :
		append_get_box(cmd->client, ctx->boxname, &ctx->box, &error);
	if (ret == 0) {
		client_send_tagline(cmd, "NO [TRYCREATE] Mailbox doesn't exist");
		return NULL;
	}
	if (ret < 0) {
		i_error("APPEND: opening mailbox failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return NULL;
	}
	if (args[i].literal_size > cmd->client->user->set->imap_max_append_size) {
		client_send_tagline(cmd, "NO [TOOBIG] Message too large.");
		return NULL;
	}
	return &args[i];
}

bool cmd_append(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct append_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *error;
	enum mail_flags flags;
	time_t date;

	/* a rejected literal: for {n} the client sends nothing more, for
	   {n+} the parser reset skips its data (RFC 7888 4) */
	const struct imap_arg *msg = append_parse(cmd, ctx, &flags, &date);
	if (msg == NULL)
		return true;
	struct mailbox *box = ctx->box;
	uint32_t keywords = 0;
	int ret = box == NULL ? -1 :
		imap_flag_list_keywords(box, &ctx->flags, true, &keywords,
					&error);
	if (ret == 0) {
		client_send_tagline(cmd, "NO [LIMIT] Too many keywords in "
				    "this mailbox.");
		return true;
	}
	if (ret < 0 ||
	    mailbox_append_begin(box, flags, date, &ctx->save, &error) < 0) {
		i_error("APPEND failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Saving the message failed.");
		return true;
	}
	mailbox_append_set_keywords(ctx->save, keywords);
	cmd->context = ctx;
	cmd->cancel = cmd_append_cancel;
	if (msg->type == IMAP_ARG_LITERAL) {
		/* the whole line is parsed already (small literal) */
		if (mailbox_append_write(ctx->save, msg->str, msg->str_len,
					 &error) < 0) {
			i_error("APPEND failed: %s", error);
			ctx->failed = true;
		}
		return append_finish(cmd, ctx, cmd->args);
	}
	ctx->left = msg->literal_size;
	if (!msg->literal_nonsync)
		client_send_line(client, "+ OK");
	cmd->func = cmd_append_continue;
	return cmd_append_continue(cmd);
}
