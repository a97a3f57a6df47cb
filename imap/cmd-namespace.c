/* NAMESPACE (RFC 2342, RFC 9051 6.3.10): one personal namespace with an
   empty prefix and "/" as separator; no other users' or shared ones. */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_namespace(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "NAMESPACE takes no arguments.");
		return true;
	}
	client_send_line(cmd->client, "* NAMESPACE ((\"\" \"/\")) NIL NIL");
	client_send_tagline(cmd, "OK Namespace completed.");
	return true;
}
