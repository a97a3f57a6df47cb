/* RFC 8474 THREADID (mailbox-objectid.h). Apart from the other ids: it
   reads the SORT/THREAD keys, which need the MIME library, and what
   links only the mailbox layer (COPY's EMAILIDs) must not pull that in. */
#include "lib.h"
#include "mailbox-objectid.h"
#include "mail-sort-keys.h"

#include <stdio.h>
#include <string.h>

int mailbox_msg_threadid(struct mail_sort_keys_reader *reader,
			 struct mailbox *box, uint32_t seq,
			 char id_r[MAILBOX_MSG_OBJECTID_LEN + 1],
			 const char **error_r)
{
	struct mail_sort_keys keys;
	struct mail_thread_refs refs;
	char emailid[MAILBOX_MSG_OBJECTID_LEN + 1];
	uint64_t root;
	int ret;

	if ((ret = mail_sort_keys_get(reader, seq, &keys, &refs,
				      error_r)) <= 0)
		return ret;
	if (refs.count > 0)
		root = mail_thread_refs_at(&refs, 0);
	else if (refs.msgid != 0)
		root = refs.msgid;
	else {
		/* no Message-ID to be found by a reply: alone */
		if ((ret = mailbox_msg_emailid(box, seq, emailid,
					       error_r)) <= 0)
			return ret;
		root = mailbox_objectid_hash(emailid, strlen(emailid));
	}
	snprintf(id_r, MAILBOX_MSG_OBJECTID_LEN + 1, "T%016llx",
		 (unsigned long long)root);
	return 1;
}
