/* LSUB (RFC 3501 6.3.9): the subscribed names matching the pattern; a
   non-matching parent of a subscribed name that "%" hides is shown with
   \Noselect. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-list.h"

bool cmd_lsub(struct client_command *cmd)
{
	struct imap_list_request req;
	const char *ref, *pattern;

	memset(&req, 0, sizeof(req));
	req.utf8 = client_utf8_names(cmd->client);
	req.lsub = true;
	if (!imap_arg_get_astring(&cmd->args[0], &ref) ||
	    !imap_arg_get_astring(&cmd->args[1], &pattern) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid LSUB arguments.");
		return true;
	}
	if (pattern[0] == '\0') {
		client_send_line(cmd->client, "* LSUB (\\Noselect) \"/\" \"\"");
		client_send_tagline(cmd, "OK Lsub completed.");
		return true;
	}
	(void)imap_list_add_pattern(&req, cmd->pool, ref, pattern);
	return imap_list_run(cmd, &req);
}
