/* Unit tests for mime/imap-envelope.c: ENVELOPE and IMAP quoting. */
#include "test-common.h"
#include "buffer.h"
#include "imap-envelope.h"
#include "message-parser.h"

static const char *envelope(pool_t pool, const char *msg)
{
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));
	buffer_t out;
	const char *ret;

	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	imap_envelope_write(pool, root, &out);
	ret = p_strdup(pool, out.data);
	buffer_free(&out);
	return ret;
}

static const char *quote(void (*func)(buffer_t *, const char *),
			 pool_t pool, const char *str)
{
	buffer_t out;
	const char *ret;

	buffer_init(&out, 1024);
	func(&out, str);
	ret = p_strdup(pool, out.data);
	buffer_free(&out);
	return ret;
}

static void test_envelope_basic(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(envelope(pool,
		"Date: Mon, 6 Jun 2005 22:21:22 +0200\r\n"
		"Subject: testing\r\n"
		"From: Foo Bar <foo@example.com>\r\n"
		"To: a@b, \"C D\" <c@d>\r\n"
		"Message-ID: <x@y>\r\n\r\nbody\r\n"),
		"(\"Mon, 6 Jun 2005 22:21:22 +0200\" \"testing\" "
		"((\"Foo Bar\" NIL \"foo\" \"example.com\")) "
		"((\"Foo Bar\" NIL \"foo\" \"example.com\")) "
		"((\"Foo Bar\" NIL \"foo\" \"example.com\")) "
		"((NIL NIL \"a\" \"b\")(\"C D\" NIL \"c\" \"d\")) "
		"NIL NIL NIL \"<x@y>\")");
	test_assert_str(envelope(pool, "\r\n"),
		"(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)");
	/* folded subject: whitespace runs collapse, sent as a literal */
	test_assert_str(envelope(pool, "Subject: a\r\n\tb\r\n\r\n"),
		"(NIL {3}\r\na b NIL NIL NIL NIL NIL NIL NIL NIL)");
	/* Sender given: used; Reply-To empty: falls back to From */
	test_assert_str(envelope(pool, "From: a@b\nSender: c@d\nReply-To: \n\n"),
		"(NIL NIL ((NIL NIL \"a\" \"b\")) ((NIL NIL \"c\" \"d\")) "
		"((NIL NIL \"a\" \"b\")) NIL NIL NIL NIL NIL)");
	/* repeated address fields add up, repeated Subject: last wins */
	test_assert_str(envelope(pool, "Subject: 1\nTo: a@b\nSubject: 2\nTo: c@d\n\n"),
		"(NIL \"2\" NIL NIL NIL ((NIL NIL \"a\" \"b\")(NIL NIL \"c\" \"d\")) "
		"NIL NIL NIL NIL)");
	pool_unref(&pool);
}

static void test_imap_quoting(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(quote(imap_envelope_append_nstring, pool, NULL), "NIL");
	test_assert_str(quote(imap_envelope_append_nstring, pool, ""), "\"\"");
	test_assert_str(quote(imap_envelope_append_nstring, pool, "a\"b\\c"),
			"\"a\\\"b\\\\c\"");
	test_assert_str(quote(imap_envelope_append_nstring, pool, "\xc3\xa4"),
			"{2}\r\n\xc3\xa4");
	test_assert_str(quote(imap_envelope_append_nstring_nolf, pool, "a\n b"),
			"\"a b\"");
	test_assert_str(quote(imap_append_string_for_humans, pool, "a b"),
			"\"a b\"");
	test_assert_str(quote(imap_append_string_for_humans, pool, "  a  b "),
			"{3}\r\na b");
	test_assert_str(quote(imap_append_string_for_humans, pool, " \t "),
			"\"\"");
	test_assert_str(quote(imap_append_string_for_humans, pool, "say \"hi\""),
			"{8}\r\nsay \"hi\"");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_envelope_basic), TEST(test_imap_quoting))
