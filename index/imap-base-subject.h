#ifndef IMAP_BASE_SUBJECT_H
#define IMAP_BASE_SUBJECT_H
/* The "base subject" of RFC 5256 section 2.1, for SORT (SUBJECT) and
   THREAD: the Subject: value with RFC 2047 words decoded, folded with
   i;unicode-casemap (RFC 5051, lib/unicode-casemap.h: titlecase and
   NFKD, as section 7 asks), whitespace collapsed, and the "Re:", "Fwd:",
   "[list]" leaders, "(fwd)" trailers and "[fwd: ...]" wrappers removed.
   Folding first lets callers compare base subjects with memcmp(). */

#include "buffer.h"
#include "mempool.h"

/* Longest base subject kept; longer ones are cut at a character
   boundary (only the first this many bytes take part in comparisons). */
#define IMAP_BASE_SUBJECT_MAX 512
/* Folded subject text the extraction works on; a longer one (only a
   hostile message has a 64 KiB subject) is cut here first. */
#define IMAP_BASE_SUBJECT_FOLD_MAX (64 * 1024)

/* Replace out's contents with the base subject of the raw header value
   (folds included, encoded words not yet decoded). *is_reply_r says
   whether extraction removed a subj-refwd, a "(fwd)" trailer or a
   "[fwd: ...]" wrapper (RFC 5256 REFERENCES step 5). out needs room
   for IMAP_BASE_SUBJECT_MAX bytes. scratch holds the decoded text (the
   caller clears it when it likes). */
void imap_base_subject_get(pool_t scratch, const char *value, size_t len,
			   buffer_t *out, bool *is_reply_r);

/* The same on text that is already decoded UTF-8 (tests, callers that
   decoded it themselves). */
void imap_base_subject_from_utf8(const char *text, size_t len, buffer_t *out,
				 bool *is_reply_r);

#endif
