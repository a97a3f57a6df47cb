#ifndef ADMIN_QUERY_H
#define ADMIN_QUERY_H
/* moatadm's search query (doc/moatadm.8, "QUERY") to an IMAP SEARCH
   program: keys are words (all, seen, savedbefore 30d, from alice, ...),
   so scripts need no IMAP quoting. */

#include "admin-common.h"

/* The longest SEARCH program built: far above any hand-written query. */
#define ADMIN_QUERY_MAX 8192

/* argv[0..argc) to a search program in pool (CHARSET UTF-8 in front when
   a string is not ASCII). now: the time intervals count back from.
   Returns 0, or -1 with *error_r (a usage error). */
int admin_query_build(pool_t pool, int argc, char **argv, time_t now,
		      const char **program_r, const char **error_r);

#endif
