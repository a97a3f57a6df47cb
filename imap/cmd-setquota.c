/* SETQUOTA (RFC 9208 4.3.3): limits are the admin's (userdb fields,
   moatadm), so a user may not set them. The arguments are still checked:
   a malformed command is a BAD, a well-formed one NO [NOPERM]. QUOTASET
   is not advertised. */
#include "imap-common.h"
#include "imap-commands.h"

bool cmd_setquota(struct client_command *cmd)
{
	const struct imap_arg *list;
	const char *root, *word;
	unsigned int count;

	if (!imap_arg_get_astring(&cmd->args[0], &root) ||
	    !imap_arg_get_list(&cmd->args[1], &list, &count) ||
	    !imap_arg_is_eol(&cmd->args[2]) || count % 2 != 0) {
		client_send_command_error(cmd, "Usage: SETQUOTA root "
					  "(resource limit ...)");
		return true;
	}
	for (unsigned int i = 0; i < count; i += 2) {
		if (!imap_arg_get_atom(&list[i], &word) ||
		    !imap_arg_get_atom(&list[i + 1], &word) ||
		    word[0] < '0' || word[0] > '9') {
			client_send_command_error(cmd, "Invalid resource limit.");
			return true;
		}
	}
	client_send_tagline(cmd, "NO [NOPERM] Quota limits are set by the "
			    "administrator.");
	return true;
}
