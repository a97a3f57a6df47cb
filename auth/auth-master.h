#ifndef AUTH_MASTER_H
#define AUTH_MASTER_H
/* The channel to master (moat-auth-master protocol) on MASTER_CHANNEL_FD:
   LOGIN-CONN hands auth a new imap-login connection, REDEEM turns a
   login token into the user's uid, gid, home and mail location, USERDB
   looks a mail recipient up (auth-userdb.h), PENALTY-LOAD gives a new
   auth the penalty table master keeps (auth-penalty-sync.h). */

#include "auth-common.h"

void auth_master_input(void *context, const char *const *args, int fd);

#endif
