#ifndef IMAP_FETCH_HDR_H
#define IMAP_FETCH_HDR_H
/* BODY[HEADER.FIELDS (...)] of a whole message through the mail cache.

   Decided per field, as ENVELOPE is: the first FETCH of a field of a
   message reads the file (and answers from it, as before), then caches
   what the header holds of each listed field; later FETCHes of fields
   that are all cached open no file. A field's value is each of its
   occurrences with its place among the header's fields, so a list of
   several names comes out in the header's order, exactly as the file
   would give it (imap-body-stream.c is the reference the tests compare
   against). An absent field is cached as such. Only headers of up to
   IMAP_FETCH_HDR_MAX bytes are cached; BODY[1.HEADER.FIELDS ...],
   .NOT and BINARY always read the file. */

#include "imap-fetch.h"

/* The biggest header (CRLF form, with its blank line) cached, and so
   the most an answer composed from the cache holds. */
#define IMAP_FETCH_HDR_MAX (64 * 1024)
/* Cache field names: "hdr.<name in lower case>.<version>"; a longer
   header name (rare) is not cached. Bump the version when what a value
   means changes, so that old values are never looked up. */
#define IMAP_FETCH_HDR_VERSION "1"
#define IMAP_FETCH_HDR_NAME_MAX 24

/* Whether item is a BODY[HEADER.FIELDS (...)] the cache can serve. */
bool imap_fetch_hdr_cacheable(const struct imap_fetch_item *item);

/* The section's text composed from the cache into out (reset first).
   Returns 1 when every listed field is cached, 0 otherwise. */
int imap_fetch_hdr_lookup(struct mailbox *box, uint32_t seq,
			  const struct imap_section *sec, buffer_t *out);

/* Read seq's header from fd, its file (ms holds its part tree), and
   queue the cache value of every field the section lists. Only a cache:
   failures are not errors (logged at debug level). */
void imap_fetch_hdr_fill(struct imap_msg_structure *ms, struct mailbox *box,
			 uint32_t seq, int fd, const struct imap_section *sec);

#endif
