/* Unit tests for auth-penalty.c. */
#include "test-common.h"
#include "auth-penalty.h"

static void test_growth_and_cap(void)
{
	struct auth_penalty *p = auth_penalty_create(2000, 16);
	uint64_t now = 1000;

	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 2000);
	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 4000);
	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 8000);
	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 15000);
	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 15000);
	for (unsigned int i = 0; i < 100; i++)
		(void)auth_penalty_failure(p, "192.0.2.1", now);
	test_assert_int(auth_penalty_failure(p, "192.0.2.1", now), 15000);
	/* another address is independent */
	test_assert_int(auth_penalty_failure(p, "2001:db8::1", now), 2000);
	auth_penalty_destroy(&p);
	test_assert(p == NULL);
}

static void test_reset(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 16);

	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 5), 1000);
	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 5), 2000);
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", 5), 2);
	auth_penalty_success(p, "10.0.0.1");
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", 5), 0);
	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 5), 1000);
	/* forgotten after the expiry time */
	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 5 +
					     AUTH_PENALTY_EXPIRE_MSECS), 1000);
	auth_penalty_destroy(&p);
}

static void test_zero_delay(void)
{
	struct auth_penalty *p = auth_penalty_create(0, 4);

	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 1), 0);
	test_assert_int(auth_penalty_failure(p, "10.0.0.1", 1), 0);
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", 1), 2);
	auth_penalty_destroy(&p);
}

static void test_lru_eviction(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 3);

	(void)auth_penalty_failure(p, "a", 10);
	(void)auth_penalty_failure(p, "b", 20);
	(void)auth_penalty_failure(p, "c", 30);
	(void)auth_penalty_failure(p, "a", 40);   /* a is now newest */
	(void)auth_penalty_failure(p, "d", 50);   /* evicts b */
	test_assert_int(auth_penalty_get_failures(p, "a", 50), 2);
	test_assert_int(auth_penalty_get_failures(p, "b", 50), 0);
	test_assert_int(auth_penalty_get_failures(p, "c", 50), 1);
	test_assert_int(auth_penalty_get_failures(p, "d", 50), 1);
	auth_penalty_destroy(&p);
}

TEST_MAIN(TEST(test_growth_and_cap), TEST(test_reset), TEST(test_zero_delay),
	  TEST(test_lru_eviction))
