#ifndef IMAP_PREVIEW_H
#define IMAP_PREVIEW_H
/* FETCH PREVIEW (RFC 8970): a plain-text preview of a message, from the
   first text part that is not an attachment (text/plain preferred, else
   text/html with its markup removed), content-transfer-decoded and
   converted from its charset to UTF-8, whitespace collapsed, quoted
   lines ("> ...") and the signature ("-- ") left out, at most
   IMAP_PREVIEW_CHARS characters (cut at a character boundary).

   Once computed it is kept in the mail cache (field
   "imap.preview." IMAP_PREVIEW_VERSION), so a later FETCH opens no file;
   PREVIEW (LAZY) answers from the cache only and NIL on a miss (RFC
   8970 4.1). Change IMAP_PREVIEW_VERSION whenever the text for a given
   message would differ: values under an older name are then never
   looked up. */

#include "imap-fetch-body.h"

/* RFC 8970 3.3: SHOULD be at most 200 characters, MUST NOT exceed 256. */
#define IMAP_PREVIEW_CHARS 200
/* A UTF-8 character is at most 4 bytes. */
#define IMAP_PREVIEW_BYTES_MAX (IMAP_PREVIEW_CHARS * 4)
/* Decoded bytes of the text part read for a preview: plain text yields
   200 characters long before (quoted replies aside), HTML may open with
   a long <style>. Bounds the work and memory of one preview. */
#define IMAP_PREVIEW_INPUT_PLAIN 16384
#define IMAP_PREVIEW_INPUT_HTML 65536
#define IMAP_PREVIEW_VERSION "1"

/* Make the preview of utf8 (valid UTF-8, len bytes; html: text/html
   markup) into out (NUL-terminated). Returns its length in bytes. */
size_t imap_preview_make(const char *utf8, size_t len, bool html,
			 char out[IMAP_PREVIEW_BYTES_MAX + 1]);

/* Append "PREVIEW <nstring>" for seq to out: from the cache, else (not
   lazy) computed from the message (parsed through ms) and queued for
   the cache (written by imap_fetch_cache_flush()); lazy and not cached:
   NIL, and *lazy_missed_r = true (if not NULL: the caller may have it
   computed later, imap-preview-lazy.h). Returns 0, or -1 with *error_r
   (errno ENOENT: the message is gone). */
int imap_preview_append(struct imap_msg_structure *ms, struct mailbox *box,
			uint32_t seq, bool lazy, bool *lazy_missed_r,
			buffer_t *out, const char **error_r);
/* Compute the preview of seq into the cache (written at once) unless it
   is there. Returns 0, or -1 with *error_r (errno ENOENT: gone). */
int imap_preview_precompute(struct mailbox *box, uint32_t seq,
			    const char **error_r);

#endif
