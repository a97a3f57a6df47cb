/* SELECT and EXAMINE (RFC 3501 6.3.1, 6.3.2). Only INBOX exists for now. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-sync.h"
#include "imap-flags.h"
#include "imap-mailbox.h"
#include "imap-list.h"

static void select_send_status(struct client_command *cmd,
			       struct mailbox *box)
{
	struct client *client = cmd->client;
	uint32_t count = mailbox_get_count(box);
	uint32_t recent = mailbox_get_recent_count(box);
	uint32_t unseen = mailbox_get_first_unseen_seq(box);

	/* FLAGS and PERMANENTFLAGS with the keywords (read-only: none) */
	imap_send_flags_list(client);
	client_send_linef(client, "* %u EXISTS", count);
	/* RFC 9051 Appendix E 10-12: IMAP4rev2 gets the mailbox's LIST
	   and neither RECENT nor the deprecated UNSEEN code */
	if (client->imap4rev2)
		imap_list_send_mailbox(client, cmd->pool, mailbox_get_name(box));
	else
		client_send_linef(client, "* %u RECENT", recent);
	if (unseen != 0 && !client->imap4rev2)
		client_send_linef(client, "* OK [UNSEEN %u] First unseen.", unseen);
	client_send_linef(client, "* OK [UIDVALIDITY %u] UIDs valid",
			  mailbox_get_uidvalidity(box));
	client_send_linef(client, "* OK [UIDNEXT %u] Predicted next UID",
			  mailbox_get_next_uid(box));
	client->exists_sent = count;
	client->recent_sent = recent;
}

static bool cmd_select_full(struct client_command *cmd, bool readonly)
{
	struct client *client = cmd->client;
	const char *name, *error;
	struct mailbox *box;

	if (!imap_arg_get_astring(&cmd->args[0], &name) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Invalid arguments.");
		return true;
	}
	/* RFC 3501: the current mailbox is deselected first, even if the
	   new selection fails */
	bool was_selected = client->mailbox != NULL;
	client_unselect(client);
	/* RFC 9051 6.3.2 (RFC 7162 CLOSED): the old mailbox is closed */
	if (was_selected && client->imap4rev2)
		client_send_line(client, "* OK [CLOSED] Previous mailbox "
				 "closed.");

	/* SELECT takes \Recent; EXAMINE leaves it (RFC 3501 6.3.2). Both
	   keep reading what other sessions expunge until told (SESSION). */
	enum mailbox_open_flags flags = (readonly ? MAILBOX_OPEN_READONLY :
		MAILBOX_OPEN_SELECT) | MAILBOX_OPEN_SESSION | MAILBOX_OPEN_QUOTA;
	if (client->user->set->mail_fsync == MOAT_FSYNC_NEVER)
		flags |= MAILBOX_OPEN_NO_FSYNC;
	char boxname[MAILBOX_NAME_MAX + 1];
	/* an invalid name can't exist */
	int ret = !imap_mailbox_name_decode(name, boxname) ? 0 :
		mailbox_open(client->user->mail_root, boxname, flags, &box,
			       &error);
	if (ret == 0) {
		client_send_tagline(cmd, "NO [NONEXISTENT] Mailbox doesn't exist");
		return true;
	}
	if (ret < 0) {
		i_error("Opening mailbox failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return true;
	}
	client->mailbox = box;
	select_send_status(cmd, box);
	client_send_tagline(cmd, readonly ?
		"OK [READ-ONLY] Examine completed." :
		"OK [READ-WRITE] Select completed.");
	return true;
}

bool cmd_select(struct client_command *cmd)
{
	return cmd_select_full(cmd, false);
}

bool cmd_examine(struct client_command *cmd)
{
	return cmd_select_full(cmd, true);
}
