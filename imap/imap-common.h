#ifndef IMAP_COMMON_H
#define IMAP_COMMON_H
/* Included first by every file of the post-login imap process. */

#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "buffer.h"
#include "strfuncs.h"
#include "ioloop.h"
#include "iostream.h"
#include "imap-parser.h"
#include "moat-settings.h"
#include "mailbox.h"

/* Only what works is advertised: no IMAP4rev2 yet (needs more). */
#define IMAP_CAPABILITY "IMAP4rev1 LITERAL+ ID UNSELECT UIDPLUS MOVE IDLE ENABLE" \
	" CHILDREN NAMESPACE LIST-EXTENDED LIST-STATUS SPECIAL-USE STATUS=SIZE" \
	" ESEARCH SEARCHRES WITHIN BINARY"

struct client;

/* The process: one user, all of the user's connections. Owned by main.c;
   clients get a pointer. */
struct imap_user {
	struct ioloop *ioloop;
	const struct moat_settings *set;
	const char *username;
	const char *mail_root;      /* the Maildir root (INBOX) */
	struct client *clients;     /* linked list */
	unsigned int client_count;
};

/* main.c: a client was freed (linger / shutdown bookkeeping). */
void imap_user_client_gone(struct imap_user *user);

#endif
