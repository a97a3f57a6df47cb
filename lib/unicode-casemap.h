#ifndef UNICODE_CASEMAP_H
#define UNICODE_CASEMAP_H
/* The i;unicode-casemap collation of RFC 5051: text is prepared into a
   "titlecased canonicalized UTF-8" string, and prepared strings are then
   compared, ordered and searched as bytes (memcmp, memmem). Used by
   SEARCH (substring matching), SORT and THREAD (RFC 5256 section 7).

   Each code point is replaced by its simple titlecase mapping from
   UnicodeData.txt if it has one, then by its decomposition (canonical
   or compatibility) applied recursively: "a" -> "A", U+00E9 -> "E"
   U+0301, U+00A0 NO-BREAK SPACE -> " ", U+FB01 LIGATURE FI -> "fi",
   U+FF21 FULLWIDTH A -> "A", U+01C4 -> "D" "z" U+030C. Combining marks
   are not reordered (RFC 5051 does not ask for it), and nothing is
   titlecased again after decomposing ("fi" stays lower case).
   The tables are generated at build time from the UnicodeData.txt of
   Debian's unicode-data package (lib/unicode-gen.c).

   Input is UTF-8 as RFC 3629 defines it (no overlong forms, surrogates
   or code points above U+10FFFF). Bytes that do not form a valid
   character are copied unchanged, one at a time, so folding never
   fails and is deterministic; a search key with the same bytes still
   matches them. (RFC 5051 compares such a string with i;octet as a
   whole; per byte keeps streaming possible and differs only for
   invalid input.) Folding is per character: fold(a b) = fold(a)
   fold(b) when a ends on a character boundary.

   ASCII costs one table-free step per byte; other characters a
   two-level table lookup. */

#include "buffer.h"

#include <stddef.h>
#include <stdint.h>

/* Most bytes one input character folds into (U+FDFA gives 33). */
#define UNICODE_CASEMAP_CHAR_MAX 64
/* Most output bytes per input byte (U+FDFA: 3 bytes give 33). Output
   room for size * UNICODE_CASEMAP_GROWTH_MAX always suffices. */
#define UNICODE_CASEMAP_GROWTH_MAX 12

/* Fold in[0..in_size) into out, as many whole characters as fit in
   out_size bytes. Returns the bytes written; *in_used_r is the input
   consumed (less than in_size only when out is full). An incomplete
   sequence at the end of in counts as invalid bytes: callers that feed
   a stream keep it back (unicode_utf8_partial_tail()). */
size_t unicode_casemap(const void *in, size_t in_size, size_t *in_used_r,
		       void *out, size_t out_size);

/* Append the folding of data to buf. Returns 0, or -1 if it would pass
   buf's max_size: buf then holds the folding of the longest prefix that
   fits, cut at a character boundary. */
int unicode_casemap_append(buffer_t *buf, const void *data, size_t size);

/* Length (0..3) of an incomplete UTF-8 sequence at the end of data: the
   bytes a streaming caller keeps for the next chunk. */
size_t unicode_utf8_partial_tail(const void *data, size_t size);

/* Identifies the folding (the tables and the algorithm): values folded
   under another id must be folded again (cached sort keys). Never 0. */
uint32_t unicode_casemap_id(void);

#endif
