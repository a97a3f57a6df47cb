/* ENABLE (RFC 5161, RFC 9051 6.3.1). IMAP4rev2 is the only extension
   that needs enabling: it switches the session to RFC 9051 behaviour
   (doc/imap4rev2.md). Unknown names are ignored as the RFC requires, and
   "* ENABLED" lists only what this command newly enabled. */
#include "imap-common.h"
#include "imap-commands.h"

#include <strings.h>

bool cmd_enable(struct client_command *cmd)
{
	const struct imap_arg *args = cmd->args;
	struct client *client = cmd->client;
	bool rev2 = false;
	const char *name;

	if (imap_arg_is_eol(&args[0])) {
		client_send_command_error(cmd, "ENABLE needs capability names.");
		return true;
	}
	for (; !imap_arg_is_eol(args); args++) {
		if (!imap_arg_get_atom(args, &name)) {
			client_send_command_error(cmd, "Invalid capability name.");
			return true;
		}
		if (strcasecmp(name, "IMAP4rev2") == 0)
			rev2 = true;
	}
	if (rev2 && !client->imap4rev2) {
		client->imap4rev2 = true;
		client_send_line(client, "* ENABLED IMAP4rev2");
	} else {
		client_send_line(client, "* ENABLED");
	}
	client_send_tagline(cmd, "OK Enabled.");
	return true;
}
