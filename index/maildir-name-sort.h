#ifndef MAILDIR_NAME_SORT_H
#define MAILDIR_NAME_SORT_H
/* Sorting the file names of a cur/ scan (maildir-sync.c) by base name
   without a string compare per step: each item carries 8 bytes of its
   name as an integer key (big-endian, zero-padded), a stable radix sort
   orders the keys, and only items whose keys are equal are compared by
   the caller's function. The result is the order a stable sort with
   that comparison gives (equal names keep their order). */

#include <stdint.h>

struct maildir_name_sort_item {
	uint64_t key;
	uint32_t idx;         /* the caller's entry */
};

/* Orders two entries whose keys are equal: <0, 0 or >0. */
typedef int maildir_name_cmp_func_t(uint32_t idx1, uint32_t idx2,
				    void *context);

/* The key of name[offset..offset+8) of a name of len bytes (no byte of
   a base name is 0, so padding sorts a shorter name first). offset must
   be the same for all items and at most the number of leading bytes all
   their names share (the scan's common prefix), or the keys would not
   order the names. */
uint64_t maildir_name_sort_key(const char *name, uint32_t len,
			       uint32_t offset);

/* Sorts items[0..count) by key, then equal keys by cmp. Time
   O(count * 8) for the keys plus O(k log k) for each run of k equal
   keys, whatever the names; one scratch array of count items. */
void maildir_name_sort(struct maildir_name_sort_item *items,
		       unsigned int count, maildir_name_cmp_func_t *cmp,
		       void *context);

#endif
