/* Sequence set parsing and resolving (imap-seqset.h). */
#include "imap-common.h"
#include "imap-seqset.h"

static int range_cmp(const void *p1, const void *p2)
{
	const struct seq_range *r1 = p1, *r2 = p2;

	return r1->seq1 < r2->seq1 ? -1 : r1->seq1 > r2->seq1 ? 1 : 0;
}

/* UID range -> sequence range; false if no message is in it. */
static bool seqset_uid_range(struct mailbox *box, struct seq_range *r)
{
	uint32_t count = mailbox_get_count(box);

	if (count == 0)
		return false;
	uint32_t last_uid = mailbox_msg_uid(box, count);
	/* "n:*" always includes the last message (RFC 3501 6.4.8) */
	uint32_t lo = r->seq1 == SEQSET_STAR ? last_uid : r->seq1;
	uint32_t hi = r->seq2 == SEQSET_STAR ? last_uid : r->seq2;
	if (lo > hi) {
		uint32_t tmp = lo; lo = hi; hi = tmp;
	}
	uint32_t seq1 = mailbox_uid_to_seq_ge(box, lo);
	if (seq1 == 0 || mailbox_msg_uid(box, seq1) > hi)
		return false;
	uint32_t seq2 = mailbox_uid_to_seq_ge(box, hi);
	if (seq2 == 0)
		seq2 = count;
	else if (mailbox_msg_uid(box, seq2) > hi)
		seq2--;
	r->seq1 = seq1;
	r->seq2 = seq2;
	return true;
}

int imap_seqset_resolve(struct mailbox *box, bool uid,
			struct seq_range *ranges, unsigned int *count)
{
	uint32_t msgs = mailbox_get_count(box);
	unsigned int n = 0;

	for (unsigned int i = 0; i < *count; i++) {
		struct seq_range r = ranges[i];
		if (uid) {
			if (!seqset_uid_range(box, &r))
				continue;
		} else {
			if (msgs == 0)
				return -1;
			uint32_t lo = r.seq1 == SEQSET_STAR ? msgs : r.seq1;
			uint32_t hi = r.seq2 == SEQSET_STAR ? msgs : r.seq2;
			r.seq1 = MIN(lo, hi);
			r.seq2 = MAX(lo, hi);
			if (r.seq2 > msgs)
				return -1;
		}
		ranges[n++] = r;
	}
	qsort(ranges, n, sizeof(*ranges), range_cmp);
	unsigned int m = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (m > 0 && ranges[i].seq1 <= ranges[m - 1].seq2 + 1) {
			ranges[m - 1].seq2 = MAX(ranges[m - 1].seq2,
						 ranges[i].seq2);
		} else {
			ranges[m++] = ranges[i];
		}
	}
	*count = m;
	return 0;
}
