#ifndef MAILDIR_UIDLIST_LOOKUP_H
#define MAILDIR_UIDLIST_LOOKUP_H
/* Finding one message's base name in moat.uidlist without holding the
   list in memory: every MAILDIR_UIDLIST_LOOKUP_STEP-th line's (uid,
   offset) is kept (8 bytes per STEP messages: 150 kB for 600k), and a
   lookup reads the few lines after the nearest sample. The file is
   sampled again only when a uid is missing: from the start when it was
   replaced, from the last sampled line on when lines were appended. */

#include "maildir-uidlist.h"

#include <stdint.h>

#define MAILDIR_UIDLIST_LOOKUP_STEP 32

struct maildir_uidlist_lookup;

struct maildir_uidlist_lookup *maildir_uidlist_lookup_init(const char *dir);
void maildir_uidlist_lookup_deinit(struct maildir_uidlist_lookup **lookup);

/* Returns 1 with the base name in base_r (NUL-terminated, at most
   MAILDIR_UIDLIST_MAX_LINE bytes) and its S= size (or
   MAILDIR_SIZE_UNKNOWN), 0 if uid is not in the file, -1 on I/O error. */
int maildir_uidlist_lookup(struct maildir_uidlist_lookup *lookup, uint32_t uid,
			   char base_r[MAILDIR_UIDLIST_MAX_LINE + 1],
			   uint64_t *size_r, const char **error_r);
/* Number of samples held (tests). */
unsigned int maildir_uidlist_lookup_samples(struct maildir_uidlist_lookup *lookup);

#endif
