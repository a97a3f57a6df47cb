/* CREATE (RFC 9051 6.3.4): missing parents are created too; a trailing
   "/" is dropped ("a/" creates a). The OK carries the new mailbox's
   MAILBOXID (RFC 8474 4.1). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-mailbox.h"
#include "mailbox-objectid.h"

bool cmd_create(struct client_command *cmd)
{
	char name[MAILBOX_NAME_MAX + 1], norm[MAILBOX_NAME_MAX + 1];
	char path[PATH_MAX], id[MAILBOX_ID_LEN + 1];
	enum mailbox_list_error code;
	const char *wire, *error;

	if (!imap_arg_get_astring(&cmd->args[0], &wire) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Invalid arguments.");
		return true;
	}
	size_t len = strlen(wire);
	if (len > 1 && wire[len - 1] == MAILBOX_NAME_SEP)
		wire = p_strndup(cmd->pool, wire, len - 1);
	if (!imap_mailbox_name_get(cmd, wire, name))
		return true;
	if (mailbox_list_create(cmd->client->user->mail_root, name, &code,
				&error) < 0) {
		imap_mailbox_list_error(cmd, code, error);
		return true;
	}
	imap_notify_mailbox_name(cmd->client, name, NULL);
	/* not found: another session deleted it at once; no id: logged.
	   The mailbox was made either way, so it is an OK. */
	const char *root = cmd->client->user->mail_root;
	int found = mailbox_list_find_folder(root, name, norm, path);
	if (found > 0 && mailbox_id_get(path, id, &error) == 0) {
		client_send_taglinef(cmd, "OK [MAILBOXID (%s)] Create "
				     "completed.", id);
		return true;
	}
	if (found > 0)
		i_error("CREATE: MAILBOXID: %s", error);
	client_send_tagline(cmd, "OK Create completed.");
	return true;
}
