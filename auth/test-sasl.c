/* Unit tests for the SASL mechanisms (sasl-plain.c, sasl-login.c,
   sasl-external.c). */
#include "test-common.h"
#include "sasl-mech.h"

static enum sasl_result
plain(pool_t pool, struct sasl_exchange *ex, const char *msg, size_t size)
{
	const char *challenge = NULL, *error = NULL;

	sasl_exchange_init(ex, &sasl_mech_plain, pool);
	return sasl_exchange_step(ex, (const unsigned char *)msg, size,
				  &challenge, &error);
}

#define PLAIN(pool, ex, lit) plain(pool, ex, lit, sizeof(lit) - 1)

static void test_plain_ok(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;

	test_assert_int(PLAIN(pool, &ex, "\0alice\0secret"), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "alice");
	test_assert_str(ex.password, "secret");
	sasl_exchange_wipe(&ex);
	test_assert(ex.password == NULL);
	/* authzid equal to authcid is fine */
	test_assert_int(PLAIN(pool, &ex, "alice\0alice\0pw"), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "alice");
	/* the password may contain spaces and any byte but NUL */
	test_assert_int(PLAIN(pool, &ex, "\0bob\0a b\tc\xff"), SASL_RESULT_DONE);
	test_assert_str(ex.password, "a b\tc\xff");
	pool_unref(&pool);
}

static void test_plain_bad(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;

	test_assert_int(PLAIN(pool, &ex, "bob\0alice\0pw"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "alicex\0alice\0pw"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "alice\0secret"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "alice"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, ""), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "\0alice\0"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "\0\0secret"), SASL_RESULT_FAIL);
	test_assert_int(PLAIN(pool, &ex, "\0alice\0sec\0ret"), SASL_RESULT_FAIL);
	test_assert(ex.password == NULL);
	pool_unref(&pool);
}

static void test_plain_no_initial_response(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *challenge = NULL, *error = NULL;
	static const char msg[] = "\0u\0p";

	sasl_exchange_init(&ex, &sasl_mech_plain, pool);
	test_assert_int(sasl_exchange_step(&ex, NULL, 0, &challenge, &error),
			SASL_RESULT_CONTINUE);
	test_assert_str(challenge, "");
	test_assert_int(sasl_exchange_step(&ex, (const unsigned char *)msg,
					   sizeof(msg) - 1, &challenge, &error),
			SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "u");
	pool_unref(&pool);
}

static void test_plain_limits(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	char *msg = i_malloc(SASL_MAX_RESPONSE_SIZE + 2);
	size_t ulen = SASL_MAX_USERNAME + 1;

	/* user name too long */
	memset(msg + 1, 'u', ulen);
	memcpy(msg + 1 + ulen, "\0pw", 3);
	test_assert_int(plain(pool, &ex, msg, ulen + 4), SASL_RESULT_FAIL);
	/* longest user name is fine */
	memcpy(msg + ulen, "\0pw", 3);
	test_assert_int(plain(pool, &ex, msg, ulen + 3), SASL_RESULT_DONE);
	/* whole response too long */
	memset(msg, 'x', SASL_MAX_RESPONSE_SIZE + 1);
	msg[0] = '\0';
	msg[2] = '\0';
	test_assert_int(plain(pool, &ex, msg, SASL_MAX_RESPONSE_SIZE + 1),
			SASL_RESULT_FAIL);
	free(msg);
	pool_unref(&pool);
}

static enum sasl_result login_step(struct sasl_exchange *ex, const char *data,
				   const char **challenge_r)
{
	const char *error = NULL;

	return sasl_exchange_step(ex, (const unsigned char *)data,
				  data == NULL ? 0 : strlen(data),
				  challenge_r, &error);
}

static void test_login(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *challenge = NULL;

	test_assert(sasl_mech_find("login") == &sasl_mech_login);
	test_assert(sasl_mech_find("Plain") == &sasl_mech_plain);
	test_assert(sasl_mech_find("DIGEST-MD5") == NULL);

	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_CONTINUE);
	test_assert_str(challenge, "Username:");
	test_assert_int(login_step(&ex, "alice", &challenge), SASL_RESULT_CONTINUE);
	test_assert_str(challenge, "Password:");
	test_assert_int(login_step(&ex, "secret", &challenge), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "alice");
	test_assert_str(ex.password, "secret");

	/* initial response = user name */
	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(login_step(&ex, "bob", &challenge), SASL_RESULT_CONTINUE);
	test_assert_str(challenge, "Password:");
	test_assert_int(login_step(&ex, "pw", &challenge), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "bob");

	/* empty user name or password */
	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_CONTINUE);
	test_assert_int(login_step(&ex, "", &challenge), SASL_RESULT_FAIL);
	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(login_step(&ex, "bob", &challenge), SASL_RESULT_CONTINUE);
	test_assert_int(login_step(&ex, "", &challenge), SASL_RESULT_FAIL);
	/* a missing response after the first step */
	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_CONTINUE);
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_FAIL);
	pool_unref(&pool);
}

static void test_login_nul(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *challenge = NULL, *error = NULL;

	sasl_exchange_init(&ex, &sasl_mech_login, pool);
	test_assert_int(sasl_exchange_step(&ex, (const unsigned char *)"a\0b", 3,
					   &challenge, &error), SASL_RESULT_FAIL);
	pool_unref(&pool);
}

static void external_init(pool_t pool, struct sasl_exchange *ex,
			  const char *cert_user)
{
	sasl_exchange_init(ex, sasl_mech_find("external"), pool);
	ex->cert_user = cert_user;
}

static void test_external(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *challenge = NULL, *error = NULL;

	test_assert(sasl_mech_find("EXTERNAL") == &sasl_mech_external);
	test_assert(!sasl_mech_is_plaintext(&sasl_mech_external));
	/* empty authzid: the certificate's user */
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, "", &challenge), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "alice");
	test_assert(ex.verified);
	test_assert(ex.password == NULL);
	/* the same user named explicitly */
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, "alice", &challenge), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "alice");
	/* no initial response: an empty challenge, then the authzid */
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_CONTINUE);
	test_assert_str(challenge, "");
	test_assert_int(login_step(&ex, "", &challenge), SASL_RESULT_DONE);
	test_assert(ex.verified);
	/* a second missing response */
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_CONTINUE);
	test_assert_int(login_step(&ex, NULL, &challenge), SASL_RESULT_FAIL);
	test_assert(!ex.verified);
	/* another user (proxy authorization) is refused, also by case */
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, "bob", &challenge),
			SASL_RESULT_AUTHFAILED);
	test_assert(!ex.verified);
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, "Alice", &challenge),
			SASL_RESULT_AUTHFAILED);
	external_init(pool, &ex, "alice");
	test_assert_int(login_step(&ex, "alice2", &challenge),
			SASL_RESULT_AUTHFAILED);
	/* binary authzid */
	external_init(pool, &ex, "alice");
	test_assert_int(sasl_exchange_step(&ex, (const unsigned char *)"al\0ice",
					   6, &challenge, &error),
			SASL_RESULT_FAIL);
	/* no verified certificate: refused whatever the client says */
	external_init(pool, &ex, NULL);
	test_assert_int(login_step(&ex, "", &challenge), SASL_RESULT_AUTHFAILED);
	test_assert(!ex.verified);
	external_init(pool, &ex, NULL);
	test_assert_int(login_step(&ex, NULL, &challenge),
			SASL_RESULT_AUTHFAILED);
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_plain_ok), TEST(test_plain_bad),
	  TEST(test_plain_no_initial_response), TEST(test_plain_limits),
	  TEST(test_login), TEST(test_login_nul), TEST(test_external))
