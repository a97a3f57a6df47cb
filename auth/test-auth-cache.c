/* Unit tests for auth-cache.c: answers equal to hashing's (a changed
   stored hash or another password misses), TTLs, unknown users, and the
   eviction rule that keeps wrong passwords from flushing right ones. */
#include "test-common.h"
#include "auth-cache.h"

#define HASH_A "{SHA512-CRYPT}$6$salt$aaaa"
#define HASH_B "{SHA512-CRYPT}$6$salt$bbbb"

static void test_hit_and_miss(void)
{
	struct auth_cache *c = auth_cache_create(64 * 1024, 100, 50);

	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw", 10), -1);
	auth_cache_add(c, "u", HASH_A, "pw", true, 10);
	auth_cache_add(c, "u", HASH_A, "wrong", false, 10);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw", 11), 1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "wrong", 11), 0);
	/* a new hash in the passwd-file: nothing cached applies */
	test_assert_int(auth_cache_lookup(c, "u", HASH_B, "pw", 11), -1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_B, "wrong", 11), -1);
	/* another user, another password, a prefix shift */
	test_assert_int(auth_cache_lookup(c, "v", HASH_A, "pw", 11), -1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw2", 11), -1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A "p", "w", 11), -1);
	/* unknown user (no stored hash) is not the same as an empty hash */
	auth_cache_add(c, "x", NULL, "pw", false, 10);
	test_assert_int(auth_cache_lookup(c, "x", NULL, "pw", 11), 0);
	test_assert_int(auth_cache_lookup(c, "x", "", "pw", 11), -1);
	/* TTLs: positive 100 s, negative 50 s */
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "wrong", 59), 0);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "wrong", 60), -1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw", 109), 1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw", 110), -1);
	auth_cache_add(c, "u", HASH_A, "pw", true, 200);
	auth_cache_clear(c);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "pw", 201), -1);
	auth_cache_destroy(&c);
	test_assert(c == NULL);
}

static void test_disabled(void)
{
	test_assert(auth_cache_create(0, 100, 100) == NULL);
	test_assert(auth_cache_create(1024, 0, 0) == NULL);
	test_assert(auth_cache_create(10, 100, 100) == NULL);  /* < a set */
	/* the functions take NULL: nothing cached */
	auth_cache_add(NULL, "u", HASH_A, "pw", true, 1);
	test_assert_int(auth_cache_lookup(NULL, "u", HASH_A, "pw", 1), -1);
	struct auth_cache *none = NULL;
	auth_cache_destroy(&none);

	/* negative TTL 0: wrong passwords are never remembered */
	struct auth_cache *c = auth_cache_create(4096, 100, 0);
	auth_cache_add(c, "u", HASH_A, "wrong", false, 1);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "wrong", 1), -1);
	auth_cache_destroy(&c);
}

/* One set (the smallest cache): a stream of wrong passwords never
   evicts a live right one; right ones evict wrong ones first, then the
   one expiring first. */
static void test_eviction(void)
{
	unsigned int cap = auth_cache_capacity(1);
	uint64_t size = 1;

	while ((cap = auth_cache_capacity(size)) == 0)
		size++;
	test_assert(cap == 4);
	struct auth_cache *c = auth_cache_create(size, 1000, 1000);
	char pw[32];

	auth_cache_add(c, "u", HASH_A, "right", true, 1);
	for (unsigned int i = 0; i < 100; i++) {
		snprintf(pw, sizeof(pw), "guess%u", i);
		auth_cache_add(c, "u", HASH_A, pw, false, 2 + i);
	}
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "right", 200), 1);
	/* the latest guesses are there, the oldest went */
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "guess99", 200), 0);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "guess0", 200), -1);
	/* four right passwords fill the set: the first-expiring goes */
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(pw, sizeof(pw), "user%u", i);
		auth_cache_add(c, pw, HASH_A, "right", true, 300 + i);
	}
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "right", 400), -1);
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(pw, sizeof(pw), "user%u", i);
		test_assert_int(auth_cache_lookup(c, pw, HASH_A, "right", 400), 1);
	}
	/* a full set of live right ones keeps a wrong one out */
	auth_cache_add(c, "u", HASH_A, "guess", false, 400);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "guess", 401), -1);
	/* an expired entry makes room */
	test_assert_int(auth_cache_lookup(c, "user0", HASH_A, "right", 1300), -1);
	auth_cache_add(c, "u", HASH_A, "guess", false, 1300);
	test_assert_int(auth_cache_lookup(c, "u", HASH_A, "guess", 1301), 0);
	auth_cache_destroy(&c);
}

TEST_MAIN(TEST(test_hit_and_miss), TEST(test_disabled), TEST(test_eviction))
