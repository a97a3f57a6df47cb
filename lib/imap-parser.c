/* Incremental IMAP command parser: a byte-at-a-time state machine (so a
   line may be split anywhere) that records the arguments in parse order
   in a flat array and builds the imap_arg tree only when a line (or an
   APPEND literal) is complete. See imap-parser.h for the grammar. */

#include "lib.h"
#include "buffer.h"
#include "imap-parser.h"
#include "utf8.h"

#include <strings.h>

/* First pool block: enough for a typical command's arguments. */
#define IMAP_PARSER_POOL_SIZE 1024
/* Literals up to this size get their whole buffer at the announcement;
   larger ones grow as data arrives, so announcing a huge literal costs
   no memory until the bytes are really sent. */
#define IMAP_PARSER_LITERAL_PREALLOC_MAX 8192
/* Scratch buffers grown past this are freed at reset, so one long line
   does not pin memory for the connection's lifetime. */
#define IMAP_PARSER_SCRATCH_KEEP 4096
/* Likewise for the argument array: a command with more arguments than
   this gives its array back at reset. */
#define IMAP_PARSER_FLAT_KEEP 64
/* ... and for the list of grown literal buffers. */
#define IMAP_PARSER_BIG_KEEP 4

enum parser_state {
	PS_ARG_START,	/* an argument may start; arg_ctx says what preceded */
	PS_ARG_END,	/* after a quoted string, literal or list */
	PS_ATOM,
	PS_SECTION,	/* inside [...] of an atom */
	PS_TILDE,	/* '~' seen: literal8 or an atom */
	PS_QUOTED,
	PS_QUOTED_ESC,
	PS_LIT_DIGITS,	/* after '{' */
	PS_LIT_PLUS,	/* after '+': '}' must follow */
	PS_LIT_CLOSE,	/* after '}': CRLF must follow */
	PS_LIT_CR,
	PS_LIT_DATA,
	PS_LINE_CR,
	PS_LITERAL_SIZE_WAIT,	/* returned LITERAL_SIZE; continue_line next */
	PS_DONE,
	PS_SKIP,	/* after an error: discard to LF, then report DONE */
	PS_SKIP_SILENT,	/* after reset mid-line: discard to LF, go on */
	PS_FATAL,
};

enum arg_ctx {
	CTX_LINE_START,
	CTX_SPACE,
	CTX_LIST_OPEN,
};

/* Recognizes "{n}" / "{n+}" at the end of a skipped line, so that the
   data of a non-synchronizing literal is skipped too. */
enum tail_state {
	TAIL_NONE,
	TAIL_BRACE,
	TAIL_DIGITS,
	TAIL_PLUS,
	TAIL_CLOSE,
	TAIL_CR,
};

/* One argument in parse order. Lists are recorded when opened, so the
   flat array is the pre-order walk of the tree. */
struct parser_arg {
	enum imap_arg_type type;
	const char *str;
	size_t str_len;
	uint64_t literal_size;
	unsigned int list_count;
	bool literal8, literal_nonsync;
};

struct build_level {
	struct imap_arg *args;
	struct imap_arg *parent;
	unsigned int idx, count;
};

struct imap_parser {
	pool_t pool;
	struct imap_parser_settings set;   /* 0s replaced by the defaults */
	enum imap_parser_flags flags;
	enum parser_state state;
	enum arg_ctx arg_ctx;

	struct parser_arg *flat;
	unsigned int flat_count, flat_alloc;
	unsigned int root_count;
	unsigned int *open_lists;	/* flat index of each open list */
	unsigned int depth;
	struct build_level *build_stack;
	const struct imap_arg *args;
	size_t line_len;
	/* literal bytes the parser holds for this command (announced ones
	   included): with line_len bounded by max_command_size */
	uint64_t literal_total;

	/* the atom or quoted string being parsed */
	char *tok;
	size_t tok_len, tok_alloc;
	bool section_quoted, section_escape;

	/* the literal being announced or read */
	uint64_t lit_size, lit_pos;
	unsigned int lit_digits;
	bool lit8, lit_nonsync, lit_big;
	char *lit_buf;
	size_t lit_alloc;
	/* grown literal buffers (i_malloc), freed at reset */
	char **big_bufs;
	unsigned int big_count, big_alloc;
	size_t big_total;		/* bytes in big_bufs and a big lit_buf */

	const char *tag;
	const char *error;

	uint64_t skip_literal_left;
	enum tail_state tail;
	uint64_t tail_num;
	bool tail_nonsync;
};

static void parser_line_start(struct imap_parser *parser)
{
	parser->state = PS_ARG_START;
	parser->arg_ctx = CTX_LINE_START;
	parser->flat_count = 0;
	parser->root_count = 0;
	parser->depth = 0;
	parser->line_len = 0;
	parser->literal_total = 0;
	parser->tok_len = 0;
}

/* max_command_size 0: the line and one literal of the maximum size. */
static uint64_t default_command_size(const struct imap_parser_settings *set)
{
	uint64_t line = set->max_line_length;

	return set->max_literal_size > UINT64_MAX - line ? UINT64_MAX :
		line + set->max_literal_size;
}

struct imap_parser *imap_parser_create(const struct imap_parser_settings *set)
{
	struct imap_parser *parser;

	i_assert(set->max_line_length > 0);
	parser = i_malloc(sizeof(*parser));
	parser->set = *set;
	if (parser->set.max_command_size == 0)
		parser->set.max_command_size = default_command_size(set);
	if (parser->set.max_args == 0 ||
	    parser->set.max_args > IMAP_PARSER_MAX_ARGS)
		parser->set.max_args = IMAP_PARSER_MAX_ARGS;
	parser->pool = pool_create("imap parser", IMAP_PARSER_POOL_SIZE);
	parser->open_lists = i_malloc(i_mul_size(set->max_list_depth + 1,
						 sizeof(unsigned int)));
	parser->build_stack = i_malloc(i_mul_size(set->max_list_depth + 1,
						  sizeof(struct build_level)));
	parser_line_start(parser);
	return parser;
}

static void parser_free_buffers(struct imap_parser *parser)
{
	for (unsigned int i = 0; i < parser->big_count; i++)
		i_free(parser->big_bufs[i]);
	parser->big_count = 0;
	if (parser->lit_big)
		i_free(parser->lit_buf);
	parser->lit_buf = NULL;
	parser->lit_big = false;
	parser->big_total = 0;
}

/* What one command made grow goes back to the allocator, so a
   connection keeps only the small buffers of a typical command. */
static void parser_shrink(struct imap_parser *parser)
{
	if (parser->tok_alloc > IMAP_PARSER_SCRATCH_KEEP) {
		i_free(parser->tok);
		parser->tok_alloc = 0;
	}
	if (parser->flat_alloc > IMAP_PARSER_FLAT_KEEP) {
		i_free(parser->flat);
		parser->flat_alloc = 0;
	}
	if (parser->big_alloc > IMAP_PARSER_BIG_KEEP) {
		i_free(parser->big_bufs);
		parser->big_alloc = 0;
	}
}

void imap_parser_destroy(struct imap_parser **_parser)
{
	struct imap_parser *parser = *_parser;

	if (parser == NULL)
		return;
	*_parser = NULL;
	parser_free_buffers(parser);
	pool_unref(&parser->pool);
	i_free(parser->big_bufs);
	i_free(parser->flat);
	i_free(parser->open_lists);
	i_free(parser->build_stack);
	i_free(parser->tok);
	i_free(parser);
}

/* Seed the skip logic with a literal announcement cut by an error or a
   reset, so its data is skipped if it is non-synchronizing. */
static void parser_seed_tail(struct imap_parser *parser)
{
	parser->tail = TAIL_NONE;
	parser->tail_num = parser->lit_size;
	parser->tail_nonsync = parser->lit_nonsync;
	switch (parser->state) {
	case PS_LIT_DIGITS:
		parser->tail = parser->lit_digits == 0 ?
			TAIL_BRACE : TAIL_DIGITS;
		break;
	case PS_LIT_PLUS:
		parser->tail = TAIL_PLUS;
		break;
	case PS_LIT_CLOSE:
		parser->tail = TAIL_CLOSE;
		break;
	case PS_LIT_CR:
		parser->tail = TAIL_CR;
		break;
	default:
		break;
	}
}

void imap_parser_reset(struct imap_parser *parser)
{
	enum parser_state old_state = parser->state;
	bool fresh;

	parser_free_buffers(parser);
	/* pool_clear() frees every block but the first one */
	pool_clear(parser->pool);
	parser->args = NULL;
	parser->tag = NULL;
	if (old_state == PS_FATAL)
		return;
	parser->error = NULL;

	switch (old_state) {
	case PS_DONE:
		fresh = true;
		break;
	case PS_ARG_START:
		fresh = parser->arg_ctx == CTX_LINE_START &&
			parser->line_len == 0;
		break;
	case PS_LIT_DATA:
		/* Nothing read after NEED_CONTINUATION: the caller answered
		   instead of sending "+", so no data comes. */
		fresh = !parser->lit_nonsync && parser->lit_pos == 0;
		parser->skip_literal_left = parser->lit_size - parser->lit_pos;
		parser->tail = TAIL_NONE;
		break;
	case PS_LITERAL_SIZE_WAIT:
		fresh = !parser->lit_nonsync;
		parser->skip_literal_left = parser->lit_size;
		parser->tail = TAIL_NONE;
		break;
	case PS_SKIP:
	case PS_SKIP_SILENT:
		fresh = false;
		break;
	default:
		fresh = false;
		parser_seed_tail(parser);
		parser->skip_literal_left = 0;
		break;
	}
	/* after the flat array is no longer referenced (line start) */
	parser_line_start(parser);
	parser_shrink(parser);
	if (!fresh)
		parser->state = PS_SKIP_SILENT;
}

size_t imap_parser_get_memory_size(const struct imap_parser *parser)
{
	return pool_get_used_size(parser->pool) + parser->tok_alloc +
		parser->flat_alloc * sizeof(*parser->flat) +
		parser->big_alloc * sizeof(*parser->big_bufs) +
		parser->big_total;
}

const char *imap_parser_get_tag(struct imap_parser *parser)
{
	return parser->tag;
}

const char *imap_parser_get_error(struct imap_parser *parser, bool *fatal_r)
{
	*fatal_r = parser->state == PS_FATAL;
	return parser->error;
}

void imap_parser_continue_line(struct imap_parser *parser)
{
	i_assert(parser->state == PS_LITERAL_SIZE_WAIT);
	parser->state = PS_ARG_END;
}

/* ---- errors ---- */

/* A client mistake the connection survives: skip the rest of the line.
   The offending byte is not consumed, so the skip logic sees it too. */
static enum imap_parse_result
parser_error(struct imap_parser *parser, const char *error)
{
	parser_seed_tail(parser);
	parser->skip_literal_left = 0;
	parser->error = error;
	parser->state = PS_SKIP;
	return IMAP_PARSE_ERROR;
}

static enum imap_parse_result
parser_fatal(struct imap_parser *parser, const char *error)
{
	parser->error = error;
	parser->state = PS_FATAL;
	return IMAP_PARSE_ERROR;
}

/* ---- building the argument tree ---- */

static void build_fill(struct imap_arg *arg, const struct parser_arg *src,
		       struct imap_arg *parent)
{
	arg->type = src->type;
	arg->parent = parent;
	arg->str = src->str;
	arg->str_len = src->str_len;
	arg->literal_size = src->literal_size;
	arg->literal8 = src->literal8;
	arg->literal_nonsync = src->literal_nonsync;
}

static void build_close_level(struct build_level *level)
{
	/* p_malloc zero-filled the rest; only the type differs from NIL. */
	level->args[level->count].type = IMAP_ARG_EOL;
	level->args[level->count].parent = level->parent;
}

static struct imap_arg *
build_new_array(struct imap_parser *parser, unsigned int count)
{
	return p_malloc(parser->pool,
			i_mul_size(count + 1, sizeof(struct imap_arg)));
}

/* Build the tree from the flat pre-order array. Open lists (at a
   LITERAL_SIZE stop) end after the elements parsed so far. */
static void parser_build_args(struct imap_parser *parser)
{
	struct build_level *stack = parser->build_stack;
	unsigned int sp = 0;

	stack[0].args = build_new_array(parser, parser->root_count);
	stack[0].parent = NULL;
	stack[0].idx = 0;
	stack[0].count = parser->root_count;
	for (unsigned int i = 0; i < parser->flat_count; i++) {
		const struct parser_arg *src = &parser->flat[i];
		struct imap_arg *arg;

		while (stack[sp].idx == stack[sp].count) {
			i_assert(sp > 0);
			build_close_level(&stack[sp--]);
		}
		arg = &stack[sp].args[stack[sp].idx++];
		build_fill(arg, src, stack[sp].parent);
		if (src->type != IMAP_ARG_LIST)
			continue;
		arg->list = build_new_array(parser, src->list_count);
		arg->list_count = src->list_count;
		i_assert(sp < parser->set.max_list_depth);
		sp++;
		stack[sp].args = arg->list;
		stack[sp].parent = arg;
		stack[sp].idx = 0;
		stack[sp].count = src->list_count;
	}
	for (;;) {
		build_close_level(&stack[sp]);
		if (sp == 0)
			break;
		sp--;
	}
	parser->args = stack[0].args;
}

/* ---- recording arguments ---- */

bool imap_is_tag_char(unsigned char c)
{
	/* ASTRING-CHAR except '+': CHAR minus atom-specials, plus ']' */
	if (c <= 0x20 || c >= 0x7f)
		return false;
	return strchr("(){%*\"\\+", c) == NULL;
}

static bool imap_is_valid_tag(const char *str, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!imap_is_tag_char((unsigned char)str[i]))
			return false;
	}
	return true;
}

static struct parser_arg *parser_add_arg(struct imap_parser *parser,
					 enum imap_arg_type type)
{
	struct parser_arg *arg;

	/* parser_arg_start() checked the max_args limit */
	if (parser->flat_count == parser->flat_alloc) {
		parser->flat_alloc = parser->flat_alloc == 0 ? 16 :
			MIN(parser->flat_alloc * 2, parser->set.max_args);
		parser->flat = i_realloc(parser->flat,
			i_mul_size(parser->flat_alloc, sizeof(*arg)));
	}
	arg = &parser->flat[parser->flat_count++];
	memset(arg, 0, sizeof(*arg));
	arg->type = type;
	if (parser->depth > 0)
		parser->flat[parser->open_lists[parser->depth - 1]].list_count++;
	else
		parser->root_count++;
	return arg;
}

static bool parser_at_tag(const struct imap_parser *parser)
{
	return parser->depth == 0 && parser->root_count == 0;
}

static void parser_tok_append(struct imap_parser *parser, char c)
{
	/* line_len (checked per byte) bounds tok_len */
	if (parser->tok_len + 1 >= parser->tok_alloc) {
		parser->tok_alloc = parser->tok_alloc == 0 ? 128 :
			i_mul_size(parser->tok_alloc, 2);
		parser->tok = i_realloc(parser->tok, parser->tok_alloc);
	}
	parser->tok[parser->tok_len++] = c;
}

static void parser_finish_atom(struct imap_parser *parser)
{
	bool is_tag = parser_at_tag(parser);
	struct parser_arg *arg;

	arg = parser_add_arg(parser, IMAP_ARG_ATOM);
	arg->str = p_strndup(parser->pool, parser->tok, parser->tok_len);
	arg->str_len = parser->tok_len;
	if (arg->str_len == 3 && strcasecmp(arg->str, "NIL") == 0)
		arg->type = IMAP_ARG_NIL;
	if (is_tag && imap_is_valid_tag(arg->str, arg->str_len))
		parser->tag = arg->str;
	parser->tok_len = 0;
}

static enum imap_parse_result
parser_finish_quoted(struct imap_parser *parser)
{
	struct parser_arg *arg;

	if ((parser->flags & IMAP_PARSE_FLAG_UTF8_QUOTED) != 0 &&
	    !utf8_is_valid(parser->tok, parser->tok_len))
		return parser_error(parser, "Invalid UTF-8 in quoted string");
	arg = parser_add_arg(parser, IMAP_ARG_STRING);
	arg->str = p_strndup(parser->pool, parser->tok, parser->tok_len);
	arg->str_len = parser->tok_len;
	parser->tok_len = 0;
	parser->state = PS_ARG_END;
	return IMAP_PARSE_MORE;
}

/* ---- line structure ---- */

static enum imap_parse_result parser_finish_line(struct imap_parser *parser)
{
	if (parser->depth > 0)
		return parser_error(parser, "Missing ')'");
	parser_build_args(parser);
	parser->state = PS_DONE;
	return IMAP_PARSE_DONE;
}

static enum imap_parse_result parser_close_list(struct imap_parser *parser)
{
	if (parser->depth == 0)
		return parser_error(parser, "Unexpected ')'");
	parser->depth--;
	parser->state = PS_ARG_END;
	return IMAP_PARSE_MORE;
}

static enum imap_parse_result parser_open_list(struct imap_parser *parser)
{
	if (parser->depth >= parser->set.max_list_depth)
		return parser_error(parser, "Too deep list nesting");
	(void)parser_add_arg(parser, IMAP_ARG_LIST);
	parser->open_lists[parser->depth++] = parser->flat_count - 1;
	parser->state = PS_ARG_START;
	parser->arg_ctx = CTX_LIST_OPEN;
	return IMAP_PARSE_MORE;
}

/* What may follow a complete argument: SP, ')' or the line end. */
static enum imap_parse_result
parser_after_arg(struct imap_parser *parser, unsigned char c)
{
	switch (c) {
	case ' ':
		parser->state = PS_ARG_START;
		parser->arg_ctx = CTX_SPACE;
		return IMAP_PARSE_MORE;
	case ')':
		return parser_close_list(parser);
	case '\r':
		parser->state = PS_LINE_CR;
		return IMAP_PARSE_MORE;
	case '\n':
		return parser_finish_line(parser);
	default:
		return parser_error(parser, "Missing space between arguments");
	}
}

static enum imap_parse_result
parser_space_error(struct imap_parser *parser)
{
	switch (parser->arg_ctx) {
	case CTX_LINE_START:
		return parser_error(parser, "Unexpected space at start of line");
	case CTX_LIST_OPEN:
		return parser_error(parser, "Unexpected space after '('");
	case CTX_SPACE:
		break;
	}
	return parser_error(parser, "Double space between arguments");
}

static enum imap_parse_result
parser_arg_start(struct imap_parser *parser, unsigned char c)
{
	bool after_space = parser->arg_ctx == CTX_SPACE;

	if (c == '\r' || c == '\n') {
		if (after_space)
			return parser_error(parser, "Unexpected space at end of line");
		return parser_after_arg(parser, c);
	}
	if (c == ' ')
		return parser_space_error(parser);
	if (c == ')') {
		if (after_space)
			return parser_error(parser, "Unexpected space before ')'");
		return parser_close_list(parser);
	}
	if (c == '\0')
		return parser_error(parser, "NUL byte in command");
	if (c < 0x20 || c == 0x7f)
		return parser_error(parser, "Invalid characters in atom");
	if (parser->flat_count >= parser->set.max_args)
		return parser_error(parser, "Too many arguments");

	parser->tok_len = 0;
	parser->lit8 = false;
	switch (c) {
	case '(':
		return parser_open_list(parser);
	case '"':
		parser->state = PS_QUOTED;
		break;
	case '~':
		parser->state = PS_TILDE;
		break;
	case '{':
		parser->lit_size = 0;
		parser->lit_digits = 0;
		parser->lit_nonsync = false;
		parser->state = PS_LIT_DIGITS;
		break;
	default:
		parser_tok_append(parser, (char)c);
		parser->state = PS_ATOM;
		break;
	}
	return IMAP_PARSE_MORE;
}

/* ---- atoms ---- */

static enum imap_parse_result
parser_atom_end(struct imap_parser *parser, unsigned char c)
{
	parser_finish_atom(parser);
	return parser_after_arg(parser, c);
}

static enum imap_parse_result
parser_atom(struct imap_parser *parser, unsigned char c)
{
	switch (c) {
	case ' ':
	case ')':
	case '\r':
	case '\n':
		return parser_atom_end(parser, c);
	case '(':
	case '"':
		return parser_error(parser, "Missing space between arguments");
	case '\0':
		return parser_error(parser, "NUL byte in command");
	case '[':
		if (!parser_at_tag(parser)) {
			parser->section_quoted = false;
			parser->section_escape = false;
			parser->state = PS_SECTION;
		}
		break;
	default:
		if (c < 0x20 || c == 0x7f)
			return parser_error(parser, "Invalid characters in atom");
		break;
	}
	parser_tok_append(parser, (char)c);
	return IMAP_PARSE_MORE;
}

static enum imap_parse_result
parser_section(struct imap_parser *parser, unsigned char c)
{
	if (c == '\r' || c == '\n')
		return parser_atom_end(parser, c);
	if (c == '\0')
		return parser_error(parser, "NUL byte in command");
	if (parser->section_quoted) {
		/* a quoted header name may hold ']' and \" */
		if (parser->section_escape)
			parser->section_escape = false;
		else if (c == '\\')
			parser->section_escape = true;
		else if (c == '"')
			parser->section_quoted = false;
	} else if (c < 0x20 || c == 0x7f) {
		return parser_error(parser, "Invalid characters in atom");
	} else if (c == '"') {
		parser->section_quoted = true;
	} else if (c == ']') {
		parser->state = PS_ATOM;
	}
	parser_tok_append(parser, (char)c);
	return IMAP_PARSE_MORE;
}

static enum imap_parse_result
parser_tilde(struct imap_parser *parser, unsigned char c)
{
	if (c == '{') {
		parser->lit8 = true;
		parser->lit_size = 0;
		parser->lit_digits = 0;
		parser->lit_nonsync = false;
		parser->state = PS_LIT_DIGITS;
		return IMAP_PARSE_MORE;
	}
	/* an atom that starts with '~' */
	parser_tok_append(parser, '~');
	parser->state = PS_ATOM;
	return parser_atom(parser, c);
}

/* ---- quoted strings ---- */

static enum imap_parse_result
parser_quoted(struct imap_parser *parser, unsigned char c)
{
	switch (c) {
	case '"':
		return parser_finish_quoted(parser);
	case '\\':
		parser->state = PS_QUOTED_ESC;
		return IMAP_PARSE_MORE;
	case '\r':
	case '\n':
		return parser_error(parser, "Invalid characters in quoted string");
	case '\0':
		return parser_error(parser, "NUL byte in command");
	default:
		parser_tok_append(parser, (char)c);
		return IMAP_PARSE_MORE;
	}
}

static enum imap_parse_result
parser_quoted_esc(struct imap_parser *parser, unsigned char c)
{
	if (c == '\0')
		return parser_error(parser, "NUL byte in command");
	if (c != '"' && c != '\\')
		return parser_error(parser, "Invalid escape in quoted string");
	parser_tok_append(parser, (char)c);
	parser->state = PS_QUOTED;
	return IMAP_PARSE_MORE;
}

/* ---- literals ---- */

/* Would the announced literal's data take the command past
   max_command_size? */
static bool parser_lit_exceeds_command(const struct imap_parser *parser)
{
	uint64_t used = parser->line_len + parser->literal_total;

	return used > parser->set.max_command_size ||
		parser->lit_size > parser->set.max_command_size - used;
}

static enum imap_parse_result
parser_lit_check_size(struct imap_parser *parser)
{
	/* A literal the caller streams itself (LITERAL_SIZE) is bounded by
	   the caller (APPEND has its own, larger limit). */
	bool kept = (parser->flags & IMAP_PARSE_FLAG_LITERAL_SIZE) == 0;
	const char *error = NULL;

	if (kept && parser->lit_size > parser->set.max_literal_size)
		error = "Literal too large";
	else if (parser->lit_nonsync && parser->set.literal_minus &&
		 parser->lit_size > IMAP_PARSER_LITERAL_MINUS_MAX)
		error = "Literal too large";
	else if (kept && parser_lit_exceeds_command(parser))
		error = "Command too large";
	if (error == NULL) {
		parser->state = PS_LIT_CLOSE;
		return IMAP_PARSE_MORE;
	}
	/* a {n+} literal's data is already on its way: no way to resync */
	if (parser->lit_nonsync)
		return parser_fatal(parser, error);
	return parser_error(parser, error);
}

static enum imap_parse_result
parser_lit_digits(struct imap_parser *parser, unsigned char c)
{
	if (c >= '0' && c <= '9') {
		/* saturate: anything this big fails the size check anyway */
		if (parser->lit_size > (UINT64_MAX - 9) / 10)
			parser->lit_size = UINT64_MAX;
		else
			parser->lit_size = parser->lit_size * 10 + (c - '0');
		parser->lit_digits++;
		return IMAP_PARSE_MORE;
	}
	if (parser->lit_digits == 0)
		return parser_error(parser, "Invalid literal size");
	if (c == '+') {
		parser->state = PS_LIT_PLUS;
		return IMAP_PARSE_MORE;
	}
	if (c == '}')
		return parser_lit_check_size(parser);
	return parser_error(parser, "Invalid literal size");
}

static void parser_lit_alloc(struct imap_parser *parser)
{
	parser->lit_pos = 0;
	parser->lit_big = parser->lit_size > IMAP_PARSER_LITERAL_PREALLOC_MAX;
	if (parser->lit_big) {
		parser->lit_buf = NULL;
		parser->lit_alloc = 0;
	} else {
		parser->lit_alloc = (size_t)parser->lit_size + 1;
		parser->lit_buf = p_malloc(parser->pool, parser->lit_alloc);
	}
}

/* The LF after {n} was seen. */
static enum imap_parse_result parser_lit_announced(struct imap_parser *parser)
{
	struct parser_arg *arg;

	if ((parser->flags & IMAP_PARSE_FLAG_LITERAL_SIZE) != 0) {
		arg = parser_add_arg(parser, IMAP_ARG_LITERAL_SIZE);
		arg->literal_size = parser->lit_size;
		arg->literal8 = parser->lit8;
		arg->literal_nonsync = parser->lit_nonsync;
		parser_build_args(parser);
		parser->state = PS_LITERAL_SIZE_WAIT;
		return IMAP_PARSE_LITERAL_SIZE;
	}
	/* parser_lit_check_size() made sure this stays in the bound */
	parser->literal_total += parser->lit_size;
	parser_lit_alloc(parser);
	parser->state = PS_LIT_DATA;
	return parser->lit_nonsync ? IMAP_PARSE_MORE :
		IMAP_PARSE_NEED_CONTINUATION;
}

static enum imap_parse_result
parser_lit_end(struct imap_parser *parser, unsigned char c)
{
	if (c == '\r' && parser->state == PS_LIT_CLOSE) {
		parser->state = PS_LIT_CR;
		return IMAP_PARSE_MORE;
	}
	if (c == '\n')
		return parser_lit_announced(parser);
	return parser_error(parser, "Missing CRLF after literal");
}

static void parser_lit_grow(struct imap_parser *parser, size_t need)
{
	size_t max = (size_t)parser->lit_size + 1;
	size_t new_alloc = parser->lit_alloc == 0 ?
		IMAP_PARSER_LITERAL_PREALLOC_MAX : parser->lit_alloc;

	while (new_alloc < need)
		new_alloc = i_mul_size(new_alloc, 2);
	new_alloc = MIN(new_alloc, max);
	parser->big_total += new_alloc - parser->lit_alloc;
	parser->lit_alloc = new_alloc;
	parser->lit_buf = i_realloc(parser->lit_buf, parser->lit_alloc);
}

static void parser_lit_finish(struct imap_parser *parser)
{
	struct parser_arg *arg;

	parser->lit_buf[parser->lit_size] = '\0';
	arg = parser_add_arg(parser, IMAP_ARG_LITERAL);
	arg->str = parser->lit_buf;
	arg->str_len = (size_t)parser->lit_size;
	arg->literal_size = parser->lit_size;
	arg->literal8 = parser->lit8;
	arg->literal_nonsync = parser->lit_nonsync;
	if (parser->lit_big) {
		if (parser->big_count == parser->big_alloc) {
			parser->big_alloc = parser->big_alloc == 0 ? 4 :
				parser->big_alloc * 2;
			parser->big_bufs = i_realloc(parser->big_bufs,
				i_mul_size(parser->big_alloc, sizeof(char *)));
		}
		parser->big_bufs[parser->big_count++] = parser->lit_buf;
	}
	parser->lit_buf = NULL;
	parser->lit_big = false;
	parser->state = PS_ARG_END;
}

static enum imap_parse_result
parser_lit_data(struct imap_parser *parser, const unsigned char *data,
		size_t size, size_t *pos)
{
	uint64_t left = parser->lit_size - parser->lit_pos;
	size_t n = (size_t)MIN(left, (uint64_t)(size - *pos));
	const unsigned char *nul = NULL;

	if ((parser->flags & IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL) != 0 &&
	    !parser->lit8 && n > 0) {
		nul = memchr(data + *pos, '\0', n);
		if (nul != NULL)
			n = (size_t)(nul - (data + *pos));
	}
	if (n > 0) {
		size_t end = (size_t)parser->lit_pos + n;

		if (end + 1 > parser->lit_alloc)
			parser_lit_grow(parser, end + 1);
		memcpy(parser->lit_buf + parser->lit_pos, data + *pos, n);
		parser->lit_pos = end;
		*pos += n;
	}
	if (nul != NULL) {
		(void)parser_error(parser, "NUL byte in literal");
		parser->skip_literal_left = parser->lit_size - parser->lit_pos;
		parser->tail = TAIL_NONE;
		return IMAP_PARSE_ERROR;
	}
	if (parser->lit_pos == parser->lit_size)
		parser_lit_finish(parser);
	return IMAP_PARSE_MORE;
}

/* ---- skipping a bad line ---- */

static void parser_tail_byte(struct imap_parser *parser, unsigned char c)
{
	enum tail_state t = parser->tail;

	if (c == '{') {
		parser->tail = TAIL_BRACE;
		parser->tail_num = 0;
	} else if (c >= '0' && c <= '9' &&
		   (t == TAIL_BRACE || t == TAIL_DIGITS)) {
		parser->tail = TAIL_DIGITS;
		if (parser->tail_num > (UINT64_MAX - 9) / 10)
			parser->tail_num = UINT64_MAX;
		else
			parser->tail_num = parser->tail_num * 10 + (c - '0');
	} else if (c == '+' && t == TAIL_DIGITS) {
		parser->tail = TAIL_PLUS;
	} else if (c == '}' && (t == TAIL_DIGITS || t == TAIL_PLUS)) {
		parser->tail = TAIL_CLOSE;
		parser->tail_nonsync = t == TAIL_PLUS;
	} else if (c == '\r' && t == TAIL_CLOSE) {
		parser->tail = TAIL_CR;
	} else {
		parser->tail = TAIL_NONE;
	}
}

/* LF of a skipped line. A {n+} before it means n data bytes follow and
   the line goes on after them. */
static enum imap_parse_result parser_skip_lf(struct imap_parser *parser)
{
	uint64_t n = parser->tail_num;

	if ((parser->tail == TAIL_CLOSE || parser->tail == TAIL_CR) &&
	    parser->tail_nonsync) {
		parser->tail = TAIL_NONE;
		if (n > parser->set.max_literal_size ||
		    (parser->set.literal_minus &&
		     n > IMAP_PARSER_LITERAL_MINUS_MAX))
			return parser_fatal(parser, "Literal too large");
		parser->skip_literal_left = n;
		return IMAP_PARSE_MORE;
	}
	parser->tail = TAIL_NONE;
	if (parser->state == PS_SKIP_SILENT) {
		parser_line_start(parser);
		return IMAP_PARSE_MORE;
	}
	parser->args = NULL;
	parser->state = PS_DONE;
	return IMAP_PARSE_DONE;
}

static enum imap_parse_result
parser_skip(struct imap_parser *parser, const unsigned char *data,
	    size_t size, size_t *pos)
{
	while (*pos < size) {
		if (parser->skip_literal_left > 0) {
			size_t n = (size_t)MIN(parser->skip_literal_left,
					       (uint64_t)(size - *pos));
			*pos += n;
			parser->skip_literal_left -= n;
			continue;
		}
		unsigned char c = data[(*pos)++];
		if (c != '\n') {
			parser_tail_byte(parser, c);
			continue;
		}
		enum imap_parse_result ret = parser_skip_lf(parser);
		if (ret == IMAP_PARSE_ERROR)
			(*pos)--;
		if (ret != IMAP_PARSE_MORE || parser->state == PS_ARG_START)
			return ret;
	}
	return IMAP_PARSE_MORE;
}

/* ---- the main loop ---- */

static enum imap_parse_result
parser_byte(struct imap_parser *parser, unsigned char c)
{
	if (c != '\r' && c != '\n') {
		if (++parser->line_len > parser->set.max_line_length)
			return parser_error(parser, "Too long line");
		if (parser->line_len + parser->literal_total >
		    parser->set.max_command_size)
			return parser_error(parser, "Command too large");
	}

	switch (parser->state) {
	case PS_ARG_START:
		return parser_arg_start(parser, c);
	case PS_ARG_END:
		return parser_after_arg(parser, c);
	case PS_ATOM:
		return parser_atom(parser, c);
	case PS_SECTION:
		return parser_section(parser, c);
	case PS_TILDE:
		return parser_tilde(parser, c);
	case PS_QUOTED:
		return parser_quoted(parser, c);
	case PS_QUOTED_ESC:
		return parser_quoted_esc(parser, c);
	case PS_LIT_DIGITS:
		return parser_lit_digits(parser, c);
	case PS_LIT_PLUS:
		if (c != '}')
			return parser_error(parser, "Invalid literal size");
		parser->lit_nonsync = true;
		return parser_lit_check_size(parser);
	case PS_LIT_CLOSE:
	case PS_LIT_CR:
		return parser_lit_end(parser, c);
	case PS_LINE_CR:
		if (c != '\n')
			return parser_error(parser, "Missing LF after CR");
		return parser_finish_line(parser);
	default:
		break;
	}
	i_unreached();
}

enum imap_parse_result
imap_parser_feed(struct imap_parser *parser, enum imap_parser_flags flags,
		 const unsigned char *data, size_t size, size_t *consumed_r,
		 const struct imap_arg **args_r)
{
	enum imap_parse_result ret = IMAP_PARSE_MORE;
	size_t pos = 0;

	/* after DONE the caller must reset; after LITERAL_SIZE continue */
	i_assert(parser->state != PS_DONE);
	i_assert(parser->state != PS_LITERAL_SIZE_WAIT);
	parser->flags = flags;
	while (ret == IMAP_PARSE_MORE) {
		if (parser->state == PS_FATAL) {
			ret = IMAP_PARSE_ERROR;
			break;
		}
		if (parser->state == PS_LIT_DATA) {
			/* runs even without input: a {0} literal ends here */
			ret = parser_lit_data(parser, data, size, &pos);
			if (parser->state == PS_LIT_DATA && ret == IMAP_PARSE_MORE)
				break;
			continue;
		}
		if (pos == size)
			break;
		if (parser->state == PS_SKIP ||
		    parser->state == PS_SKIP_SILENT) {
			ret = parser_skip(parser, data, size, &pos);
			continue;
		}
		ret = parser_byte(parser, data[pos]);
		if (ret != IMAP_PARSE_ERROR)
			pos++;
	}
	*consumed_r = pos;
	*args_r = ret == IMAP_PARSE_DONE || ret == IMAP_PARSE_LITERAL_SIZE ?
		parser->args : NULL;
	return ret;
}
