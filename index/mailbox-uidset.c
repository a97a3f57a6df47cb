/* Sorted UID ranges (mailbox-uidset.h). */
#include "lib.h"
#include "mailbox-uidset.h"

/* Index of the first range whose hi + 1 >= uid (count if none): the one
   that holds uid or could be extended to it. */
static unsigned int uidset_find(const struct uidset *set, uint32_t uid)
{
	unsigned int lo = 0, hi = set->count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (set->ranges[mid].hi < uid && set->ranges[mid].hi + 1 < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void uidset_reserve(struct uidset *set, unsigned int count)
{
	if (count <= set->alloc)
		return;
	unsigned int alloc = set->alloc == 0 ? 8 : set->alloc;
	while (alloc < count)
		alloc *= 2;
	set->ranges = i_realloc(set->ranges,
				i_mul_size(alloc, sizeof(*set->ranges)));
	set->alloc = alloc;
}

void uidset_add_range(struct uidset *set, uint32_t lo, uint32_t hi)
{
	i_assert(lo <= hi);
	unsigned int i = uidset_find(set, lo);
	struct uidset_range *r = set->ranges;

	/* fast path: runs mostly come in ascending order */
	if (i == set->count || (hi < UINT32_MAX && hi + 1 < r[i].lo)) {
		uidset_reserve(set, set->count + 1);
		r = set->ranges;
		memmove(&r[i + 1], &r[i], (set->count - i) * sizeof(*r));
		r[i].lo = lo;
		r[i].hi = hi;
		set->count++;
		return;
	}
	/* r[i] touches lo..hi: swallow every later range that does too */
	unsigned int j = i + 1;
	while (j < set->count && (hi == UINT32_MAX || r[j].lo <= hi + 1))
		j++;
	r[i].lo = MIN(r[i].lo, lo);
	r[i].hi = MAX(r[j - 1].hi, hi);
	memmove(&r[i + 1], &r[j], (set->count - j) * sizeof(*r));
	set->count -= j - (i + 1);
}

void uidset_add(struct uidset *set, uint32_t uid)
{
	uidset_add_range(set, uid, uid);
}

void uidset_remove(struct uidset *set, uint32_t uid)
{
	unsigned int i = uidset_find(set, uid);
	struct uidset_range *r = set->ranges;

	if (i == set->count || uid < r[i].lo || uid > r[i].hi)
		return;
	if (r[i].lo == r[i].hi) {
		memmove(&r[i], &r[i + 1], (set->count - i - 1) * sizeof(*r));
		set->count--;
	} else if (uid == r[i].lo) {
		r[i].lo++;
	} else if (uid == r[i].hi) {
		r[i].hi--;
	} else {
		/* split */
		uidset_reserve(set, set->count + 1);
		r = set->ranges;
		memmove(&r[i + 1], &r[i], (set->count - i) * sizeof(*r));
		r[i].hi = uid - 1;
		r[i + 1].lo = uid + 1;
		set->count++;
	}
}

bool uidset_contains(const struct uidset *set, uint32_t uid)
{
	unsigned int i = uidset_find(set, uid);

	return i < set->count && uid >= set->ranges[i].lo &&
		uid <= set->ranges[i].hi;
}

void uidset_clear(struct uidset *set)
{
	set->count = 0;
}

void uidset_free(struct uidset *set)
{
	i_free(set->ranges);
	set->count = set->alloc = 0;
}
