#ifndef MAILDIR_UIDLIST_FIND_H
#define MAILDIR_UIDLIST_FIND_H
/* The uids of a few base names, found by one pass over moat.uidlist
   through a fixed buffer: memory grows with the names asked for, never
   with the folder (a sync applying another tool's renames without
   reading the whole list into memory: maildir-sync-renames.c). */

#include <stdint.h>

/* Names asked for at once (the watch keeps at most this many renames). */
#define MAILDIR_UIDLIST_FIND_MAX 2048

struct maildir_uidlist_find_item {
	const char *base;        /* not NUL-terminated */
	uint32_t base_len;
	/* out: the uid, 0 if the base is not in the file */
	uint32_t uid;
	/* out: the first item with the same base (its own index if none
	   before it) */
	uint32_t first;
};

/* Fill items[0..count) (count <= MAILDIR_UIDLIST_FIND_MAX) from
   dir/moat.uidlist. Returns 1, 0 if the file has a base twice or a line
   longer than any we write (not a list to trust), -1 on I/O error
   (error_r). A missing file finds nothing (1). */
int maildir_uidlist_find(const char *dir,
			 struct maildir_uidlist_find_item *items,
			 unsigned int count, const char **error_r);

#endif
