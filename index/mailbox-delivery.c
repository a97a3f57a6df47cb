/* The delivery ids of a mailbox's newest messages (mailbox.h). */
#include "lib.h"
#include "mailbox-private.h"

int mailbox_scan_deliveries(struct mailbox *box, unsigned int max_ids,
			    unsigned int max_messages,
			    mailbox_delivery_callback_t *callback,
			    void *context, const char **error_r)
{
	char base[MAILDIR_UIDLIST_MAX_LINE + 1];
	char id[MAILDIR_DELIVERY_ID_LEN + 1];
	uint32_t count = mailbox_get_count(box);
	uint64_t size;
	unsigned int found = 0;

	/* newest first: a retry follows its lost answer closely */
	for (uint32_t seq = count; seq > 0 && count - seq < max_messages &&
	     found < max_ids; seq--) {
		uint32_t uid = mailbox_msg_uid(box, seq);
		int ret = maildir_uidlist_lookup(box->uidlookup, uid, base,
						 &size, error_r);
		if (ret < 0) {
			*error_r = mailbox_set_error(box, "%s", *error_r);
			return -1;
		}
		if (ret > 0 && maildir_base_get_delivery(base, id)) {
			callback(id, uid, context);
			found++;
		}
	}
	return 0;
}
