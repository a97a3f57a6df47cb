/* Unit tests for SCRAM (RFC 5802 and RFC 7677 examples replayed exactly),
   channel binding, CRAM-MD5 (RFC 2195 example), OAUTHBEARER (RFC 7628
   example) and XOAUTH2. */
#include "test-common.h"
#include "strfuncs.h"
#include "password-scram.h"
#include "sasl-mech.h"

/* What the fake passdb answers. */
static const char *test_stored_scheme = "PLAIN";
static const char *test_stored_data = "pencil";
static const char *test_known_user = "user";

static enum sasl_lookup_result
test_lookup(void *context, pool_t pool, const char *user,
	    const char **scheme_r, const char **data_r)
{
	(void)context;
	if (strcmp(user, test_known_user) != 0)
		return SASL_LOOKUP_UNKNOWN;
	*scheme_r = test_stored_scheme;
	*data_r = p_strdup(pool, test_stored_data);
	return SASL_LOOKUP_OK;
}

static enum sasl_lookup_result
test_lookup_token(void *context, pool_t pool, const char *token,
		  const char **user_r)
{
	(void)context;
	if (strcmp(token, "vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==") != 0)
		return SASL_LOOKUP_UNKNOWN;
	*user_r = p_strdup(pool, "user@example.com");
	return SASL_LOOKUP_OK;
}

static void test_init(struct sasl_exchange *ex, const struct sasl_mech *mech,
		      pool_t pool, const struct sasl_test_params *test)
{
	sasl_exchange_init(ex, mech, pool);
	ex->lookup_password = test_lookup;
	ex->lookup_token = test_lookup_token;
	ex->test = test;
}

static enum sasl_result test_step(struct sasl_exchange *ex, const char *msg,
				  const char **challenge_r)
{
	const char *error = NULL;

	*challenge_r = NULL;
	return sasl_exchange_step(ex, (const unsigned char *)msg,
				  msg == NULL ? 0 : strlen(msg),
				  challenge_r, &error);
}

static const unsigned char rfc5802_salt[] = {
	0x41, 0x25, 0xc2, 0x47, 0xe4, 0x3a, 0xb1, 0xe9,
	0x3c, 0x6d, 0xff, 0x76 };  /* QSXCR+Q6sek8bf92 */
static const struct sasl_test_params rfc5802_params = {
	.scram_nonce = "3rfcNHYJY1ZVvWVs7j",
	.scram_salt = rfc5802_salt, .scram_salt_size = sizeof(rfc5802_salt),
	.scram_iterations = 4096,
};

static void test_scram_sha1_rfc5802(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *c;

	test_init(&ex, &sasl_mech_scram_sha1, pool, &rfc5802_params);
	test_assert_int(test_step(&ex, "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
				  &c), SASL_RESULT_CONTINUE);
	test_assert_str(c, "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
			"s=QSXCR+Q6sek8bf92,i=4096");
	test_assert_int(test_step(&ex, "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfc"
				  "NHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
				  &c), SASL_RESULT_CONTINUE);
	test_assert_str(c, "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=");
	test_assert(!ex.verified);
	test_assert_int(test_step(&ex, "", &c), SASL_RESULT_DONE);
	test_assert(ex.verified);
	test_assert_str(ex.authcid, "user");
	test_assert(ex.password == NULL);
	pool_unref(&pool);
}

static const unsigned char rfc7677_salt[] = {
	0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e,
	0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81 };
static const struct sasl_test_params rfc7677_params = {
	.scram_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	.scram_salt = rfc7677_salt, .scram_salt_size = sizeof(rfc7677_salt),
	.scram_iterations = 4096,
};
#define RFC7677_FIRST "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define RFC7677_SFIRST "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," \
	"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC7677_FINAL "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj" \
	")hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define RFC7677_SFINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static void test_scram_sha256_run(pool_t pool, enum sasl_result final_result,
				  const char *sfinal)
{
	struct sasl_exchange ex;
	const char *c;

	test_init(&ex, &sasl_mech_scram_sha256, pool, &rfc7677_params);
	/* no initial response: an empty challenge first */
	test_assert_int(test_step(&ex, NULL, &c), SASL_RESULT_CONTINUE);
	test_assert_str(c, "");
	test_assert_int(test_step(&ex, RFC7677_FIRST, &c), SASL_RESULT_CONTINUE);
	/* made-up credentials (unusable scheme) have a random salt */
	if (strcmp(test_stored_scheme, "SHA512-CRYPT") != 0)
		test_assert_str(c, RFC7677_SFIRST);
	test_assert_int(test_step(&ex, RFC7677_FINAL, &c), final_result);
	if (sfinal != NULL) {
		test_assert_str(c, sfinal);
		test_assert_int(test_step(&ex, "", &c), SASL_RESULT_DONE);
		test_assert(ex.verified);
	}
}

static void test_scram_sha256_rfc7677(void)
{
	pool_t pool = pool_create("test", 1024);
	struct password_scram_creds creds;

	test_stored_scheme = "PLAIN";
	test_stored_data = "pencil";
	test_scram_sha256_run(pool, SASL_RESULT_CONTINUE, RFC7677_SFINAL);
	/* the same exchange from stored keys instead of the password */
	password_scram_creds_from_plain(PASSWORD_DIGEST_SHA256, "pencil",
		rfc7677_salt, sizeof(rfc7677_salt), 4096, &creds);
	test_stored_scheme = "SCRAM-SHA-256";
	test_stored_data = password_scram_format(pool, &creds);
	test_scram_sha256_run(pool, SASL_RESULT_CONTINUE, RFC7677_SFINAL);
	/* wrong password */
	test_stored_scheme = "PLAIN";
	test_stored_data = "pencil2";
	test_scram_sha256_run(pool, SASL_RESULT_AUTHFAILED, NULL);
	/* a hash SCRAM cannot use fails at the proof, not earlier */
	test_stored_scheme = "SHA512-CRYPT";
	test_stored_data = "$6$x$y";
	test_scram_sha256_run(pool, SASL_RESULT_AUTHFAILED, NULL);
	test_stored_scheme = "PLAIN";
	test_stored_data = "pencil";
	pool_unref(&pool);
}

static void test_scram_unknown_user(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *c;

	test_init(&ex, &sasl_mech_scram_sha256, pool, NULL);
	test_assert_int(test_step(&ex, "n,,n=nobody,r=abcdef", &c),
			SASL_RESULT_CONTINUE);
	test_assert(c != NULL && str_begins(c, "r=abcdef", NULL));
	test_assert(strstr(c, ",i=4096") != NULL);
	pool_unref(&pool);
}

static enum sasl_result scram_first(pool_t pool, const struct sasl_mech *mech,
				    const char *msg, bool tls, bool offered)
{
	static const unsigned char cb[32] = { 1, 2, 3 };
	struct sasl_exchange ex;
	const char *c;

	test_init(&ex, mech, pool, &rfc7677_params);
	if (tls) {
		ex.cbind_data = cb;
		ex.cbind_size = sizeof(cb);
	}
	ex.cbind_offered = offered;
	return test_step(&ex, msg, &c);
}

static void test_scram_gs2(void)
{
	pool_t pool = pool_create("test", 1024);
	const struct sasl_mech *s256 = &sasl_mech_scram_sha256;
	const struct sasl_mech *plus = &sasl_mech_scram_sha256_plus;

	test_assert_int(scram_first(pool, s256, "y,,n=user,r=x", false, false),
			SASL_RESULT_CONTINUE);
	test_assert_int(scram_first(pool, s256, "y,,n=user,r=x", true, false),
			SASL_RESULT_CONTINUE);
	/* y while -PLUS was offered: a downgrade */
	test_assert_int(scram_first(pool, s256, "y,,n=user,r=x", true, true),
			SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "p=tls-exporter,,n=user,r=x",
				    true, true), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,a=user,n=user,r=x",
				    false, false), SASL_RESULT_CONTINUE);
	test_assert_int(scram_first(pool, s256, "n,a=other,n=user,r=x",
				    false, false), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,,m=ext,n=user,r=x",
				    false, false), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,,n=us=3Der,r=x",
				    false, false), SASL_RESULT_CONTINUE);
	test_assert_int(scram_first(pool, s256, "n,,n=us=er,r=x",
				    false, false), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,,n=,r=x", false, false),
			SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,,n=user", false, false),
			SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "n,,n=user,r=", false, false),
			SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, s256, "x,,n=user,r=x", false, false),
			SASL_RESULT_FAIL);
	/* -PLUS needs p=tls-exporter and a TLS connection */
	test_assert_int(scram_first(pool, plus, "p=tls-exporter,,n=user,r=x",
				    true, true), SASL_RESULT_CONTINUE);
	test_assert_int(scram_first(pool, plus, "p=tls-exporter,,n=user,r=x",
				    false, true), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, plus, "p=tls-unique,,n=user,r=x",
				    true, true), SASL_RESULT_FAIL);
	test_assert_int(scram_first(pool, plus, "n,,n=user,r=x", true, true),
			SASL_RESULT_FAIL);
	pool_unref(&pool);
}

/* A full -PLUS exchange, computing the client side here. */
static const char *plus_client_final(pool_t pool, const char *sfirst,
				     const unsigned char *cb, size_t cb_size)
{
	static const char gs2[] = "p=tls-exporter,,";
	unsigned char cbind[64], salted[32], ckey[32], stored[32], sig[32];
	unsigned char *salt;
	size_t salt_size;
	const char *nonce_end = strstr(sfirst, ",s="), *wo, *am;

	memcpy(cbind, gs2, strlen(gs2));
	memcpy(cbind + strlen(gs2), cb, cb_size);
	wo = p_strdup_printf(pool, "c=%s,%.*s",
		p_base64_encode(pool, cbind, strlen(gs2) + cb_size),
		(int)(nonce_end - sfirst), sfirst);
	(void)p_base64_decode(pool, "W22ZaJ0SNY7soEsUEjb6gQ==", 24, &salt,
			      &salt_size);
	password_pbkdf2(PASSWORD_DIGEST_SHA256, "pencil", 6, salt, salt_size,
			4096, salted, 32);
	password_hmac(PASSWORD_DIGEST_SHA256, salted, 32, "Client Key", 10,
		      ckey);
	password_hash2(PASSWORD_DIGEST_SHA256, ckey, 32, "", 0, stored);
	am = p_strdup_printf(pool, "n=user,r=abc,%s,%s", sfirst, wo);
	password_hmac(PASSWORD_DIGEST_SHA256, stored, 32, am, strlen(am), sig);
	for (unsigned int i = 0; i < 32; i++)
		ckey[i] ^= sig[i];
	return p_strdup_printf(pool, "%s,p=%s", wo,
			       p_base64_encode(pool, ckey, 32));
}

static enum sasl_result plus_run(pool_t pool, const unsigned char *server_cb,
				 const unsigned char *client_cb)
{
	struct sasl_exchange ex;
	const char *c;

	test_init(&ex, &sasl_mech_scram_sha256_plus, pool, &rfc7677_params);
	ex.cbind_data = server_cb;
	ex.cbind_size = 32;
	ex.cbind_offered = true;
	if (test_step(&ex, "p=tls-exporter,,n=user,r=abc", &c) !=
	    SASL_RESULT_CONTINUE)
		return SASL_RESULT_TEMPFAIL;
	return test_step(&ex, plus_client_final(pool, c, client_cb, 32), &c);
}

static void test_scram_plus(void)
{
	pool_t pool = pool_create("test", 4096);
	unsigned char cb[32], other[32];

	for (unsigned int i = 0; i < 32; i++) {
		cb[i] = (unsigned char)i;
		other[i] = (unsigned char)(i + 1);
	}
	test_assert_int(plus_run(pool, cb, cb), SASL_RESULT_CONTINUE);
	/* the client saw another TLS session: a man in the middle */
	test_assert_int(plus_run(pool, cb, other), SASL_RESULT_FAIL);
	pool_unref(&pool);
}

static void test_scram_final_bad(void)
{
	pool_t pool = pool_create("test", 1024);
	static const char *const bad[] = {
		"c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjf"
		"MHgsqmmiz7AndVQ=",                          /* nonce */
		"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
		"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", /* c=y,, */
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
		"p=AAAA",
	};

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		struct sasl_exchange ex;
		const char *c;

		test_init(&ex, &sasl_mech_scram_sha256, pool, &rfc7677_params);
		test_assert_int(test_step(&ex, RFC7677_FIRST, &c),
				SASL_RESULT_CONTINUE);
		test_assert_int(test_step(&ex, bad[i], &c), SASL_RESULT_FAIL);
	}
	pool_unref(&pool);
}

static void test_cram_md5_rfc2195(void)
{
	pool_t pool = pool_create("test", 1024);
	static const struct sasl_test_params params = {
		.cram_challenge = "<1896.697170952@postoffice.reston.mci.net>",
	};
	struct sasl_exchange ex;
	const char *c;

	test_known_user = "tim";
	test_stored_scheme = "PLAIN";
	test_stored_data = "tanstaaftanstaaf";
	test_init(&ex, &sasl_mech_cram_md5, pool, &params);
	test_assert_int(test_step(&ex, NULL, &c), SASL_RESULT_CONTINUE);
	test_assert_str(c, params.cram_challenge);
	test_assert_int(test_step(&ex, "tim b913a602c7eda7a495b4e6e7334d3890",
				  &c), SASL_RESULT_DONE);
	test_assert(ex.verified);
	test_assert_str(ex.authcid, "tim");

	test_init(&ex, &sasl_mech_cram_md5, pool, &params);
	test_assert_int(test_step(&ex, NULL, &c), SASL_RESULT_CONTINUE);
	test_assert_int(test_step(&ex, "tim b913a602c7eda7a495b4e6e7334d3891",
				  &c), SASL_RESULT_AUTHFAILED);
	test_init(&ex, &sasl_mech_cram_md5, pool, &params);
	test_assert_int(test_step(&ex, NULL, &c), SASL_RESULT_CONTINUE);
	test_assert_int(test_step(&ex, "bob b913a602c7eda7a495b4e6e7334d3890",
				  &c), SASL_RESULT_AUTHFAILED);
	test_init(&ex, &sasl_mech_cram_md5, pool, &params);
	test_assert_int(test_step(&ex, NULL, &c), SASL_RESULT_CONTINUE);
	test_assert_int(test_step(&ex, "tim", &c), SASL_RESULT_FAIL);
	test_known_user = "user";
	test_stored_data = "pencil";
	pool_unref(&pool);
}

static enum sasl_result oauth(pool_t pool, const struct sasl_mech *mech,
			      const char *msg, struct sasl_exchange *ex,
			      const char **c)
{
	test_init(ex, mech, pool, NULL);
	return test_step(ex, msg, c);
}

static void test_oauth(void)
{
	pool_t pool = pool_create("test", 1024);
	struct sasl_exchange ex;
	const char *c;

	/* RFC 7628 section 4.1 */
	test_assert_int(oauth(pool, &sasl_mech_oauthbearer,
		"n,a=user@example.com,\x01host=server.example.com\x01"
		"port=143\x01" "auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEu"
		"Y29tCg==\x01\x01", &ex, &c), SASL_RESULT_DONE);
	test_assert(ex.verified);
	test_assert_str(ex.authcid, "user@example.com");
	/* no authzid: the token names the user */
	test_assert_int(oauth(pool, &sasl_mech_oauthbearer,
		"n,,\x01" "auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEu"
		"Y29tCg==\x01\x01", &ex, &c), SASL_RESULT_DONE);
	/* a bad token: error challenge, then failure */
	test_assert_int(oauth(pool, &sasl_mech_oauthbearer,
		"n,,\x01" "auth=Bearer bad\x01\x01", &ex, &c),
		SASL_RESULT_CONTINUE);
	test_assert(strstr(c, "invalid_token") != NULL);
	test_assert_int(test_step(&ex, "\x01", &c), SASL_RESULT_AUTHFAILED);
	/* someone else's token */
	test_assert_int(oauth(pool, &sasl_mech_oauthbearer,
		"n,a=other,\x01" "auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlz"
		"dGEuY29tCg==\x01\x01", &ex, &c), SASL_RESULT_CONTINUE);
	test_assert_int(oauth(pool, &sasl_mech_oauthbearer,
		"p=tls-exporter,,\x01" "auth=Bearer x\x01\x01", &ex, &c),
		SASL_RESULT_FAIL);
	test_assert_int(oauth(pool, &sasl_mech_xoauth2,
		"user=user@example.com\x01" "auth=Bearer vF9dft4qmTc2Nvb3Rl"
		"ckBhbHRhdmlzdGEuY29tCg==\x01\x01", &ex, &c), SASL_RESULT_DONE);
	test_assert_str(ex.authcid, "user@example.com");
	test_assert_int(oauth(pool, &sasl_mech_xoauth2,
		"user=user@example.com\x01" "auth=Bearer nope\x01\x01", &ex,
		&c), SASL_RESULT_CONTINUE);
	test_assert_int(test_step(&ex, "", &c), SASL_RESULT_AUTHFAILED);
	test_assert_int(oauth(pool, &sasl_mech_xoauth2, "auth=Bearer x\x01\x01",
			      &ex, &c), SASL_RESULT_FAIL);
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_scram_sha1_rfc5802), TEST(test_scram_sha256_rfc7677),
	  TEST(test_scram_unknown_user), TEST(test_scram_gs2),
	  TEST(test_scram_plus), TEST(test_scram_final_bad),
	  TEST(test_cram_md5_rfc2195), TEST(test_oauth))
