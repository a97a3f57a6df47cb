/* Unit tests for maildir-name-sort.c: on generated names (a long common
   prefix, equal first bytes, names that are prefixes of others,
   duplicates, bytes >= 0x80, runs of equal keys far above the insertion
   limit) the radix sort gives exactly the order of a stable merge sort
   by (name, position), the order the comparison sort of the scan gave. */
#include "test-common.h"
#include "maildir-name-sort.h"

#include <stdlib.h>
#include <string.h>

#define TEST_NAMES_MAX 5000
#define TEST_NAME_LEN_MAX 64

struct test_names {
	char names[TEST_NAMES_MAX][TEST_NAME_LEN_MAX + 1];
	uint32_t lens[TEST_NAMES_MAX];
	unsigned int count;
};

static int name_cmp(const struct test_names *t, uint32_t a, uint32_t b)
{
	uint32_t len = t->lens[a] < t->lens[b] ? t->lens[a] : t->lens[b];
	int ret = memcmp(t->names[a], t->names[b], len);

	if (ret != 0)
		return ret;
	return t->lens[a] < t->lens[b] ? -1 : t->lens[a] > t->lens[b] ? 1 : 0;
}

static int tie_cmp(uint32_t a, uint32_t b, void *context)
{
	return name_cmp(context, a, b);
}

static struct test_names *sort_names;

/* the reference: names, then their position (stable) */
static int ref_cmp(const void *p1, const void *p2)
{
	uint32_t a = *(const uint32_t *)p1, b = *(const uint32_t *)p2;
	int ret = name_cmp(sort_names, a, b);

	return ret != 0 ? ret : a < b ? -1 : a > b ? 1 : 0;
}

static void check_sorted(struct test_names *t, uint32_t offset)
{
	struct maildir_name_sort_item *items =
		i_malloc(sizeof(*items) * (t->count + 1));
	uint32_t *ref = i_malloc(sizeof(*ref) * (t->count + 1));

	for (unsigned int i = 0; i < t->count; i++) {
		items[i].key = maildir_name_sort_key(t->names[i], t->lens[i],
						     offset);
		items[i].idx = i;
		ref[i] = i;
	}
	maildir_name_sort(items, t->count, tie_cmp, t);
	sort_names = t;
	qsort(ref, t->count, sizeof(*ref), ref_cmp);
	unsigned int wrong = 0;
	for (unsigned int i = 0; i < t->count; i++) {
		if (items[i].idx != ref[i])
			wrong++;
	}
	test_assert_int(wrong, 0);
	i_free(items);
	i_free(ref);
}

static void add_name(struct test_names *t, const char *name, size_t len)
{
	i_assert(t->count < TEST_NAMES_MAX && len <= TEST_NAME_LEN_MAX);
	memcpy(t->names[t->count], name, len);
	t->names[t->count][len] = '\0';
	t->lens[t->count++] = (uint32_t)len;
}

/* a random name of bytes 0x21..0xff (no byte a base may not hold
   matters here: the sort sees none of them) from a small alphabet, so
   that equal prefixes and duplicates are common */
static void add_random(struct test_names *t, const char *prefix,
		       unsigned int alphabet)
{
	char name[TEST_NAME_LEN_MAX + 1];
	size_t plen = strlen(prefix);
	size_t len = plen + (size_t)(random() % (TEST_NAME_LEN_MAX - plen + 1));

	memcpy(name, prefix, plen);
	for (size_t i = plen; i < len; i++) {
		unsigned int c = (unsigned int)random() % alphabet;
		name[i] = (char)(c < alphabet / 2 ? '0' + c : 0xf0 + c % 15);
	}
	add_name(t, name, len);
}

static void test_name_sort_random(void)
{
	struct test_names *t = i_malloc(sizeof(*t));

	srandom(4);
	for (unsigned int round = 0; round < 20; round++) {
		t->count = 0;
		unsigned int n = 1 + (unsigned int)random() % TEST_NAMES_MAX;
		for (unsigned int i = 0; i < n; i++)
			add_random(t, round % 2 == 0 ? "" : "1500000", 2 + round);
		check_sorted(t, 0);
		/* the scan's offset: bytes all names share */
		check_sorted(t, round % 2 == 0 ? 0 : 7);
	}
	i_free(t);
}

static void test_name_sort_equal_keys(void)
{
	struct test_names *t = i_malloc(sizeof(*t));
	char name[TEST_NAME_LEN_MAX + 1];

	/* every key equal (the same 8 bytes), names differing later, in
	   descending order, with duplicates: the merge path, worst case */
	t->count = 0;
	for (unsigned int i = TEST_NAMES_MAX; i > 0; i--) {
		int len = snprintf(name, sizeof(name), "17000000.M%uP1.host",
				   i / 2);
		add_name(t, name, (size_t)len);
	}
	check_sorted(t, 0);
	/* a name that is a prefix of others, and names that end inside
	   their key (padded with zeros) */
	t->count = 0;
	add_name(t, "abc", 3);
	add_name(t, "ab", 2);
	add_name(t, "abcdefghij", 10);
	add_name(t, "abcdefghi", 9);
	add_name(t, "a", 1);
	add_name(t, "abcdefghij", 10);
	add_name(t, "ab\xff", 3);
	check_sorted(t, 0);
	check_sorted(t, 1);
	/* nothing or one */
	t->count = 0;
	check_sorted(t, 0);
	add_name(t, "x", 1);
	check_sorted(t, 0);
	i_free(t);
}

static void test_name_sort_key(void)
{
	test_assert(maildir_name_sort_key("abcdefghij", 10, 0) ==
		    0x6162636465666768ULL);
	test_assert(maildir_name_sort_key("abcdefghij", 10, 7) ==
		    0x68696a0000000000ULL);
	test_assert(maildir_name_sort_key("ab", 2, 5) == 0);
}

TEST_MAIN(
	TEST(test_name_sort_key),
	TEST(test_name_sort_random),
	TEST(test_name_sort_equal_keys),
)
