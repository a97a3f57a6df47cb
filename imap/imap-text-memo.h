#ifndef IMAP_TEXT_MEMO_H
#define IMAP_TEXT_MEMO_H
/* The unpacked form of recently used stored texts (imap-cache-text.h:
   the cached ENVELOPE, BODY and BODYSTRUCTURE), shared by every session
   of the user's process. Unpacking (inflate) is most of the CPU of a
   FETCH served from the cache; when several sessions of one user fetch
   the same messages (a phone and a desktop, a client's several
   connections) or a client fetches the same window again, only the
   first unpacks them.

   Content-addressed: an entry is found by the stored bytes, compared in
   full, so it is never another message's text and needs no invalidation
   (one stored form unpacks to one text). Memory is one arena of the
   configured size (imap_fetch_text_memo), allocated at its first use;
   the oldest entries are overwritten first. */

#include "buffer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0 turns the memo off. Texts bigger than an eighth of the arena are
   not kept (one would push out hundreds of small ones). */
void imap_text_memo_init(size_t arena_size);
void imap_text_memo_deinit(void);

/* If the memo holds the text that stored (stored_size bytes) unpacks
   to, append it to out: true. False on a miss, or if out cannot hold it
   (out is unchanged then). */
bool imap_text_memo_get(const void *stored, size_t stored_size,
			buffer_t *out);
/* Remember that stored unpacks to text. */
void imap_text_memo_put(const void *stored, size_t stored_size,
			const void *text, size_t text_len);

/* Texts served by imap_text_memo_get() since start (FETCH's debug
   line). */
extern uint64_t imap_text_memo_hits;

#endif
