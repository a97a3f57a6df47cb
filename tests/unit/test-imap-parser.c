/* Unit tests for lib/imap-parser.c. Most tests run an input script
   through a driver that records every parser result as a line of text
   (a transcript), so the same script fed in different chunk sizes must
   give the same transcript. */

#include "test-common.h"
#include "buffer.h"
#include "imap-parser.h"

#define TRANSCRIPT_MAX (4 * 1024 * 1024)

enum chunk_mode {
	CHUNK_ALL,
	CHUNK_ONE,
	CHUNK_RANDOM,
};

struct run_opts {
	enum chunk_mode mode;
	unsigned int seed;
	bool reset_on_error;
	enum imap_parser_flags flags;
};

static const struct imap_parser_settings default_set = {
	.max_line_length = 256,
	.max_literal_size = 100000,
	.max_list_depth = 4,
	.literal_minus = false,
};

/* ---- transcript helpers ---- */

static void out_str(buffer_t *out, const char *str)
{
	if (buffer_append_str(out, str) < 0)
		i_panic("transcript full");
}

static void out_raw(buffer_t *out, const char *data, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		if (data[i] == '\0')
			out_str(out, "\\0");
		else if (buffer_append_c(out, data[i]) < 0)
			i_panic("transcript full");
	}
}

static void out_args(buffer_t *out, const struct imap_arg *args,
		     const struct imap_arg *parent)
{
	for (unsigned int i = 0;; i++) {
		const struct imap_arg *arg = &args[i];

		if (arg->parent != parent)
			out_str(out, "<BADPARENT>");
		if (arg->type == IMAP_ARG_EOL)
			break;
		if (i > 0)
			out_str(out, " ");
		switch (arg->type) {
		case IMAP_ARG_NIL:
			out_str(out, "<NIL>");
			break;
		case IMAP_ARG_ATOM:
			out_str(out, arg->str);
			break;
		case IMAP_ARG_STRING:
			out_str(out, "\"");
			out_raw(out, arg->str, arg->str_len);
			out_str(out, "\"");
			break;
		case IMAP_ARG_LITERAL:
			out_str(out, arg->literal8 ? "~{" : "{");
			out_str(out, arg->literal_nonsync ? "+}" : "}");
			out_raw(out, arg->str, arg->str_len);
			break;
		case IMAP_ARG_LIST:
			out_str(out, "(");
			out_args(out, arg->list, arg);
			out_str(out, ")");
			if (arg->list[arg->list_count].type != IMAP_ARG_EOL)
				out_str(out, "<BADCOUNT>");
			break;
		case IMAP_ARG_LITERAL_SIZE:
			if (buffer_printf(out, "<LITSIZE %llu%s%s>",
					  (unsigned long long)arg->literal_size,
					  arg->literal_nonsync ? "+" : "",
					  arg->literal8 ? " 8" : "") < 0)
				i_panic("transcript full");
			break;
		case IMAP_ARG_EOL:
			i_unreached();
		}
	}
}

/* The LITERAL_SIZE arg: the last parsed one, found by following the last
   element of each open list. */
static const struct imap_arg *find_litsize(const struct imap_arg *args)
{
	for (;;) {
		unsigned int i = 0;
		while (args[i].type != IMAP_ARG_EOL)
			i++;
		i_assert(i > 0);
		if (args[i - 1].type != IMAP_ARG_LIST)
			return &args[i - 1];
		args = args[i - 1].list;
	}
}

static size_t next_chunk(const struct run_opts *opts, unsigned int *rnd,
			 size_t left)
{
	switch (opts->mode) {
	case CHUNK_ALL:
		return left;
	case CHUNK_ONE:
		return MIN(left, 1);
	case CHUNK_RANDOM:
		*rnd = *rnd * 1103515245 + 12345;
		return MIN(left, (*rnd >> 16) % 23);	/* 0 is a valid feed */
	}
	i_unreached();
}

static void out_result(buffer_t *out, struct imap_parser *parser,
		       enum imap_parse_result ret, const struct imap_arg *args)
{
	const char *error, *tag;
	bool fatal;

	switch (ret) {
	case IMAP_PARSE_MORE:
		break;
	case IMAP_PARSE_DONE:
	case IMAP_PARSE_LITERAL_SIZE:
		out_str(out, ret == IMAP_PARSE_DONE ? "DONE " : "LITSIZE ");
		if (args == NULL)
			out_str(out, "<NULL>");
		else
			out_args(out, args, NULL);
		out_str(out, "\n");
		break;
	case IMAP_PARSE_NEED_CONTINUATION:
		out_str(out, "CONT\n");
		break;
	case IMAP_PARSE_ERROR:
		error = imap_parser_get_error(parser, &fatal);
		tag = imap_parser_get_tag(parser);
		if (buffer_printf(out, "ERROR %s%s tag=%s\n", error,
				  fatal ? " FATAL" : "",
				  tag == NULL ? "-" : tag) < 0)
			i_panic("transcript full");
		break;
	}
}

/* Feed input through a new parser; returns the transcript (free it). */
static char *run_script(const struct imap_parser_settings *set,
			const struct run_opts *opts,
			const void *input, size_t len)
{
	const unsigned char *data = input;
	struct imap_parser *parser = imap_parser_create(set);
	unsigned int rnd = opts->seed;
	buffer_t out;
	size_t pos = 0;

	buffer_init(&out, TRANSCRIPT_MAX);
	while (pos < len) {
		size_t chunk = next_chunk(opts, &rnd, len - pos), consumed;
		const struct imap_arg *args;
		enum imap_parse_result ret;

		ret = imap_parser_feed(parser, opts->flags, data + pos, chunk,
				       &consumed, &args);
		i_assert(consumed <= chunk);
		i_assert(ret != IMAP_PARSE_MORE || consumed == chunk);
		pos += consumed;
		out_result(&out, parser, ret, args);
		if (ret == IMAP_PARSE_DONE) {
			imap_parser_reset(parser);
		} else if (ret == IMAP_PARSE_LITERAL_SIZE) {
			/* the caller reads the literal itself */
			uint64_t size = find_litsize(args)->literal_size;
			pos += (size_t)MIN(size, (uint64_t)(len - pos));
			imap_parser_continue_line(parser);
		} else if (ret == IMAP_PARSE_ERROR) {
			bool fatal;
			(void)imap_parser_get_error(parser, &fatal);
			if (fatal)
				break;
			if (opts->reset_on_error)
				imap_parser_reset(parser);
		}
	}
	imap_parser_destroy(&parser);
	char *result = buffer_detach(&out);
	buffer_free(&out);
	return result;
}

static void check_script_set(const struct imap_parser_settings *set,
			     enum imap_parser_flags flags, const char *input,
			     size_t len, const char *expected,
			     const char *file, int line)
{
	struct run_opts opts = { .flags = flags };
	char *result;

	/* whole input, one byte at a time, random chunks: same result */
	for (unsigned int i = 0; i < 2 + 8; i++) {
		opts.mode = i == 0 ? CHUNK_ALL : i == 1 ? CHUNK_ONE :
			CHUNK_RANDOM;
		opts.seed = i;
		result = run_script(set, &opts, input, len);
		test_assert_str_at(result, expected, file, line);
		i_free(result);
	}
}

#define check_script(input, expected) \
	check_script_set(&default_set, 0, input, sizeof(input) - 1, \
			 expected, __FILE__, __LINE__)
#define check_script_flags(flags, input, expected) \
	check_script_set(&default_set, flags, input, sizeof(input) - 1, \
			 expected, __FILE__, __LINE__)

/* Parse one complete line in one feed; returns the args (valid until the
   parser is reset) or NULL. */
static const struct imap_arg *
parse_line_n(struct imap_parser *parser, const char *line, size_t len)
{
	const struct imap_arg *args;
	size_t consumed;
	enum imap_parse_result ret;

	ret = imap_parser_feed(parser, 0, (const unsigned char *)line, len,
			       &consumed, &args);
	if (ret != IMAP_PARSE_DONE || consumed != len)
		return NULL;
	return args;
}
#define parse_line(parser, line) parse_line_n(parser, line, strlen(line))

/* ---- tests ---- */

static void test_simple(void)
{
	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args = parse_line(parser, "a1 NOOP\r\n");

	test_assert(args != NULL);
	if (args != NULL) {
		test_assert_int(args[0].type, IMAP_ARG_ATOM);
		test_assert_str(args[0].str, "a1");
		test_assert_int(args[0].str_len, 2);
		test_assert_str(args[1].str, "NOOP");
		test_assert(imap_arg_is_eol(&args[2]));
		test_assert(args[0].parent == NULL);
	}
	test_assert_str(imap_parser_get_tag(parser), "a1");
	imap_parser_reset(parser);
	test_assert(imap_parser_get_tag(parser) == NULL);
	imap_parser_destroy(&parser);
	test_assert(parser == NULL);

	check_script("a1 NOOP\r\nb2 LOGOUT\n",
		     "DONE a1 NOOP\nDONE b2 LOGOUT\n");
	/* bytes after the line end are left for the next feed */
	parser = imap_parser_create(&default_set);
	size_t consumed;
	enum imap_parse_result ret =
		imap_parser_feed(parser, 0, (const unsigned char *)"x Y\r\nz",
				 6, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_DONE);
	test_assert_int(consumed, 5);
	imap_parser_destroy(&parser);
}

static void test_arg_types(void)
{
	check_script("t CMD NIL nil atom \\Seen * % ]x \"quo\\\"te\\\\d\" \"\" "
		     "{3}\r\nabc {2+}\r\nxy ~{2}\r\nzz ~x (a b) ()\r\n",
		     "CONT\nCONT\n"
		     "DONE t CMD <NIL> <NIL> atom \\Seen * % ]x \"quo\"te\\d\" "
		     "\"\" {}abc {+}xy ~{}zz ~x (a b) ()\n");
	/* 8-bit bytes in atoms and quoted strings are kept */
	check_script("t X \xc3\xa4 \"\xc3\xb6\"\r\n",
		     "DONE t X \xc3\xa4 \"\xc3\xb6\"\n");
	/* '{' inside an atom is an atom char */
	check_script("t a{5}\r\n", "DONE t a{5}\n");

	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args =
		parse_line(parser, "t NiL \"q\" {1+}\r\nL (x)\r\n");
	test_assert(args != NULL);
	if (args != NULL) {
		test_assert_int(args[1].type, IMAP_ARG_NIL);
		test_assert_str(args[1].str, "NiL");
		test_assert_int(args[2].type, IMAP_ARG_STRING);
		test_assert_int(args[3].type, IMAP_ARG_LITERAL);
		test_assert(args[3].literal_nonsync);
		test_assert_int(args[3].literal_size, 1);
		test_assert_int(args[4].type, IMAP_ARG_LIST);
		test_assert(args[4].str == NULL);
		test_assert(args[4].list[0].parent == &args[4]);
	}
	imap_parser_destroy(&parser);
}

static void test_nested_lists(void)
{
	check_script("t (a (b (c)) () d)\r\n", "DONE t (a (b (c)) () d)\n");
	check_script("t ((()))\r\n", "DONE t ((()))\n");

	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args = parse_line(parser, "t (a (b c) d)\r\n");
	const struct imap_arg *list, *inner;
	unsigned int count;

	test_assert(args != NULL);
	if (args == NULL) {
		imap_parser_destroy(&parser);
		return;
	}
	test_assert(imap_arg_get_list(&args[1], &list, &count));
	test_assert_int(count, 3);
	test_assert(list[0].parent == &args[1]);
	test_assert(imap_arg_get_list(&list[1], &inner, &count));
	test_assert_int(count, 2);
	test_assert(inner[1].parent == &list[1]);
	test_assert(inner[2].type == IMAP_ARG_EOL);
	test_assert(inner[2].parent == &list[1]);
	test_assert_str(list[2].str, "d");
	test_assert(!imap_arg_get_list(&args[0], &list, &count));
	imap_parser_destroy(&parser);
}

static void test_section_atoms(void)
{
	check_script("t FETCH 1 (BODY[HEADER.FIELDS (A B)]<0.10> "
		     "BODY.PEEK[1.2.MIME] BODY[] BINARY[1]<0.5>)\r\n",
		     "DONE t FETCH 1 (BODY[HEADER.FIELDS (A B)]<0.10> "
		     "BODY.PEEK[1.2.MIME] BODY[] BINARY[1]<0.5>)\n");
	/* a quoted header name in a section may hold ']' */
	check_script("t FETCH 1 BODY[HEADER.FIELDS (\"X]\\\"Y\")] X\r\n",
		     "DONE t FETCH 1 BODY[HEADER.FIELDS (\"X]\\\"Y\")] X\n");
	/* two sections in one atom; ')' right after the atom closes a list */
	check_script("t (a[1]b[2 3]) x\r\n", "DONE t (a[1]b[2 3]) x\n");
	/* the line end closes an unterminated section */
	check_script("t SELECT a[b\r\n", "DONE t SELECT a[b\n");
	check_script("t SELECT [Gmail]/Sent\r\n", "DONE t SELECT [Gmail]/Sent\n");
	/* no section rule in the tag */
	check_script("a[1 NOOP\r\n", "DONE a[1 NOOP\n");
	check_script("t X[\x01]\r\n",
		     "ERROR Invalid characters in atom tag=t\nDONE <NULL>\n");
}

static void test_literals(void)
{
	/* sync: CONT once the CRLF is consumed, then data */
	struct imap_parser *parser = imap_parser_create(&default_set);
	const unsigned char *in = (const unsigned char *)
		"t LOGIN {4}\r\nuser {0}\r\n\r\n";
	const struct imap_arg *args;
	size_t consumed, len = strlen((const char *)in);
	enum imap_parse_result ret;

	ret = imap_parser_feed(parser, 0, in, len, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_NEED_CONTINUATION);
	test_assert_int(consumed, 13);
	test_assert(args == NULL);
	ret = imap_parser_feed(parser, 0, in + 13, len - 13, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_NEED_CONTINUATION);
	test_assert_int(consumed, 10);
	ret = imap_parser_feed(parser, 0, in + 23, len - 23, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_DONE);
	test_assert_int(consumed, 2);
	test_assert(args != NULL && args[2].type == IMAP_ARG_LITERAL &&
		    args[3].type == IMAP_ARG_LITERAL &&
		    args[3].str_len == 0 && args[3].str[0] == '\0');
	imap_parser_destroy(&parser);

	check_script("t X {4}\r\nab\r\n\r\n", "CONT\nDONE t X {}ab\r\n\n");
	/* non-synchronizing: no CONT; bare LF after the announcement */
	check_script("t X {3+}\nabc {0+}\r\n (y)\r\n",
		     "DONE t X {+}abc {+} (y)\n");
	/* NULs are allowed in literals unless forbidden */
	check_script("t X {3}\r\na\0b\r\n", "CONT\nDONE t X {}a\\0b\n");
	/* a literal must be followed by SP, ')' or the line end */
	check_script("t X {1}\r\nay\r\n",
		     "CONT\nERROR Missing space between arguments tag=t\n"
		     "DONE <NULL>\n");
	check_script("t X {}\r\nb X\r\n",
		     "ERROR Invalid literal size tag=t\nDONE <NULL>\n"
		     "DONE b X\n");
	check_script("t X {1a}\r\nb X\r\n",
		     "ERROR Invalid literal size tag=t\nDONE <NULL>\n"
		     "DONE b X\n");
	check_script("t X {1}x\r\nb X\r\n",
		     "ERROR Missing CRLF after literal tag=t\nDONE <NULL>\n"
		     "DONE b X\n");
	check_script("t X {1+x}\r\nb X\r\n",
		     "ERROR Invalid literal size tag=t\nDONE <NULL>\n"
		     "DONE b X\n");

	/* a literal bigger than the preallocation limit, grown as it comes */
	size_t big = 50000, hdr_len;
	char *input = i_malloc(big + 64);
	hdr_len = (size_t)snprintf(input, 64, "t APPEND x {%zu+}\r\n", big);
	for (size_t i = 0; i < big; i++)
		input[hdr_len + i] = (char)('a' + i % 26);
	memcpy(input + hdr_len + big, "\r\n", 2);
	parser = imap_parser_create(&default_set);
	size_t pos = 0, total = hdr_len + big + 2;
	ret = IMAP_PARSE_MORE;
	while (pos < total && ret == IMAP_PARSE_MORE) {
		ret = imap_parser_feed(parser, 0, (unsigned char *)input + pos,
				       MIN(total - pos, 777), &consumed, &args);
		pos += consumed;
	}
	test_assert_int(ret, IMAP_PARSE_DONE);
	test_assert(args != NULL && args[3].str_len == big &&
		    memcmp(args[3].str, input + hdr_len, big) == 0 &&
		    args[3].str[big] == '\0');
	imap_parser_destroy(&parser);
	i_free(input);
}

static void test_literal8(void)
{
	check_script("t X ~{3}\r\na\0b ~{1+}\r\nc\r\n",
		     "CONT\nDONE t X ~{}a\\0b ~{+}c\n");
	/* literal8 may hold NUL even when literals may not */
	check_script_flags(IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL,
			   "t X ~{2}\r\n\0\0\r\n", "CONT\nDONE t X ~{}\\0\\0\n");

	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args = parse_line(parser, "t ~{1+}\r\nz\r\n");
	const char *str;
	test_assert(args != NULL && args[1].literal8);
	if (args != NULL) {
		test_assert(!imap_arg_get_astring(&args[1], &str));
		test_assert(!imap_arg_get_string(&args[1], &str));
	}
	imap_parser_destroy(&parser);
}

static void test_literal_size_mode(void)
{
	/* the driver skips the literal data itself and continues the line */
	check_script_flags(IMAP_PARSE_FLAG_LITERAL_SIZE,
			   "a APPEND box (\\Seen) {5}\r\nHELLO\r\n",
			   "LITSIZE a APPEND box (\\Seen) <LITSIZE 5>\n"
			   "DONE a APPEND box (\\Seen) <LITSIZE 5>\n");
	/* MULTIAPPEND: each literal returned in turn, all in the end */
	check_script_flags(IMAP_PARSE_FLAG_LITERAL_SIZE,
			   "a APPEND box {3+}\r\nabc (\\X) ~{2}\r\nde\r\n"
			   "b NOOP\r\n",
			   "LITSIZE a APPEND box <LITSIZE 3+>\n"
			   "LITSIZE a APPEND box <LITSIZE 3+> (\\X) "
			   "<LITSIZE 2 8>\n"
			   "DONE a APPEND box <LITSIZE 3+> (\\X) <LITSIZE 2 8>\n"
			   "DONE b NOOP\n");
	/* CATENATE: the literal is last in the innermost open list */
	check_script_flags(IMAP_PARSE_FLAG_LITERAL_SIZE,
			   "a APPEND b CATENATE (URL \"/x\" TEXT {2}\r\nhi)\r\n",
			   "LITSIZE a APPEND b CATENATE (URL \"/x\" TEXT "
			   "<LITSIZE 2>)\n"
			   "DONE a APPEND b CATENATE (URL \"/x\" TEXT "
			   "<LITSIZE 2>)\n");

	/* args returned at LITERAL_SIZE stay valid after continuing */
	struct imap_parser *parser = imap_parser_create(&default_set);
	const unsigned char *in = (const unsigned char *)
		"a APPEND box {2}\r\nxy\r\n";
	const struct imap_arg *args1, *args2;
	size_t consumed;
	enum imap_parse_result ret;

	ret = imap_parser_feed(parser, IMAP_PARSE_FLAG_LITERAL_SIZE, in, 22,
			       &consumed, &args1);
	test_assert_int(ret, IMAP_PARSE_LITERAL_SIZE);
	test_assert_int(consumed, 18);
	test_assert(args1[3].type == IMAP_ARG_LITERAL_SIZE &&
		    args1[3].literal_size == 2 && args1[3].str == NULL &&
		    args1[4].type == IMAP_ARG_EOL);
	imap_parser_continue_line(parser);
	ret = imap_parser_feed(parser, IMAP_PARSE_FLAG_LITERAL_SIZE, in + 20, 2,
			       &consumed, &args2);
	test_assert_int(ret, IMAP_PARSE_DONE);
	test_assert_str(args1[2].str, "box");
	test_assert_str(args2[2].str, "box");
	imap_parser_destroy(&parser);
}

static void test_too_long_line(void)
{
	struct imap_parser_settings set = default_set;
	static const char input[] =
		"t1 X aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nt2 OK\r\n";

	set.max_line_length = 20;
	check_script_set(&set, 0, input, sizeof(input) - 1,
			 "ERROR Too long line tag=t1\nDONE <NULL>\n"
			 "DONE t2 OK\n", __FILE__, __LINE__);
	/* exactly at the limit is fine; CRLF and literal data don't count */
	static const char input2[] =
		"t1 X 345678901234567\r\nt2 {10+}\r\n0123456789 4567890\r\n";
	check_script_set(&set, 0, input2, sizeof(input2) - 1,
			 "DONE t1 X 345678901234567\n"
			 "DONE t2 {+}0123456789 4567890\n", __FILE__, __LINE__);
	/* the limit hits inside a {n+} announcement: its data is skipped */
	static const char input3[] =
		"t1 X 34567890123456 {12+}\r\nt9 NOT A CMD\r\nt2 OK\r\n";
	check_script_set(&set, 0, input3, sizeof(input3) - 1,
			 "ERROR Too long line tag=t1\nDONE <NULL>\n"
			 "DONE t2 OK\n", __FILE__, __LINE__);
}

static void test_reset_on_error(void)
{
	static const char input[] =
		"t1 X \"a\\q\" {5+}\r\nNOT\r\n x\r\nt2 OK\r\n";
	struct run_opts opts = { .reset_on_error = true };

	/* reset right after the error: the bad line is skipped silently */
	for (unsigned int i = 0; i < 10; i++) {
		opts.mode = i == 0 ? CHUNK_ALL : i == 1 ? CHUNK_ONE :
			CHUNK_RANDOM;
		opts.seed = i;
		char *result = run_script(&default_set, &opts, input,
					  sizeof(input) - 1);
		test_assert_str(result,
			"ERROR Invalid escape in quoted string tag=t1\n"
			"DONE t2 OK\n");
		i_free(result);
	}
	/* without the reset the end of the bad line is reported */
	check_script(input, "ERROR Invalid escape in quoted string tag=t1\n"
		     "DONE <NULL>\nDONE t2 OK\n");
}

static void test_literal_limits(void)
{
	struct imap_parser_settings set = default_set;

	set.max_literal_size = 10;
	/* sync over the limit: BAD, the client sends no data */
	static const char in1[] = "t1 X {11}\r\nt2 Y {10}\r\n0123456789\r\n";
	check_script_set(&set, 0, in1, sizeof(in1) - 1,
			 "ERROR Literal too large tag=t1\nDONE <NULL>\n"
			 "CONT\nDONE t2 Y {}0123456789\n", __FILE__, __LINE__);
	/* non-sync over the limit: fatal, and it stays fatal */
	static const char in2[] = "t1 X {11+}\r\n01234567890\r\nt2 Y\r\n";
	check_script_set(&set, 0, in2, sizeof(in2) - 1,
			 "ERROR Literal too large FATAL tag=t1\n",
			 __FILE__, __LINE__);
	/* a size that overflows uint64_t is just too large */
	static const char in3[] = "t1 X {99999999999999999999999}\r\nt2 Y\r\n";
	check_script_set(&set, 0, in3, sizeof(in3) - 1,
			 "ERROR Literal too large tag=t1\nDONE <NULL>\n"
			 "DONE t2 Y\n", __FILE__, __LINE__);

	struct imap_parser *parser = imap_parser_create(&set);
	const struct imap_arg *args;
	size_t consumed;
	bool fatal;
	enum imap_parse_result ret;

	ret = imap_parser_feed(parser, 0, (const unsigned char *)in2,
			       sizeof(in2) - 1, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_ERROR);
	imap_parser_reset(parser);
	ret = imap_parser_feed(parser, 0, (const unsigned char *)"t3 Z\r\n", 6,
			       &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_ERROR);
	test_assert_int(consumed, 0);
	test_assert_str(imap_parser_get_error(parser, &fatal),
			"Literal too large");
	test_assert(fatal);
	imap_parser_destroy(&parser);
}

static void test_literal_minus(void)
{
	struct imap_parser_settings set = default_set;
	char input[8192];
	size_t len;

	set.literal_minus = true;
	set.max_literal_size = 10000;
	/* {4096+} is fine, {4097+} is fatal, {4097} (sync) is fine */
	len = (size_t)snprintf(input, sizeof(input), "t X {4096+}\r\n");
	memset(input + len, 'x', 4096);
	memcpy(input + len + 4096, "\r\n", 2);
	char *result = run_script(&set, &(struct run_opts){ 0 }, input,
				  len + 4098);
	test_assert(strncmp(result, "DONE t X {+}xxx", 15) == 0);
	i_free(result);

	static const char in2[] = "t X {4097+}\r\n";
	check_script_set(&set, 0, in2, sizeof(in2) - 1,
			 "ERROR Literal too large FATAL tag=t\n",
			 __FILE__, __LINE__);
	static const char in3[] = "t X ~{4097+}\r\n";
	check_script_set(&set, IMAP_PARSE_FLAG_LITERAL_SIZE, in3,
			 sizeof(in3) - 1,
			 "ERROR Literal too large FATAL tag=t\n",
			 __FILE__, __LINE__);
	static const char in4[] = "t X {4097}\r\n";
	check_script_set(&set, IMAP_PARSE_FLAG_LITERAL_SIZE, in4,
			 sizeof(in4) - 1, "LITSIZE t X <LITSIZE 4097>\n",
			 __FILE__, __LINE__);
	/* LITERAL+ (no LITERAL-): any {n+} up to max_literal_size */
	set.literal_minus = false;
	static const char in5[] = "t X {5000+}\r\n";
	check_script_set(&set, IMAP_PARSE_FLAG_LITERAL_SIZE, in5,
			 sizeof(in5) - 1, "LITSIZE t X <LITSIZE 5000+>\n",
			 __FILE__, __LINE__);
	/* a too-big {n+} in a line skipped after an error is fatal too */
	set.literal_minus = true;
	static const char in6[] = "t X ( {5000+}\r\n";
	check_script_set(&set, 0, in6, sizeof(in6) - 1,
			 "ERROR Unexpected space after '(' tag=t\n"
			 "ERROR Literal too large FATAL tag=t\n",
			 __FILE__, __LINE__);
}

static void test_quoted_errors(void)
{
	check_script("t LOGIN \"x\\y\" p\r\nu OK\r\n",
		     "ERROR Invalid escape in quoted string tag=t\n"
		     "DONE <NULL>\nDONE u OK\n");
	check_script("t LOGIN \"abc\r\nu OK\r\n",
		     "ERROR Invalid characters in quoted string tag=t\n"
		     "DONE <NULL>\nDONE u OK\n");
	check_script("t LOGIN \"abc\nu OK\r\n",
		     "ERROR Invalid characters in quoted string tag=t\n"
		     "DONE <NULL>\nDONE u OK\n");
	/* other control chars are allowed by TEXT-CHAR */
	check_script("t X \"a\tb\"\r\n", "DONE t X \"a\tb\"\n");
}

/* IMAP_PARSE_FLAG_UTF8_QUOTED (RFC 6855 section 3): only quoted strings
   are checked, at their closing quote; atoms and literals keep bytes. */
static void test_utf8_quoted(void)
{
	check_script_flags(IMAP_PARSE_FLAG_UTF8_QUOTED,
			   "t X \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\r\n",
			   "DONE t X \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n");
	static const char *const bad[] = {
		"\xff", "caf\xe9", "\xc3", "\xe2\x82", "\xc0\xaf",
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		char input[64], expected[128];
		int len = snprintf(input, sizeof(input),
				   "t X \"%s\"\r\nu OK\r\n", bad[i]);
		snprintf(expected, sizeof(expected),
			 "ERROR Invalid UTF-8 in quoted string tag=t\n"
			 "DONE <NULL>\nDONE u OK\n");
		check_script_set(&default_set, IMAP_PARSE_FLAG_UTF8_QUOTED,
				 input, (size_t)len, expected,
				 __FILE__, __LINE__);
	}
	/* without the flag 8-bit bytes are kept as they are */
	check_script("t X \"caf\xe9\"\r\n", "DONE t X \"caf\xe9\"\n");
	/* atoms and literals are not quoted strings */
	check_script_flags(IMAP_PARSE_FLAG_UTF8_QUOTED,
			   "t X caf\xe9 {1+}\r\n\xff\r\n",
			   "DONE t X caf\xe9 {+}\xff\n");
}

static void test_nul_handling(void)
{
	check_script("t X a\0b\r\nu OK\r\n",
		     "ERROR NUL byte in command tag=t\nDONE <NULL>\n"
		     "DONE u OK\n");
	check_script("t X \"a\0b\"\r\nu OK\r\n",
		     "ERROR NUL byte in command tag=t\nDONE <NULL>\n"
		     "DONE u OK\n");
	check_script("t X \0\r\nu OK\r\n",
		     "ERROR NUL byte in command tag=t\nDONE <NULL>\n"
		     "DONE u OK\n");
	check_script("t\0 X\r\nu OK\r\n",
		     "ERROR NUL byte in command tag=-\nDONE <NULL>\n"
		     "DONE u OK\n");
	/* NUL in a literal when forbidden: the literal's remaining data is
	   skipped (the client sends it anyway), then the line */
	check_script_flags(IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL,
			   "t X {4}\r\na\0\r\n Y\r\nu OK\r\n",
			   "CONT\nERROR NUL byte in literal tag=t\n"
			   "DONE <NULL>\nDONE u OK\n");
	check_script_flags(IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL,
			   "t X {4+}\r\n\0\r\n\n {2+}\r\nab\r\nu OK\r\n",
			   "ERROR NUL byte in literal tag=t\n"
			   "DONE <NULL>\nDONE u OK\n");
}

static void test_tag(void)
{
	check_script("tag1 FOO (a))\r\n",
		     "ERROR Unexpected ')' tag=tag1\nDONE <NULL>\n");
	check_script("+x NOOP\r\n", "DONE +x NOOP\n");
	check_script("\"q\" NOOP\r\n)\r\n",
		     "DONE \"q\" NOOP\nERROR Unexpected ')' tag=-\nDONE <NULL>\n");
	check_script("x\x01 NOOP\r\n",
		     "ERROR Invalid characters in atom tag=-\nDONE <NULL>\n");
	check_script("(a) NOOP)\r\n",
		     "ERROR Unexpected ')' tag=-\nDONE <NULL>\n");
	check_script("t* NOOP)\r\n",
		     "ERROR Unexpected ')' tag=-\nDONE <NULL>\n");
	check_script("t] NOOP)\r\n",
		     "ERROR Unexpected ')' tag=t]\nDONE <NULL>\n");

	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args;
	size_t consumed;

	test_assert(imap_parser_get_tag(parser) == NULL);
	(void)imap_parser_feed(parser, 0, (const unsigned char *)"abc", 3,
			       &consumed, &args);
	/* not complete yet */
	test_assert(imap_parser_get_tag(parser) == NULL);
	(void)imap_parser_feed(parser, 0, (const unsigned char *)" ", 1,
			       &consumed, &args);
	test_assert_str(imap_parser_get_tag(parser), "abc");
	imap_parser_destroy(&parser);
}

static void test_spaces(void)
{
	check_script("t  X\r\nu OK\r\n",
		     "ERROR Double space between arguments tag=t\n"
		     "DONE <NULL>\nDONE u OK\n");
	check_script("t X \r\nu OK\r\n",
		     "ERROR Unexpected space at end of line tag=t\n"
		     "DONE <NULL>\nDONE u OK\n");
	check_script(" t X\r\n",
		     "ERROR Unexpected space at start of line tag=-\n"
		     "DONE <NULL>\n");
	check_script("t ( a)\r\n",
		     "ERROR Unexpected space after '(' tag=t\nDONE <NULL>\n");
	check_script("t (a )\r\n",
		     "ERROR Unexpected space before ')' tag=t\nDONE <NULL>\n");
	check_script("t \"a\"\"b\"\r\n",
		     "ERROR Missing space between arguments tag=t\n"
		     "DONE <NULL>\n");
	check_script("t (a)b\r\n",
		     "ERROR Missing space between arguments tag=t\n"
		     "DONE <NULL>\n");
	check_script("t a\"b\"\r\n",
		     "ERROR Missing space between arguments tag=t\n"
		     "DONE <NULL>\n");
	check_script("t a(b)\r\n",
		     "ERROR Missing space between arguments tag=t\n"
		     "DONE <NULL>\n");
	check_script("t (a (b)\r\nu OK\r\n",
		     "ERROR Missing ')' tag=t\nDONE <NULL>\nDONE u OK\n");
	check_script("t a\rb\r\nu OK\r\n",
		     "ERROR Missing LF after CR tag=t\nDONE <NULL>\n"
		     "DONE u OK\n");
	check_script("t ~\r\n", "DONE t ~\n");
}

static void test_max_args(void)
{
	struct imap_parser_settings set = default_set;
	size_t len = 0, max = 4 * IMAP_PARSER_MAX_ARGS + 16;
	char *input = i_malloc(max);

	set.max_line_length = max;
	/* tag + (MAX_ARGS - 2) atoms + a list: exactly MAX_ARGS args */
	input[len++] = 't';
	for (unsigned int i = 0; i < IMAP_PARSER_MAX_ARGS - 2; i++) {
		memcpy(input + len, " a", 2);
		len += 2;
	}
	memcpy(input + len, " ()\r\n", 5);
	char *result = run_script(&set, &(struct run_opts){ 0 }, input,
				  len + 5);
	test_assert(strncmp(result, "DONE t a a", 10) == 0);
	test_assert(strcmp(result + strlen(result) - 5, "a ()\n") == 0);
	i_free(result);

	/* one more: too many */
	memcpy(input + len, " (b)\r\nu OK\r\n", 12);
	result = run_script(&set, &(struct run_opts){ 0 }, input, len + 12);
	test_assert_str(result, "ERROR Too many arguments tag=t\n"
			"DONE <NULL>\nDONE u OK\n");
	i_free(result);
	i_free(input);
}

static void test_command_size(void)
{
	struct imap_parser_settings set = default_set;
	char input[1024];
	size_t len;

	set.max_literal_size = 100;
	set.max_command_size = 200;
	/* "t1 X {100}" and its data: 110 bytes; " {90}" would make 205 */
	len = (size_t)snprintf(input, sizeof(input), "t1 X {100}\r\n");
	memset(input + len, 'x', 100);
	len += 100;
	len += (size_t)snprintf(input + len, sizeof(input) - len,
				" {90}\r\nt2 OK\r\n");
	char *result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert_str(result, "CONT\nERROR Command too large tag=t1\n"
			"DONE <NULL>\nDONE t2 OK\n");
	i_free(result);
	/* the same with {90+}: its data is on the way, so fatal */
	len = (size_t)snprintf(input, sizeof(input), "t1 X {100+}\r\n");
	memset(input + len, 'x', 100);
	len += 100;
	len += (size_t)snprintf(input + len, sizeof(input) - len,
				" {90+}\r\n");
	result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert_str(result, "ERROR Command too large FATAL tag=t1\n");
	i_free(result);
	/* exactly at the bound: "t1 X {100+}" + 100 + " {83+}" + 83 = 200 */
	len = (size_t)snprintf(input, sizeof(input), "t1 X {100+}\r\n");
	memset(input + len, 'a', 100);
	len += 100;
	len += (size_t)snprintf(input + len, sizeof(input) - len,
				" {83+}\r\n");
	memset(input + len, 'b', 83);
	len += 83;
	memcpy(input + len, "\r\n", 2);
	len += 2;
	result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert(strncmp(result, "DONE t1 X {+}aaa", 16) == 0);
	i_free(result);
	/* line bytes after the literals count too */
	len = (size_t)snprintf(input, sizeof(input), "t1 X {100+}\r\n");
	memset(input + len, 'x', 100);
	len += 100;
	input[len++] = ' ';
	memset(input + len, 'y', 100);
	len += 100;
	len += (size_t)snprintf(input + len, sizeof(input) - len,
				"\r\nt2 OK\r\n");
	result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert_str(result, "ERROR Command too large tag=t1\n"
			"DONE <NULL>\nDONE t2 OK\n");
	i_free(result);
	/* many small literals add up: the 20th {5+} goes over 200 */
	len = (size_t)snprintf(input, sizeof(input), "t1 X");
	for (unsigned int i = 0; i < 30; i++) {
		len += (size_t)snprintf(input + len, sizeof(input) - len,
					" {5+}\r\n12345");
	}
	memcpy(input + len, "\r\n", 2);
	len += 2;
	result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert_str(result, "ERROR Command too large FATAL tag=t1\n");
	i_free(result);
	/* a literal the caller streams (APPEND) does not count */
	static const char append[] = "t1 APPEND box {1000}\r\n";
	check_script_set(&set, IMAP_PARSE_FLAG_LITERAL_SIZE, append,
			 sizeof(append) - 1, "LITSIZE t1 APPEND box <LITSIZE 1000>\n",
			 __FILE__, __LINE__);
}

/* 0 means max_line_length + max_literal_size */
static void test_command_size_default(void)
{
	struct imap_parser_settings set = default_set;
	char input[1024];
	size_t len;

	set.max_line_length = 100;
	set.max_literal_size = 300;
	len = (size_t)snprintf(input, sizeof(input), "t1 X {300+}\r\n");
	memset(input + len, 'x', 300);
	len += 300;
	len += (size_t)snprintf(input + len, sizeof(input) - len,
				" {90+}\r\n");
	char *result = run_script(&set, &(struct run_opts){ 0 }, input, len);
	test_assert_str(result, "ERROR Command too large FATAL tag=t1\n");
	i_free(result);
}

static void test_max_args_setting(void)
{
	struct imap_parser_settings set = default_set;

	set.max_args = 5;
	static const char ok[] = "t a (b) c\r\n";
	check_script_set(&set, 0, ok, sizeof(ok) - 1, "DONE t a (b) c\n",
			 __FILE__, __LINE__);
	static const char bad[] = "t a (b) c d\r\nu OK\r\n";
	check_script_set(&set, 0, bad, sizeof(bad) - 1,
			 "ERROR Too many arguments tag=t\nDONE <NULL>\n"
			 "DONE u OK\n", __FILE__, __LINE__);
}

/* What a big command made the parser allocate is given back at reset. */
static void test_memory_returned(void)
{
	struct imap_parser_settings set = default_set;
	size_t max = 4 * 2000 + 64, len = 0, consumed, idle;
	char *input = i_malloc(max);
	const struct imap_arg *args;
	struct imap_parser *parser;

	set.max_line_length = max;
	parser = imap_parser_create(&set);
	test_assert(parse_line(parser, "t NOOP\r\n") != NULL);
	imap_parser_reset(parser);
	idle = imap_parser_get_memory_size(parser);
	test_assert(idle < 2048);

	/* 1500 arguments and a long quoted string */
	input[len++] = 't';
	for (unsigned int i = 0; i < 1500; i++) {
		memcpy(input + len, " a", 2);
		len += 2;
	}
	memcpy(input + len, " \"", 2);
	len += 2;
	memset(input + len, 'q', 5000);
	len += 5000;
	memcpy(input + len, "\"\r\n", 3);
	len += 3;
	test_assert(parse_line_n(parser, input, len) != NULL);
	test_assert(imap_parser_get_memory_size(parser) > 50000);
	imap_parser_reset(parser);
	test_assert(imap_parser_get_memory_size(parser) <= idle);

	/* a literal bigger than the preallocation limit */
	len = (size_t)snprintf(input, max, "t X {7000+}\r\n");
	memset(input + len, 'l', 7000);
	len += 7000;
	memcpy(input + len, "\r\n", 2);
	len += 2;
	set.max_literal_size = 10000;
	imap_parser_destroy(&parser);
	parser = imap_parser_create(&set);
	enum imap_parse_result ret =
		imap_parser_feed(parser, 0, (const unsigned char *)input, len,
				 &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_DONE);
	test_assert(imap_parser_get_memory_size(parser) >= 7000);
	imap_parser_reset(parser);
	test_assert(imap_parser_get_memory_size(parser) <= idle);
	imap_parser_destroy(&parser);
	i_free(input);
}

static void test_max_depth(void)
{
	/* default_set.max_list_depth is 4 */
	check_script("t ((((a))))\r\n", "DONE t ((((a))))\n");
	check_script("t (((((a)))))\r\nu OK\r\n",
		     "ERROR Too deep list nesting tag=t\nDONE <NULL>\n"
		     "DONE u OK\n");
	struct imap_parser_settings set = default_set;
	set.max_list_depth = 0;
	static const char input[] = "t (a)\r\n";
	check_script_set(&set, 0, input, sizeof(input) - 1,
			 "ERROR Too deep list nesting tag=t\nDONE <NULL>\n",
			 __FILE__, __LINE__);
}

static void test_empty_line(void)
{
	check_script("\r\n\nt OK\r\n", "DONE \nDONE \nDONE t OK\n");

	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args = parse_line(parser, "\r\n");
	test_assert(args != NULL && args[0].type == IMAP_ARG_EOL);
	test_assert(imap_parser_get_tag(parser) == NULL);
	imap_parser_destroy(&parser);
}

static void test_reset_states(void)
{
	struct imap_parser *parser = imap_parser_create(&default_set);
	const struct imap_arg *args;
	size_t consumed;
	enum imap_parse_result ret;

	/* reset after NEED_CONTINUATION: we answered BAD, no data comes */
	ret = imap_parser_feed(parser, 0, (const unsigned char *)
			       "t X {5}\r\nu OK\r\n", 15, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_NEED_CONTINUATION);
	imap_parser_reset(parser);
	ret = imap_parser_feed(parser, 0, (const unsigned char *)"u OK\r\n", 6,
			       &consumed, &args);
	test_assert(ret == IMAP_PARSE_DONE && args != NULL &&
		    strcmp(args[0].str, "u") == 0);
	imap_parser_reset(parser);

	/* reset after LITERAL_SIZE of a sync literal: nothing follows */
	ret = imap_parser_feed(parser, IMAP_PARSE_FLAG_LITERAL_SIZE,
			       (const unsigned char *)"t APPEND x {5}\r\n", 16,
			       &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_LITERAL_SIZE);
	imap_parser_reset(parser);
	test_assert(parse_line(parser, "v OK\r\n") != NULL);
	imap_parser_reset(parser);

	/* ... of a non-sync literal: its data and the line are skipped */
	ret = imap_parser_feed(parser, IMAP_PARSE_FLAG_LITERAL_SIZE,
			       (const unsigned char *)"t APPEND x {5+}\r\n", 17,
			       &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_LITERAL_SIZE);
	imap_parser_reset(parser);
	args = parse_line(parser, "a\r\nbc X\r\nw OK\r\n");
	test_assert(args != NULL && strcmp(args[0].str, "w") == 0);
	imap_parser_reset(parser);

	/* reset mid-line: the rest of the line is skipped */
	ret = imap_parser_feed(parser, 0, (const unsigned char *)"t X ab", 6,
			       &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_MORE);
	imap_parser_reset(parser);
	args = parse_line(parser, "cd {3+}\r\n\r\n\r\nx OK\r\n");
	test_assert(args != NULL && strcmp(args[0].str, "x") == 0);
	imap_parser_reset(parser);

	/* reset in the middle of literal data */
	ret = imap_parser_feed(parser, 0, (const unsigned char *)
			       "t X {4+}\r\nab", 12, &consumed, &args);
	test_assert_int(ret, IMAP_PARSE_MORE);
	imap_parser_reset(parser);
	args = parse_line(parser, "\r\n\r\ny OK\r\n");
	test_assert(args != NULL && strcmp(args[0].str, "y") == 0);
	imap_parser_reset(parser);
	imap_parser_destroy(&parser);
}

/* A long script of good and bad lines: every chunking gives the same
   transcript, with and without reset after errors. */
static void test_chunk_equivalence(void)
{
	static const char script[] =
		"a1 LOGIN {4}\r\nuser \"pa\\\"ss\"\r\n"
		"a2 SELECT INBOX\r\n"
		"a3 FETCH 1:* (FLAGS BODY.PEEK[HEADER.FIELDS (From To)]<0.100>)\r\n"
		"a4 BAD \"x\\y\" {3+}\r\nabc rest\r\n"
		"a5 STORE 1 +FLAGS (\\Seen \\Deleted)\r\n"
		"a6 X ((a b) (c (d)))\r\n"
		"a7 X))\r\n"
		"\r\n"
		"a8 APPEND box (\\Seen) ~{5+}\r\n\0\x01\x02\x03\x04\r\n"
		"a9 X\rY\r\n"
		"a10 LOGOUT\n";
	struct run_opts opts;
	char *first = NULL, *result;

	for (unsigned int reset = 0; reset < 2; reset++) {
		for (unsigned int flags = 0; flags < 4; flags++) {
			for (unsigned int i = 0; i < 40; i++) {
				opts.mode = i == 0 ? CHUNK_ALL :
					i == 1 ? CHUNK_ONE : CHUNK_RANDOM;
				opts.seed = i * 7919 + flags;
				opts.reset_on_error = reset != 0;
				opts.flags = flags;
				result = run_script(&default_set, &opts, script,
						    sizeof(script) - 1);
				if (first == NULL)
					first = result;
				else {
					test_assert_str(result, first);
					i_free(result);
				}
			}
			i_free(first);
		}
	}
	/* spot check the plain transcript */
	opts = (struct run_opts){ .mode = CHUNK_ONE };
	result = run_script(&default_set, &opts, script, sizeof(script) - 1);
	test_assert_str(result,
		"CONT\nDONE a1 LOGIN {}user \"pa\"ss\"\n"
		"DONE a2 SELECT INBOX\n"
		"DONE a3 FETCH 1:* (FLAGS BODY.PEEK[HEADER.FIELDS (From To)]"
		"<0.100>)\n"
		"ERROR Invalid escape in quoted string tag=a4\nDONE <NULL>\n"
		"DONE a5 STORE 1 +FLAGS (\\Seen \\Deleted)\n"
		"DONE a6 X ((a b) (c (d)))\n"
		"ERROR Unexpected ')' tag=a7\nDONE <NULL>\n"
		"DONE \n"
		"DONE a8 APPEND box (\\Seen) ~{+}\\0\x01\x02\x03\x04\n"
		"ERROR Missing LF after CR tag=a9\nDONE <NULL>\n"
		"DONE a10 LOGOUT\n");
	i_free(result);
}

static void test_accessors(void)
{
	struct imap_parser *parser = imap_parser_create(&default_set);
	static const char line[] =
		"t Atom nil \"q s\" {3+}\r\na\0b {2+}\r\nlt (x)\r\n";
	const struct imap_arg *args =
		parse_line_n(parser, line, sizeof(line) - 1);
	const struct imap_arg *list;
	unsigned int count;
	const char *str;

	test_assert(args != NULL);
	if (args == NULL) {
		imap_parser_destroy(&parser);
		return;
	}
	test_assert(imap_arg_get_atom(&args[1], &str) && strcmp(str, "Atom") == 0);
	test_assert(imap_arg_atom_equals(&args[1], "ATOM"));
	test_assert(!imap_arg_atom_equals(&args[1], "ATOMS"));
	test_assert(imap_arg_get_atom(&args[2], &str) && strcmp(str, "nil") == 0);
	test_assert(imap_arg_atom_equals(&args[2], "NIL"));
	test_assert(!imap_arg_get_atom(&args[3], &str));
	test_assert(!imap_arg_atom_equals(&args[3], "q s"));

	test_assert(imap_arg_get_astring(&args[1], &str));
	test_assert(imap_arg_get_astring(&args[2], &str) && strcmp(str, "nil") == 0);
	test_assert(imap_arg_get_astring(&args[3], &str) && strcmp(str, "q s") == 0);
	test_assert(!imap_arg_get_astring(&args[4], &str));	/* NUL */
	test_assert(imap_arg_get_astring(&args[5], &str) && strcmp(str, "lt") == 0);
	test_assert(!imap_arg_get_astring(&args[6], &str));

	test_assert(!imap_arg_get_string(&args[1], &str));
	test_assert(imap_arg_get_string(&args[3], &str));
	test_assert(imap_arg_get_string(&args[5], &str));

	str = "x";
	test_assert(imap_arg_get_nstring(&args[2], &str) && str == NULL);
	test_assert(imap_arg_get_nstring(&args[3], &str) && strcmp(str, "q s") == 0);
	test_assert(!imap_arg_get_nstring(&args[6], &str));

	test_assert(imap_arg_get_list(&args[6], &list, &count) && count == 1);
	test_assert(imap_arg_atom_equals(&list[0], "X"));
	test_assert(imap_arg_is_eol(&args[7]));
	imap_parser_destroy(&parser);
}

static void check_append(int (*func)(struct buffer *, const char *),
			 const char *str, const char *expected,
			 const char *file, int line)
{
	buffer_t buf;

	buffer_init(&buf, 8192);
	test_assert_at(func(&buf, str) == 0, "append", file, line);
	test_assert_str_at(buf.data, expected, file, line);
	buffer_free(&buf);
}
#define check_append(func, str, expected) \
	check_append(func, str, expected, __FILE__, __LINE__)

static void test_quoting(void)
{
	check_append(imap_append_quoted, "abc", "\"abc\"");
	check_append(imap_append_quoted, "", "\"\"");
	check_append(imap_append_quoted, "a\"b\\c", "\"a\\\"b\\\\c\"");
	check_append(imap_append_quoted, "\"", "\"\\\"\"");
	check_append(imap_append_quoted, "a\r\nb", "{4}\r\na\r\nb");
	check_append(imap_append_quoted, "\xc3\xa4", "{2}\r\n\xc3\xa4");
	check_append(imap_append_astring, "INBOX", "INBOX");
	check_append(imap_append_astring, "a+b", "a+b");
	check_append(imap_append_astring, "NIL", "\"NIL\"");
	check_append(imap_append_astring, "nil", "\"nil\"");
	check_append(imap_append_astring, "", "\"\"");
	check_append(imap_append_astring, "a b", "\"a b\"");
	check_append(imap_append_astring, "[Gmail]", "\"[Gmail]\"");
	check_append(imap_append_astring, "a*", "\"a*\"");
	check_append(imap_append_astring, "a\\b", "\"a\\\\b\"");
	check_append(imap_append_nstring, NULL, "NIL");
	check_append(imap_append_nstring, "x", "\"x\"");
	check_append(imap_append_nstring, "NIL", "\"NIL\"");

	/* long strings go as literals */
	char long_str[IMAP_QUOTED_MAX_LEN + 1];
	buffer_t buf;
	memset(long_str, 'a', sizeof(long_str) - 1);
	long_str[IMAP_QUOTED_MAX_LEN - 1] = '\0';
	buffer_init(&buf, 8192);
	test_assert(imap_append_quoted(&buf, long_str) == 0);
	test_assert(buf.data[0] == '"' && buf.used == IMAP_QUOTED_MAX_LEN + 1);
	buffer_reset(&buf);
	long_str[IMAP_QUOTED_MAX_LEN - 1] = 'a';
	long_str[IMAP_QUOTED_MAX_LEN] = '\0';
	test_assert(imap_append_astring(&buf, long_str) == 0);
	test_assert(strncmp(buf.data, "{1024}\r\naaa", 11) == 0);
	buffer_free(&buf);

	/* a full buffer: -1 and unchanged */
	buffer_init(&buf, 11);
	test_assert(buffer_append_str(&buf, "1234") == 0);
	test_assert(imap_append_quoted(&buf, "abcde") == 0);
	test_assert_str(buf.data, "1234\"abcde\"");
	buffer_reset(&buf);
	test_assert(buffer_append_str(&buf, "1234") == 0);
	test_assert(imap_append_quoted(&buf, "ab\"cd") == -1);
	test_assert_str(buf.data, "1234");
	test_assert(imap_append_quoted(&buf, "a\r\nbcdef") == -1);
	test_assert_str(buf.data, "1234");
	test_assert(imap_append_astring(&buf, "abcdefgh") == -1);
	test_assert_str(buf.data, "1234");
	test_assert(imap_append_nstring(&buf, NULL) == 0);
	test_assert_str(buf.data, "1234NIL");
	buffer_free(&buf);

	/* what we quote, the parser reads back */
	static const char *const strs[] = {
		"plain", "with space", "q\"uote", "back\\slash", "",
		"cr\rlf\n", "\xff\xfe", "NIL",
	};
	struct imap_parser *parser = imap_parser_create(&default_set);
	buffer_init(&buf, 8192);
	for (unsigned int i = 0; i < N_ELEMENTS(strs); i++) {
		const struct imap_arg *args;
		const char *str;
		buffer_reset(&buf);
		test_assert(buffer_append_str(&buf, "t X ") == 0);
		test_assert(imap_append_astring(&buf, strs[i]) == 0);
		test_assert(buffer_append_str(&buf, "\r\n") == 0);
		args = parse_line(parser, buf.data);
		if (args == NULL) {
			/* a literal needs the continuation round trip */
			size_t consumed, pos = 0;
			enum imap_parse_result ret;
			imap_parser_reset(parser);
			do {
				ret = imap_parser_feed(parser, 0,
					(const unsigned char *)buf.data + pos,
					buf.used - pos, &consumed, &args);
				pos += consumed;
			} while (ret == IMAP_PARSE_NEED_CONTINUATION);
		}
		test_assert(args != NULL && imap_arg_get_astring(&args[2], &str) &&
			    strcmp(str, strs[i]) == 0);
		imap_parser_reset(parser);
	}
	buffer_free(&buf);
	imap_parser_destroy(&parser);
}

TEST_MAIN(TEST(test_simple), TEST(test_arg_types), TEST(test_nested_lists),
	  TEST(test_section_atoms), TEST(test_literals), TEST(test_literal8),
	  TEST(test_literal_size_mode), TEST(test_too_long_line),
	  TEST(test_reset_on_error), TEST(test_literal_limits),
	  TEST(test_literal_minus), TEST(test_quoted_errors),
	  TEST(test_utf8_quoted),
	  TEST(test_nul_handling), TEST(test_tag), TEST(test_spaces),
	  TEST(test_max_args), TEST(test_command_size),
	  TEST(test_command_size_default), TEST(test_max_args_setting),
	  TEST(test_memory_returned), TEST(test_max_depth), TEST(test_empty_line),
	  TEST(test_reset_states), TEST(test_chunk_equivalence),
	  TEST(test_accessors), TEST(test_quoting))
