#ifndef UTF8_H
#define UTF8_H
/* Strict UTF-8 (RFC 3629 section 4): no overlong forms, no surrogates
   (U+D800..U+DFFF), nothing above U+10FFFF, no lone continuation bytes.
   Used where a protocol requires valid UTF-8 (RFC 6855 quoted strings,
   RFC 6531 SMTPUTF8 addresses). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decode the sequence at data (size > 0 bytes available). Returns its
   length (1..4) and sets *cp_r, or -1 if the bytes there are not a
   complete valid sequence. */
int utf8_decode(const void *data, size_t size, uint32_t *cp_r);
/* Whether all size bytes are valid UTF-8 (NUL counts as U+0000). */
bool utf8_is_valid(const void *data, size_t size);
/* Whether any of the size bytes has the high bit set. */
bool utf8_has_8bit(const void *data, size_t size);

#endif
