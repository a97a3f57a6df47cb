#ifndef LMTP_DELIVERY_H
#define LMTP_DELIVERY_H
/* Delivery sockets to the users' imap processes (moat-deliver,
   doc/architecture.md), kept for the next recipient of the same user.

   A recipient is resolved by master (lmtp-master.h), which hands over one
   end of a socket to the user's imap process. Once that recipient has its
   answer the socket is in step again (one DELIVER at a time) and goes to
   this process's pool for LMTP_DELIVERY_REUSE_MSECS: a RCPT of the same
   userdb key in that time takes it instead of a new lookup through master
   and auth, a new socket and a new handshake. Under a stream of mail for
   one user (the group commit's best case) that is most of a
   transaction's routing. The time counts from master's lookup, not from
   the last use: a change of the userdb (a user removed, moved to another
   uid or home) reaches lmtp at most LMTP_DELIVERY_REUSE_MSECS later. An idle socket keeps the imap process
   (it counts as one of its connections); one whose process went away is
   dropped, never handed out (and a recipient whose socket dies before
   its DELIVER is looked up again: lmtp-client.c, rcpt_relookup()). */

#include "lmtp-common.h"

/* How long after master's lookup a socket may serve the next recipients
   of its user: many transactions of a stream, short against userdb
   changes. */
#define LMTP_DELIVERY_REUSE_MSECS 1000
/* Idle sockets in the pool of one lmtp process (an fd each, and a
   connection of an imap process); beyond it a released one is closed. */
#define LMTP_DELIVERY_POOL_MAX 64

struct lmtp_delivery;

/* A record from the imap process (args as ipc_input_callback_t; NULL =
   the socket closed). fd is the callee's. */
typedef void lmtp_delivery_callback_t(void *context, const char *const *args,
				      int fd);

/* Takes fd (from master's RCPT-OK) for key's canonical user. */
struct lmtp_delivery *
lmtp_delivery_create(struct lmtp_process *proc, int fd, const char *key,
		     const char *user);
/* An idle socket for key out of the pool, or NULL. */
struct lmtp_delivery *
lmtp_delivery_take(struct lmtp_process *proc, const char *key);
/* Who hears its records from now on (before the loop runs again). */
void lmtp_delivery_attach(struct lmtp_delivery *delivery,
			  lmtp_delivery_callback_t *callback, void *context);
/* The canonical user (master's answer when the socket was made). */
const char *lmtp_delivery_get_user(const struct lmtp_delivery *delivery);
/* Send DELIVER <id> <mailbox> <return-path> <delivered-to> with the
   message's memfd. Returns 0 or -1 (the socket is dead). */
int lmtp_delivery_send(struct lmtp_delivery *delivery, int fd, const char *id,
		       const char *mailbox, const char *return_path,
		       const char *delivered_to);
/* Done with it. in_step: no DELIVER is waiting for its answer, so the
   next recipient may use it (pooled); else it is closed. *delivery =
   NULL. */
void lmtp_delivery_release(struct lmtp_delivery **delivery, bool in_step);
/* Closes the pool (process exit). */
void lmtp_delivery_pool_deinit(struct lmtp_process *proc);

#endif
