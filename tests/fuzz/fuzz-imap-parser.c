/* libFuzzer target for lib/imap-parser.c. Build (from the source tree,
   with config.h from any configured build directory BUILD):
     clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
       -I BUILD -I lib tests/fuzz/fuzz-imap-parser.c lib/imap-parser.c \
       lib/mempool.c lib/buffer.c lib/lib.c lib/log.c lib/strfuncs.c lib/utf8.c \
       -o fuzz-imap-parser
   Run: ./fuzz-imap-parser -max_total_time=30 [corpus-dir]

   Input layout: byte 0 seeds the chunk sizes, byte 1 selects the flags
   and caller behaviour, byte 2 the limits; the rest is fed to the parser
   in chunks. Every DONE line is checked for a consistent tree, and its
   string arguments are quoted with imap_append_astring() and parsed back,
   which must give the same string; with IMAP_PARSE_FLAG_UTF8_QUOTED every
   quoted string must be valid UTF-8. */

#include "lib.h"
#include "buffer.h"
#include "imap-parser.h"
#include "utf8.h"

#define FUZZ_QUOTE_BUF_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fail(const char *what)
{
	fprintf(stderr, "fuzz check failed: %s\n", what);
	abort();
}

/* Parse one quoted line back (answering continuations): is its third
   argument the astring str? */
static bool roundtrip_equals(const char *line, size_t len, const char *str)
{
	static const struct imap_parser_settings set = {
		.max_line_length = FUZZ_QUOTE_BUF_MAX,
		.max_literal_size = FUZZ_QUOTE_BUF_MAX,
		.max_list_depth = 1,
	};
	struct imap_parser *parser = imap_parser_create(&set);
	const struct imap_arg *args = NULL;
	enum imap_parse_result ret;
	const char *value;
	size_t pos = 0, consumed;
	bool equal;

	do {
		ret = imap_parser_feed(parser, 0, (const unsigned char *)line + pos,
				       len - pos, &consumed, &args);
		pos += consumed;
	} while (ret == IMAP_PARSE_NEED_CONTINUATION);
	equal = ret == IMAP_PARSE_DONE && pos == len && args != NULL &&
		imap_arg_get_astring(&args[2], &value) &&
		strcmp(value, str) == 0 && imap_arg_is_eol(&args[3]);
	imap_parser_destroy(&parser);
	return equal;
}

static void check_quote(const char *str)
{
	buffer_t buf;

	buffer_init(&buf, FUZZ_QUOTE_BUF_MAX);
	if (buffer_append_str(&buf, "t X ") < 0 ||
	    imap_append_astring(&buf, str) < 0 ||
	    buffer_append_str(&buf, "\r\n") < 0)
		check_fail("quote buffer");
	if (!roundtrip_equals(buf.data, buf.used, str))
		check_fail("quote roundtrip");
	buffer_free(&buf);
}

static bool utf8_quoted;

static void check_args(const struct imap_arg *args,
		       const struct imap_arg *parent, unsigned int depth)
{
	const struct imap_arg *list;
	unsigned int i, count;
	const char *str;

	if (depth > 8)
		check_fail("depth");
	for (i = 0; args[i].type != IMAP_ARG_EOL; i++) {
		const struct imap_arg *arg = &args[i];
		if (arg->parent != parent)
			check_fail("parent");
		if (imap_arg_get_list(arg, &list, &count)) {
			if (list[count].type != IMAP_ARG_EOL)
				check_fail("list count");
			check_args(list, arg, depth + 1);
			continue;
		}
		if (arg->type == IMAP_ARG_LITERAL_SIZE)
			continue;
		if (arg->str == NULL || arg->str[arg->str_len] != '\0')
			check_fail("string");
		if (utf8_quoted && arg->type == IMAP_ARG_STRING &&
		    !utf8_is_valid(arg->str, arg->str_len))
			check_fail("quoted string not UTF-8");
		if (imap_arg_get_astring(arg, &str) && strlen(str) < 2000)
			check_quote(str);
		(void)imap_arg_atom_equals(arg, "NIL");
		(void)imap_arg_get_nstring(arg, &str);
	}
	if (args[i].parent != parent)
		check_fail("eol parent");
}

static const struct imap_arg *find_litsize(const struct imap_arg *args)
{
	for (;;) {
		unsigned int i = 0;
		while (args[i].type != IMAP_ARG_EOL)
			i++;
		if (i == 0)
			check_fail("empty LITERAL_SIZE args");
		if (args[i - 1].type != IMAP_ARG_LIST)
			return &args[i - 1];
		args = args[i - 1].list;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imap_parser_settings set;
	struct imap_parser *parser;
	enum imap_parser_flags flags = 0;
	unsigned int rnd, stalls = 0;
	bool reset_on_error, fatal;
	size_t pos = 3;

	if (size < 3)
		return 0;
	rnd = data[0];
	flags = data[1] & 3;
	utf8_quoted = (data[1] & 16) != 0;
	if (utf8_quoted)
		flags |= IMAP_PARSE_FLAG_UTF8_QUOTED;
	reset_on_error = (data[1] & 4) != 0;
	memset(&set, 0, sizeof(set));
	set.literal_minus = (data[1] & 8) != 0;
	set.max_line_length = 16 + (data[2] & 0x3f) * 4;
	set.max_literal_size = (data[2] & 0x40) != 0 ? 20000 : 300;
	set.max_list_depth = (data[2] & 0x80) != 0 ? 3 : 0;

	parser = imap_parser_create(&set);
	while (pos < size) {
		const struct imap_arg *args;
		enum imap_parse_result ret;
		size_t chunk, consumed;

		rnd = rnd * 1103515245 + 12345;
		chunk = MIN(size - pos, (rnd >> 16) % 40);
		ret = imap_parser_feed(parser, flags, data + pos, chunk,
				       &consumed, &args);
		if (consumed > chunk ||
		    (ret == IMAP_PARSE_MORE && consumed != chunk))
			check_fail("consumed");
		pos += consumed;
		stalls = consumed == 0 && chunk > 0 ? stalls + 1 : 0;
		if (stalls > 3)
			check_fail("no progress");
		switch (ret) {
		case IMAP_PARSE_MORE:
		case IMAP_PARSE_NEED_CONTINUATION:
			break;
		case IMAP_PARSE_DONE:
			if (args != NULL)
				check_args(args, NULL, 0);
			imap_parser_reset(parser);
			break;
		case IMAP_PARSE_LITERAL_SIZE:
			check_args(args, NULL, 0);
			if ((rnd & 0x100) != 0) {
				/* the caller rejects the command */
				imap_parser_reset(parser);
				break;
			}
			pos += (size_t)MIN(find_litsize(args)->literal_size,
					   (uint64_t)(size - pos));
			imap_parser_continue_line(parser);
			break;
		case IMAP_PARSE_ERROR:
			if (imap_parser_get_error(parser, &fatal) == NULL)
				check_fail("no error text");
			(void)imap_parser_get_tag(parser);
			if (fatal)
				pos = size;
			else if (reset_on_error)
				imap_parser_reset(parser);
			break;
		}
	}
	imap_parser_destroy(&parser);
	return 0;
}
