#ifndef IMAP_SEQSET_H
#define IMAP_SEQSET_H
/* IMAP sequence sets (RFC 3501 9: sequence-set), for sequence numbers
   and UIDs. */

#include "imap-common.h"

struct seq_range {
	uint32_t seq1, seq2;    /* inclusive, seq1 <= seq2 */
};
/* "*" while parsing: the largest number in use, resolved later. */
#define SEQSET_STAR UINT32_MAX

/* Parse str into ranges (from pool). Returns 0 or -1 on a syntax error. */
int imap_seqset_parse(pool_t pool, const char *str,
		      struct seq_range **ranges_r, unsigned int *count_r);
/* Turn parsed ranges into sorted, merged sequence ranges of box (in
   place). For UIDs, numbers not in use are simply absent; for sequence
   numbers, one past the message count is an error (-1, "BAD"). */
int imap_seqset_resolve(struct mailbox *box, bool uid,
			struct seq_range *ranges, unsigned int *count);

#endif
