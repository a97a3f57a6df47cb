#ifndef AUTH_WORKER_DB_H
#define AUTH_WORKER_DB_H
/* The blocking lookups auth-worker runs for auth: PAM, /etc/shadow and
   the system's passwd database (NSS). */

#include "mempool.h"

#include <sys/types.h>

/* Default PAM service name when a pam passdb gives no args. */
#define AUTH_WORKER_PAM_DEFAULT_SERVICE "moat"

enum auth_worker_verdict {
	AUTH_WORKER_VERDICT_OK,
	AUTH_WORKER_VERDICT_AUTHFAILED,   /* unknown user or wrong password */
	AUTH_WORKER_VERDICT_NOLOGIN,      /* right password, account refused */
	AUTH_WORKER_VERDICT_TEMPFAIL,     /* logged */
};

/* driver "pam" (args: the PAM service name) or "shadow". On OK, *user_r
   is the canonical user name (from pool). */
enum auth_worker_verdict
auth_worker_db_passv(pool_t pool, const char *driver, const char *args,
		     const char *user, const char *password, const char *rip,
		     const char **user_r);

/* driver "passwd": 1 found, 0 unknown, -1 error (logged). */
int auth_worker_db_user(pool_t pool, const char *driver, const char *user,
			uid_t *uid_r, gid_t *gid_r, const char **home_r);

const char *auth_worker_verdict_code(enum auth_worker_verdict verdict);

#endif
