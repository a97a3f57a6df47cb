#ifndef RFC2047_H
#define RFC2047_H
/* RFC 2047 encoded words ("=?charset?B?...?=") in header values, decoded
   to UTF-8, and charset conversion through iconv. */

#include "mempool.h"

/* Longest input a single decode call accepts; longer input is cut (header
   values are bounded by the parser well below this). */
#define RFC2047_MAX_INPUT (1024 * 1024)

/* Convert data in charset to UTF-8. Invalid input sequences become
   U+FFFD. Returns NULL if iconv does not know the charset. */
const char *charset_to_utf8(pool_t pool, const char *charset,
			    const void *data, size_t size);

/* Decode the encoded words of an unstructured header value (Subject,
   display names) to UTF-8. Whitespace between two encoded words is
   dropped (RFC 2047 section 6.2). Malformed words and words in unknown
   charsets are kept as they are written. Bytes outside encoded words are
   kept, invalid UTF-8 among them replaced by U+FFFD. */
const char *rfc2047_decode(pool_t pool, const char *value, size_t len);

#endif
