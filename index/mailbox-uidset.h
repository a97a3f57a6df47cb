#ifndef MAILBOX_UIDSET_H
#define MAILBOX_UIDSET_H
/* A set of UIDs as sorted, disjoint, non-adjacent ranges: a session's
   \Recent messages or its unreported flag changes. Both come in runs
   (a claim, a STORE 1:*), so the set stays small whatever the mailbox
   size. The set owns its array (i_malloc); a zeroed struct is empty. */

#include <stdbool.h>
#include <stdint.h>

struct uidset_range {
	uint32_t lo, hi;          /* inclusive */
};

struct uidset {
	struct uidset_range *ranges;
	unsigned int count, alloc;
};

/* Add lo..hi (lo <= hi), merging with touching ranges. */
void uidset_add_range(struct uidset *set, uint32_t lo, uint32_t hi);
void uidset_add(struct uidset *set, uint32_t uid);
void uidset_remove(struct uidset *set, uint32_t uid);
bool uidset_contains(const struct uidset *set, uint32_t uid);
void uidset_clear(struct uidset *set);
void uidset_free(struct uidset *set);

#endif
