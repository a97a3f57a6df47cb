/* Unit tests for mime/message-address.c (RFC 5322 address lists). */
#include "test-common.h"
#include "buffer.h"
#include "message-address.h"

/* "name|route|mailbox|domain" per address, ", " between them. */
static const char *addr_str(pool_t pool, const char *input)
{
	struct message_address *a =
		message_address_parse(pool, input, strlen(input));
	buffer_t buf;
	const char *ret;

	buffer_init(&buf, 4096);
	for (; a != NULL; a = a->next) {
		if (buffer_printf(&buf, "%s%s|%s|%s|%s", buf.used > 0 ? ", " : "",
				  a->name == NULL ? "NIL" : a->name,
				  a->route == NULL ? "NIL" : a->route,
				  a->mailbox == NULL ? "NIL" : a->mailbox,
				  a->domain == NULL ? "NIL" : a->domain) < 0)
			i_unreached();
	}
	ret = p_strdup(pool, buf.data);
	buffer_free(&buf);
	return ret;
}

static void test_address_basic(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(addr_str(pool, "user@example.com"),
			"NIL|NIL|user|example.com");
	test_assert_str(addr_str(pool, "Joe Q. Public <john@x.org>"),
			"Joe Q. Public|NIL|john|x.org");
	test_assert_str(addr_str(pool, "\"Doe, John\" <j@d>, a@b"),
			"Doe, John|NIL|j|d, NIL|NIL|a|b");
	test_assert_str(addr_str(pool, "a@b (Real Name)"),
			"Real Name|NIL|a|b");
	test_assert_str(addr_str(pool, "<@r1,@r2:u@h>"),
			"NIL|@r1,@r2|u|h");
	test_assert_str(addr_str(pool, "jdoe@test   . example"),
			"NIL|NIL|jdoe|test.example");
	test_assert_str(addr_str(pool, "\"x y\"@z"), "NIL|NIL|x y|z");
	test_assert(message_address_parse(pool, "", 0) == NULL);
	test_assert(message_address_parse(pool, "  (c) ", 6) == NULL);
	pool_unref(&pool);
}

static void test_address_groups(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(addr_str(pool, "undisclosed-recipients:;"),
			"NIL|NIL|undisclosed-recipients|NIL, NIL|NIL|NIL|NIL");
	test_assert_str(addr_str(pool, "g: a@b, c@d;, e@f"),
			"NIL|NIL|g|NIL, NIL|NIL|a|b, NIL|NIL|c|d, "
			"NIL|NIL|NIL|NIL, NIL|NIL|e|f");
	pool_unref(&pool);
}

static void test_address_broken(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(addr_str(pool, "foo"), "NIL|NIL|foo|MISSING_DOMAIN");
	test_assert_str(addr_str(pool, "Big Bug bb"),
			"Big Bug bb|NIL|MISSING_MAILBOX|MISSING_DOMAIN");
	test_assert_str(addr_str(pool, "<>"),
			"NIL|NIL|MISSING_MAILBOX|MISSING_DOMAIN");
	test_assert_str(addr_str(pool, ", a@b"),
			"NIL|NIL|MISSING_MAILBOX|MISSING_DOMAIN, NIL|NIL|a|b");
	test_assert_str(addr_str(pool, "<a:b@c>, d@e"),
			"NIL|NIL|a|SYNTAX_ERROR");
	/* garbage ends the list */
	test_assert_str(addr_str(pool, "a@b c, d@e"), "NIL|NIL|a|b");
	/* an unterminated quote swallows the rest: that element is a
	   missing address and the list ends there (as Dovecot reads it) */
	test_assert_str(addr_str(pool, "\"abc <a@b>"),
			"NIL|NIL|MISSING_MAILBOX|MISSING_DOMAIN");
	test_assert_str(addr_str(pool, "a@b, \"abc <c@d>"),
			"NIL|NIL|a|b, NIL|NIL|MISSING_MAILBOX|MISSING_DOMAIN");
	/* a quoted word without "@" is a name, a bare one a mailbox */
	test_assert_str(addr_str(pool, "\"Xi Alpha\""),
			"Xi Alpha|NIL|MISSING_MAILBOX|MISSING_DOMAIN");
	/* "<a@b" never closed, a route without ':', "b." */
	test_assert_str(addr_str(pool, "x <a@b.c"), "x|NIL|a|SYNTAX_ERROR");
	test_assert_str(addr_str(pool, "<@r"),
			"NIL|INVALID_ROUTE|MISSING_MAILBOX|SYNTAX_ERROR");
	test_assert_str(addr_str(pool, "a@b."), "NIL|NIL|a|MISSING_DOMAIN");
	/* unterminated comments end at the end of input */
	(void)addr_str(pool, "(((((a@b");
	(void)addr_str(pool, "<<<<@@@,,,;;;:::");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_address_basic), TEST(test_address_groups),
	  TEST(test_address_broken))
