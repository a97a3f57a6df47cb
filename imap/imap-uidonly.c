/* UIDONLY responses (imap-uidonly.h). */
#include "imap-common.h"
#include "imap-uidonly.h"

int imap_fetch_resp_begin(struct client *client, uint32_t seq, buffer_t *buf)
{
	if (client->uidonly)
		return buffer_printf(buf, "* %u UIDFETCH (",
				     mailbox_msg_uid(client->mailbox, seq));
	return buffer_printf(buf, "* %u FETCH (", seq);
}

void imap_fetch_resp_prefix(struct client *client, uint32_t seq, char *line,
			    size_t size)
{
	if (client->uidonly)
		snprintf(line, size, "* %u UIDFETCH (",
			 mailbox_msg_uid(client->mailbox, seq));
	else
		snprintf(line, size, "* %u FETCH (", seq);
}

bool imap_fetch_resp_wants_uid(const struct client *client)
{
	return !client->uidonly;
}
