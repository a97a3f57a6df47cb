#ifndef LMTP_MASTER_H
#define LMTP_MASTER_H
/* The moat-lmtp-master channel on MASTER_CHANNEL_FD: recipients are
   resolved by master (RCPT <id> <userdb key>), which answers
   RCPT-OK <id> <user> with one end of a delivery socket to the user's
   imap process, or RCPT-FAIL <id> notfound|tempfail <text>. */

#include "lmtp-common.h"

enum lmtp_rcpt_result {
	LMTP_RCPT_OK = 0,
	LMTP_RCPT_NOTFOUND,
	LMTP_RCPT_TEMPFAIL,
};

/* fd: the delivery socket (OK only; the callee owns it). user: the
   canonical user name (OK only). Valid during the call. */
typedef void lmtp_rcpt_callback_t(enum lmtp_rcpt_result result,
				  const char *user, int fd, void *context);

void lmtp_master_connect(struct lmtp_process *proc);
void lmtp_master_deinit(struct lmtp_process *proc);

/* Ask master for the recipient with userdb key. The callback is called
   once, later (never from within this call), unless the wait is aborted. */
struct lmtp_rcpt_wait *
lmtp_master_rcpt(struct lmtp_process *proc, const char *key,
		 lmtp_rcpt_callback_t *callback, void *context);
void lmtp_master_rcpt_abort(struct lmtp_rcpt_wait **wait);

void lmtp_master_load(struct lmtp_process *proc, unsigned int clients,
		      bool accepting);

/* Metrics: a recipient got its DATA answer with reply code (its first
   digit decides the class). The counts go to master as deltas in one
   DELIVERY-STATS <delivered> <tempfail> <permfail> <reused> record every
   LMTP_STATS_FLUSH_MSECS when something changed, and at exit; reused
   counts the recipients accepted over a kept delivery socket
   (lmtp-delivery.h), which master adds to the routed recipients. */
#define LMTP_STATS_FLUSH_MSECS 5000
void lmtp_master_count_delivery(struct lmtp_process *proc, const char *code);

#endif
