/* RENAME (RFC 9051 6.3.6): children move along, missing parents of the
   new name are created, and renaming INBOX moves its messages to the new
   mailbox leaving INBOX empty. A selected mailbox that is moved is
   closed first. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-mailbox.h"

bool cmd_rename(struct client_command *cmd)
{
	char oldname[MAILBOX_NAME_MAX + 1], newname[MAILBOX_NAME_MAX + 1];
	enum mailbox_list_error code;
	const char *oldwire, *newwire, *error;

	if (!imap_arg_get_astring(&cmd->args[0], &oldwire) ||
	    !imap_arg_get_astring(&cmd->args[1], &newwire) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid arguments.");
		return true;
	}
	if (!imap_mailbox_name_get(cmd, oldwire, oldname) ||
	    !imap_mailbox_name_get(cmd, newwire, newname))
		return true;
	/* INBOX's children stay: only INBOX itself is affected */
	if (strcmp(oldname, "INBOX") == 0) {
		if (cmd->client->append_box != NULL)
			mailbox_close(&cmd->client->append_box);
	} else {
		imap_mailbox_release(cmd->client, oldname, true);
	}
	if (mailbox_list_rename(cmd->client->user->mail_root, oldname, newname,
				&code, &error) < 0) {
		imap_mailbox_list_error(cmd, code, error);
		return true;
	}
	imap_notify_mailbox_name(cmd->client, newname, oldname);
	client_send_tagline(cmd, "OK Rename completed.");
	return true;
}
