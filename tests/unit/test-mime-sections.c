/* Unit tests for what BODY[section] names (RFC 3501 6.4.5, RFC 9051
   6.4.5), boundaries (RFC 2046 5.1.1) and header values (RFC 2045 5.1,
   RFC 5322 3.4) as mime/ reads them: a top-level message/rfc822, n.MIME of
   a message, boundaries longer than 70 characters and empty ones,
   unterminated quoted parameters, "" display names, the line break before
   a boundary. Each message is parsed whole and in every chunk size. */
#include "test-common.h"
#include "buffer.h"
#include "imap-bodystructure.h"
#include "imap-envelope.h"
#include "message-parser.h"
#include "rfc2231.h"
#include "mempool.h"

/* The bytes BODY[section.kind] names, "(none)" if there is no such
   section; the message parsed in chunks of chunk bytes. */
static const char *section(pool_t pool, const char *msg, size_t chunk,
			   const char *part, enum message_section_kind kind)
{
	struct message_parser *p = message_parser_init(pool, NULL);
	struct message_section_range r;
	size_t len = strlen(msg);

	for (size_t i = 0; i < len; i += chunk)
		message_parser_feed(p, msg + i, MIN(chunk, len - i));
	struct message_part *root = message_parser_finish(&p);
	if (message_section_get_range(root, part, kind, &r) < 0)
		return "(none)";
	/* every message here has CRLF line ends: both sizes agree */
	test_assert_int(r.physical_size, r.virtual_size);
	return p_strndup(pool, msg + r.physical_pos, (size_t)r.physical_size);
}

static void check(const char *msg, const char *part,
		  enum message_section_kind kind, const char *want)
{
	pool_t pool = pool_create("test", 4096);

	for (size_t chunk = 1; chunk <= strlen(msg); chunk += chunk < 8 ? 1 : 7)
		test_assert_str(section(pool, msg, chunk, part, kind), want);
	pool_unref(&pool);
}

#define TOP_RFC822_HDR \
	"From: outer@example.org\r\n" \
	"Content-Type: message/rfc822\r\n\r\n"
#define TOP_RFC822_INNER_HDR \
	"From: inner@example.org\r\n" \
	"Subject: inner\r\n\r\n"
#define TOP_RFC822_INNER_BODY "inner body\r\n"

/* RFC 3501 6.4.5: HEADER and TEXT without a part number are the message's
   own; 1 is the body of a non-multipart message, here the encapsulated
   message, whose HEADER and TEXT are 1.HEADER and 1.TEXT. */
static void test_top_level_rfc822(void)
{
	static const char msg[] = TOP_RFC822_HDR TOP_RFC822_INNER_HDR
		TOP_RFC822_INNER_BODY;
	static const char multi[] = "From: outer@example.org\r\n"
		"Content-Type: message/rfc822\r\n\r\n"
		"Subject: inner\r\n"
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n"
		"--b\r\n\r\none\r\n--b\r\nX-Part: two\r\n\r\ntwo\r\n--b--\r\n";

	check(msg, "", MESSAGE_SECTION_HEADER, TOP_RFC822_HDR);
	check(msg, "", MESSAGE_SECTION_TEXT,
	      TOP_RFC822_INNER_HDR TOP_RFC822_INNER_BODY);
	check(msg, "1", MESSAGE_SECTION_ALL,
	      TOP_RFC822_INNER_HDR TOP_RFC822_INNER_BODY);
	check(msg, "1", MESSAGE_SECTION_HEADER, TOP_RFC822_INNER_HDR);
	check(msg, "1", MESSAGE_SECTION_TEXT, TOP_RFC822_INNER_BODY);
	check(msg, "1", MESSAGE_SECTION_MIME, TOP_RFC822_HDR);
	/* 1.1: the encapsulated message's body part, whose MIME header is
	   that message's header */
	check(msg, "1.1", MESSAGE_SECTION_ALL, TOP_RFC822_INNER_BODY);
	check(msg, "1.1", MESSAGE_SECTION_MIME, TOP_RFC822_INNER_HDR);
	check(msg, "1.2", MESSAGE_SECTION_ALL, "(none)");
	check(msg, "2", MESSAGE_SECTION_ALL, "(none)");
	check(msg, "1.1.1", MESSAGE_SECTION_ALL, "(none)");
	/* its parts, when it is multipart */
	check(multi, "1.1", MESSAGE_SECTION_ALL, "one");
	check(multi, "1.2", MESSAGE_SECTION_ALL, "two");
	check(multi, "1.2", MESSAGE_SECTION_MIME, "X-Part: two\r\n\r\n");
}

/* n.MIME of a part that is a message (RFC 3501 6.4.5 "the MIME header
   of this part"): the message's header, at every depth. */
static void test_mime_of_messages(void)
{
	static const char single[] = "Subject: single\r\n\r\nbody\r\n";
	static const char nested[] =
		"Content-Type: multipart/mixed; boundary=x\r\n\r\n"
		"--x\r\nX-A: a\r\n\r\nleaf\r\n"
		"--x\r\nContent-Type: message/rfc822\r\n\r\n"
		"Subject: in\r\n\r\ninner\r\n--x--\r\n";

	check(single, "1", MESSAGE_SECTION_MIME, "Subject: single\r\n\r\n");
	check(single, "1", MESSAGE_SECTION_ALL, "body\r\n");
	check(single, "1", MESSAGE_SECTION_HEADER, "(none)");
	check(single, "1.1", MESSAGE_SECTION_ALL, "(none)");
	check(nested, "1", MESSAGE_SECTION_MIME, "X-A: a\r\n\r\n");
	check(nested, "2", MESSAGE_SECTION_MIME,
	      "Content-Type: message/rfc822\r\n\r\n");
	check(nested, "2.1", MESSAGE_SECTION_MIME, "Subject: in\r\n\r\n");
	check(nested, "2.1", MESSAGE_SECTION_ALL, "inner");
	check(nested, "2", MESSAGE_SECTION_HEADER, "Subject: in\r\n\r\n");
	/* a multipart's part that is not multipart is its own 1, once */
	check(nested, "1.1", MESSAGE_SECTION_ALL, "leaf");
	check(nested, "1.1.1", MESSAGE_SECTION_ALL, "(none)");
	check(nested, "1", MESSAGE_SECTION_HEADER, "(none)");
}

static const char *boundary_msg(pool_t pool, const char *b)
{
	return p_strdup_printf(pool,
		"Content-Type: multipart/mixed; boundary=\"%s\"\r\n\r\n"
		"preamble\r\n--%s\r\n\r\none\r\n--%s\r\nX: 2\r\n\r\ntwo\r\n"
		"--%s\r\n\r\nthree\r\n--%s--\r\nepilogue\r\n", b, b, b, b, b);
}

/* RFC 2046 5.1.1 allows 70 characters; real mail has longer boundaries,
   and every part after the first must still be found. */
static void test_long_boundaries(void)
{
	static const size_t lens[] = { 70, 71, 80, 81, 200, 201, 1000, 5000 };
	pool_t pool = pool_create("test", 4096);

	for (unsigned int i = 0; i < N_ELEMENTS(lens); i++) {
		char *b = p_malloc(pool, lens[i] + 1);
		for (size_t j = 0; j < lens[i]; j++)
			b[j] = (char)('a' + j % 26);
		const char *msg = boundary_msg(pool, b);
		check(msg, "1", MESSAGE_SECTION_ALL, "one");
		check(msg, "2", MESSAGE_SECTION_ALL, "two");
		check(msg, "2", MESSAGE_SECTION_MIME, "X: 2\r\n\r\n");
		check(msg, "3", MESSAGE_SECTION_ALL, "three");
		/* the closing delimiter ends the multipart: no 4th part */
		check(msg, "4", MESSAGE_SECTION_ALL, "(none)");
	}
	pool_unref(&pool);
}

/* boundary="": lines of "--" delimit, "----" closes. */
static void test_empty_boundary(void)
{
	static const char msg[] =
		"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n"
		"--\r\n\r\none\r\n--\r\nX: 2\r\n\r\ntwo\r\n----\r\nepilogue\r\n";

	check(msg, "1", MESSAGE_SECTION_ALL, "one");
	check(msg, "2", MESSAGE_SECTION_ALL, "two");
	check(msg, "3", MESSAGE_SECTION_ALL, "(none)");
}

/* The CRLF before a delimiter is the delimiter's (RFC 2046 5.1.1), also
   when a part's header is all there is of it. */
static void test_break_before_boundary(void)
{
	static const char blank[] =
		"Content-Type: multipart/mixed; boundary=X\r\n\r\n"
		"--X\r\nA: a\r\n\r\n--X\r\n\r\n--X--\r\n";
	static const char cut[] =
		"Content-Type: multipart/mixed; boundary=X\r\n\r\n"
		"--X\r\nA: a\r\n--X--\r\n";
	static const char rfc822[] =
		"Content-Type: multipart/mixed; boundary=X\r\n\r\n"
		"--X\r\nContent-Type: message/rfc822\r\n\r\n"
		"Subject: i\r\n\r\n--X--\r\n";

	check(blank, "1", MESSAGE_SECTION_MIME, "A: a\r\n");
	check(blank, "1", MESSAGE_SECTION_ALL, "");
	check(blank, "2", MESSAGE_SECTION_MIME, "");
	check(cut, "1", MESSAGE_SECTION_MIME, "A: a");
	check(rfc822, "1", MESSAGE_SECTION_HEADER, "Subject: i\r\n");
	check(rfc822, "1", MESSAGE_SECTION_TEXT, "");
	/* the message/rfc822 part keeps it (as Dovecot counts) */
	check(rfc822, "1", MESSAGE_SECTION_ALL, "Subject: i\r\n\r\n");
	/* the multipart's own blank line stays when no preamble follows */
	check(blank, "", MESSAGE_SECTION_HEADER,
	      "Content-Type: multipart/mixed; boundary=X\r\n\r\n");
}

static const char *param(pool_t pool, const char *value, const char *name)
{
	struct mime_value v;

	rfc2231_parse(pool, value, true, &v);
	const char *ret = mime_value_get_param(&v, name);
	return ret == NULL ? "(none)" : ret;
}

/* RFC 2045 5.1: value := token / quoted-string. A quote never closed
   ends at the first ';' or at the end of its line (a fold or a bare CR),
   not at the end of the field: the lines after it are not its value. */
static void test_unterminated_quote(void)
{
	pool_t pool = pool_create("test", 4096);

	test_assert_str(param(pool, "text/plain; charset=\"utf-8", "charset"),
			"utf-8");
	test_assert_str(param(pool, "text/plain; charset=\"utf-8\rReturn-Path:"
			      " <x@example.org>", "charset"), "utf-8");
	test_assert_str(param(pool, "text/plain; charset=\"utf-8\n"
			      "\tformat=flowed", "charset"), "utf-8");
	test_assert_str(param(pool, "text/plain; name=\"a.txt\n\t; charset=x",
			      "charset"), "x");
	test_assert_str(param(pool, "text/plain; charset=\"koi8-r; name=a",
			      "charset"), "koi8-r");
	test_assert_str(param(pool, "text/plain; charset=\"koi8-r; name=a",
			      "name"), "a");
	/* nothing before the line end: no value */
	test_assert_str(param(pool, "text/plain; charset=\"", "charset"),
			"(none)");
	/* a closed quote may span a fold; the fold is not in the value */
	test_assert_str(param(pool, "text/plain; x=\"c\n d\"", "x"), "c d");
	pool_unref(&pool);
}

/* Parameters after a broken one ("x;", ";;", "=y") and junk after the
   type are still read; pieces without a piece 0 stay as written. */
static void test_param_recovery(void)
{
	pool_t pool = pool_create("test", 4096);

	test_assert_str(param(pool, "multipart/mixed; charset=x;; boundary=b",
			      "boundary"), "b");
	test_assert_str(param(pool, "text/plain; x; charset=iso", "charset"),
			"iso");
	test_assert_str(param(pool, "text/plain; =y; charset=iso", "charset"),
			"iso");
	test_assert_str(param(pool, "text/plain garbage; charset=iso",
			      "charset"), "iso");
	test_assert_str(param(pool, "text/plain; name*1=\"b\"", "name*1"), "b");
	test_assert_str(param(pool, "text/plain; name*1=\"b\"", "name"),
			"(none)");
	pool_unref(&pool);
}

static const char *bodystructure(pool_t pool, const char *msg)
{
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));
	buffer_t out;

	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	imap_bodystructure_write(pool, root, &out, false);
	const char *ret = p_strndup(pool, out.data, out.used);
	buffer_free(&out);
	return ret;
}

static void test_bodystructure_forms(void)
{
	pool_t pool = pool_create("test", 4096);

	/* body-type-msg always has an envelope and a body (RFC 3501 9) */
	test_assert_str(bodystructure(pool, "Content-Type: message/rfc822\r\n"),
		"(\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 0 "
		"(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL) (\"text\" \"plain\" "
		"(\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0) 0)");
	/* a type without subtype */
	test_assert_str(bodystructure(pool, "MIME-Version: 1.0\r\n"
				      "Content-Type: text\r\n\r\nx"),
		"(\"text\" \"\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 1 0)");
	test_assert_str(bodystructure(pool, "MIME-Version: 1.0\r\n"
				      "Content-Type: multipart\r\n\r\nx"),
		"(\"application\" \"octet-stream\" NIL NIL NIL \"7bit\" 1)");
	/* repeated fields: the first one-token encoding, the last
	   disposition */
	test_assert_str(bodystructure(pool, "MIME-Version: 1.0\r\n"
		"Content-Transfer-Encoding: base64 x\r\n"
		"Content-Transfer-Encoding: quoted-printable\r\n\r\nx"),
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL "
		"\"quoted-printable\" 1 0)");
	pool_unref(&pool);
}

static const char *envelope(pool_t pool, const char *msg)
{
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));
	buffer_t out;

	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	imap_envelope_write(pool, root, &out);
	const char *ret = p_strndup(pool, out.data, out.used);
	buffer_free(&out);
	return ret;
}

/* RFC 3501 7.4.2: addr-name is NIL when there is no name; "" is none. */
static void test_envelope_names(void)
{
	pool_t pool = pool_create("test", 4096);

	test_assert_str(envelope(pool, "From: \"\" <list@example.org>\r\n\r\n"),
		"(NIL NIL ((NIL NIL \"list\" \"example.org\")) "
		"((NIL NIL \"list\" \"example.org\")) "
		"((NIL NIL \"list\" \"example.org\")) NIL NIL NIL NIL NIL)");
	/* an unclosed "<" or quote: what is there is not trusted */
	test_assert_str(envelope(pool, "To: x <a@b.c\r\n\r\n"),
		"(NIL NIL NIL NIL NIL ((\"x\" NIL \"a\" \"SYNTAX_ERROR\")) "
		"NIL NIL NIL NIL)");
	test_assert_str(envelope(pool, "To: a@b, \"P=\r\n\r\n"),
		"(NIL NIL NIL NIL NIL ((NIL NIL \"a\" \"b\")(NIL NIL "
		"\"MISSING_MAILBOX\" \"MISSING_DOMAIN\")) NIL NIL NIL NIL)");
	/* a bare CR in a value reads as a space */
	test_assert_str(envelope(pool, "Message-ID: <a@b>\rX: y\r\n\r\n"),
		"(NIL NIL NIL NIL NIL NIL NIL NIL NIL \"<a@b> X: y\")");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_top_level_rfc822), TEST(test_mime_of_messages),
	  TEST(test_long_boundaries), TEST(test_empty_boundary),
	  TEST(test_break_before_boundary), TEST(test_unterminated_quote),
	  TEST(test_param_recovery), TEST(test_bodystructure_forms),
	  TEST(test_envelope_names))
