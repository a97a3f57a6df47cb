#ifndef IMAP_ENVELOPE_H
#define IMAP_ENVELOPE_H
/* IMAP ENVELOPE (RFC 3501 section 7.4.2, RFC 9051 "envelope") from the
   raw header values the MIME parser kept, and the IMAP string quoting
   shared with BODYSTRUCTURE. Output is appended to a buffer; the values
   are bounded by the parser, so the buffer's max_size only needs to be
   generous (IMAP_ENVELOPE_OUTPUT_MAX). */

#include "buffer.h"
#include "mempool.h"

struct message_part;

/* Version of the ENVELOPE, BODY and BODYSTRUCTURE texts this library
   produces (the parser and the writers together). Caches of the texts
   name it (imap/imap-fetch-cache.c), so texts an older moat cached are
   misses and are computed again: bump it with every change that alters
   the text of any message.
   2: top-level message/rfc822 sections, boundaries of any length and
   empty ones, unterminated quoted parameter values end at their line,
   an empty display name is NIL. */
#define IMAP_MSG_TEXT_VERSION "2"

/* A sane maximum for one ENVELOPE or BODYSTRUCTURE string; past it the
   output is cut (only a hostile message gets there). */
#define IMAP_ENVELOPE_OUTPUT_MAX (64 * 1024 * 1024)

/* NIL for NULL; a quoted string when that can hold str; otherwise a
   literal ({n} CRLF bytes), for 8-bit bytes, CR or LF, or more than four
   '"' and '\' to escape. */
void imap_envelope_append_nstring(buffer_t *out, const char *str);
/* As imap_envelope_append_nstring() after unfolding a header value:
   each LF (a fold) or bare CR becomes a space unless white space follows
   it (which then stands for it). */
void imap_envelope_append_nstring_nolf(buffer_t *out, const char *str);
/* For text a human reads (subject, display names): runs of whitespace
   (SP, TAB, CR, LF) become one space, leading and trailing whitespace go.
   Any string that needed a change, or holds '"', '\' or 8-bit bytes, is
   sent as a literal; so is what imap_envelope_append_nstring() would. */
void imap_append_string_for_humans(buffer_t *out, const char *str);

/* Write the ENVELOPE of msg: the root part or the child of a
   message/rfc822 part. */
void imap_envelope_write(pool_t pool, const struct message_part *msg,
			 buffer_t *out);

#endif
