/* Unit tests for admin/admin-query.c (moatadm's query words to IMAP
   SEARCH) and admin/admin-imap.c's value parser and quoting. */

#include "test-common.h"
#include "admin-imap.h"
#include "admin-query.h"
#include "strfuncs.h"

/* 2026-12-01 12:00:00 UTC */
#define TEST_NOW ((time_t)1796126400)

static const char *build(pool_t pool, const char *words)
{
	char **argv = (char **)p_strsplit(pool, words, ' ');
	const char *program, *error;
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	if (admin_query_build(pool, argc, argv, TEST_NOW, &program, &error) < 0)
		return p_strdup_printf(pool, "ERROR %s", error);
	return program;
}

static void test_query_keys(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(build(pool, "all"), "ALL");
	test_assert_str(build(pool, "not deleted UNSEEN"), "NOT DELETED UNSEEN");
	test_assert_str(build(pool, "or seen flagged"), "OR SEEN FLAGGED");
	test_assert_str(build(pool, "( seen )"), "( SEEN )");
	test_assert_str(build(pool, "before 2021-01-05"), "BEFORE 5-Jan-2021");
	test_assert_str(build(pool, "savedbefore 30d"), "SAVEDBEFORE 1-Nov-2026");
	test_assert_str(build(pool, "savedsince 2w"), "SAVEDSINCE 17-Nov-2026");
	test_assert_str(build(pool, "since 0d"), "SINCE 1-Dec-2026");
	test_assert_str(build(pool, "larger 10k smaller 2M"),
			"LARGER 10240 SMALLER 2097152");
	test_assert_str(build(pool, "from bob"), "FROM \"bob\"");
	test_assert_str(build(pool, "subject a\"b"), "SUBJECT \"a\\\"b\"");
	test_assert_str(build(pool, "header X-Spam yes"),
			"HEADER \"X-Spam\" \"yes\"");
	test_assert_str(build(pool, "uid 1:3,7"), "UID 1:3,7");
	test_assert_str(build(pool, "keyword $Junk"), "KEYWORD $Junk");
	/* UTF-8 goes as a LITERAL+ literal with the charset named */
	test_assert_str(build(pool, "subject \xc3\xbc"),
			"CHARSET UTF-8 SUBJECT {2+}\r\n\xc3\xbc");
	pool_unref(&pool);
}

static void test_query_errors(void)
{
	pool_t pool = pool_create("test", 1024);
	const char *program, *error;

	test_assert(admin_query_build(pool, 0, NULL, TEST_NOW, &program,
				      &error) < 0);
	test_assert_str(build(pool, "sometimes"), "ERROR query: unknown key sometimes");
	test_assert_str(build(pool, "before"), "ERROR query: before needs a value");
	test_assert_str(build(pool, "header X"),
			"ERROR query: header needs a field and a string");
	test_assert_str(build(pool, "before 2021-13-01"),
			"ERROR query: invalid value for before");
	test_assert_str(build(pool, "before 30y"),
			"ERROR query: invalid value for before");
	test_assert_str(build(pool, "larger lots"),
			"ERROR query: invalid value for larger");
	test_assert_str(build(pool, "uid 1;2"), "ERROR query: invalid value for uid");
	test_assert_str(build(pool, "keyword a(b"),
			"ERROR query: invalid value for keyword");
	/* bounded: a query longer than ADMIN_QUERY_MAX is refused */
	char *big = p_malloc(pool, ADMIN_QUERY_MAX + 16);
	memset(big, 'x', ADMIN_QUERY_MAX + 8);
	char *argv[] = { (char *)"from", big, NULL };
	test_assert(admin_query_build(pool, 2, argv, TEST_NOW, &program,
				      &error) < 0);
	test_assert_str(error, "query: too long");
	pool_unref(&pool);
}

static void test_imap_values(void)
{
	pool_t pool = pool_create("test", 1024);
	struct admin_imap_value v;
	const char *resp = "(\\HasNoChildren \\Sent) \".\" \"a \\\"q\\\" b\" "
		"NIL BODY[HEADER.FIELDS (A B)] {5}\r\nhello ~{2}\r\nxy";
	const char *pos = resp, *end = resp + strlen(resp);

	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_LIST);
	test_assert_str(p_strndup(pool, v.data, v.size), "\\HasNoChildren \\Sent");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_STRING);
	test_assert_str(v.data, ".");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert_str(v.data, "a \"q\" b");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_NIL);
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_ATOM);
	test_assert_str(v.data, "BODY[HEADER.FIELDS (A B)]");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_STRING);
	test_assert_int(v.size, 5);
	test_assert_str(v.data, "hello");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert_str(v.data, "xy");
	admin_imap_value_next(pool, &pos, end, &v);
	test_assert(v.type == ADMIN_IMAP_VALUE_END);

	/* a literal longer than what is there, an unclosed string or list */
	const char *bad[] = { "{10}\r\nshort", "\"open", "(a (b)", "{5}x" };
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		pos = bad[i];
		admin_imap_value_next(pool, &pos, bad[i] + strlen(bad[i]), &v);
		test_assert(v.type == ADMIN_IMAP_VALUE_ERROR);
	}
	pool_unref(&pool);
}

static void test_imap_quote_and_names(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(admin_imap_quote(pool, "INBOX"), "\"INBOX\"");
	test_assert_str(admin_imap_quote(pool, "a\\b\"c"), "\"a\\\\b\\\"c\"");
	test_assert_str(admin_imap_quote(pool, "line\r\nbreak"),
			"{11+}\r\nline\r\nbreak");
	test_assert_str(admin_imap_mailbox(pool, "\xc3\x9c" "n" "\xc3\xaf" "code"),
			"\"&ANw-n&AO8-code\"");
	test_assert(admin_imap_mailbox(pool, "\xff") == NULL);
	test_assert_str(admin_imap_mailbox_utf8(pool, "&ANw-n&AO8-code"),
			"\xc3\x9c" "n" "\xc3\xaf" "code");
	/* not modified UTF-7: shown as it is */
	test_assert_str(admin_imap_mailbox_utf8(pool, "&&&"), "&&&");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_query_keys), TEST(test_query_errors),
	  TEST(test_imap_values), TEST(test_imap_quote_and_names))
