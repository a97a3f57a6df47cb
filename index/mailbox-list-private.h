#ifndef MAILBOX_LIST_PRIVATE_H
#define MAILBOX_LIST_PRIVATE_H
/* Shared by mailbox-list.c, mailbox-list-ops.c and
   mailbox-subscriptions.c only. */

#include "mailbox-list.h"

#define MAILBOX_LIST_ERROR_MAX 512

/* Format an error into a static buffer (valid until the next call). */
const char *mailbox_list_set_error(const char *fmt, ...) ATTR_FORMAT(1, 2);

/* Read the subscriptions file: normalized names (invalid lines are
   skipped), each and the array i_malloc'd. A missing file is empty.
   Returns 0 or -1 (logged). */
int mailbox_subscriptions_read(const char *root, char ***names_r,
			       unsigned int *count_r);

/* mailbox-list-cache.c: the folders found by the last scan of the root,
   in MAILBOX_LIST_CACHE_DIR, valid while the root keeps the mtime that
   scan started with (folder create/delete/rename by anyone changes it)
   and each \Noselect folder keeps its mtime (a cur/ made inside changes
   it); the rule is explained in mailbox-list-cache.c. */
#define MAILBOX_LIST_CACHE_DIR "moat.mailboxlist"
typedef void mailbox_list_cache_add_func_t(void *context, const char *name,
					   enum mailbox_list_node_flags flags);
/* If the cache was written for a root with this mtime, call add() for
   each folder and return 1; else (missing, stale, garbled) return 0. */
int mailbox_list_cache_read(const char *root, const struct timespec *mtime,
			    mailbox_list_cache_add_func_t *add, void *context);
/* Store the folders (SELECTABLE or NOSELECT) of a scan that began and
   ended with the root at mtime; mtimes[i] is the folder's mtime as the
   scan saw it before looking for its cur/ (used for NOSELECT ones).
   Nothing is stored while an mtime is within 2 s of now (a change in the
   same tick would not show). */
void mailbox_list_cache_write(const char *root, const struct timespec *mtime,
			      const struct mailbox_list_node *nodes,
			      const struct timespec *mtimes,
			      unsigned int count);
/* After moat changed the folders: give the root a new mtime (also a
   \Noselect <-> selectable change, which touches no root entry) and
   drop the file. */
void mailbox_list_cache_invalidate(const char *root);
/* Whether mtime is old enough (at now) that any later change of the file
   gets a different mtime: only then may "same mtime" mean "unchanged". */
bool mailbox_list_mtime_settled(const struct timespec *mtime,
				const struct timespec *now);

/* mailbox-list-ops.c: RENAME is journaled in this root file and rolled
   forward (doc/mail-storage.md). Finish a RENAME whose process died;
   a no-op (one failed open) without a journal. Returns 0 or -1 (logged). */
#define MAILBOX_RENAME_JOURNAL "moat.rename.journal"
int mailbox_list_rename_recover(const char *root);
/* The same for a caller that has just stat()ed root (root_st; NULL if
   that failed): while root keeps an mtime at which this process found no
   journal, there is none (writing one changes the mtime), so no open.
   Returns 1 if a RENAME was finished (root changed: stat it again), 0 if
   there was none to finish, -1 (logged). */
struct stat;
int mailbox_list_rename_recover_stat(const char *root,
				     const struct stat *root_st);
/* Tests only: hook(step) runs after each step of a RENAME (and of its
   recovery), so a test can stop there to simulate a crash. NULL = none. */
typedef void mailbox_list_rename_hook_t(unsigned int step);
void mailbox_list_rename_set_hook(mailbox_list_rename_hook_t *hook);

#endif
