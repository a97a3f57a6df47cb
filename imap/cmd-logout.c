/* LOGOUT (RFC 3501 6.1.3) */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_logout(struct client_command *cmd)
{
	struct client *client = cmd->client;

	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "LOGOUT takes no arguments.");
		return true;
	}
	client_send_line(client, "* BYE Logging out");
	client_send_linef(client, "%s OK Logout completed.", cmd->tag);
	client_disconnect(client, NULL, "Logged out");
	return true;
}
