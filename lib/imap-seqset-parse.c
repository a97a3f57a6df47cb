/* IMAP sequence-set syntax (RFC 3501 9), shared by every command that
   takes one and by the SEARCH parser. */
#include "lib.h"
#include "imap-seqset-parse.h"

static int seqset_number(const char **p, uint32_t *num_r)
{
	const char *s = *p;
	uint64_t num = 0;

	if (*s == '*') {
		*num_r = SEQSET_STAR;
		*p = s + 1;
		return 0;
	}
	if (*s < '1' || *s > '9')
		return -1;   /* nz-number */
	for (; *s >= '0' && *s <= '9'; s++) {
		num = num * 10 + (uint64_t)(*s - '0');
		if (num > UINT32_MAX)
			return -1;
	}
	*num_r = (uint32_t)num;
	*p = s;
	return 0;
}

int imap_seqset_parse(pool_t pool, const char *str,
		      struct seq_range **ranges_r, unsigned int *count_r)
{
	/* every range takes at least two bytes ("1,") */
	unsigned int alloc = strlen(str) / 2 + 1, count = 0;
	struct seq_range *ranges = p_malloc(pool, i_mul_size(alloc,
							     sizeof(*ranges)));
	const char *p = str;

	for (;;) {
		uint32_t a, b;
		if (seqset_number(&p, &a) < 0)
			return -1;
		b = a;
		if (*p == ':') {
			p++;
			if (seqset_number(&p, &b) < 0)
				return -1;
		}
		i_assert(count < alloc);
		ranges[count].seq1 = MIN(a, b);
		ranges[count].seq2 = MAX(a, b);
		count++;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return -1;
	}
	*ranges_r = ranges;
	*count_r = count;
	return 0;
}

