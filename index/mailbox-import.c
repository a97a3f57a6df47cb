/* Taking over a folder another server served, at its first open by moat
   (maildir-import.h, doc/migration.md). */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "maildir-import.h"

#include <sys/stat.h>
#include <time.h>

/* A folder moat never indexed: no moat.uidlist, and an index that never
   had a message (the one mailbox_open() just created). */
static bool import_needed(struct mailbox *box)
{
	char path[PATH_MAX];
	struct stat st;
	struct mail_index_status status;

	if (snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME,
		     box->path) >= (int)sizeof(path) ||
	    stat(path, &st) == 0 || errno != ENOENT)
		return false;
	mail_index_view_get_status(box->view, &status);
	return status.messages_count == 0 && status.next_uid <= 1;
}

static void import_keywords(struct mailbox *box,
			    enum maildir_import_source source)
{
	const char *error = NULL;
	int ret = 0;

	if (source == MAILDIR_IMPORT_DOVECOT)
		ret = maildir_import_dovecot_keywords(box->keywords, box->path,
						      &error);
	else if (source == MAILDIR_IMPORT_COURIER)
		ret = maildir_import_courier_keywords(box->keywords, box->path,
						      &error);
	if (ret < 0) {
		i_error("%s: importing the keywords failed (messages show "
			"none of them): %s", box->path, error);
	}
}

/* A corrupt foreign list: the UIDs are lost, so clients must see a
   UIDVALIDITY above the one they may have cached from it. */
static uint32_t import_new_uidvalidity(uint32_t foreign)
{
	uint32_t now = (uint32_t)time(NULL);

	return foreign != 0 && foreign >= now && foreign < UINT32_MAX ?
		foreign + 1 : now;
}

int mailbox_import_foreign(struct mailbox *box, const char **error_r)
{
	struct maildir_uidlist *ul = box->uidlist;
	enum maildir_import_source source;
	uint32_t foreign_uidvalidity;

	if (!import_needed(box))
		return 0;
	if (maildir_uidlist_lock(ul, error_r) < 0)
		return -1;
	/* another process may have done it while we waited */
	if (!maildir_uidlist_was_reset(ul)) {
		maildir_uidlist_unlock(ul);
		return 0;
	}
	int ret = maildir_import_uidlist(ul, box->path, &source,
					 &foreign_uidvalidity);
	if (ret == 0) {
		/* no uidlist: the first scan numbers the files by name */
		maildir_uidlist_unlock(ul);
		return 0;
	}
	import_keywords(box, source);
	if (ret < 0) {
		maildir_uidlist_import_begin(ul,
			import_new_uidvalidity(foreign_uidvalidity), 1);
	} else {
		/* what the other server listed is not news: \Recent only for
		   the files that came after it */
		box->import_first_recent = maildir_uidlist_get_next_uid(ul);
		/* Courier has no CONDSTORE: its clients hold no modseqs */
		if (source == MAILDIR_IMPORT_DOVECOT)
			box->import_modseq_floor = MAILDIR_IMPORT_MODSEQ_FLOOR;
	}
	ret = maildir_uidlist_write(ul, error_r);
	maildir_uidlist_unlock(ul);
	return ret;
}
