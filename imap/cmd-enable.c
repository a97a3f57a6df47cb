/* ENABLE (RFC 5161). No extension that needs enabling is supported yet
   (IMAP4rev2 comes later), so "* ENABLED" lists nothing: unknown names
   are ignored as the RFC requires. */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_enable(struct client_command *cmd)
{
	const struct imap_arg *args = cmd->args;
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
	}
	client_send_line(cmd->client, "* ENABLED");
	client_send_tagline(cmd, "OK Enabled.");
	return true;
}
