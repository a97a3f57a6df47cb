#ifndef MAIL_CACHE_H
#define MAIL_CACHE_H
/* moat.index.cache: fields cached per message (ENVELOPE, BODYSTRUCTURE,
   header fields, sort keys, MIME part offsets...), named by short field
   names ("envelope", "hdr.subject"). Only a cache: it may be deleted or
   garbled at any time, which costs lookups (misses), never mail.

   Records are appended; an index record points at the newest record of
   its message, which chains to older ones. Every lookup validates the
   offsets, lengths, uid and crc of what it reads, so a garbled file is a
   miss, never a crash. Byte layout: doc/index-format.md. */

#include "mail-index.h"

#include <stddef.h>

/* Field names are short identifiers; longer ones are refused. */
#define MAIL_CACHE_FIELD_NAME_MAX 31
/* Fields one cache file can name (registry in its header). */
#define MAIL_CACHE_MAX_FIELDS 64
/* One field value: a BODYSTRUCTURE of a huge MIME tree stays below. */
#define MAIL_CACHE_FIELD_MAX_SIZE (1024U * 1024)
/* Records followed per lookup, against loops in a garbled file. */
#define MAIL_CACHE_MAX_CHAIN 32

/* Queue field of message uid (nonzero, known to the index by the time of
   commit) for the commit of t. Returns 0, -1 if the name or size is not
   acceptable. */
int mail_cache_add(struct mail_index_transaction *t, uint32_t uid,
		   const char *field, const void *data, size_t size);

/* Look up field of view's message seq. Returns 1 with *data_r (valid
   until the next sync or cache call of this handle), 0 on a miss. */
int mail_cache_lookup(struct mail_index_view *view, uint32_t seq,
		      const char *field, const void **data_r, size_t *size_r);

/* Rewrite the cache with only the newest value of each field of the
   view's messages. The view must be at the end of the log (sync first);
   otherwise nothing is done. Returns 1 if compressed, 0 if not, -1. */
int mail_cache_compress(struct mail_index_view *view, const char **error_r);

/* Bytes of the cache file, and of it those that the view's messages
   still reference (O(messages)): compress when used is much smaller. */
void mail_cache_get_usage(struct mail_index_view *view,
			  uint64_t *file_size_r, uint64_t *used_r);

/* Validate a cache file image (fuzzing, admin tool): walks every record.
   Returns the number of valid records. */
unsigned int mail_cache_check_mem(const void *data, size_t size);

#endif
