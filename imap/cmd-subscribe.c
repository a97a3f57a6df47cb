/* SUBSCRIBE and UNSUBSCRIBE (RFC 9051 6.3.7, 6.3.8). Any valid name can
   be subscribed, existing or not; unsubscribing a name that is not
   subscribed succeeds. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-mailbox.h"

static bool cmd_subscribe_full(struct client_command *cmd, bool set)
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
	if (mailbox_list_subscribe(cmd->client->user->mail_root, name, set,
				   &code, &error) < 0) {
		imap_mailbox_list_error(cmd, code, error);
		return true;
	}
	imap_notify_subscription(cmd->client, name);
	client_send_tagline(cmd, set ? "OK Subscribe completed." :
			    "OK Unsubscribe completed.");
	return true;
}

bool cmd_subscribe(struct client_command *cmd)
{
	return cmd_subscribe_full(cmd, true);
}

bool cmd_unsubscribe(struct client_command *cmd)
{
	return cmd_subscribe_full(cmd, false);
}
