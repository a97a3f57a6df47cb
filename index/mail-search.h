#ifndef MAIL_SEARCH_H
#define MAIL_SEARCH_H
/* IMAP SEARCH programs (RFC 3501 / RFC 9051 6.4.4, RFC 5032 WITHIN,
   RFC 5182 "$"): parsed from the command's arguments into a tree, then
   evaluated message by message in a cheap-first order: flags, UIDs,
   sizes and dates first; the header only when a header key is still
   undecided; the body text only when a body key still is.

   Strings are matched as substrings of UTF-8 text, both sides folded
   with i;unicode-casemap (RFC 5051: titlecase and NFKD, so matching is
   case-insensitive and "e" finds "é"): header values after RFC 2047
   decoding and unfolding (FROM, TO, CC and BCC also in the parsed
   address form, mail-search-address.c), body text after
   Content-Transfer-Encoding decoding and charset conversion. The message
   file is streamed in chunks; memory per message is bounded by the MIME
   parser's limits and MAIL_SEARCH_CHUNK_SIZE, never by the message size.

   Ownership: a program lives in the pool given to mail_search_parse();
   a search context is the caller's and freed with mail_search_deinit(). */

#include "mempool.h"
#include "imap-parser.h"
#include "mailbox.h"

#include <time.h>

struct mailbox;

/* Bytes read from a message file per read. Also the unit of work that
   mail_search_match() reports, for slicing. */
#define MAIL_SEARCH_CHUNK_SIZE (16 * 1024)
/* Keys nested deeper than this are refused (each NOT/OR/( ) level is a
   recursion step when parsing and evaluating). */
#define MAIL_SEARCH_MAX_DEPTH 64
/* The charsets we name in [BADCHARSET]; others work if iconv knows them. */
#define MAIL_SEARCH_BADCHARSET "[BADCHARSET (US-ASCII UTF-8)]"

/* An inclusive range of UIDs or sequence numbers. */
struct mail_search_range {
	uint32_t lo, hi;
};
/* "*" while parsed: the largest number in use when evaluated (0, which
   no UID or sequence number is, as SEQSET_STAR). */
#define MAIL_SEARCH_STAR 0U

/* The SEARCHRES result "$" refers to: sorted, merged UID ranges. */
struct mail_search_saved {
	const struct mail_search_range *ranges;
	unsigned int count;
};

enum mail_search_parse_result {
	MAIL_SEARCH_PARSE_OK = 0,
	MAIL_SEARCH_PARSE_BAD = -1,        /* syntax: tagged BAD */
	MAIL_SEARCH_PARSE_BADCHARSET = -2, /* NO [BADCHARSET ...] */
};

struct mail_search_program;

/* Parse args ("[CHARSET name] key *(SP key)", ending in EOL). saved is
   what "$" means (NULL: the empty set). On error *error_r is a static or
   pool string safe to send. */
enum mail_search_parse_result
mail_search_parse(pool_t pool, const struct imap_arg *args,
		  const struct mail_search_saved *saved,
		  struct mail_search_program **program_r,
		  const char **error_r);
/* Whether the program names "$" (the result it saves must then be
   computed against the old "$"). */
bool mail_search_program_uses_saved(const struct mail_search_program *program);
/* Whether the program has a MODSEQ key: the answer then ends in the
   highest modseq of the matches (RFC 7162 3.1.6). */
bool mail_search_program_uses_modseq(const struct mail_search_program *program);
/* Whether the program has a sequence-set key ("1:5", not "$" or UID):
   refused once UIDONLY is enabled (RFC 9586 3.5). */
bool mail_search_program_uses_seqset(const struct mail_search_program *program);
/* Turn every sequence-set key into the UID set of the messages it names
   in box now ("*" the last message): the numbers keep meaning those
   messages after expunges and appends (RFC 5267 4.3, an updated
   search). Memory from the program's pool: one range per run of
   consecutive UIDs named. */
void mail_search_program_seqs_to_uids(struct mail_search_program *program,
				      struct mailbox *box);

struct mail_search_ctx;

/* Evaluate program on box. now is the time OLDER/YOUNGER count from. */
struct mail_search_ctx *
mail_search_init(struct mailbox *box, struct mail_search_program *program,
		 time_t now);
void mail_search_deinit(struct mail_search_ctx **ctx);
/* Whether message seq matches: 1 yes, 0 no (also when its file
   vanished), -1 on an I/O error (*error_r for the log). */
int mail_search_match(struct mail_search_ctx *ctx, uint32_t seq,
		      const char **error_r);
/* Call cb (mailbox.h) for each message whose file the search read,
   after its header was read (NULL: none). */
void mail_search_set_read_callback(struct mail_search_ctx *ctx,
				   mailbox_msg_read_callback_t *cb,
				   void *context);
/* Bytes read from message files so far (for slicing the work). */
uint64_t mail_search_get_bytes_read(const struct mail_search_ctx *ctx);

/* ---- helpers shared with the text matcher (mail-search-text.c) ---- */

/* Append the i;unicode-casemap folding (RFC 5051) of UTF-8 text to
   out, which needs room for mail_search_fold_max(size) more bytes.
   Invalid UTF-8 is copied as bytes. Text must hold whole characters. */
struct buffer;
void mail_search_fold_utf8(const unsigned char *data, size_t size,
			   struct buffer *out);
/* The room folding size bytes may need (UNICODE_CASEMAP_GROWTH_MAX per
   byte, and a spare byte). */
size_t mail_search_fold_max(size_t size);

#endif
