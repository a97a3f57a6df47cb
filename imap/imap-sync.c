/* Sending the changes of the selected mailbox (imap-sync.h). */
#include "imap-common.h"
#include "imap-sync.h"
#include "imap-flags.h"
#include "imap-condstore.h"
#include "imap-uidonly.h"
#include "imap-context.h"

/* What a sync reports, gathered for the lines that list several. */
struct sync_ctx {
	struct client *client;
	/* with QRESYNC: the expunged UIDs, sent as one VANISHED */
	struct uidset vanished;
};

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

static void sync_expunge(void *context, uint32_t seq, uint32_t uid)
{
	struct sync_ctx *ctx = context;
	struct client *client = ctx->client;

	/* RFC 5267 4.3.4: REMOVEFROM before the EXPUNGE */
	imap_context_expunge(client, seq, uid);
	/* RFC 7162 3.2.10.2: VANISHED instead, once QRESYNC is enabled;
	   RFC 9586 3.4, 3.6: and with UIDONLY */
	if (client->qresync || client->uidonly)
		uidset_add(&ctx->vanished, uid);
	else
		client_send_linef(client, "* %u EXPUNGE", seq);
	if (client->exists_sent > 0)
		client->exists_sent--;
}

/* "* VANISHED uids" in lines of about IMAP_VANISHED_LINE_MAX. */
static void sync_send_vanished(struct client *client, const struct uidset *set)
{
	buffer_t line;

	if (set->count == 0)
		return;
	buffer_init(&line, IMAP_VANISHED_LINE_MAX + 64);
	for (unsigned int i = 0; i < set->count; i++) {
		const struct uidset_range *r = &set->ranges[i];
		int ret = buffer_append_str(&line, line.used == 0 ?
					    "* VANISHED " : ",");
		ret |= r->lo == r->hi ? buffer_printf(&line, "%u", r->lo) :
			buffer_printf(&line, "%u:%u", r->lo, r->hi);
		i_assert(ret == 0);
		if (line.used >= IMAP_VANISHED_LINE_MAX) {
			client_send_line(client, line.data);
			buffer_reset(&line);
		}
	}
	if (line.used > 0)
		client_send_line(client, line.data);
	buffer_free(&line);
}

static void sync_flags_changed(void *context, uint32_t seq)
{
	struct sync_ctx *ctx = context;
	struct client *client = ctx->client;
	char uid[32] = "", modseq[48] = "";
	buffer_t buf;

	/* every expunge was reported before the first flag change: the
	   FETCH numbers are those after the VANISHED */
	sync_send_vanished(client, &ctx->vanished);
	uidset_clear(&ctx->vanished);

	/* a message the client was not told about yet needs no FETCH */
	if (seq > client->exists_sent)
		return;
	/* RFC 9051 7.5.2: in IMAP4rev2 an unsolicited FETCH has the UID;
	   during a UID command too (RFC 3501 6.4.8), so that a client can
	   tell it from the command's own FETCH after an EXPUNGE moved the
	   sequence numbers */
	/* RFC 7162 3.2.4: UID and MODSEQ after a CONDSTORE enabling
	   command */
	if ((client->imap4rev2 || client->condstore ||
	     (client->cmd != NULL && client->cmd->uid)) &&
	    imap_fetch_resp_wants_uid(client))
		snprintf(uid, sizeof(uid), "UID %u ",
			 mailbox_msg_uid(client->mailbox, seq));
	if (client->condstore) {
		snprintf(modseq, sizeof(modseq), " MODSEQ (%llu)",
			 (unsigned long long)mailbox_msg_modseq(client->mailbox,
								seq));
		client->modseq_sent = true;
	}
	buffer_init(&buf, IMAP_FLAGS_STR_MAX + 128);
	if (imap_fetch_resp_begin(client, seq, &buf) == 0 &&
	    buffer_printf(&buf, "%sFLAGS ", uid) == 0 &&
	    imap_write_msg_flags(&buf, client->mailbox, seq,
				 !client->imap4rev2) == 0 &&
	    buffer_printf(&buf, "%s)", modseq) == 0)
		client_send_line(client, buf.data);
	buffer_free(&buf);
	imap_context_flags_changed(client, seq);
}

static const struct mailbox_sync_callbacks imap_sync_callbacks = {
	.expunge = sync_expunge,
	.flags_changed = sync_flags_changed,
};

void imap_sync_send(struct client *client, bool allow_expunge)
{
	struct mailbox *box = client->mailbox;
	struct sync_ctx ctx = { .client = client };
	const char *error;

	if (box == NULL)
		return;
	imap_sync_keywords(client);
	int ret = mailbox_sync(box, allow_expunge, &imap_sync_callbacks, &ctx,
			       &error);
	sync_send_vanished(client, &ctx.vanished);
	uidset_free(&ctx.vanished);
	if (ret < 0) {
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
	/* RFC 5267 4.3.3: ADDTO after the EXISTS */
	imap_context_sync_end(client);
}
