/* Unit tests for auth-worker-protocol.c. */
#include "test-common.h"
#include "auth-worker-protocol.h"

static void test_requests(void)
{
	struct auth_worker_request req;
	const char *passv[] = { "PASSV", "7", "pam", "moat", "bob", "cGFzcw==",
				"192.0.2.1", NULL };
	const char *user[] = { "USER", "8", "passwd", "", "bob", NULL };
	const char *short_passv[] = { "PASSV", "7", "pam", "moat", "bob", NULL };
	const char *bad_id[] = { "USER", "x8", "passwd", "", "bob", NULL };
	const char *empty_user[] = { "USER", "8", "passwd", "", "", NULL };
	const char *ctl_user[] = { "USER", "8", "passwd", "", "a\001b", NULL };
	const char *unknown[] = { "HELLO", "1", NULL };

	test_assert(auth_worker_parse_request(passv, &req) == 0);
	test_assert(req.type == AUTH_WORKER_PASSV);
	test_assert_int(req.id, 7);
	test_assert_str(req.driver, "pam");
	test_assert_str(req.args, "moat");
	test_assert_str(req.user, "bob");
	test_assert_str(req.password_b64, "cGFzcw==");
	test_assert_str(req.rip, "192.0.2.1");
	test_assert(auth_worker_parse_request(user, &req) == 0);
	test_assert(req.type == AUTH_WORKER_USER);
	test_assert_str(req.user, "bob");
	test_assert(auth_worker_parse_request(short_passv, &req) < 0);
	test_assert(auth_worker_parse_request(bad_id, &req) < 0);
	test_assert(auth_worker_parse_request(empty_user, &req) < 0);
	test_assert(auth_worker_parse_request(ctl_user, &req) < 0);
	test_assert(auth_worker_parse_request(unknown, &req) < 0);
}

static void test_request_bounds(void)
{
	struct auth_worker_request req;
	char user[AUTH_WORKER_USER_MAX_LEN + 2];
	const char *args[] = { "USER", "1", "passwd", "", user, NULL };

	memset(user, 'u', sizeof(user) - 1);
	user[sizeof(user) - 1] = '\0';
	test_assert(auth_worker_parse_request(args, &req) < 0);
	user[AUTH_WORKER_USER_MAX_LEN] = '\0';
	test_assert(auth_worker_parse_request(args, &req) == 0);
}

static void test_replies(void)
{
	struct auth_worker_reply reply;
	const char *ok[] = { "OK", "3", "bob", NULL };
	const char *fail[] = { "FAIL", "3", "nologin", NULL };
	const char *bad_fail[] = { "FAIL", "3", "maybe", NULL };
	const char *user[] = { "USER", "4", "1001", "100", "/home/bob", NULL };
	const char *bad_uid[] = { "USER", "4", "-1", "100", "/home/bob", NULL };
	const char *notfound[] = { "NOTFOUND", "5", NULL };
	const char *extra[] = { "NOTFOUND", "5", "x", NULL };

	test_assert(auth_worker_parse_reply(ok, &reply) == 0);
	test_assert(reply.type == AUTH_WORKER_REPLY_OK);
	test_assert_str(reply.user, "bob");
	test_assert(auth_worker_parse_reply(fail, &reply) == 0);
	test_assert_str(reply.code, "nologin");
	test_assert(auth_worker_parse_reply(bad_fail, &reply) < 0);
	test_assert(auth_worker_parse_reply(user, &reply) == 0);
	test_assert(reply.type == AUTH_WORKER_REPLY_USER);
	test_assert_int(reply.uid, 1001);
	test_assert_int(reply.gid, 100);
	test_assert_str(reply.home, "/home/bob");
	test_assert(auth_worker_parse_reply(bad_uid, &reply) < 0);
	test_assert(auth_worker_parse_reply(notfound, &reply) == 0);
	test_assert_int(reply.id, 5);
	test_assert(auth_worker_parse_reply(extra, &reply) < 0);
}

TEST_MAIN(TEST(test_requests), TEST(test_request_bounds), TEST(test_replies))
