/* CAPABILITY (RFC 9051 6.1.1) */
#include "imap-common.h"
#include "imap-commands.h"

void imap_capability_get(const struct moat_settings *set,
			 char buf[IMAP_CAPABILITY_MAX])
{
	/* RFC 7889 uses "number": 32 bits */
	uint64_t limit = MIN(set->imap_max_append_size, (uint64_t)UINT32_MAX);

	snprintf(buf, IMAP_CAPABILITY_MAX, "%s %s APPENDLIMIT=%llu",
		 IMAP_CAPABILITY,
		 set->imap_literal_minus ? "LITERAL-" : "LITERAL+",
		 (unsigned long long)limit);
}

bool cmd_capability(struct client_command *cmd)
{
	char caps[IMAP_CAPABILITY_MAX];

	if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "CAPABILITY takes no arguments.");
		return true;
	}
	imap_capability_get(cmd->client->user->set, caps);
	client_send_linef(cmd->client, "* CAPABILITY %s", caps);
	client_send_tagline(cmd, "OK Capability completed.");
	return true;
}
