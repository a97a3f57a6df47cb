#ifndef MAILBOX_CHECK_H
#define MAILBOX_CHECK_H
/* moatadm's "index check" and "index rebuild" of an open mailbox
   (mailbox.h). */

#include "mailbox.h"

/* The full O(n) consistency check of the mailbox's index view (ascending
   uids below next_uid, known flag bits, modseqs, the header's counts:
   mail_index_view_check()). *rebuilt_r: the index was unusable when the
   handle opened and was rebuilt (logged then). Returns 0, or -1 with
   *error_r (static) when the view is inconsistent. */
int mailbox_index_check(struct mailbox *box, bool *rebuilt_r,
			const char **error_r);

/* Throw away the index's records and cache of a mailbox opened
   read-write and build them again from the Maildir: the uidlist keeps
   UIDVALIDITY and every UID, flags and keywords come from the file
   names, and every modseq lands above the old HIGHESTMODSEQ (so a
   CONDSTORE or QRESYNC client resyncs instead of trusting stale
   state). Other handles see the change as flag updates of the same
   UIDs. Returns 0, or -1 with *error_r. */
int mailbox_index_rebuild(struct mailbox *box, const char **error_r);

#endif
