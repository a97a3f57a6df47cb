/* GETQUOTAROOT (RFC 9208 4.3.2): the quota roots of a mailbox and their
   QUOTA. Every mailbox of the user is in the one root "" when the user has
   a limit, in none otherwise. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-mailbox.h"
#include "imap-quota.h"
#include "mailbox-list.h"

/* QUOTAROOT and QUOTA lines: a mailbox name and a few numbers. */
#define QUOTAROOT_LINE_MAX (MAILBOX_NAME_MAX * 3 + 256)

bool cmd_getquotaroot(struct client_command *cmd)
{
	struct client *client = cmd->client;
	const char *wire;
	char name[MAILBOX_NAME_MAX + 1], norm[MAILBOX_NAME_MAX + 1];
	char path[PATH_MAX];

	if (!imap_arg_get_astring(&cmd->args[0], &wire) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Usage: GETQUOTAROOT mailbox");
		return true;
	}
	if (!imap_mailbox_name_decode(client, wire, name) ||
	    mailbox_list_find_folder(client->user->mail_root, name, norm,
				     path) <= 0) {
		client_send_tagline(cmd, "NO [NONEXISTENT] Mailbox doesn't exist.");
		return true;
	}
	struct mailbox_quota_limits limits;
	struct mailbox_quota_usage usage;
	bool limited = imap_quota_limited(client->user);
	if (limited && imap_quota_get(client->user, &limits, &usage) < 0) {
		client_send_tagline(cmd, "NO [SERVERBUG] Reading the quota failed.");
		return true;
	}
	buffer_t buf;
	buffer_init(&buf, QUOTAROOT_LINE_MAX);
	bool ok = buffer_append_str(&buf, "* QUOTAROOT ") == 0 &&
		imap_append_astring(&buf, wire) == 0 &&
		(!limited || buffer_append_str(&buf, " \"" IMAP_QUOTA_ROOT "\"") == 0);
	if (ok)
		client_send_line(client, buf.data);
	if (ok && limited) {
		buffer_reset(&buf);
		ok = imap_quota_format(&limits, &usage, &buf) == 0;
		if (ok)
			client_send_line(client, buf.data);
	}
	buffer_free(&buf);
	client_send_tagline(cmd, ok ? "OK Getquotaroot completed." :
			    "NO [SERVERBUG] Internal error occurred.");
	return true;
}
