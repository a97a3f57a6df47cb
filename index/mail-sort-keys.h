#ifndef MAIL_SORT_KEYS_H
#define MAIL_SORT_KEYS_H
/* The keys SORT and THREAD (RFC 5256, RFC 5957) order messages by, kept
   in the mail cache as one field per message, so that sorting or
   threading a big mailbox a second time opens no message file and costs
   one cache lookup per message:

     "sort.keys"   sent date (UTC seconds, or "none": INTERNALDATE then),
                   the reply flag of base subject extraction, a 64-bit
                   hash of the base subject (THREAD compares only that),
                   64-bit hashes of the normalized Message-ID and of the
                   references (References:, else the first In-Reply-To
                   id), and the folded strings SUBJECT (base subject),
                   FROM, TO, CC (first addr-mailbox), DISPLAYFROM,
                   DISPLAYTO.

   On a miss the message's header (only the header: reading stops at the
   blank line) is parsed once and the field is queued for the cache;
   the queue is written every MAIL_SORT_KEYS_FLUSH_COUNT messages, so it
   never holds a whole mailbox's values. While misses come, the files of
   the next MAIL_SORT_KEYS_PREFETCH messages to be asked for are opened
   and their first bytes read ahead (posix_fadvise WILLNEED), so the
   disk works on them while the current header is parsed.
   Strings are folded with i;unicode-casemap (RFC 5051,
   lib/unicode-casemap.h), so they compare with memcmp(); the cached
   value names the folding (unicode_casemap_id()), and a value folded
   by other tables is recomputed.

   Message-IDs are hashed, not stored: 8 bytes instead of ~50 per id.
   Two different ids colliding in 64 bits (about 1e-10 for a 100k-message
   mailbox) would only join two threads. */

#include "mailbox.h"
#include "buffer.h"

#include <stdint.h>

enum mail_sort_str {
	MAIL_SORT_STR_SUBJECT,
	MAIL_SORT_STR_FROM,
	MAIL_SORT_STR_TO,
	MAIL_SORT_STR_CC,
	MAIL_SORT_STR_DISPLAYFROM,
	MAIL_SORT_STR_DISPLAYTO,
};
#define MAIL_SORT_STR_COUNT 6
/* Longest string key kept (bytes, cut at a character boundary). */
#define MAIL_SORT_STR_MAX 512
/* References kept per message: the last ones (the nearest ancestors). */
#define MAIL_THREAD_REFS_MAX 256
/* Header bytes read per message at most; a header longer than this
   (only a hostile message has one) is judged by its start. */
#define MAIL_SORT_KEYS_HEADER_MAX (1024 * 1024)
/* One header field at most (a References: of a long thread fits). */
#define MAIL_SORT_KEYS_FIELD_MAX (64 * 1024)
/* Cache values queued before they are written: about 300 bytes each,
   so the queue stays near 150 KB whatever the mailbox size. */
#define MAIL_SORT_KEYS_FLUSH_COUNT 512
/* Messages read ahead while misses come (mailbox_prefetch()): enough to
   keep the read-ahead thread ahead of the parsing on a cold disk
   (doc/performance.md, "Reading ahead on a helper thread"); at most the
   names a mailbox handle caches for it (MAILBOX_FNAME_CACHE_AHEAD). */
#define MAIL_SORT_KEYS_PREFETCH 64
/* Bytes read ahead and read first per message: most headers fit. */
#define MAIL_SORT_KEYS_FIRST_READ (8 * 1024)

/* The pointers are valid until the next call with the same reader. */
struct mail_sort_keys {
	int64_t sent_date;      /* UTC seconds, when sent_valid */
	bool sent_valid;        /* false: no parsable Date: */
	bool reply;             /* the subject is a reply or forward */
	uint64_t subject_hash;  /* of the base subject; 0: it is empty */
	const unsigned char *str[MAIL_SORT_STR_COUNT];
	size_t str_len[MAIL_SORT_STR_COUNT];
};

struct mail_thread_refs {
	uint64_t msgid;         /* 0: no valid Message-ID */
	unsigned int count;
	const unsigned char *refs;   /* count little-endian 8-byte hashes */
};

struct mail_sort_keys_stats {
	uint64_t hits;          /* fields found in the cache */
	uint64_t misses;        /* headers parsed */
};

struct mail_sort_keys_reader;

/* seqs (ascending, count of them) are the messages that will be asked
   for, in that order: they tell which files to read ahead. The array
   must stay valid until the last mail_sort_keys_get(). */
struct mail_sort_keys_reader *
mail_sort_keys_reader_init(struct mailbox *box, const uint32_t *seqs,
			   unsigned int count);
/* Writes what was queued for the cache. */
void mail_sort_keys_reader_deinit(struct mail_sort_keys_reader **reader);
/* Call cb (mailbox.h) for each message whose header the reader read
   (a miss), before its file is closed (NULL: none). imap/ does not set
   one today: its ENVELOPE fill made the first THREAD about 3x slower
   (imap/imap-sort.c, imap_sort_init()). */
void mail_sort_keys_reader_set_read_callback(struct mail_sort_keys_reader *reader,
					     mailbox_msg_read_callback_t *cb,
					     void *context);
void mail_sort_keys_reader_get_stats(const struct mail_sort_keys_reader *reader,
				     struct mail_sort_keys_stats *stats_r);

/* Returns 1 with the keys of seq (and its references when refs_r is
   not NULL), 0 if its file vanished, -1 on an I/O error (*error_r for
   the log). */
int mail_sort_keys_get(struct mail_sort_keys_reader *reader, uint32_t seq,
		       struct mail_sort_keys *keys_r,
		       struct mail_thread_refs *refs_r, const char **error_r);
uint64_t mail_thread_refs_at(const struct mail_thread_refs *refs,
			     unsigned int idx);

/* ---- pieces, exposed for tests ---- */

/* Hash of a normalized Message-ID; never 0. */
uint64_t mail_thread_msgid_hash(const void *id, size_t len);
/* Find the next msg-id "<left@right>" in [*p, end) and put its
   normalized form in out (reset first; quotes, escapes, whitespace and
   comments removed; either side may be empty, index/mail-sort-msgid.c
   says which shapes count). Returns false when there is none; *p moves
   past what was read. */
bool mail_thread_msgid_next(const char **p, const char *end, buffer_t *out);

#endif
