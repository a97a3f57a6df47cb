#ifndef IMAP_STATUS_H
#define IMAP_STATUS_H
/* The STATUS data items (RFC 9051 6.3.11, RFC 8438 SIZE, RFC 7889
   APPENDLIMIT), shared by STATUS and LIST RETURN (STATUS ...) (RFC
   5819). */

#include "imap-client.h"

enum imap_status_items {
	IMAP_STATUS_MESSAGES = 0x01,
	IMAP_STATUS_UIDNEXT = 0x02,
	IMAP_STATUS_UIDVALIDITY = 0x04,
	IMAP_STATUS_UNSEEN = 0x08,
	IMAP_STATUS_DELETED = 0x10,
	IMAP_STATUS_SIZE = 0x20,
	IMAP_STATUS_RECENT = 0x40,
	IMAP_STATUS_APPENDLIMIT = 0x80,     /* RFC 7889 3.1 */
	IMAP_STATUS_HIGHESTMODSEQ = 0x100,  /* RFC 7162 3.1.7 */
	IMAP_STATUS_DELETED_STORAGE = 0x200, /* RFC 9208 4.1.4 */
	IMAP_STATUS_MAILBOXID = 0x400,      /* RFC 8474 4.3 */
};

/* A parenthesized list of item names; false if empty or unknown. */
bool imap_status_parse_items(const struct imap_arg *arg,
			     enum imap_status_items *items_r);
/* Send "* STATUS <name> (...)" for a normalized name. Uses the client's
   selected view when it is that mailbox, else mailbox_status_get(): the
   folder's moat.index alone when its directories did not change since
   the last scan, or one read-only open + sync (SIZE reads a message only
   when neither its file name nor the cache carries its size). Returns 1,
   0 if the mailbox doesn't exist, -1 on error (logged). */
int imap_status_send(struct client *client, const char *name,
		     enum imap_status_items items);

/* The user's open index handles (imap_status_cache_mailboxes of them)
   that keep STATUS of an unchanged mailbox at a few stat()s; created on
   the first STATUS, closed after IMAP_STATUS_CACHE_IDLE_SECS unused. */
#define IMAP_STATUS_CACHE_IDLE_SECS 60
struct imap_status_cache;
/* Close every handle (the last connection went, or exit). */
void imap_status_cache_free(struct imap_status_cache **cache);

#endif
