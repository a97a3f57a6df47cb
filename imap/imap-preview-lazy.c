/* Computing the previews PREVIEW (LAZY) missed (imap-preview-lazy.h). */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-preview.h"
#include "imap-preview-lazy.h"
#include "mailbox-uidset.h"

#include <errno.h>

struct imap_preview_lazy {
	struct uidset uids;       /* waiting for their preview */
	struct timeout *to;
};

static void preview_lazy_timeout(void *context);

static void preview_lazy_schedule(struct client *client)
{
	struct imap_preview_lazy *lazy = client->preview_lazy;

	if (lazy->to == NULL && lazy->uids.count > 0)
		lazy->to = timeout_add(client->user->ioloop,
				       IMAP_PREVIEW_LAZY_DELAY_MSECS,
				       preview_lazy_timeout, client);
}

void imap_preview_lazy_queue(struct client *client, uint32_t seq)
{
	struct imap_preview_lazy *lazy = client->preview_lazy;
	uint32_t uid = mailbox_msg_uid(client->mailbox, seq);

	if (lazy == NULL)
		lazy = client->preview_lazy =
			p_malloc(client->pool, sizeof(*lazy));
	/* a new range only while there is room; joining one is free */
	if (lazy->uids.count >= IMAP_PREVIEW_LAZY_RANGES_MAX &&
	    !uidset_contains(&lazy->uids, uid) &&
	    !uidset_contains(&lazy->uids, uid - 1) &&
	    !uidset_contains(&lazy->uids, uid + 1))
		return;
	uidset_add(&lazy->uids, uid);
	preview_lazy_schedule(client);
}

void imap_preview_lazy_clear(struct client *client)
{
	struct imap_preview_lazy *lazy = client->preview_lazy;

	if (lazy == NULL)
		return;
	timeout_remove(&lazy->to);
	uidset_free(&lazy->uids);
}

/* The lowest waiting UID that is still a message of the view, as a
   sequence number (taken off the queue); 0 when none is left. */
static uint32_t preview_lazy_next(struct client *client)
{
	struct uidset *set = &client->preview_lazy->uids;
	struct mailbox *box = client->mailbox;

	while (set->count > 0) {
		struct uidset_range *r = &set->ranges[0];
		uint32_t seq = mailbox_uid_to_seq_ge(box, r->lo);
		uint32_t uid = seq == 0 ? 0 : mailbox_msg_uid(box, seq);
		if (seq == 0 || uid > r->hi) {
			/* none of the range is left: drop it */
			memmove(&set->ranges[0], &set->ranges[1],
				(set->count - 1) * sizeof(set->ranges[0]));
			set->count--;
			continue;
		}
		/* the UIDs below uid are gone: skip them */
		r->lo = uid;
		uidset_remove(set, uid);
		if (!mailbox_msg_is_expunged(box, seq))
			return seq;
	}
	return 0;
}

static void preview_lazy_timeout(void *context)
{
	struct client *client = context;
	struct imap_preview_lazy *lazy = client->preview_lazy;
	const char *error;

	lazy->to = NULL;
	if (client->mailbox == NULL || client->disconnected)
		return;
	/* off the hot path: a running command goes first; one waiting for
	   input (IDLE, an APPEND's literal) leaves the time to us */
	if (client->cmd != NULL && client->cmd->wait != CLIENT_WAIT_INPUT) {
		preview_lazy_schedule(client);
		return;
	}
	for (unsigned int n = 0; n < IMAP_PREVIEW_LAZY_PER_SLICE; n++) {
		uint32_t seq = preview_lazy_next(client);
		if (seq == 0)
			break;
		/* a message gone meanwhile (ENOENT) is no error */
		if (imap_preview_precompute(client->mailbox, seq, &error) < 0 &&
		    errno != ENOENT)
			i_error("PREVIEW of %s: %s",
				mailbox_get_name(client->mailbox), error);
	}
	preview_lazy_schedule(client);
}
