/* Unit tests for lib/auth-client-protocol.c: AUTH and CONT as imap-login
   sends them, CONT/OK/FAIL as auth answers, and the malformed records
   each end must refuse. */
#include "test-common.h"
#include "auth-client-protocol.h"

#define TOKEN "0123456789abcdef0123456789abcdef" \
	"0123456789ABCDEF0123456789abcdef"

static void test_auth_request(void)
{
	struct auth_proto_request req;
	const char *error;
	const char *const plain[] = { "AUTH", "7", "PLAIN", "192.0.2.1",
		"192.0.2.2", "1", "AGEAYg==", NULL };
	const char *const both[] = { "AUTH", "8", "EXTERNAL", "::1", "::1", "0",
		"", "cert_user=alice", "cbind=AAEC", NULL };

	test_assert(auth_proto_parse_request(plain, &req, &error) == 0);
	test_assert(req.type == AUTH_PROTO_REQUEST_AUTH);
	test_assert_str(req.id, "7");
	test_assert_str(req.mech, "PLAIN");
	test_assert(req.secured);
	test_assert_str(req.initial_b64, "AGEAYg==");
	test_assert(req.cbind_b64 == NULL && req.cert_user == NULL);

	test_assert(auth_proto_parse_request(both, &req, &error) == 0);
	test_assert(!req.secured);
	test_assert_str(req.cert_user, "alice");
	test_assert_str(req.cbind_b64, "AAEC");
}

static void test_auth_request_malformed(void)
{
	struct auth_proto_request req;
	const char *error;
	char long_id[AUTH_PROTO_ID_MAX_LEN + 2];
	memset(long_id, '1', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	const char *const cases[][11] = {
		{ "AUTH", "1", "PLAIN", "a", "b", "1", NULL },
		{ "AUTH", "", "PLAIN", "a", "b", "1", "", NULL },
		{ "AUTH", long_id, "PLAIN", "a", "b", "1", "", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "yes", "", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "x=y", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "cbind=", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "cbind=AA",
		  "cbind=AA", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "cert_user=", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "cert_user=a\tb", NULL },
		{ "AUTH", "1", "PLAIN", "a", "b", "1", "", "cbind=AA",
		  "cert_user=a", "x", NULL },
		{ "CONT", "1", NULL },
		{ "CONT", "1", "x", "y", NULL },
		{ "FAIL", "1", "authfailed", NULL },
		{ NULL },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(cases); i++) {
		error = NULL;
		test_assert(auth_proto_parse_request(cases[i], &req, &error) < 0);
		test_assert(error != NULL);
	}
	const char *const cont[] = { "CONT", "x1", "*", NULL };
	test_assert(auth_proto_parse_request(cont, &req, &error) == 0);
	test_assert(req.type == AUTH_PROTO_REQUEST_CONT);
	test_assert_str(req.response, "*");
}

static void test_auth_reply(void)
{
	struct auth_proto_reply reply;
	const char *const ok[] = { "OK", "12", "testuser1", TOKEN, NULL };
	const char *const fail[] = { "FAIL", "3", "tempfail", "Later.", NULL };
	const char *const cont[] = { "CONT", "4", "", NULL };

	test_assert(auth_proto_parse_reply(ok, &reply) == 0);
	test_assert(reply.type == AUTH_PROTO_REPLY_OK && reply.id == 12);
	test_assert_str(reply.user, "testuser1");
	test_assert(auth_proto_parse_reply(fail, &reply) == 0);
	test_assert(reply.type == AUTH_PROTO_REPLY_FAIL);
	test_assert_str(reply.text, "Later.");
	test_assert(auth_proto_parse_reply(cont, &reply) == 0);
	test_assert(reply.type == AUTH_PROTO_REPLY_CONT);
	test_assert_str(reply.challenge, "");

	const char *const bad[][6] = {
		{ "OK", "0", "u", TOKEN, NULL },
		{ "OK", "x", "u", TOKEN, NULL },
		{ "OK", "1", "", TOKEN, NULL },
		{ "OK", "1", "u", "abc", NULL },
		{ "OK", "1", "u", TOKEN "0", NULL },
		{ "OK", "1", "u", NULL },
		{ "FAIL", "1", NULL },
		{ "FAIL", "1", "a", "b", "c", NULL },
		{ "CONT", "1", NULL },
		{ "AUTH", "1", "PLAIN", NULL },
		{ "OK", NULL },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++)
		test_assert(auth_proto_parse_reply(bad[i], &reply) < 0);
	char token[sizeof(TOKEN)];
	memcpy(token, TOKEN, sizeof(token));
	token[5] = 'g';
	test_assert(!auth_proto_token_valid(token));
	test_assert(auth_proto_token_valid(TOKEN));
}

TEST_MAIN(TEST(test_auth_request),
	  TEST(test_auth_request_malformed),
	  TEST(test_auth_reply))
