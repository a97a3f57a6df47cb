#ifndef AUTH_USERDB_H
#define AUTH_USERDB_H
/* Userdb lookups master asks for mail delivery (USERDB records of
   moat-auth-master): no password, no nologin, answered with USERDB-USER,
   USERDB-NOTFOUND or USERDB-FAIL; lookups in a worker userdb (passwd) run
   asynchronously like a login's. */

#include "auth-common.h"

/* Lookups in flight at once: master bounds its side too. */
#define AUTH_USERDB_MAX_PENDING 10000

/* USERDB <id> <user> */
void auth_userdb_lookup(struct auth *auth, const char *const *args);
/* Drop every lookup waiting for a worker (shutdown). */
void auth_userdb_abort_all(struct auth *auth);

#endif
