#ifndef IMAP_ADMIN_H
#define IMAP_ADMIN_H
/* moatadm's requests that master passes to a user's imap process
   (moat-imap-master, doc/architecture.md):
     WHO <id>           -> WHO-REPLY <id> <sessions> <address>...
     KICK <id> <reason> -> KICK-REPLY <id> <sessions ended>
     ADMIN-OP <id> quota-recalc ""
     ADMIN-OP <id> index-check|index-rebuild <mailbox, UTF-8; "" = all>
                        -> ADMIN-OP-ROW <id> <key> <value>... (index-check,
                           index-rebuild: one per mailbox), then
                           ADMIN-OP-REPLY <id> ok|notfound|failed|fail <text>
                           [<key> <value>]...
   Master is trusted: a malformed record is fatal, as for its others. */

#include "imap-common.h"
#include "ipc.h"

/* Distinct client addresses listed in one WHO-REPLY: the record's field
   limit (IPC_MAX_ARGS) less the name, id and count. */
#define IMAP_ADMIN_WHO_ADDRESSES_MAX (IPC_MAX_ARGS - 4)

/* True if args was WHO or KICK (answered on master). */
bool imap_admin_input(struct imap_user *user, struct ipc_conn *master,
		      const char *const *args);

#endif
