/* Unit tests for lmtp/lmtp-proto.c: LMTP verbs, paths and parameters
   (RFC 2033, RFC 5321 4.1, RFC 1870, RFC 6152, RFC 3030). */

#include "test-common.h"
#include "lmtp-proto.h"

static void test_verbs(void)
{
	const char *args;

	test_assert(lmtp_verb_parse("LHLO mx.example", &args) == LMTP_VERB_LHLO);
	test_assert_str(args, "mx.example");
	test_assert(lmtp_verb_parse("lhlo   x", &args) == LMTP_VERB_LHLO);
	test_assert_str(args, "x");
	test_assert(lmtp_verb_parse("mail FROM:<a@b>", &args) == LMTP_VERB_MAIL);
	test_assert_str(args, "FROM:<a@b>");
	test_assert(lmtp_verb_parse("DATA", &args) == LMTP_VERB_DATA);
	test_assert_str(args, "");
	test_assert(lmtp_verb_parse("EHLO x", &args) == LMTP_VERB_EHLO);
	test_assert(lmtp_verb_parse("HELO x", &args) == LMTP_VERB_HELO);
	test_assert(lmtp_verb_parse("BDAT 10 LAST", &args) == LMTP_VERB_BDAT);
	test_assert(lmtp_verb_parse("QUITX", &args) == LMTP_VERB_UNKNOWN);
	test_assert(lmtp_verb_parse("", &args) == LMTP_VERB_UNKNOWN);
	test_assert(lmtp_verb_parse("MAILFROM:<a@b>", &args) == LMTP_VERB_UNKNOWN);
}

static void test_mail(void)
{
	struct lmtp_mail mail;
	struct lmtp_error error;

	test_assert(lmtp_parse_mail("FROM:<chris@bar.com>", &mail, &error) == 0);
	test_assert_str(mail.path, "chris@bar.com");
	test_assert(!mail.size_set);
	test_assert(lmtp_parse_mail("FROM:<>", &mail, &error) == 0);
	test_assert_str(mail.path, "");
	test_assert(lmtp_parse_mail("from: <a@b> SIZE=12345 BODY=8BITMIME",
				    &mail, &error) == 0);
	test_assert_str(mail.path, "a@b");
	test_assert(mail.size_set && mail.size == 12345);
	test_assert(mail.body == LMTP_BODY_8BITMIME);
	test_assert(lmtp_parse_mail("FROM:<a@b> body=7bit ret=HDRS envid=x "
				    "AUTH=<>", &mail, &error) == 0);
	test_assert(mail.body == LMTP_BODY_7BIT);
	/* a source route is accepted and dropped (RFC 5321 4.1.2) */
	test_assert(lmtp_parse_mail("FROM:<@relay.a,@relay.b:u@c>", &mail,
				    &error) == 0);
	test_assert_str(mail.path, "u@c");
	test_assert(lmtp_parse_mail("FROM:<\"john doe\"@example.com>", &mail,
				    &error) == 0);
	test_assert_str(mail.path, "\"john doe\"@example.com");
	test_assert(lmtp_parse_mail("FROM:bare@example.com", &mail, &error) == 0);
	test_assert_str(mail.path, "bare@example.com");

	static const struct {
		const char *args, *code;
	} bad[] = {
		{ "TO:<a@b>", "501 5.5.4" },
		{ "FROM:<a@b", "501 5.1.7" },
		{ "FROM:<a b@c>", "501 5.1.7" },
		{ "FROM:<a@b>x", "501 5.1.7" },
		{ "FROM:<\"a@b>", "501 5.1.7" },
		{ "FROM:<a\x01@b>", "501 5.1.7" },
		{ "FROM:<@relay:>", "501" },
		{ "FROM:<a@b> SIZE=", "501 5.5.4 Invalid SIZE" },
		{ "FROM:<a@b> SIZE=x1", "501 5.5.4 Invalid SIZE" },
		{ "FROM:<a@b> SIZE=99999999999999999999999", "501 5.5.4" },
		{ "FROM:<a@b> BODY=9BIT", "501 5.5.4 Invalid BODY" },
		{ "FROM:<a@b> FROB=1", "555 5.5.4" },
		{ "FROM:<a@b> =1", "501 5.5.4" },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		error.reply = NULL;
		test_assert(lmtp_parse_mail(bad[i].args, &mail, &error) < 0);
		test_assert(error.reply != NULL &&
			    strncmp(error.reply, bad[i].code,
				    strlen(bad[i].code)) == 0);
	}
	/* a path longer than the bound */
	char long_path[LMTP_PATH_MAX + 32];
	strcpy(long_path, "FROM:<");
	memset(long_path + 6, 'a', LMTP_PATH_MAX + 1);
	strcpy(long_path + 6 + LMTP_PATH_MAX + 1, "@b>");
	test_assert(lmtp_parse_mail(long_path, &mail, &error) < 0);
	/* too many parameters */
	char many[1024] = "FROM:<a@b>";
	for (unsigned int i = 0; i <= LMTP_PARAMS_MAX; i++)
		strcat(many, " RET=FULL");
	test_assert(lmtp_parse_mail(many, &mail, &error) < 0);
}

static void test_rcpt(void)
{
	struct lmtp_rcpt_addr rcpt;
	struct lmtp_error error;

	test_assert(lmtp_parse_rcpt("TO:<pat@foo.edu>", &rcpt, &error) == 0);
	test_assert_str(rcpt.path, "pat@foo.edu");
	test_assert(lmtp_parse_rcpt("to:<Postmaster>", &rcpt, &error) == 0);
	test_assert_str(rcpt.path, "Postmaster");
	test_assert(lmtp_parse_rcpt("TO:<u@d> ORCPT=rfc822;u@d NOTIFY=NEVER",
				    &rcpt, &error) == 0);
	test_assert(lmtp_parse_rcpt("TO:<>", &rcpt, &error) < 0);
	test_assert(strncmp(error.reply, "501 5.1.3", 9) == 0);
	test_assert(lmtp_parse_rcpt("TO:<u@d> SIZE=1", &rcpt, &error) < 0);
	test_assert(strncmp(error.reply, "555", 3) == 0);
	test_assert(lmtp_parse_rcpt("FROM:<u@d>", &rcpt, &error) < 0);
}

/* RFC 6531: the SMTPUTF8 MAIL parameter and UTF-8 envelope addresses */
static void test_smtputf8(void)
{
	struct lmtp_mail mail;
	struct lmtp_error error;

	test_assert(lmtp_parse_mail("FROM:<a@b>", &mail, &error) == 0);
	test_assert(!mail.smtputf8);
	test_assert(lmtp_parse_mail("FROM:<j\xc3\xb6rg@b\xc3\xbc" "cher.example> "
				    "SMTPUTF8 BODY=8BITMIME", &mail,
				    &error) == 0);
	test_assert(mail.smtputf8);
	test_assert_str(mail.path, "j\xc3\xb6rg@b\xc3\xbc" "cher.example");
	test_assert(lmtp_parse_mail("FROM:<> smtputf8", &mail, &error) == 0);
	test_assert(mail.smtputf8);

	static const struct {
		const char *args, *code;
	} bad[] = {
		/* UTF-8 without SMTPUTF8 */
		{ "FROM:<j\xc3\xb6rg@example.org>", "553 5.6.7" },
		{ "FROM:<a@\xe4\xbe\x8b.example> BODY=8BITMIME", "553 5.6.7" },
		/* 8-bit that is not UTF-8 */
		{ "FROM:<j\xf6rg@example.org> SMTPUTF8", "501 5.1.7" },
		{ "FROM:<a@\xed\xa0\x80> SMTPUTF8", "501 5.1.7" },
		/* a keyword without a value */
		{ "FROM:<a@b> SMTPUTF8=yes", "501 5.5.4" },
		{ "FROM:<a@b> SMTPUTF8=", "501 5.5.4" },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		error.reply = NULL;
		test_assert(lmtp_parse_mail(bad[i].args, &mail, &error) < 0);
		test_assert(error.reply != NULL &&
			    strncmp(error.reply, bad[i].code,
				    strlen(bad[i].code)) == 0);
	}

	test_assert(lmtp_address_check("u@d", false, false, &error) == 0);
	test_assert(lmtp_address_check("\xc3\xbc@d", true, false, &error) == 0);
	test_assert(lmtp_address_check("\xc3\xbc@d", false, false, &error) < 0);
	test_assert(strncmp(error.reply, "553 5.6.7", 9) == 0);
	test_assert(lmtp_address_check("\xfc@d", true, false, &error) < 0);
	test_assert(strncmp(error.reply, "501 5.1.3", 9) == 0);

	/* %L lowercases ASCII only: UTF-8 bytes pass unchanged */
	char key[64];
	test_assert(lmtp_username_format("%Lu", "J\xc3\x96rg", "B\xc3\x9c.X",
					 key, sizeof(key)) == 0);
	test_assert_str(key, "j\xc3\x96rg@b\xc3\x9c.x");
}

static void test_bdat(void)
{
	uint64_t size;
	bool last;

	test_assert(lmtp_parse_bdat("100", &size, &last) == 0);
	test_assert(size == 100 && !last);
	test_assert(lmtp_parse_bdat("0 LAST", &size, &last) == 0);
	test_assert(size == 0 && last);
	test_assert(lmtp_parse_bdat("5 last", &size, &last) == 0 && last);
	test_assert(lmtp_parse_bdat("", &size, &last) < 0);
	test_assert(lmtp_parse_bdat("x", &size, &last) < 0);
	test_assert(lmtp_parse_bdat("-1", &size, &last) < 0);
	test_assert(lmtp_parse_bdat("5 FIRST", &size, &last) < 0);
	test_assert(lmtp_parse_bdat("99999999999999999999999", &size, &last) < 0);
}

static void test_address(void)
{
	char user[LMTP_PATH_MAX + 1], detail[LMTP_PATH_MAX + 1];
	char domain[LMTP_PATH_MAX + 1], key[64];

	lmtp_address_split("User+Lists@Example.ORG", "+", user, detail, domain);
	test_assert_str(user, "User");
	test_assert_str(detail, "Lists");
	test_assert_str(domain, "Example.ORG");
	lmtp_address_split("a+b+c@d", "+", user, detail, domain);
	test_assert_str(user, "a");
	test_assert_str(detail, "b+c");
	lmtp_address_split("a+b@d", "", user, detail, domain);
	test_assert_str(user, "a+b");
	test_assert_str(detail, "");
	lmtp_address_split("a-b@d", "-", user, detail, domain);
	test_assert_str(user, "a");
	test_assert_str(detail, "b");
	lmtp_address_split("postmaster", "+", user, detail, domain);
	test_assert_str(user, "postmaster");
	test_assert_str(domain, "");
	/* the domain follows the last '@' */
	lmtp_address_split("\"a@b\"@c", "+", user, detail, domain);
	test_assert_str(user, "\"a@b\"");
	test_assert_str(domain, "c");

	test_assert(lmtp_username_format("%Lu", "User", "Example.ORG", key,
					 sizeof(key)) == 0);
	test_assert_str(key, "user@example.org");
	test_assert(lmtp_username_format("%u", "User", "", key, sizeof(key)) == 0);
	test_assert_str(key, "User");
	test_assert(lmtp_username_format("%Ln", "User", "x.y", key,
					 sizeof(key)) == 0);
	test_assert_str(key, "user");
	test_assert(lmtp_username_format("%d/%n%%", "u", "d", key,
					 sizeof(key)) == 0);
	test_assert_str(key, "d/u%");
	test_assert(lmtp_username_format("%u", "0123456789", "0123456789",
					 key, 12) < 0);
	test_assert(lmtp_username_format("%x", "u", "d", key, sizeof(key)) < 0);
}

TEST_MAIN(TEST(test_verbs), TEST(test_mail), TEST(test_rcpt), TEST(test_bdat),
	  TEST(test_address), TEST(test_smtputf8))
