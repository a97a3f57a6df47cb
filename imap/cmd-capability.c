/* CAPABILITY (RFC 3501 6.1.1) */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_capability(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "CAPABILITY takes no arguments.");
		return true;
	}
	client_send_line(cmd->client, "* CAPABILITY " IMAP_CAPABILITY);
	client_send_tagline(cmd, "OK Capability completed.");
	return true;
}
