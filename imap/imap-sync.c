/* Sending the changes of the selected mailbox (imap-sync.h). */
#include "imap-common.h"
#include "imap-sync.h"
#include "imap-flags.h"

static const struct {
	enum mail_flags flag;
	const char *name;
} imap_flag_names[] = {
	{ MAIL_ANSWERED, "\\Answered" },
	{ MAIL_FLAGGED, "\\Flagged" },
	{ MAIL_DELETED, "\\Deleted" },
	{ MAIL_SEEN, "\\Seen" },
	{ MAIL_DRAFT, "\\Draft" },
	{ MAIL_RECENT, "\\Recent" },
};

int imap_write_flags(buffer_t *buf, enum mail_flags flags)
{
	bool first = true;

	if (buffer_append_c(buf, '(') < 0)
		return -1;
	for (unsigned int i = 0; i < N_ELEMENTS(imap_flag_names); i++) {
		if ((flags & imap_flag_names[i].flag) == 0)
			continue;
		if ((!first && buffer_append_c(buf, ' ') < 0) ||
		    buffer_append_str(buf, imap_flag_names[i].name) < 0)
			return -1;
		first = false;
	}
	return buffer_append_c(buf, ')');
}

static void sync_expunge(void *context, uint32_t seq)
{
	struct client *client = context;

	client_send_linef(client, "* %u EXPUNGE", seq);
	if (client->exists_sent > 0)
		client->exists_sent--;
}

static void sync_flags_changed(void *context, uint32_t seq)
{
	struct client *client = context;
	char uid[32] = "";
	buffer_t buf;

	/* a message the client was not told about yet needs no FETCH */
	if (seq > client->exists_sent)
		return;
	/* RFC 9051 7.5.2: in IMAP4rev2 an unsolicited FETCH has the UID;
	   during a UID command too (RFC 3501 6.4.8), so that a client can
	   tell it from the command's own FETCH after an EXPUNGE moved the
	   sequence numbers */
	if (client->imap4rev2 || (client->cmd != NULL && client->cmd->uid))
		snprintf(uid, sizeof(uid), "UID %u ",
			 mailbox_msg_uid(client->mailbox, seq));
	buffer_init(&buf, IMAP_FLAGS_STR_MAX);
	if (imap_write_msg_flags(&buf, client->mailbox, seq,
				 !client->imap4rev2) == 0)
		client_send_linef(client, "* %u FETCH (%sFLAGS %s)", seq, uid,
				  (const char *)buf.data);
	buffer_free(&buf);
}

static const struct mailbox_sync_callbacks imap_sync_callbacks = {
	.expunge = sync_expunge,
	.flags_changed = sync_flags_changed,
};

void imap_sync_send(struct client *client, bool allow_expunge)
{
	struct mailbox *box = client->mailbox;
	const char *error;

	if (box == NULL)
		return;
	imap_sync_keywords(client);
	if (mailbox_sync(box, allow_expunge, &imap_sync_callbacks, client,
			 &error) < 0) {
		i_error("Syncing %s failed: %s", mailbox_get_name(box), error);
		return;
	}
	uint32_t count = mailbox_get_count(box);
	if (count != client->exists_sent) {
		client_send_linef(client, "* %u EXISTS", count);
		client->exists_sent = count;
	}
	uint32_t recent = mailbox_get_recent_count(box);
	/* RFC 9051 Appendix E 12: no RECENT response in IMAP4rev2 */
	if (recent != client->recent_sent && !client->imap4rev2) {
		client_send_linef(client, "* %u RECENT", recent);
		client->recent_sent = recent;
	}
}
