#ifndef MAILDIR_SYNC_RENAMES_H
#define MAILDIR_SYNC_RENAMES_H
/* A sync without a readdir of cur/: when every foreign change the
   process's watch saw since its trust was a rename that kept the base
   name (another Maildir tool changing flags: maildir-watch.h), the new
   names' flags go to the index directly. Each base's uid is found by one
   pass over moat.uidlist (maildir-uidlist-find.h); a name is taken only
   if the file is still there under the uidlist lock (as the scan's rule
   in maildir-sync.c: our writers rename only under it). Anything odd -
   a base not in the uidlist or the index, a name the scan would not
   index, two current names of one base - and it answers "scan". */

#include "mailbox-private.h"

/* Returns 1 when the renames are in the index (committed if any flags
   changed; the caller syncs the view and trusts the watch at *gen_r), 0
   when the folder must be scanned (also when there are no renames to
   apply), -1 on error (error_r). */
int maildir_sync_renames(struct mailbox *box, uint64_t *gen_r,
			 const char **error_r);

#endif
