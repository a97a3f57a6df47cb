#ifndef IMAP_BODYSTRUCTURE_H
#define IMAP_BODYSTRUCTURE_H
/* IMAP BODY and BODYSTRUCTURE (RFC 3501 section 7.4.2, RFC 9051 "body")
   from a parsed part tree. BODYSTRUCTURE adds the extension data: md5,
   disposition, language and location for single parts; parameters,
   disposition, language and location for multiparts. Sizes are IMAP
   (CRLF) sizes. */

#include "buffer.h"
#include "mempool.h"

struct message_part;

/* Write the structure of part (normally the root). pool holds temporary
   parse results. */
void imap_bodystructure_write(pool_t pool, const struct message_part *part,
			      buffer_t *out, bool extended);

#endif
