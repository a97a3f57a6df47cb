/* CLOSE (RFC 3501 6.4.2) and UNSELECT (RFC 3691). CLOSE removes the
   messages marked \Deleted without sending EXPUNGE responses. */
#include "imap-common.h"
#include "imap-commands.h"

static void close_expunge_deleted(struct client *client)
{
	struct mailbox *box = client->mailbox;
	uint32_t count = mailbox_get_count(box);
	const char *error;

	if (mailbox_is_readonly(box))
		return;
	for (uint32_t seq = 1; seq <= count; seq++) {
		if ((mailbox_msg_flags(box, seq) & MAIL_DELETED) != 0 &&
		    mailbox_msg_expunge(box, seq, &error) < 0 && errno != ENOENT)
			i_error("CLOSE: expunging failed: %s", error);
	}
}

bool cmd_close(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "CLOSE takes no arguments.");
		return true;
	}
	close_expunge_deleted(cmd->client);
	client_unselect(cmd->client);
	client_send_tagline(cmd, "OK Close completed.");
	return true;
}

bool cmd_unselect(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "UNSELECT takes no arguments.");
		return true;
	}
	client_unselect(cmd->client);
	client_send_tagline(cmd, "OK Unselect completed.");
	return true;
}
