/* STATUS (RFC 9051 6.3.11; SIZE from RFC 8438, RECENT for IMAP4rev1,
   HIGHESTMODSEQ from RFC 7162 3.1.7, DELETED-STORAGE from RFC 9208
   4.1.4). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-mailbox.h"
#include "imap-status.h"
#include "imap-condstore.h"

bool cmd_status(struct client_command *cmd)
{
	char name[MAILBOX_NAME_MAX + 1];
	enum imap_status_items items;
	const char *wire;

	if (!imap_arg_get_astring(&cmd->args[0], &wire) ||
	    !imap_status_parse_items(&cmd->args[1], &items) ||
	    !imap_arg_is_eol(&cmd->args[2])) {
		client_send_command_error(cmd, "Invalid STATUS arguments.");
		return true;
	}
	if (!imap_mailbox_name_get(cmd, wire, name))
		return true;
	/* a CONDSTORE enabling command (RFC 7162 3.1) */
	if ((items & IMAP_STATUS_HIGHESTMODSEQ) != 0)
		imap_condstore_enable(cmd->client);
	int ret = imap_status_send(cmd->client, name, items);
	if (ret == 0)
		client_send_tagline(cmd, "NO [NONEXISTENT] Mailbox doesn't exist");
	else if (ret < 0)
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
	else
		client_send_tagline(cmd, "OK Status completed.");
	return true;
}
