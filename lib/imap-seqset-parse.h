#ifndef IMAP_SEQSET_PARSE_H
#define IMAP_SEQSET_PARSE_H
/* IMAP sequence sets (RFC 3501 9: sequence-set) of sequence numbers or
   UIDs: only the syntax; resolving against a mailbox is the caller's. */

#include "mempool.h"

struct seq_range {
	uint32_t seq1, seq2;    /* inclusive, seq1 <= seq2 */
};
/* "*" while parsing: the largest number in use, resolved later. 0 is never
   a sequence number or UID (nz-number), so every value up to 4294967295
   stays a number (RFC 3501 9: uniqueid and seq-number are 32-bit). */
#define SEQSET_STAR 0U

/* Parse str into ranges (from pool), each with seq1 <= seq2 (so a "*"
   end is seq1), in the order given. Returns 0 or -1 on a syntax error. */
int imap_seqset_parse(pool_t pool, const char *str,
		      struct seq_range **ranges_r, unsigned int *count_r);

#endif
