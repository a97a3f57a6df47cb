#ifndef IMAP_UIDONLY_H
#define IMAP_UIDONLY_H
/* UIDONLY (RFC 9586): once a client sent ENABLE UIDONLY, no sequence
   number goes either way. Commands that take a sequence set need their
   UID form (imap-client.c refuses the others, and UID SEARCH, SORT and
   THREAD refuse a sequence-set key, with UIDREQUIRED); every FETCH
   response becomes "* <uid> UIDFETCH (...)" (3.3, 3.6) and every
   expunge a VANISHED (3.4, as with QRESYNC). EXISTS is unchanged. */

#include "imap-client.h"

/* RFC 9586 3: the BAD for a command that used message numbers. */
#define IMAP_UIDREQUIRED_TEXT \
	"[UIDREQUIRED] Message numbers are not allowed once UIDONLY is enabled."

/* The start of a FETCH response of seq in the selected mailbox:
   "* <seq> FETCH (", or "* <uid> UIDFETCH (" with UIDONLY. */
int imap_fetch_resp_begin(struct client *client, uint32_t seq, buffer_t *buf);
/* The same into a line buffer of size (at least 32 bytes). */
void imap_fetch_resp_prefix(struct client *client, uint32_t seq, char *line,
			    size_t size);
/* The "UID n " item of a FETCH update is redundant in a UIDFETCH: true if
   one is wanted for client (the caller's own rules apart). */
bool imap_fetch_resp_wants_uid(const struct client *client);

#endif
