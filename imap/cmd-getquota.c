/* GETQUOTA (RFC 9208 4.3.1): the resources of a quota root. The user's
   one root is "" (imap-quota.h); it exists when the user has a limit. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-quota.h"

#define QUOTA_LINE_MAX 256

bool cmd_getquota(struct client_command *cmd)
{
	struct client *client = cmd->client;
	const char *root;

	if (!imap_arg_get_astring(&cmd->args[0], &root) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Usage: GETQUOTA root");
		return true;
	}
	if (strcmp(root, IMAP_QUOTA_ROOT) != 0 ||
	    !imap_quota_limited(client->user)) {
		client_send_tagline(cmd, "NO [NONEXISTENT] No such quota root.");
		return true;
	}
	struct mailbox_quota_limits limits;
	struct mailbox_quota_usage usage;
	if (imap_quota_get(client->user, &limits, &usage) < 0) {
		client_send_tagline(cmd, "NO [SERVERBUG] Reading the quota failed.");
		return true;
	}
	buffer_t buf;
	buffer_init(&buf, QUOTA_LINE_MAX);
	bool ok = imap_quota_format(&limits, &usage, &buf) == 0;
	if (ok)
		client_send_line(client, buf.data);
	buffer_free(&buf);
	client_send_tagline(cmd, ok ? "OK Getquota completed." :
			    "NO [SERVERBUG] Internal error occurred.");
	return true;
}
