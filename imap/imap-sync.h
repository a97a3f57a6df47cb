#ifndef IMAP_SYNC_H
#define IMAP_SYNC_H
/* Untagged updates of the selected mailbox: sync it with the disk and
   tell the client about expunges, flag changes and new messages. */

#include "imap-client.h"

/* Sync and send "* N EXPUNGE" (if allowed), "* N FETCH (FLAGS ...)",
   "* N EXISTS" and "* N RECENT". Errors are logged, not fatal. */
void imap_sync_send(struct client *client, bool allow_expunge);

/* "(\Seen \Recent ...)" appended to buf. Returns -1 if buf is full. */
int imap_write_flags(buffer_t *buf, enum mail_flags flags);

#endif
