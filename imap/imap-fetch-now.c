/* A FETCH run at once by the server itself (imap-fetch-now.h). */
#include "imap-common.h"
#include "imap-fetch-now.h"
#include "imap-commands.h"
#include "imap-notify-set.h"

/* "N FETCH ", the set, " ", the atts and CRLF */
#define FETCH_NOW_LINE_MAX \
	(IMAP_FETCH_NOW_SET_MAX + IMAP_NOTIFY_FETCH_ATTS_MAX + 64)
/* PREVIEW (LAZY) and BODY[HEADER.FIELDS (...)] are the deepest
   fetch-atts */
#define FETCH_NOW_LIST_DEPTH 4

struct client_command *
imap_fetch_internal_command(struct client *client, const struct imap_arg *args,
			    const char *pool_name)
{
	pool_t pool = pool_create(pool_name, 1024);
	struct client_command *cmd = p_malloc(pool, sizeof(*cmd));

	cmd->client = client;
	cmd->pool = pool;
	cmd->tag = "";
	cmd->name = "FETCH";
	cmd->def = command_find("FETCH");
	cmd->args = args;
	cmd->func = cmd->def->func;
	return cmd;
}

bool imap_fetch_now_args(struct client *client, const struct imap_arg *args)
{
	struct client_command *outer = client->cmd;
	struct client_command *cmd =
		imap_fetch_internal_command(client, args, "fetch now");
	pool_t pool = cmd->pool;

	client->cmd = cmd;
	bool done = cmd->func(cmd);
	/* slices go on while the output buffer takes them */
	while (!done && !client->disconnected && cmd->wait == CLIENT_WAIT_NONE)
		done = cmd->func(cmd);
	if (!done && cmd->cancel != NULL)
		cmd->cancel(cmd);
	client->cmd = outer;
	pool_unref(&pool);
	return done;
}

bool imap_fetch_now(struct client *client, const char *seqset,
		    const char *atts)
{
	char line[FETCH_NOW_LINE_MAX];
	struct imap_parser_settings pset = {
		.max_line_length = sizeof(line),
		.max_literal_size = 1,
		.max_list_depth = FETCH_NOW_LIST_DEPTH,
	};
	const struct imap_arg *args;
	size_t consumed;

	i_assert(strlen(seqset) <= IMAP_FETCH_NOW_SET_MAX);
	int len = snprintf(line, sizeof(line), "N FETCH %s %s\r\n",
			   seqset, atts);
	i_assert(len > 0 && (size_t)len < sizeof(line));
	struct imap_parser *parser = imap_parser_create(&pset);
	bool ret = true;
	/* the atts were checked when they came and written back by us */
	if (imap_parser_feed(parser, 0, (const unsigned char *)line,
			     (size_t)len, &consumed, &args) != IMAP_PARSE_DONE ||
	    args == NULL)
		i_error("Cannot parse our own FETCH: %s", line);
	else
		ret = imap_fetch_now_args(client, &args[2]);
	imap_parser_destroy(&parser);
	return ret;
}
