/* Unit tests: mail-search-parse.c, mail-search.c, mail-search-text.c,
   mail-search-fold.c. Programs are parsed from real command lines, and
   evaluated on a Maildir built in test_tmpdir(). */
#include "test-common.h"
#include "buffer.h"
#include "strfuncs.h"
#include "mail-search.h"
#include "mailbox.h"
#include "mail-sort-keys.h"

#include <string.h>
#include <unistd.h>

static const struct imap_parser_settings parser_set = {
	.max_line_length = 65536, .max_literal_size = 1024 * 1024,
	.max_list_depth = 100,
};

/* Parse "program" as the arguments of a SEARCH command. */
static enum mail_search_parse_result
parse_program(pool_t pool, const char *program,
	      const struct mail_search_saved *saved,
	      struct mail_search_program **prog_r, const char **error_r)
{
	struct imap_parser *parser = imap_parser_create(&parser_set);
	const char *line = p_strdup_printf(pool, "t %s\r\n", program);
	const struct imap_arg *args;
	size_t consumed, pos = 0, len = strlen(line);
	enum imap_parse_result ret;

	/* a synchronizing literal needs one more feed after "+" */
	while ((ret = imap_parser_feed(parser, 0, (const unsigned char *)line +
				       pos, len - pos, &consumed, &args)) ==
	       IMAP_PARSE_NEED_CONTINUATION)
		pos += consumed;
	if (ret != IMAP_PARSE_DONE)
		i_panic("cannot parse %s", program);
	enum mail_search_parse_result result =
		mail_search_parse(pool, args + 1, saved, prog_r, error_r);
	if (result != MAIL_SEARCH_PARSE_OK)
		*error_r = p_strdup(pool, *error_r);
	/* the program's strings are copies: the parser may go */
	imap_parser_destroy(&parser);
	return result;
}

static void test_parse_ok(void)
{
	static const char *const programs[] = {
		"ALL", "ANSWERED", "BCC x", "BEFORE 1-Feb-1994",
		"BODY \"a b\"", "CC x", "DELETED", "DRAFT", "FLAGGED",
		"FROM Smith", "HEADER X-Foo bar", "HEADER \"X-Foo\" \"\"",
		"KEYWORD $Junk", "LARGER 100", "NEW", "NOT SEEN", "OLD",
		"ON 01-Feb-1994", "OR SEEN FLAGGED", "RECENT", "SEEN",
		"SENTBEFORE 1-Feb-1994", "SENTON \"1-Feb-1994\"",
		"SENTSINCE 1-feb-1994", "SINCE 1-Feb-1994", "SMALLER 5",
		"SUBJECT {3}\r\nabc", "TEXT x", "TO x", "UID 1:*,5",
		"UNANSWERED", "UNDELETED", "UNDRAFT", "UNFLAGGED",
		"UNKEYWORD foo", "UNSEEN", "1,2:4,*", "*:3", "$", "UID $",
		"(SEEN FLAGGED)", "((SEEN) (NOT (FLAGGED)))",
		"OLDER 10", "YOUNGER 86400", "CHARSET UTF-8 ALL",
		"CHARSET us-ascii TEXT x", "CHARSET ISO-8859-1 TEXT x",
		"OR (SEEN) NOT OR 1 2 ALL", "LARGER 18446744073709551615",
	};
	pool_t pool = pool_create("test", 4096);
	struct mail_search_program *prog;
	const char *error;

	for (unsigned int i = 0; i < N_ELEMENTS(programs); i++) {
		enum mail_search_parse_result ret =
			parse_program(pool, programs[i], NULL, &prog, &error);
		if (ret != MAIL_SEARCH_PARSE_OK)
			printf("program %s: %s\n", programs[i], error);
		test_assert(ret == MAIL_SEARCH_PARSE_OK);
	}
	test_assert(parse_program(pool, "UID $", NULL, &prog, &error) == 0);
	test_assert(mail_search_program_uses_saved(prog));
	test_assert(parse_program(pool, "1:3", NULL, &prog, &error) == 0);
	test_assert(!mail_search_program_uses_saved(prog));
	pool_unref(&pool);
}

static void test_parse_errors(void)
{
	static const struct {
		const char *program, *error;
	} bad[] = {
		{ "FOO", "Unknown search key: FOO" },
		{ "SUBJECT", "Missing or invalid argument for SUBJECT" },
		{ "BEFORE 1-Foo-1994", "Invalid date: 1-Foo-1994" },
		{ "BEFORE 123-Feb-1994", "Invalid date: 123-Feb-1994" },
		{ "BEFORE 1-Feb-94", "Invalid date: 1-Feb-94" },
		{ "SINCE", "Missing or invalid argument for SINCE" },
		{ "LARGER", "Missing number for LARGER" },
		{ "LARGER abc", "Invalid number: abc" },
		{ "LARGER 18446744073709551616",
		  "Invalid number: 18446744073709551616" },
		{ "OLDER 0", "Invalid number: 0" },
		{ "UID", "Missing sequence set for UID" },
		{ "UID 1:x", "Invalid sequence set: 1:x" },
		{ "0:3", "Invalid sequence set: 0:3" },
		{ "1,,2", "Invalid sequence set: 1,,2" },
		{ "$1", "Invalid sequence set: $1" },
		{ "NOT", "Missing search key" },
		{ "OR SEEN", "Missing search key" },
		{ "()", "Empty search key list" },
		{ "CHARSET", "Missing or invalid argument for CHARSET" },
		{ "CHARSET UTF-8", "Missing search key" },
		{ "KEYWORD", "Missing keyword for KEYWORD" },
		{ "HEADER X-Foo", "Missing or invalid argument for HEADER" },
		{ "\"SEEN\"", "Search key is not an atom" },
		{ "SEEN CHARSET UTF-8", "Unknown search key: CHARSET" },
	};
	pool_t pool = pool_create("test", 4096);
	struct mail_search_program *prog;
	const char *error;

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		error = NULL;
		test_assert_int(parse_program(pool, bad[i].program, NULL,
					      &prog, &error),
				MAIL_SEARCH_PARSE_BAD);
		test_assert_str(error, bad[i].error);
	}
	test_assert_int(parse_program(pool, "CHARSET X-NOPE-99 ALL", NULL,
				      &prog, &error),
			MAIL_SEARCH_PARSE_BADCHARSET);
	test_assert(strstr(error, "[BADCHARSET (US-ASCII UTF-8)]") != NULL);
	/* nesting is bounded */
	buffer_t deep;
	buffer_init(&deep, 10000);
	for (unsigned int i = 0; i < 200; i++)
		test_assert(buffer_append_str(&deep, "NOT ") == 0);
	test_assert(buffer_append_str(&deep, "ALL") == 0);
	test_assert_int(parse_program(pool, deep.data, NULL, &prog, &error),
			MAIL_SEARCH_PARSE_BAD);
	test_assert_str(error, "Search keys nested too deeply");
	buffer_free(&deep);
	pool_unref(&pool);
}

static void test_fold(void)
{
	buffer_t out;

	buffer_init(&out, mail_search_fold_max(64));
	/* ÄÖÜ É Ω Ж Ё abc ß × ﬁ NBSP; i;unicode-casemap (RFC 5051):
	   titlecase, then decomposed */
	const char *in = "\xc3\x84\xc3\x96\xc3\x9c \xc3\x89 \xce\xa9 "
		"\xd0\x96 \xd0\x81 abc \xc3\x9f \xc3\x97 \xef\xac\x81\xc2\xa0.";
	mail_search_fold_utf8((const unsigned char *)in, strlen(in), &out);
	test_assert_str(out.data, "A\xcc\x88O\xcc\x88U\xcc\x88 E\xcc\x81 "
			"\xce\xa9 \xd0\x96 \xd0\x95\xcc\x88 ABC \xc3\x9f \xc3\x97 fi .");
	test_assert_int(mail_search_fold_max(10), 10 * 12 + 1);
	buffer_free(&out);
}

/* ---- evaluation ---- */

#define MSG_PLAIN \
	"From: Alice Smith <alice@example.org>\r\n" \
	"To: Bob <bob@example.org>\r\n" \
	"Cc: carol@example.org\r\n" \
	"Subject: Hello World\r\n" \
	"X-Folded: first part\r\n" \
	"  second part\r\n" \
	"Date: Mon, 1 Jan 2024 23:30:00 -0500\r\n" \
	"\r\n" \
	"The quick brown fox jumps over the lazy dog.\r\n"

#define MSG_ENCODED \
	"From: =?UTF-8?B?SsO2cmcgTcO8bGxlcg==?= <joerg@example.de>\r\n" \
	"To: =?ISO-8859-1?Q?Ren=E9e?= <renee@example.fr>\r\n" \
	"Subject: =?ISO-8859-1?Q?Caf=E9?= =?KOI8-R?B?8NLJ18XU?=\r\n" \
	"Date: Tue, 2 Jan 2024 01:00:00 +0200\r\n" \
	"MIME-Version: 1.0\r\n" \
	"Content-Type: text/plain; charset=iso-8859-1\r\n" \
	"Content-Transfer-Encoding: quoted-printable\r\n" \
	"\r\n" \
	"Sch=F6ne Gr=FC=DFe aus M=FCn=\r\n" \
	"chen, soft break.\r\n"

/* multipart: a base64 UTF-8 text part, a windows-1251 text part, a binary
   attachment and an attached message. */
#define MSG_MULTI \
	"From: dave@example.org\r\n" \
	"Subject: multi\r\n" \
	"MIME-Version: 1.0\r\n" \
	"Content-Type: multipart/mixed; boundary=\"XX\"\r\n" \
	"\r\n" \
	"preamble not searched\r\n" \
	"--XX\r\n" \
	"Content-Type: text/plain; charset=utf-8\r\n" \
	"Content-Transfer-Encoding: base64\r\n" \
	"\r\n" \
	"w5xuw69jb2RlIGJvZHkgdGV4dA==\r\n" \
	"--XX\r\n" \
	"Content-Type: text/plain; charset=windows-1251\r\n" \
	"\r\n" \
	"\xcf\xf0\xe8\xe2\xe5\xf2 \xec\xe8\xf0\r\n" \
	"--XX\r\n" \
	"Content-Type: application/octet-stream\r\n" \
	"Content-Transfer-Encoding: base64\r\n" \
	"\r\n" \
	"c2VjcmV0d29yZA==\r\n" \
	"--XX\r\n" \
	"Content-Type: message/rfc822\r\n" \
	"\r\n" \
	"Subject: inner-subject\r\n" \
	"\r\n" \
	"inner body\r\n" \
	"--XX--\r\n"

static const char *search_root(void)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/search", test_tmpdir());
	return path;
}

static void append_msg(struct mailbox *box, const void *data, size_t size,
		       enum mail_flags flags, time_t date)
{
	struct mailbox_append_ctx *save;
	const char *error;
	uint32_t uid;

	test_assert(mailbox_append_begin(box, flags, date, &save, &error) == 0);
	test_assert(mailbox_append_write(save, data, size, &error) == 0);
	test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
}

/* A message of about size bytes whose body holds needle starting at body
   offset at; base64 = the body is base64 of that text. */
static buffer_t *big_msg(size_t size, const char *needle, size_t at,
			 bool base64)
{
	static const char hdr_plain[] = "Subject: big\r\n\r\n";
	static const char hdr_b64[] = "Subject: big64\r\n"
		"Content-Transfer-Encoding: base64\r\n\r\n";
	buffer_t *text = i_malloc(sizeof(*text));
	buffer_t *msg = i_malloc(sizeof(*msg));
	pool_t pool = pool_create("base64", 4096);

	buffer_init(text, size + 1);
	char *p = buffer_reserve(text, size);
	for (size_t i = 0; i < size; i++)
		p[i] = (i % 61) == 60 ? '\n' : (char)('a' + i % 7);
	buffer_commit(text, size);
	memcpy(text->data + at, needle, strlen(needle));
	buffer_init(msg, size * 2 + 256);
	test_assert(buffer_append_str(msg, base64 ? hdr_b64 : hdr_plain) == 0);
	if (!base64) {
		test_assert(buffer_append(msg, text->data, text->used) == 0);
	} else {
		/* 76-character lines */
		for (size_t i = 0; i < text->used; i += 57) {
			char *enc = p_base64_encode(pool, text->data + i,
						    MIN(57, text->used - i));
			test_assert(buffer_append_str(msg, enc) == 0 &&
				    buffer_append_str(msg, "\r\n") == 0);
			pool_clear(pool);
		}
	}
	buffer_free(text);
	i_free(text);
	pool_unref(&pool);
	return msg;
}

static struct mailbox *search_box(void)
{
	struct mailbox *box;
	const char *error;
	/* internal dates: 2024-01-01 12:00 UTC and one day later, etc. */
	time_t day0 = 1704110400;

	test_assert(mailbox_open(search_root(), "INBOX", 0, &box, &error) == 1);
	append_msg(box, MSG_PLAIN, strlen(MSG_PLAIN), MAIL_SEEN, day0);
	append_msg(box, MSG_ENCODED, strlen(MSG_ENCODED),
		   MAIL_FLAGGED | MAIL_ANSWERED, day0 + 86400);
	append_msg(box, MSG_MULTI, strlen(MSG_MULTI), MAIL_DELETED,
		   day0 + 2 * 86400);
	/* the needle straddles the first 16 KiB read of the body */
	buffer_t *big = big_msg(1024 * 1024, "Needle-Across",
				MAIL_SEARCH_CHUNK_SIZE - 5, false);
	append_msg(box, big->data, big->used, MAIL_DRAFT, time(NULL) - 100);
	buffer_free(big);
	i_free(big);
	/* and a needle far into a base64 body, across decoded chunks */
	/* base64 lines are 78 bytes (76 + CRLF) for 57 decoded ones: where
	   the fifth read of the body ends in the decoded text */
	size_t raw = 5 * MAIL_SEARCH_CHUNK_SIZE;
	size_t cut = raw / 78 * 57 + (raw % 78) * 3 / 4;
	big = big_msg(3 * 1024 * 1024, "Deep-Needle", cut - 4, true);
	append_msg(box, big->data, big->used, 0, time(NULL) - 100);
	buffer_free(big);
	i_free(big);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(box), 5);
	return box;
}

/* The matching sequence numbers, space separated. */
static const char *search(pool_t pool, struct mailbox *box,
			  const char *program,
			  const struct mail_search_saved *saved)
{
	struct mail_search_program *prog;
	const char *error;
	buffer_t out;

	if (parse_program(pool, program, saved, &prog, &error) != 0) {
		printf("%s: %s\n", program, error);
		return "parse error";
	}
	struct mail_search_ctx *ctx = mail_search_init(box, prog, time(NULL));
	buffer_init(&out, 1024);
	for (uint32_t seq = 1; seq <= mailbox_get_count(box); seq++) {
		int ret = mail_search_match(ctx, seq, &error);
		test_assert(ret >= 0);
		if (ret > 0)
			test_assert(buffer_printf(&out, "%s%u",
				out.used > 0 ? " " : "", seq) == 0);
	}
	mail_search_deinit(&ctx);
	const char *result = p_strdup(pool, out.data);
	buffer_free(&out);
	return result;
}

#define check(program, expected) do { \
	const char *r_ = search(pool, box, program, NULL); \
	if (strcmp(r_, expected) != 0) \
		printf("SEARCH %s -> \"%s\", expected \"%s\"\n", \
		       program, r_, expected); \
	test_assert_str(r_, expected); \
} while (0)

static void test_eval_cheap(void)
{
	pool_t pool = pool_create("test", 4096);
	struct mailbox *box = search_box();
	uint32_t uid3 = mailbox_msg_uid(box, 3);

	check("ALL", "1 2 3 4 5");
	check("SEEN", "1");
	check("UNSEEN", "2 3 4 5");
	check("FLAGGED ANSWERED", "2");
	check("UNANSWERED UNFLAGGED", "1 3 4 5");
	check("DELETED", "3");
	check("UNDELETED", "1 2 4 5");
	check("DRAFT", "4");
	check("UNDRAFT", "1 2 3 5");
	check("2:3", "2 3");
	check("*", "5");
	check("4:*", "4 5");
	check("*:4", "4 5");
	check("1,3,9", "1 3");
	check(p_strdup_printf(pool, "UID %u", uid3), "3");
	check(p_strdup_printf(pool, "UID %u:*", uid3), "3 4 5");
	check("UID 9999:*", "5");
	check("NOT 2:4", "1 5");
	check("OR 1 5", "1 5");
	check("OR SEEN OR FLAGGED DELETED", "1 2 3");
	check("(SEEN) (1)", "1");
	check("NOT (SEEN FLAGGED)", "1 2 3 4 5");
	check("LARGER 100000", "4 5");
	check("SMALLER 300", "1");
	check("BEFORE 2-Jan-2024", "1");
	check("ON 2-Jan-2024", "2");
	check("SINCE 3-Jan-2024", "3 4 5");
	check("YOUNGER 3600", "4 5");
	check("OLDER 3600", "1 2 3");
	check("KEYWORD $Junk", "");
	check("UNKEYWORD $Junk", "1 2 3 4 5");
	check("KEYWORD \\Seen", "1");

	/* keywords as set by STORE */
	unsigned int idx;
	const char *error;
	test_assert(mailbox_keyword_get(box, "$Junk", true, &idx, &error) == 1);
	test_assert(mailbox_msg_set_flags_keywords(box, 2,
		mailbox_msg_flags(box, 2) & MAIL_FLAGS_PERMANENT,
		1U << idx, &error) == 0);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	check("KEYWORD $junk", "2");
	check("UNKEYWORD $Junk", "1 3 4 5");

	/* "$" is the saved UID set */
	struct mail_search_range saved_range = { uid3, MAIL_SEARCH_STAR };
	struct mail_search_saved saved = { &saved_range, 1 };
	test_assert_str(search(pool, box, "$", &saved), "3 4 5");
	test_assert_str(search(pool, box, "UID $ NOT 4", &saved), "3 5");
	test_assert_str(search(pool, box, "$", NULL), "");
	mailbox_close(&box);
	pool_unref(&pool);
}

static void test_eval_header(void)
{
	pool_t pool = pool_create("test", 4096);
	struct mailbox *box;
	const char *error;

	test_assert(mailbox_open(search_root(), "INBOX", 0, &box, &error) == 1);
	check("FROM smith", "1");
	check("FROM ALICE@EXAMPLE", "1");
	check("TO bob", "1");
	check("CC carol", "1");
	check("BCC carol", "");
	check("SUBJECT \"hello world\"", "1");
	check("SUBJECT multi", "3");
	check("SUBJECT inner-subject", "");
	check("HEADER X-Folded \"first part second\"", "");
	check("HEADER X-Folded \"first part  second part\"", "1");
	check("HEADER x-folded \"\"", "1");
	check("HEADER Message-ID \"\"", "");
	/* encoded words in several charsets, case-insensitive after decoding */
	check("FROM \"j\xc3\xb6rg m\xc3\xbcller\"", "2");
	check("FROM \"J\xc3\x96RG\"", "2");
	check("TO \"REN\xc3\x89\x45\"", "2");
	check("SUBJECT \"caf\xc3\xa9\xd0\x9f\xd1\x80\xd0\xb8\"", "2");
	check("CHARSET ISO-8859-1 SUBJECT \"CAF\xc9\"", "2");
	check("CHARSET KOI8-R SUBJECT \"\xf0\xd2\xc9\"", "2");
	/* sent dates are taken in the header's own zone */
	check("SENTON 1-Jan-2024", "1");
	check("SENTBEFORE 2-Jan-2024", "1");
	check("SENTON 2-Jan-2024", "2");
	check("SENTSINCE 2-Jan-2024", "2");
	check("NOT SENTSINCE 1-Jan-1990", "3 4 5");
	/* cheap keys decide first; a header key on what is left */
	check("OR SEEN SUBJECT multi", "1 3");
	check("NOT FROM alice", "2 3 4 5");
	mailbox_close(&box);
	pool_unref(&pool);
}

static void test_eval_body(void)
{
	pool_t pool = pool_create("test", 4096);
	struct mailbox *box;
	const char *error;

	test_assert(mailbox_open(search_root(), "INBOX", 0, &box, &error) == 1);
	check("BODY \"QUICK brown\"", "1");
	check("BODY hello", "");
	check("TEXT hello", "1");
	check("TEXT \"subject: hello\"", "1");
	check("BODY \"\"", "1 2 3 4 5");
	/* quoted-printable, latin-1, soft line break */
	check("BODY \"sch\xc3\xb6ne gr\xc3\xbc\xc3\x9f" "e\"", "2");
	check("BODY m\xc3\xbcnchen", "2");
	check("BODY \"=F6\"", "");
	/* base64 utf-8 part, windows-1251 part, not the attachment */
	check("BODY \"\xc3\xbcn\xc3\xaf" "code body\"", "3");
	check("BODY \"\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2 "
	      "\xd0\xbc\xd0\xb8\xd1\x80\"", "3");
	check("BODY secretword", "");
	check("BODY preamble", "");
	/* an attached message's header and body are body text */
	check("BODY inner-subject", "3");
	check("BODY \"inner body\"", "3");
	/* big messages: matches across read chunks and decoded chunks */
	check("BODY needle-across", "4");
	check("TEXT NEEDLE-ACROSS", "4");
	check("BODY deep-needle", "5");
	check("BODY \"deep-needlX\"", "");
	check("OR BODY deep-needle BODY needle-across", "4 5");
	check("NOT BODY needle-across", "1 2 3 5");
	check("BODY fox SUBJECT hello SEEN", "1");
	mailbox_close(&box);
	pool_unref(&pool);
}

/* FROM/TO/CC/BCC match the address form (comments and folding white
   space inside the addr-spec dropped, display names decoded) and the
   header text; strings compare under i;unicode-casemap. */
static void test_eval_address_casemap(void)
{
	pool_t pool = pool_create("test", 4096);
	struct mailbox *box;
	const char *error;
	char root[512];
	static const char *const msgs[] = {
		"From: John (the man) Doe <john (x) @ (y) example.com>\r\n"
		"To: john . doe @ example . com\r\n"
		"Cc: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <JM@Example.ORG>\r\n"
		"Bcc: team: a@b.c, \"Doe, Jane\" <jane@x.org>;\r\n"
		"Subject: =?UTF-8?Q?Caf=C3=A9_=EF=AC=81ne=C2=A0print?=\r\n\r\n"
		"Stra\xc3\x9f" "e, \xef\xbc\xa1\xef\xbc\xa2 and \xea\xb0\x80.\r\n",
		"From: jane@example.net (Jane Roe)\r\n"
		"To: <@route.a,@route.b:rt@example.com>\r\n"
		"Cc: Plain Name no address\r\n"
		"Subject: \xc4\xb0stanbul \xc7\x84\r\n\r\n"
		"body\r\n",
	};

	snprintf(root, sizeof(root), "%s/addr", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++)
		append_msg(box, msgs[i], strlen(msgs[i]), 0, time(NULL));
	/* 16 KiB of U+FDFA (33 bytes folded each) and a needle after it:
	   folding grows the text elevenfold across the window */
	buffer_t big;
	buffer_init(&big, 64 * 1024);
	test_assert(buffer_append_str(&big, "Subject: big\r\n\r\n") == 0);
	for (unsigned int i = 0; i < 5000; i++)
		test_assert(buffer_append_str(&big, "\xef\xb7\xba") == 0);
	test_assert(buffer_append_str(&big, "caf\xc3\xa9 needle\r\n") == 0);
	append_msg(box, big.data, big.used, 0, time(NULL));
	buffer_free(&big);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);

	/* the address form */
	check("FROM john@example.com", "1");
	check("FROM \"John Doe <john@example.com>\"", "1");
	check("TO john.doe@example.com", "1");
	check("CC \"j\xc3\xbcrgen m\xc3\xbcller <jm@example.org>\"", "1");
	check("BCC \"team: a@b.c, doe, jane <jane@x.org>;\"", "1");
	check("FROM \"Jane Roe <jane@example.net>\"", "2");
	check("TO \"<@route.a,@route.b:rt@example.com>\"", "2");
	check("TO rt@example.com", "2");
	check("CC \"plain name no address\"", "2");
	/* ... and the header text as written */
	check("FROM \"(the man)\"", "1");
	check("FROM \"john (x) @\"", "1");
	check("TO \"example . com\"", "1");
	check("FROM \"(Jane Roe)\"", "2");
	check("BCC \"\\\"Doe, Jane\\\"\"", "1");
	/* not the parser's placeholders, not other headers */
	check("CC missing_domain", "");
	check("FROM rt@example.com", "");
	/* HEADER From stays the header text */
	check("HEADER From john@example.com", "");
	check("HEADER From \"(the man)\"", "1");
	/* i;unicode-casemap: decomposed accents, NFKD, titlecase */
	check("SUBJECT cafe", "1");
	check("SUBJECT \"CAFE\xcc\x81\"", "1");
	check("SUBJECT \"ne print\"", "1");        /* U+00A0 */
	check("SUBJECT \"\xef\xac\x81ne\"", "1");   /* U+FB01 as sent */
	check("SUBJECT fine", "");                 /* "fi" is lower case */
	check("BODY ab", "1");                     /* fullwidth AB */
	check("BODY \"\xe1\x84\x80\xe1\x85\xa1\"", "1"); /* Hangul jamo */
	check("BODY strasse", "");                 /* no SpecialCasing */
	check("BODY \"STRA\xc3\x9f" "E\"", "1");
	check("SUBJECT istanbul", "");             /* İ is I U+0307 */
	check("SUBJECT \"i\xcc\x87stanbul\"", "2");
	check("SUBJECT \"dz\xcc\x8c\"", "");       /* U+01C4 is "Dz" U+030C */
	check("SUBJECT \"\xc7\x86\"", "2");          /* but ǆ folds the same */
	check("BODY \"cafe\xcc\x81 needle\"", "3");
	check("BODY \"\xd9\x85" "caf\"", "3");           /* across the fold */
	mailbox_close(&box);
	pool_unref(&pool);
}

/* Multibyte characters cut by the read chunks: UTF-8 passed through and
   EUC-JP converted by iconv (its carry of an incomplete character). */
static void test_eval_split_chars(void)
{
	pool_t pool = pool_create("test", 4096);
	struct mailbox *box;
	const char *error;
	char root[512];
	/* "ü" in UTF-8; "日本" in EUC-JP (0xC6FC 0xCBDC) */
	static const struct {
		const char *header, *text;
	} msgs[] = {
		{ "Content-Type: text/plain; charset=utf-8\r\n\r\n",
		  "gr\xc3\xbc\xc3\xbcn" },
		{ "Content-Type: text/plain; charset=euc-jp\r\n\r\n",
		  "\xc6\xfc\xcb\xdc\xc6\xfc" },
	};

	snprintf(root, sizeof(root), "%s/split", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++) {
		/* every cut point of the text across the first chunk end */
		for (size_t cut = 0; cut <= strlen(msgs[i].text); cut++) {
			buffer_t m;
			size_t hdr = strlen(msgs[i].header);
			buffer_init(&m, 2 * MAIL_SEARCH_CHUNK_SIZE);
			test_assert(buffer_append_str(&m, msgs[i].header) == 0);
			char *p = buffer_reserve(&m, MAIL_SEARCH_CHUNK_SIZE + 64);
			memset(p, 'z', MAIL_SEARCH_CHUNK_SIZE + 64);
			buffer_commit(&m, MAIL_SEARCH_CHUNK_SIZE + 64);
			memcpy(m.data + hdr + MAIL_SEARCH_CHUNK_SIZE - cut,
			       msgs[i].text, strlen(msgs[i].text));
			append_msg(box, m.data, m.used, 0, time(NULL));
			buffer_free(&m);
		}
	}
	/* RFC 1556 names iconv does not know */
	static const char hebrew[] =
		"Content-Type: text/plain; charset=iso-8859-8-i\r\n\r\n"
		"\xf9\xec\xe5\xed\r\n";
	append_msg(box, hebrew, strlen(hebrew), 0, time(NULL));
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	check("BODY \"\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d\"", "16");
	/* 8 + 7 messages */
	check("BODY \"GR\xc3\x9c\xc3\x9cN\"", "1 2 3 4 5 6 7 8");
	check("BODY \"\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\"",
	      "9 10 11 12 13 14 15");
	check("CHARSET EUC-JP BODY \"\xcb\xdc\xc6\xfc\"",
	      "9 10 11 12 13 14 15");
	mailbox_close(&box);
	test_tmpdir_cleanup();
	pool_unref(&pool);
}

/* ---- the read callback (mailbox_msg_read_callback_t) ---- */

struct read_calls {
	struct mailbox *box;
	char seqs[64];        /* "2 3 4" */
	unsigned int count;
	bool fd_ok;
};

static void read_cb(struct mailbox *box, uint32_t seq, int fd, void *context)
{
	struct read_calls *calls = context;
	char first[256];
	size_t len = strlen(calls->seqs);

	test_assert(box == calls->box);
	snprintf(calls->seqs + len, sizeof(calls->seqs) - len, "%s%u",
		 len > 0 ? " " : "", seq);
	calls->count++;
	/* the reader's file, readable from its start whatever it read */
	ssize_t ret = pread(fd, first, sizeof(first), 0);
	if (ret <= 0 || memchr(first, ':', (size_t)ret) == NULL)
		calls->fd_ok = false;
}

/* The messages the search of program read, space separated. */
static const char *search_reads(pool_t pool, struct mailbox *box,
				const char *program)
{
	struct mail_search_program *prog;
	struct read_calls calls = { .box = box, .fd_ok = true };
	const char *error;

	test_assert(parse_program(pool, program, NULL, &prog, &error) == 0);
	struct mail_search_ctx *ctx = mail_search_init(box, prog, time(NULL));
	mail_search_set_read_callback(ctx, read_cb, &calls);
	for (uint32_t seq = 1; seq <= mailbox_get_count(box); seq++)
		test_assert(mail_search_match(ctx, seq, &error) >= 0);
	mail_search_deinit(&ctx);
	test_assert(calls.fd_ok);
	return p_strdup(pool, calls.seqs);
}

static void test_read_callback(void)
{
	pool_t pool = pool_create("test", 4096);
	const char *error;

	/* a fresh copy of the search mailbox: no keys cached yet */
	test_tmpdir_cleanup();
	struct mailbox *box = search_box();
	/* cheap keys read no file */
	test_assert_str(search_reads(pool, box, "SEEN"), "");
	test_assert_str(search_reads(pool, box, "ALL"), "");
	/* a header or body key reads each file it must judge, once */
	test_assert_str(search_reads(pool, box, "SUBJECT multi"), "1 2 3 4 5");
	test_assert_str(search_reads(pool, box, "TEXT needle-across"),
			"1 2 3 4 5");
	test_assert_str(search_reads(pool, box, "OR SEEN SUBJECT multi"),
			"2 3 4 5");

	/* the key reader: on its misses only */
	uint32_t seqs[] = { 1, 2, 3, 4, 5 };
	for (unsigned int pass = 0; pass < 2; pass++) {
		struct read_calls calls = { .box = box, .fd_ok = true };
		struct mail_sort_keys_reader *r =
			mail_sort_keys_reader_init(box, seqs, N_ELEMENTS(seqs));
		struct mail_sort_keys_stats stats;
		struct mail_sort_keys keys;

		mail_sort_keys_reader_set_read_callback(r, read_cb, &calls);
		for (unsigned int i = 0; i < N_ELEMENTS(seqs); i++)
			test_assert(mail_sort_keys_get(r, seqs[i], &keys, NULL,
						       &error) == 1);
		mail_sort_keys_reader_get_stats(r, &stats);
		mail_sort_keys_reader_deinit(&r);
		test_assert(calls.fd_ok);
		test_assert(calls.count == stats.misses);
		/* the first pass parsed them all and cached the keys */
		test_assert_str(calls.seqs, pass == 0 ? "1 2 3 4 5" : "");
		test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	}
	mailbox_close(&box);
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_parse_ok), TEST(test_parse_errors), TEST(test_fold),
	  TEST(test_eval_cheap), TEST(test_eval_header), TEST(test_eval_body),
	  TEST(test_eval_address_casemap), TEST(test_eval_split_chars),
	  TEST(test_read_callback))
