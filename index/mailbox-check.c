/* moatadm's index check and rebuild (mailbox-check.h). */
#include "lib.h"
#include "log.h"
#include "mail-index-private.h"
#include "mailbox-private.h"
#include "mailbox-check.h"
#include "maildir-uidlist.h"

int mailbox_index_check(struct mailbox *box, bool *rebuilt_r,
			const char **error_r)
{
	*rebuilt_r = mail_index_was_rebuilt(box->index);
	return mail_index_view_check(box->view, error_r) ? 0 : -1;
}

int mailbox_index_rebuild(struct mailbox *box, const char **error_r)
{
	struct mail_index_status status;

	i_assert(!mailbox_is_readonly(box));
	mail_index_view_get_status(box->view, &status);
	/* The uidlist numbers the files: its UIDVALIDITY is the one the
	   clients hold (mailbox_open() synced, so it has been read). */
	uint32_t uidvalidity = maildir_uidlist_get_uidvalidity(box->uidlist);
	if (uidvalidity == 0)
		uidvalidity = status.uidvalidity;
	/* The reset raises HIGHESTMODSEQ and starts a new cache file; the
	   next sync appends every uidlist record again (maildir-sync.c),
	   all in this process's loop, so no session of ours sees the
	   empty index in between. */
	if (mail_index_reset(box->index, uidvalidity, 1, error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: reset failed: %s",
					     box->path, *error_r);
		return -1;
	}
	i_info("%s: index rebuilt from the Maildir (moatadm)", box->path);
	/* The reset index must be compared with the Maildir now: neither
	   the directory mtimes nor the process's watch (which trusts an
	   index whose modseq only went up) would make the sync scan. */
	box->scan_dirty = true;
	box->index->rebuilt = true;
	return mailbox_sync(box, true, NULL, NULL, error_r);
}
