#ifndef IMAP_SORT_H
#define IMAP_SORT_H
/* What SORT and THREAD (RFC 5256) share: the mandatory charset, the
   search run in slices, and for SORT the sort program and the ordering
   of the matches by keys read through mail-sort-keys.h.

   Memory: one command holds O(matches) compact entries (a sequence
   number, 8 bytes per sort key, and the string keys it sorts by); they
   are freed with the command. Nothing is kept between commands except
   the keys in the mail cache. */

#include "imap-common.h"
#include "mail-search.h"
#include "mail-sort-keys.h"
#include "imap-fetch-cache.h"

/* Sort criteria per command (more only repeat a key). */
#define IMAP_SORT_MAX_KEYS 16
/* Messages judged, and key lookups, per slice: the loop serves the
   user's other connections in between. */
#define IMAP_SORT_MSGS_PER_SLICE 5000
/* Headers parsed (cache misses) per slice. */
#define IMAP_SORT_MISSES_PER_SLICE 200

enum imap_sort_key {
	IMAP_SORT_ARRIVAL,
	IMAP_SORT_CC,
	IMAP_SORT_DATE,
	IMAP_SORT_FROM,
	IMAP_SORT_SIZE,
	IMAP_SORT_SUBJECT,
	IMAP_SORT_TO,
	IMAP_SORT_DISPLAYFROM,
	IMAP_SORT_DISPLAYTO,
};

struct imap_sort_criterion {
	enum imap_sort_key key;
	bool reverse;
};

/* Parse a sort-criteria list. Returns 0, or -1 with *error_r (BAD). */
int imap_sort_parse(const struct imap_arg *list, unsigned int count,
		    struct imap_sort_criterion crit[IMAP_SORT_MAX_KEYS],
		    unsigned int *count_r, const char **error_r);
/* Whether the charset argument is one we take (US-ASCII, UTF-8):
   strings are then matched as UTF-8 by mail-search. */
bool imap_sort_charset_ok(const struct imap_arg *arg);

/* The search part: the matching sequence numbers, ascending. */
struct imap_sort_search {
	struct mailbox *box;
	struct mail_search_ctx *search;
	/* ENVELOPEs filled from the files the search (and THREAD's key
	   reader) read; written at the end of each slice */
	struct imap_msg_fill fill;
	uint32_t next_seq;
	uint32_t *seqs;
	unsigned int count, alloc;
};
void imap_sort_search_init(struct imap_sort_search *ss, struct mailbox *box,
			   struct mail_search_program *program);
/* Judge the next slice. Returns 1 when all messages were judged, 0 if
   more remain, -1 on error (*error_r for the log). */
int imap_sort_search_continue(struct imap_sort_search *ss,
			      const char **error_r);
void imap_sort_search_deinit(struct imap_sort_search *ss);

/* The sent date of RFC 5256 2.2: Date:, else INTERNALDATE. */
int64_t imap_sort_sent_date(struct mailbox *box, uint32_t seq,
			    const struct mail_sort_keys *keys);

/* Write what the mailbox queued for the cache while keys were read
   (INTERNALDATE and RFC822.SIZE taken from the files): called per
   slice, so the queue never holds a whole mailbox's values. */
void imap_sort_cache_flush(struct mailbox *box);

/* Return the freed per-command arrays to the system (the idle process
   stays small after a SORT or THREAD of a big mailbox). */
void imap_sort_release_memory(void);

/* Ordering the matches of a search. */
struct imap_sort_ctx;

struct imap_sort_ctx *
imap_sort_init(struct mailbox *box, const struct imap_sort_criterion *crit,
	       unsigned int crit_count, const uint32_t *seqs,
	       unsigned int count);
/* Read the keys of the next slice of messages. Returns 1 when all were
   read, 0 if more remain, -1 on error. */
int imap_sort_read_keys(struct imap_sort_ctx *ctx, const char **error_r);
/* Before imap_sort_run(): have it give the uids too. */
void imap_sort_want_uids(struct imap_sort_ctx *ctx);
/* Sort; afterwards imap_sort_get_seqs() gives the ordered sequences and
   imap_sort_get_uids() their uids (NULL unless wanted). */
void imap_sort_run(struct imap_sort_ctx *ctx);
const uint32_t *imap_sort_get_seqs(struct imap_sort_ctx *ctx);
const uint32_t *imap_sort_get_uids(struct imap_sort_ctx *ctx);
void imap_sort_get_stats(struct imap_sort_ctx *ctx,
			 struct mail_sort_keys_stats *stats_r);
void imap_sort_deinit(struct imap_sort_ctx **ctx);

/* Where seq1 goes against seq2 in the order of crit: *cmp_r < 0 before,
   > 0 after (never 0 for two messages: mailbox order decides last), as
   imap_sort_run() orders them. For placing single messages in a kept
   result (CONTEXT=SORT updates, imap-context.h). Returns 0 or -1
   (*error_r for the log). */
int imap_sort_compare(struct mailbox *box,
		      const struct imap_sort_criterion *crit,
		      unsigned int crit_count, uint32_t seq1, uint32_t seq2,
		      int *cmp_r, const char **error_r);

#endif
