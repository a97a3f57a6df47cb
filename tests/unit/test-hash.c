/* Unit tests for lib/hash.h: FNV-1a's published test vectors (the
   values moat stores are built on these, so they must never change),
   and that continuing a hash equals hashing the whole. */
#include "test-common.h"
#include "hash.h"

static void test_fnv1a_vectors(void)
{
	test_assert_int(hash_fnv1a64("", 0), 0xcbf29ce484222325ULL);
	test_assert_int(hash_fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
	test_assert_int(hash_fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
	test_assert_int(hash_fnv1a32("", 0), 0x811c9dc5U);
	test_assert_int(hash_fnv1a32("a", 1), 0xe40c292cU);
	test_assert_int(hash_fnv1a32("foobar", 6), 0xbf9cf968U);
	test_assert_int(hash_fnv1a64_more(hash_fnv1a64("foo", 3), "bar", 3),
			hash_fnv1a64("foobar", 6));
	/* bytes above 0x7f are unsigned */
	test_assert_int(hash_fnv1a64("\xff", 1), (0xcbf29ce484222325ULL ^ 0xff) *
			0x100000001b3ULL);
}

TEST_MAIN(
	TEST(test_fnv1a_vectors),
)
