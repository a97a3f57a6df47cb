#ifndef IMAP_SEQSET_H
#define IMAP_SEQSET_H
/* IMAP sequence sets (RFC 3501 9: sequence-set), for sequence numbers
   and UIDs. */

#include "imap-common.h"
#include "imap-seqset-parse.h"
/* Turn parsed ranges into sorted, merged sequence ranges of box (in
   place). For UIDs, numbers not in use are simply absent; for sequence
   numbers, one past the message count is an error (-1, "BAD"). */
int imap_seqset_resolve(struct mailbox *box, bool uid,
			struct seq_range *ranges, unsigned int *count);

#endif
