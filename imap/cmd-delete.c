/* DELETE (RFC 9051 6.3.5). A mailbox with children loses its messages
   and becomes \Noselect; a \Noselect one with children is refused with
   HASCHILDREN (mailbox-list.h). Deleting the selected mailbox closes it
   first. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-mailbox.h"

bool cmd_delete(struct client_command *cmd)
{
	char name[MAILBOX_NAME_MAX + 1];
	enum mailbox_list_error code;
	const char *wire, *error;

	if (!imap_arg_get_astring(&cmd->args[0], &wire) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Invalid arguments.");
		return true;
	}
	if (!imap_mailbox_name_get(cmd, wire, name))
		return true;
	if (strcmp(name, "INBOX") != 0)
		imap_mailbox_release(cmd->client, name, false);
	if (mailbox_list_delete(cmd->client->user->mail_root, name, &code,
				&error) < 0) {
		imap_mailbox_list_error(cmd, code, error);
		return true;
	}
	imap_notify_mailbox_name(cmd->client, name, NULL);
	client_send_tagline(cmd, "OK Delete completed.");
	return true;
}
