#ifndef AUTH_PENALTY_SYNC_H
#define AUTH_PENALTY_SYNC_H
/* The penalty table survives a restart of auth (a crash, a reload):
   master holds the authoritative copy, written through by auth on every
   change of a penalised address, and hands it to each new auth before
   that auth gets its first imap-login connection.

     auth -> master:  PENALTY <key> <failures> <decay_age> <next_in>
     master -> auth:  PENALTY-LOAD (<key> <failures> <decay_age> <next_in>)*
     auth -> master:  PENALTY-ACK            (send the next PENALTY-LOAD)

   Times are milliseconds relative to the sender's now (auth-penalty.h,
   struct auth_penalty_state). Only penalised addresses produce records,
   so a login from a clean address costs nothing here. */

#include "auth-common.h"

/* Entries per PENALTY-LOAD: four fields each within IPC_MAX_ARGS. */
#define AUTH_PENALTY_SYNC_LOAD_ENTRIES 15

/* Start writing auth->penalty's changes to master. */
void auth_penalty_sync_init(struct auth *auth);
/* PENALTY-LOAD from master: restore its entries, answer PENALTY-ACK.
   A malformed record is logged and its entries dropped. */
void auth_penalty_sync_load(struct auth *auth, const char *const *args);

#endif
