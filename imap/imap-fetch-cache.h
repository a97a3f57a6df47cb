#ifndef IMAP_FETCH_CACHE_H
#define IMAP_FETCH_CACHE_H
/* ENVELOPE, BODY and BODYSTRUCTURE of a message for FETCH: from the mail
   cache (mailbox_msg_cache_lookup) once some session computed them, else
   written from the parsed message (imap_msg_structure_get) and added to
   the cache, so a later FETCH of them opens no message file.

   What is cached is what clients fetch, when they first fetch it (as
   Dovecot decides): APPEND, COPY and delivery do not parse for the cache,
   so a server whose clients never ask for BODYSTRUCTURE stores none. The
   exception is ENVELOPE, which every client fetches and which costs
   little: a FETCH that parsed a message for anything else (BODYSTRUCTURE,
   a section) caches its ENVELOPE too (imap_msg_texts_fill), and so does
   a search (SEARCH, the search part of SORT and THREAD) that read the
   message's file (imap_msg_fill below): the FETCH ENVELOPE after it opens
   no file. The SORT/THREAD key reader does not fill (imap_sort_init()). An ENVELOPE
   miss alone reads only the message's header (imap_msg_header_get).
   Sections (BODY[1.2], BINARY[...]) read the file anyway and still parse
   it on demand, except the message's own HEADER, HEADER.FIELDS.NOT and
   TEXT: they need only where its header ends, which the first FETCH of
   them caches (imap_msg_hdr_size_lookup()). */

#include "imap-fetch-body.h"

enum imap_msg_text {
	IMAP_MSG_TEXT_ENVELOPE,
	IMAP_MSG_TEXT_BODY,          /* BODY: BODYSTRUCTURE without extensions */
	IMAP_MSG_TEXT_BODYSTRUCTURE,
};
#define IMAP_MSG_TEXT_COUNT 3

/* Cache values queued before they are written (bounds the memory of a
   FETCH 1:* that fills the cache of a big mailbox). */
#define IMAP_FETCH_CACHE_FLUSH_TEXTS 1000

/* Process-wide counts, for the FETCH debug line (log_debug) that tests
   and bench/big-mailbox.sh read. */
struct imap_fetch_counters {
	uint64_t files_opened;   /* message files opened by FETCH */
	uint64_t text_hits;      /* texts served from the cache */
	uint64_t text_misses;    /* texts written from a parsed message */
	uint64_t parse_bytes;    /* bytes of message files read to parse */
};
extern struct imap_fetch_counters imap_fetch_counters;

/* mailbox_msg_open(), counted in imap_fetch_counters.files_opened. */
int imap_fetch_msg_open(struct mailbox *box, uint32_t seq,
			const char **error_r);

/* Append text `which` of seq to out: from the cache, or from ms (the
   message is parsed unless ms holds it already) and queued for the
   cache. Returns 0, or -1 with *error_r (errno ENOENT: the message
   vanished). A text that does not fit out is cut, as the writers do. */
int imap_msg_text_get(struct imap_msg_structure *ms, struct mailbox *box,
		      uint32_t seq, enum imap_msg_text which, buffer_t *out,
		      const char **error_r);

/* Where seq's header ends (imap_body_source_header()), cached by an
   earlier FETCH of its HEADER or TEXT: true with *hdr_r, false on a miss
   (or a garbled value). */
bool imap_msg_hdr_size_lookup(struct mailbox *box, uint32_t seq,
			      struct message_size *hdr_r);
/* After a parse of seq (of its header at least) into ms: queue where its
   header ends for the cache. */
void imap_msg_hdr_size_add(struct imap_msg_structure *ms,
			   struct mailbox *box, uint32_t seq);

/* After a full parse of seq into ms: queue for the cache the texts that
   are due and not cached (ENVELOPE), so no later FETCH parses for them. */
void imap_msg_texts_fill(struct imap_msg_structure *ms, struct mailbox *box,
			 uint32_t seq);

/* Filling the cache from the reads of other commands: a search (a header,
   TEXT or BODY key) reads a message's header in index/, which knows no
   IMAP texts; it calls
   imap_msg_fill_read_callback (mailbox.h) with the file still open, and
   the texts that are due (ENVELOPE, as imap_msg_texts_fill decides) are
   parsed from it and queued, so the FETCH after them opens no file.
   Memory is one message's parse; the queue is written every
   IMAP_FETCH_CACHE_FLUSH_TEXTS values and by imap_msg_fill_flush(). */
struct imap_msg_fill {
	struct mailbox *box;
	struct imap_msg_structure ms;
};
void imap_msg_fill_init(struct imap_msg_fill *fill, struct mailbox *box);
/* Writes what is queued. */
void imap_msg_fill_deinit(struct imap_msg_fill *fill);
/* Write what is queued (the end of a slice of work: the command may wait
   for the client before it goes on). */
void imap_msg_fill_flush(struct imap_msg_fill *fill);
/* mailbox_msg_read_callback_t; context is the struct imap_msg_fill. */
void imap_msg_fill_read_callback(struct mailbox *box, uint32_t seq, int fd,
				 void *context);

/* Write the cache values ms queued (end of FETCH). */
void imap_fetch_cache_flush(struct imap_msg_structure *ms,
			    struct mailbox *box);

#endif
