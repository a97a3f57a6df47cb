/* Unit tests for auth-token.c. */
#include "test-common.h"
#include "auth-token.h"

static const struct auth_user_info test_user = {
	.user = "alice", .uid = 1001, .gid = 1002,
	.home = "/home/alice", .mail = "maildir:~/Maildir",
};

static void test_issue_redeem(void)
{
	struct auth_token_table *t = auth_token_table_create(8);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char token[AUTH_TOKEN_HEX_LEN + 1], token2[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(t, &test_user, 42, 1000, token);
	test_assert_int(strlen(token), AUTH_TOKEN_BYTES * 2);
	test_assert(strspn(token, "0123456789abcdef") == strlen(token));
	auth_token_issue(t, &test_user, 42, 1000, token2);
	test_assert(strcmp(token, token2) != 0);
	test_assert_int(auth_token_count(t, 1000), 2);

	test_assert_int(auth_token_redeem(t, token, 42, 2000, pool, &user), 1);
	test_assert_str(user.user, "alice");
	test_assert_int(user.uid, 1001);
	test_assert_int(user.gid, 1002);
	test_assert_str(user.home, "/home/alice");
	test_assert_str(user.mail, "maildir:~/Maildir");
	/* single use */
	test_assert_int(auth_token_redeem(t, token, 42, 2000, pool, &user), 0);
	test_assert_int(auth_token_count(t, 2000), 1);
	pool_unref(&pool);
	auth_token_table_destroy(&t);
}

static void test_expiry_and_pid(void)
{
	struct auth_token_table *t = auth_token_table_create(8);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char token[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(t, &test_user, 42, 1000, token);
	test_assert_int(auth_token_redeem(t, token, 42,
					  1000 + AUTH_TOKEN_TTL_MSECS, pool, &user), 0);
	/* the failed attempt consumed it */
	test_assert_int(auth_token_redeem(t, token, 42, 1001, pool, &user), 0);

	auth_token_issue(t, &test_user, 42, 1000, token);
	test_assert_int(auth_token_redeem(t, token, 43, 1001, pool, &user), 0);
	test_assert_int(auth_token_redeem(t, token, 42, 1001, pool, &user), 0);

	auth_token_issue(t, &test_user, 42, 1000, token);
	test_assert_int(auth_token_redeem(t, token, 42,
					  999 + AUTH_TOKEN_TTL_MSECS, pool, &user), 1);
	pool_unref(&pool);
	auth_token_table_destroy(&t);
}

static void test_malformed(void)
{
	struct auth_token_table *t = auth_token_table_create(4);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char token[AUTH_TOKEN_HEX_LEN + 1], zero[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(t, &test_user, 1, 0, token);
	test_assert_int(auth_token_redeem(t, "", 1, 0, pool, &user), 0);
	test_assert_int(auth_token_redeem(t, "zz", 1, 0, pool, &user), 0);
	memset(zero, '0', AUTH_TOKEN_HEX_LEN);
	zero[AUTH_TOKEN_HEX_LEN] = '\0';
	/* an all-zero token must not match an empty slot (nor come from this
	   table, whose issuer id is random) */
	test_assert(auth_token_redeem(t, zero, 0, 0, pool, &user) != 1);
	token[AUTH_TOKEN_HEX_LEN - 1] = '\0';
	test_assert_int(auth_token_redeem(t, token, 1, 0, pool, &user), 0);
	pool_unref(&pool);
	auth_token_table_destroy(&t);
}

static void test_eviction(void)
{
	struct auth_token_table *t = auth_token_table_create(2);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char t1[AUTH_TOKEN_HEX_LEN + 1], t2[AUTH_TOKEN_HEX_LEN + 1],
		t3[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(t, &test_user, 1, 10, t1);
	auth_token_issue(t, &test_user, 1, 20, t2);
	auth_token_issue(t, &test_user, 1, 30, t3);   /* evicts t1 */
	test_assert_int(auth_token_count(t, 30), 2);
	test_assert_int(auth_token_redeem(t, t1, 1, 30, pool, &user), 0);
	test_assert_int(auth_token_redeem(t, t2, 1, 30, pool, &user), 1);
	test_assert_int(auth_token_redeem(t, t3, 1, 30, pool, &user), 1);
	pool_unref(&pool);
	auth_token_table_destroy(&t);
}

/* A token names its slot: another slot's token, a changed random part
   or a slot number past the table do not match (and do not consume the
   slot's own token). */
static void test_slot_number(void)
{
	struct auth_token_table *t = auth_token_table_create(4);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char t1[AUTH_TOKEN_HEX_LEN + 1], t2[AUTH_TOKEN_HEX_LEN + 1],
		forged[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(t, &test_user, 1, 10, t1);
	auth_token_issue(t, &test_user, 1, 10, t2);
	test_assert(strncmp(t1, "0000", 4) == 0);
	test_assert(strncmp(t2, "0001", 4) == 0);
	/* t1's random part under t2's slot */
	memcpy(forged, t1, sizeof(forged));
	memcpy(forged, "0001", 4);
	test_assert_int(auth_token_redeem(t, forged, 1, 10, pool, &user), 0);
	memcpy(forged, t1, sizeof(forged));
	memcpy(forged, "ffff", 4);
	test_assert_int(auth_token_redeem(t, forged, 1, 10, pool, &user), 0);
	memcpy(forged, t1, sizeof(forged));
	forged[20] = forged[20] == '0' ? '1' : '0';
	test_assert_int(auth_token_redeem(t, forged, 1, 10, pool, &user), 0);
	test_assert_int(auth_token_redeem(t, t1, 1, 10, pool, &user), 1);
	test_assert_int(auth_token_redeem(t, t2, 1, 10, pool, &user), 1);
	/* the freed first slot is used again */
	auth_token_issue(t, &test_user, 1, 20, t1);
	test_assert(strncmp(t1, "0000", 4) == 0);
	test_assert_int(auth_token_redeem(t, t1, 1, 20, pool, &user), 1);
	pool_unref(&pool);
	auth_token_table_destroy(&t);
}

/* After a restart the new auth's table tells a token of the previous
   one (-1: authenticate again) from one it issued and lost (0). */
static void test_issuer(void)
{
	struct auth_token_table *old = auth_token_table_create(4);
	struct auth_token_table *new = auth_token_table_create(4);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info user;
	char t1[AUTH_TOKEN_HEX_LEN + 1], t2[AUTH_TOKEN_HEX_LEN + 1],
		forged[AUTH_TOKEN_HEX_LEN + 1];

	auth_token_issue(old, &test_user, 1, 10, t1);
	auth_token_issue(new, &test_user, 1, 10, t2);
	/* same slot, different issuer ids */
	test_assert(strncmp(t1, t2, 4) == 0);
	test_assert(strncmp(t1 + 4, t2 + 4, 12) != 0);
	test_assert_int(auth_token_redeem(new, t1, 1, 10, pool, &user), -1);
	/* a changed issuer byte of new's own token is not new's */
	memcpy(forged, t2, sizeof(forged));
	forged[15] = forged[15] == '0' ? '1' : '0';
	test_assert_int(auth_token_redeem(new, forged, 1, 10, pool, &user), -1);
	/* neither consumed new's token */
	test_assert_int(auth_token_redeem(new, t2, 1, 10, pool, &user), 1);
	test_assert_int(auth_token_redeem(new, t2, 1, 10, pool, &user), 0);
	test_assert_int(auth_token_redeem(old, t1, 1, 10, pool, &user), 1);
	pool_unref(&pool);
	auth_token_table_destroy(&old);
	auth_token_table_destroy(&new);
}

TEST_MAIN(TEST(test_issue_redeem), TEST(test_expiry_and_pid),
	  TEST(test_malformed), TEST(test_eviction), TEST(test_slot_number),
	  TEST(test_issuer))
