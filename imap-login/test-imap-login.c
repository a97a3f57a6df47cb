/* Unit tests of imap-login's pure helpers. */
#include "test-common.h"
#include "mempool.h"
#include "buffer.h"
#include "imap-parser.h"
#include "login-capability.h"
#include "login-util.h"
#include "login-id.h"
#include "login-stats.h"

#include <arpa/inet.h>

static void test_mechs_parse(void)
{
	struct login_mechs mechs;
	const char *error;

	test_assert(login_mechs_parse("plain login", &mechs, &error) == 0);
	test_assert_int(mechs.count, 2);
	test_assert_str(mechs.mechs[0].name, "PLAIN");
	test_assert(mechs.mechs[0].plaintext);
	test_assert_str(mechs.mechs[1].name, "LOGIN");
	test_assert(login_mechs_find(&mechs, "pLaIn") == &mechs.mechs[0]);
	test_assert(login_mechs_find(&mechs, "CRAM-MD5") == NULL);

	test_assert(login_mechs_parse(" plain,,PLAIN  scram-sha-256 ",
				      &mechs, &error) == 0);
	test_assert_int(mechs.count, 2);
	test_assert_str(mechs.mechs[1].name, "SCRAM-SHA-256");
	test_assert(!mechs.mechs[1].plaintext);

	test_assert(login_mechs_parse("", &mechs, &error) == 0);
	test_assert_int(mechs.count, 0);
	test_assert(login_mechs_parse("pl@in", &mechs, &error) < 0);
	test_assert(login_mechs_parse("abcdefghijklmnopqrstu", &mechs, &error) < 0);
}

static void test_capability_build(void)
{
	pool_t pool = pool_create("test", 1024);
	struct login_mechs mechs;
	const char *error;

	test_assert(login_mechs_parse("plain login", &mechs, &error) == 0);
	test_assert_str(login_capability_build(pool, &mechs,
		LOGIN_CAP_AUTH | LOGIN_CAP_PLAINTEXT_AUTH),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=PLAIN "
		"AUTH=LOGIN");
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID LOGINDISABLED");
	test_assert_str(login_capability_build(pool, &mechs,
		LOGIN_CAP_AUTH | LOGIN_CAP_STARTTLS),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID STARTTLS "
		"LOGINDISABLED");
	test_assert(login_mechs_parse("plain scram-sha-1", &mechs, &error) == 0);
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=SCRAM-SHA-1 "
		"LOGINDISABLED");
	/* -PLUS mechanisms only with TLS channel binding */
	test_assert(login_mechs_parse("scram-sha-256 scram-sha-256-plus oauthbearer",
				      &mechs, &error) == 0);
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=SCRAM-SHA-256 "
		"LOGINDISABLED");
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH |
		LOGIN_CAP_PLAINTEXT_AUTH | LOGIN_CAP_CHANNEL_BINDING),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=SCRAM-SHA-256 "
		"AUTH=SCRAM-SHA-256-PLUS AUTH=OAUTHBEARER");
	/* EXTERNAL only with a verified client certificate */
	test_assert(login_mechs_parse("plain external", &mechs, &error) == 0);
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH |
		LOGIN_CAP_PLAINTEXT_AUTH | LOGIN_CAP_CHANNEL_BINDING),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=PLAIN");
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH |
		LOGIN_CAP_PLAINTEXT_AUTH | LOGIN_CAP_CLIENT_CERT),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID AUTH=PLAIN "
		"AUTH=EXTERNAL");
	test_assert(login_mechs_parse("plain scram-sha-1", &mechs, &error) == 0);
	/* ssl = required before TLS: no mechanism at all */
	test_assert_str(login_capability_build(pool, &mechs, LOGIN_CAP_STARTTLS),
		"IMAP4rev1 IMAP4rev2 LITERAL+ SASL-IR ID STARTTLS "
		"LOGINDISABLED");
	/* imap_literal_minus = yes: LITERAL- instead of LITERAL+ (RFC 7888 5) */
	test_assert(strstr(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH |
		LOGIN_CAP_LITERAL_MINUS), " LITERAL- ") != NULL);
	test_assert(strstr(login_capability_build(pool, &mechs, LOGIN_CAP_AUTH |
		LOGIN_CAP_LITERAL_MINUS), "LITERAL+") == NULL);
	pool_unref(&pool);
}

static socklen_t make_addr(struct sockaddr_storage *ss, const char *ip,
			   unsigned int port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':') != NULL) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		i_assert(inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1);
		return sizeof(*sin6);
	}
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	i_assert(inet_pton(AF_INET, ip, &sin->sin_addr) == 1);
	return sizeof(*sin);
}

static bool is_loopback(const char *ip)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, ip, 143);
	return login_addr_is_loopback((struct sockaddr *)&ss, len);
}

static void test_addr_loopback(void)
{
	test_assert(is_loopback("127.0.0.1"));
	test_assert(is_loopback("127.255.1.2"));
	test_assert(is_loopback("::1"));
	test_assert(is_loopback("::ffff:127.0.0.5"));
	test_assert(!is_loopback("128.0.0.1"));
	test_assert(!is_loopback("10.0.0.1"));
	test_assert(!is_loopback("::2"));
	test_assert(!is_loopback("::ffff:10.0.0.1"));
	test_assert(!is_loopback("fe80::1"));

	/* A short length is never trusted. */
	struct sockaddr_storage ss;
	(void)make_addr(&ss, "127.0.0.1", 1);
	test_assert(!login_addr_is_loopback((struct sockaddr *)&ss, 4));
}

static void test_addr_to_str(void)
{
	struct sockaddr_storage ss;
	char ip[LOGIN_IP_STR_MAX];
	unsigned int port = 0;
	socklen_t len;

	len = make_addr(&ss, "192.0.2.7", 143);
	test_assert(login_addr_to_str((struct sockaddr *)&ss, len, ip, &port) == 0);
	test_assert_str(ip, "192.0.2.7");
	test_assert_int(port, 143);

	len = make_addr(&ss, "2001:db8::1", 993);
	test_assert(login_addr_to_str((struct sockaddr *)&ss, len, ip, &port) == 0);
	test_assert_str(ip, "2001:db8::1");
	test_assert_int(port, 993);

	len = make_addr(&ss, "::ffff:192.0.2.9", 10143);
	test_assert(login_addr_to_str((struct sockaddr *)&ss, len, ip, &port) == 0);
	test_assert_str(ip, "192.0.2.9");

	ss.ss_family = AF_UNIX;
	test_assert(login_addr_to_str((struct sockaddr *)&ss, len, ip, &port) < 0);
}

static void test_base64_valid(void)
{
	test_assert(login_base64_is_valid("", 0));
	test_assert(login_base64_is_valid("AHUAcA==", 4));
	test_assert(!login_base64_is_valid("AHUAcA==", 3));
	test_assert(login_base64_is_valid("AHVzZXIAcGFzcw==", 100));
	test_assert(login_base64_is_valid("YWJj", 3));
	test_assert(!login_base64_is_valid("YWJ", 100));
	test_assert(!login_base64_is_valid("YW=j", 100));
	test_assert(!login_base64_is_valid("Y===", 100));
	test_assert(!login_base64_is_valid("YW J", 100));
	test_assert(!login_base64_is_valid("*", 100));
	test_assert(!login_base64_is_valid("=", 100));
}

/* Parse "a ID <rest>" and validate its arguments. */
static int id_check(const char *rest, const char **error_r)
{
	struct imap_parser_settings set = {
		.max_line_length = 65536, .max_literal_size = 8192,
		.max_list_depth = 4,
	};
	struct imap_parser *parser = imap_parser_create(&set);
	const struct imap_arg *args;
	char *line = i_strdup_printf("a ID %s\r\n", rest);
	size_t consumed;
	int ret = -2;

	if (imap_parser_feed(parser, 0, (const unsigned char *)line,
			     strlen(line), &consumed, &args) == IMAP_PARSE_DONE)
		ret = login_id_args_validate(&args[2], error_r);
	i_free(line);
	imap_parser_destroy(&parser);
	return ret;
}

static void test_id_validate(void)
{
	const char *error;
	char *s;

	test_assert(id_check("NIL", &error) == 0);
	test_assert(id_check("()", &error) == 0);
	test_assert(id_check("(\"name\" \"x\" \"version\" NIL)", &error) == 0);
	test_assert(id_check("(\"name\")", &error) == -1);
	test_assert(id_check("NIL NIL", &error) == -1);
	test_assert(id_check("\"name\"", &error) == -1);
	test_assert(id_check("((\"a\" \"b\"))", &error) == -1);
	test_assert(id_check("(NIL \"x\")", &error) == -1);

	s = i_strdup_printf("(\"%031d\" \"x\")", 0);
	test_assert(id_check(s, &error) == -1);
	i_free(s);

	buffer_t buf;
	buffer_init(&buf, 4096);
	test_assert(buffer_append_c(&buf, '(') == 0);
	for (unsigned int i = 0; i < LOGIN_ID_MAX_PAIRS + 1; i++)
		test_assert(buffer_printf(&buf, "%s\"k%u\" \"v\"", i == 0 ? "" : " ", i) == 0);
	test_assert(buffer_append_c(&buf, ')') == 0);
	test_assert(id_check(buf.data, &error) == -1);
	test_assert_str(error, "Too many ID fields");
	buffer_free(&buf);
}

/* The reason label of each disconnect text login_client_destroy() is
   given; the first matching prefix wins. */
static void test_stats_reason(void)
{
	static const struct {
		const char *text;
		enum login_disconnect_reason reason;
	} cases[] = {
		{ "Logged out", LOGIN_DISCONNECT_LOGOUT },
		{ "Connection closed", LOGIN_DISCONNECT_CLOSED },
		{ "Connection closed: Connection reset by peer",
		  LOGIN_DISCONNECT_CLOSED },
		{ "Connection closed during authentication",
		  LOGIN_DISCONNECT_CLOSED },
		{ "Login timeout", LOGIN_DISCONNECT_TIMEOUT },
		{ "Login timeout during TLS handshake", LOGIN_DISCONNECT_TIMEOUT },
		{ "TLS handshake timed out", LOGIN_DISCONNECT_TIMEOUT },
		{ "TLS handshake failed: wrong version number",
		  LOGIN_DISCONNECT_TLS },
		{ "TLS initialization failed", LOGIN_DISCONNECT_TLS },
		{ "Too many connections from IP (login_max_connections_per_ip)",
		  LOGIN_DISCONNECT_LIMIT },
		{ "Too many invalid commands", LOGIN_DISCONNECT_BAD_COMMANDS },
		{ "Server shutting down", LOGIN_DISCONNECT_SHUTDOWN },
		{ "Write failed", LOGIN_DISCONNECT_OTHER },
		{ "Master unavailable", LOGIN_DISCONNECT_OTHER },
		{ "", LOGIN_DISCONNECT_OTHER },
	};

	for (unsigned int i = 0; i < N_ELEMENTS(cases); i++)
		test_assert_int(login_stats_reason(cases[i].text), cases[i].reason);
	test_assert_int(login_stats_reason(NULL), LOGIN_DISCONNECT_OTHER);
}

TEST_MAIN(TEST(test_stats_reason),
	  TEST(test_mechs_parse), TEST(test_capability_build),
	  TEST(test_addr_loopback), TEST(test_addr_to_str),
	  TEST(test_base64_valid), TEST(test_id_validate))
