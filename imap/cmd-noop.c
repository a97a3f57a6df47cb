/* NOOP (RFC 3501 6.1.2) and CHECK (6.4.1): the updates of the selected
   mailbox go out with the tagged reply. Saves are durable at their OK, so
   CHECK has nothing else to do. */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_noop(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "NOOP takes no arguments.");
		return true;
	}
	client_send_tagline(cmd, "OK NOOP completed.");
	return true;
}

bool cmd_check(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "CHECK takes no arguments.");
		return true;
	}
	client_send_tagline(cmd, "OK Check completed.");
	return true;
}
