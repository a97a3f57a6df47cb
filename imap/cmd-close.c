/* CLOSE (RFC 3501 6.4.2) and UNSELECT (RFC 3691). CLOSE removes the
   messages marked \Deleted without sending EXPUNGE responses. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"

/* Returns false after an I/O error (logged). */
static bool close_expunge_deleted(struct client *client)
{
	struct mailbox *box = client->mailbox;
	uint32_t count = mailbox_get_count(box);
	const char *error;
	bool changed = false, ok = true;

	if (mailbox_is_readonly(box))
		return true;
	/* \Deleted as it is now (another session's STORE counts); the
	   mailbox closes, so nothing needs to be reported */
	if (mailbox_sync(box, false, NULL, NULL, &error) < 0)
		i_error("CLOSE: %s", error);
	count = mailbox_get_count(box);
	for (uint32_t seq = 1; seq <= count; seq++) {
		if ((mailbox_msg_flags(box, seq) & MAIL_DELETED) == 0)
			continue;
		if (mailbox_msg_expunge(box, seq, &error) == 0) {
			changed = true;
		} else if (errno != ENOENT) {
			i_error("CLOSE: expunging failed: %s", error);
			ok = false;
		}
	}
	/* the OK says the expunges are on disk */
	if (mailbox_expunge_sync(box, &error) < 0) {
		i_error("CLOSE: %s", error);
		ok = false;
	}
	if (changed)
		imap_notify_changed(client);
	return ok;
}

bool cmd_close(struct client_command *cmd)
{
	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "CLOSE takes no arguments.");
		return true;
	}
	/* RFC 9051 6.4.1 has no NO for CLOSE: the mailbox is closed
	   either way, and a failed expunge is logged */
	(void)close_expunge_deleted(cmd->client);
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
