/* Unit tests for mime/imap-bodystructure.c: BODY and BODYSTRUCTURE. */
#include "test-common.h"
#include "buffer.h"
#include "imap-bodystructure.h"
#include "imap-envelope.h"
#include "message-parser.h"

static const char *bs(pool_t pool, const char *msg, bool extended)
{
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));
	buffer_t out;
	const char *ret;

	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	imap_bodystructure_write(pool, root, &out, extended);
	ret = p_strdup(pool, out.data);
	buffer_free(&out);
	return ret;
}

static void test_bodystructure_simple(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(bs(pool, "Subject: x\n\nhello\n", false),
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 7 1)");
	test_assert_str(bs(pool, "Subject: x\n\nhello\n", true),
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 7 1"
		" NIL NIL NIL NIL)");
	test_assert_str(bs(pool,
		"MIME-Version: 1.0\r\n"
		"Content-Type: image/GIF; name=\"a b.gif\"\r\n"
		"Content-Transfer-Encoding: base64\r\n"
		"Content-ID: <id>\r\n"
		"Content-Disposition: attachment; filename*=utf-8''a%20b.gif\r\n"
		"Content-Language: en, de\r\n"
		"Content-Location: http://x/\r\n"
		"\r\nR0lG\r\n", true),
		"(\"image\" \"GIF\" (\"name\" \"a b.gif\") \"<id>\" NIL \"base64\" 6"
		" NIL (\"attachment\" (\"filename*\" \"utf-8''a%20b.gif\"))"
		" (\"en\" \"de\") \"http://x/\")");
	/* Content-* without MIME-Version or Content-Type do not count */
	test_assert_str(bs(pool, "Content-Transfer-Encoding: base64\n\nx", false),
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 1 0)");
	pool_unref(&pool);
}

static void test_bodystructure_multipart(void)
{
	pool_t pool = pool_create("test", 1024);
	const char *msg =
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n"
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>\r\n"
		"--b\r\nContent-Type: message/rfc822\r\n\r\n"
		"Subject: s\r\n\r\nbody\r\n"
		"--b--\r\n";

	test_assert_str(bs(pool, msg, false),
		"((\"text\" \"html\" (\"charset\" \"utf-8\") NIL NIL \"7bit\" 3 0)"
		"(\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 18 "
		"(NIL \"s\" NIL NIL NIL NIL NIL NIL NIL NIL) "
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 4 0) 2)"
		" \"mixed\")");
	test_assert_str(bs(pool, msg, true),
		"((\"text\" \"html\" (\"charset\" \"utf-8\") NIL NIL \"7bit\" 3 0"
		" NIL NIL NIL NIL)"
		"(\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 18 "
		"(NIL \"s\" NIL NIL NIL NIL NIL NIL NIL NIL) "
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 4 0"
		" NIL NIL NIL NIL) 2 NIL NIL NIL NIL)"
		" \"mixed\" (\"boundary\" \"b\") NIL NIL NIL)");
	/* a multipart without parts still has one (empty) body part */
	test_assert_str(bs(pool, "Content-Type: multipart/mixed; boundary=b\n\nx\n",
			   false),
		"((\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0)"
		" \"mixed\")");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_bodystructure_simple), TEST(test_bodystructure_multipart))
