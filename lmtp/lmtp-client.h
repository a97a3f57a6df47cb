#ifndef LMTP_CLIENT_H
#define LMTP_CLIENT_H
/* One LMTP session with an MTA (RFC 2033): LHLO, MAIL, RCPT (resolved
   through master to a delivery socket of the user's imap process), DATA
   or BDAT into a memfd, then one reply per accepted recipient, in RCPT
   order, each sent when that recipient's imap process has the message on
   disk. Commands are handled strictly in order (PIPELINING): input waits
   while a recipient is looked up or the message is being delivered. */

#include "lmtp-common.h"

/* Takes fd (an accepted, non-blocking socket). */
struct lmtp_client *lmtp_client_create(struct lmtp_process *proc, int fd);
/* Ends the session with a 421 (process shutdown). */
void lmtp_client_destroy_all(struct lmtp_process *proc, const char *reason);

#endif
