/* Byte-wise LSD radix sort of 64-bit keys, then a merge sort of each run
   of equal keys with the caller's comparison (maildir-name-sort.h). */
#include "lib.h"
#include "maildir-name-sort.h"

#include <string.h>

/* Runs of equal keys up to this long are sorted by insertion (fewer
   moves than a merge for the few a real Maildir has: names of messages
   delivered in the same second by the same host) */
#define NAME_SORT_INSERTION_MAX 12

uint64_t maildir_name_sort_key(const char *name, uint32_t len,
			       uint32_t offset)
{
	uint64_t key = 0;

	for (uint32_t i = 0; i < 8; i++) {
		unsigned char c = offset + i < len ?
			(unsigned char)name[offset + i] : 0;
		key = key << 8 | c;
	}
	return key;
}

/* One stable counting pass on the byte at shift, from src into dst.
   Returns false (nothing moved) if every key has the same byte there. */
static bool radix_pass(const struct maildir_name_sort_item *src,
		       struct maildir_name_sort_item *dst, unsigned int count,
		       unsigned int shift)
{
	unsigned int pos[256];

	memset(pos, 0, sizeof(pos));
	for (unsigned int i = 0; i < count; i++)
		pos[(src[i].key >> shift) & 0xff]++;
	if (pos[(src[0].key >> shift) & 0xff] == count)
		return false;
	unsigned int sum = 0;
	for (unsigned int b = 0; b < 256; b++) {
		unsigned int n = pos[b];
		pos[b] = sum;
		sum += n;
	}
	for (unsigned int i = 0; i < count; i++)
		dst[pos[(src[i].key >> shift) & 0xff]++] = src[i];
	return true;
}

static void run_insertion(struct maildir_name_sort_item *run, unsigned int n,
			  maildir_name_cmp_func_t *cmp, void *context)
{
	for (unsigned int i = 1; i < n; i++) {
		struct maildir_name_sort_item item = run[i];
		unsigned int j = i;
		while (j > 0 && cmp(run[j - 1].idx, item.idx, context) > 0) {
			run[j] = run[j - 1];
			j--;
		}
		run[j] = item;
	}
}

/* Stable merge sort of run[0..n) using tmp[0..n). */
static void run_merge(struct maildir_name_sort_item *run,
		      struct maildir_name_sort_item *tmp, unsigned int n,
		      maildir_name_cmp_func_t *cmp, void *context)
{
	if (n <= NAME_SORT_INSERTION_MAX) {
		run_insertion(run, n, cmp, context);
		return;
	}
	unsigned int half = n / 2;
	run_merge(run, tmp, half, cmp, context);
	run_merge(run + half, tmp + half, n - half, cmp, context);
	if (cmp(run[half - 1].idx, run[half].idx, context) <= 0)
		return;   /* already in order */
	memcpy(tmp, run, n * sizeof(*run));
	unsigned int i = 0, j = half, k = 0;
	while (i < half && j < n) {
		/* <= keeps equal items in their order */
		if (cmp(tmp[i].idx, tmp[j].idx, context) <= 0)
			run[k++] = tmp[i++];
		else
			run[k++] = tmp[j++];
	}
	while (i < half)
		run[k++] = tmp[i++];
	while (j < n)
		run[k++] = tmp[j++];
}

void maildir_name_sort(struct maildir_name_sort_item *items,
		       unsigned int count, maildir_name_cmp_func_t *cmp,
		       void *context)
{
	if (count < 2)
		return;
	struct maildir_name_sort_item *tmp =
		i_malloc(i_mul_size(count, sizeof(*items)));
	struct maildir_name_sort_item *src = items, *dst = tmp;

	for (unsigned int shift = 0; shift < 64; shift += 8) {
		if (radix_pass(src, dst, count, shift)) {
			struct maildir_name_sort_item *t = src;
			src = dst;
			dst = t;
		}
	}
	if (src != items)
		memcpy(items, src, count * sizeof(*items));
	for (unsigned int start = 0; start < count;) {
		unsigned int end = start + 1;
		while (end < count && items[end].key == items[start].key)
			end++;
		if (end - start > 1)
			run_merge(items + start, tmp, end - start, cmp, context);
		start = end;
	}
	i_free(tmp);
}
