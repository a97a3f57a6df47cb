#ifndef MESSAGE_ADDRESS_H
#define MESSAGE_ADDRESS_H
/* RFC 5322 address lists (From, To, Cc, ...) including groups and the
   obsolete syntax (routes, phrases with dots, missing pieces), for the
   IMAP ENVELOPE. Values stay as written: encoded words are not decoded.

   Groups appear as in RFC 3501: a start marker (mailbox = group name,
   domain = NULL) followed by the members and an end marker (all NULL). */

#include "mempool.h"

/* Addresses kept of one header; more are dropped (bounds the ENVELOPE of
   a message with a 64 KiB To:). */
#define MESSAGE_ADDRESS_MAX_COUNT 10000

/* Placeholders for pieces a broken address lacks, so a client still sees
   a well-formed ENVELOPE address. */
#define MESSAGE_ADDRESS_MISSING_MAILBOX "MISSING_MAILBOX"
#define MESSAGE_ADDRESS_MISSING_DOMAIN "MISSING_DOMAIN"
#define MESSAGE_ADDRESS_SYNTAX_ERROR "SYNTAX_ERROR"
/* A route ("<@a,@b:") not ended by its ':' (Dovecot's word for it). */
#define MESSAGE_ADDRESS_INVALID_ROUTE "INVALID_ROUTE"

struct message_address {
	struct message_address *next;
	/* NULL means NIL. */
	const char *name, *route, *mailbox, *domain;
	bool invalid_syntax;
};

/* Parse an address list; returns NULL if there is no address at all. */
struct message_address *message_address_parse(pool_t pool, const char *str,
					      size_t len);

#endif
