#ifndef AUTH_OAUTH2_FILE_H
#define AUTH_OAUTH2_FILE_H
/* The token-introspection file of the "oauth2-file" passdb, used by
   OAUTHBEARER and XOAUTH2 instead of asking an authorization server:
       TOKEN USER EXPIRY
   one token a line, fields separated by spaces or tabs; EXPIRY is a Unix
   time in seconds (0 = never). '#' starts a comment line; blank and
   malformed lines are skipped (malformed ones with a warning). The file
   is read at each lookup: it is meant for a few tokens (tests, service
   accounts), written by a script that renews them. */

#include "mempool.h"

#include <time.h>

/* A longer line is malformed: tokens are at most SASL's 4 KiB. */
#define AUTH_OAUTH2_FILE_MAX_LINE 8192
/* Lines read per lookup: bounds the work of one request. */
#define AUTH_OAUTH2_FILE_MAX_LINES 100000

/* Returns 1 and *user_r (from pool) if token is in the file and not
   expired at now, 0 if not, -1 if the file cannot be read (logged). */
int auth_oauth2_file_lookup(const char *path, pool_t pool, const char *token,
			    time_t now, const char **user_r);

#endif
