#ifndef IMAP_CACHE_TEXT_H
#define IMAP_CACHE_TEXT_H
/* The stored form of the IMAP texts FETCH keeps in the mail cache
   (ENVELOPE, BODY, BODYSTRUCTURE). They are mostly IMAP syntax and
   repeated addresses, so raw deflate primed with a dictionary of that
   syntax stores them in about half (ENVELOPE) or a quarter
   (BODYSTRUCTURE) of their size: index + cache stays under 500 bytes a
   message on a real mailing list.

   Layout: one tag byte, 'T' = the text follows as is; 'Y' = raw deflate
   data made with dictionary 1 (imap-cache-text.c; never changed: a new
   dictionary needs a new tag), one stream up to its end; 'Z' (written by
   earlier builds, still read) = the text's length (LEB128, at most
   IMAP_CACHE_TEXT_MAX), then the same deflate data. Unpacking validates
   everything: garbled data is a miss, never a crash or an oversized
   buffer. */

#include "buffer.h"

#include <stddef.h>

/* Texts longer than this are not cached (only a hostile message has
   one); it also bounds what unpacking may produce. */
#define IMAP_CACHE_TEXT_MAX (1024 * 1024)
/* Texts shorter than this are stored as they are. */
#define IMAP_CACHE_TEXT_MIN_PACK 16

/* Replace out's contents with the stored form of text. Returns 0, or -1
   if text is too long to cache (or out too small). */
int imap_cache_text_pack(const void *text, size_t len, buffer_t *out);
/* Whether data is a packed (deflated) stored form: unpacking it costs
   more than copying (imap-text-memo.h keeps only those). */
bool imap_cache_text_is_packed(const void *data, size_t size);
/* Append the text stored in data to out. Returns 0, or -1 if data is not
   a valid stored form (or out too small); out is unchanged then. */
int imap_cache_text_unpack(const void *data, size_t size, buffer_t *out);

#endif
