/* CANCELUPDATE (RFC 5267 4.3.5): stop the updates of the searches whose
   tags are named. All tags are checked first: one that names no update
   context is a NO and nothing is cancelled. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-context.h"

bool cmd_cancelupdate(struct client_command *cmd)
{
	const struct imap_arg *args = cmd->args;
	const char *tag;
	unsigned int i;

	if (imap_arg_is_eol(&args[0])) {
		client_send_command_error(cmd, "CANCELUPDATE needs a tag.");
		return true;
	}
	/* "1*(SP quoted)"; a literal is a string as well */
	for (i = 0; !imap_arg_is_eol(&args[i]); i++) {
		if (!imap_arg_get_string(&args[i], &tag)) {
			client_send_command_error(cmd,
				"CANCELUPDATE takes quoted tags.");
			return true;
		}
	}
	for (i = 0; !imap_arg_is_eol(&args[i]); i++) {
		if (!imap_arg_get_string(&args[i], &tag))
			i_unreached();
		if (!imap_context_exists(cmd->client, tag)) {
			client_send_tagline(cmd, "NO No update context has "
					    "that tag.");
			return true;
		}
	}
	for (i = 0; !imap_arg_is_eol(&args[i]); i++) {
		if (!imap_arg_get_string(&args[i], &tag))
			i_unreached();
		(void)imap_context_cancel(cmd->client, tag);
	}
	client_send_tagline(cmd, "OK No further updates.");
	return true;
}
