/* NOTIFY (RFC 5465 3.1): NOTIFY NONE, and NOTIFY SET [STATUS] with event
   groups (imap-notify-set.h), which replaces the session's set. Like a
   NOOP it reports the selected mailbox's changes first; with STATUS the
   STATUS of every other watched mailbox follows. The events themselves:
   imap-notify.h. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-notify-set.h"
#include "imap-sync.h"
#include "imap-mailbox.h"

/* RFC 5465 3.1: a NO when the client can access none of the mailboxes
   it named and asked nothing else (every name in `mailboxes` and
   `subtree` groups is unknown, and no other group or SELECTED). */
static bool notify_names_none_exist(struct client *client,
				    const struct imap_notify_set *set)
{
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	bool named = false;

	if (set->selected_events != 0)
		return false;
	for (unsigned int i = 0; i < set->group_count; i++) {
		const struct imap_notify_group *g = &set->groups[i];

		if (g->filter != IMAP_NOTIFY_FILTER_MAILBOXES &&
		    g->filter != IMAP_NOTIFY_FILTER_SUBTREE)
			return false;
		for (unsigned int j = 0; j < g->name_count; j++) {
			named = true;
			if (mailbox_list_find_folder(client->user->mail_root,
						     g->names[j], norm,
						     path) != 0)
				return false;
		}
	}
	return named;
}

bool cmd_notify(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct imap_notify_set *set = NULL;
	const char *error;

	if (imap_arg_atom_equals(&cmd->args[0], "NONE")) {
		if (!imap_arg_is_eol(&cmd->args[1])) {
			client_send_command_error(cmd, "Invalid arguments.");
			return true;
		}
		imap_notify_set_client(client, NULL);
		client_send_tagline(cmd, "OK NOTIFY completed.");
		return true;
	}
	if (!imap_arg_atom_equals(&cmd->args[0], "SET")) {
		client_send_command_error(cmd, "Expected SET or NONE.");
		return true;
	}
	int ret = imap_notify_set_parse(cmd, &cmd->args[1], &set, &error);
	if (ret == 0) {
		client_send_command_error(cmd, error);
		return true;
	}
	if (ret < 0) {
		client_send_taglinef(cmd, "NO %s", error);
		return true;
	}
	if (notify_names_none_exist(client, set)) {
		imap_notify_set_free(&set);
		client_send_tagline(cmd, "NO [NONEXISTENT] None of the "
				    "mailboxes exist.");
		return true;
	}
	/* RFC 5465 3.1: an implicit NOOP first */
	imap_sync_send(client, true);
	imap_notify_set_client(client, set);
	client_send_tagline(cmd, "OK NOTIFY completed.");
	return true;
}
