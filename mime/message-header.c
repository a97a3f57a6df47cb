/* RFC 5322 header field unfolding and a lexer for structured fields. */
#include "lib.h"
#include "message-header.h"

/* Bound for a remembered comment ("(Real Name)" after an address). */
#define RFC822_COMMENT_MAX 1024
/* Comments nest; deeper nesting than this is treated as text. */
#define RFC822_COMMENT_DEPTH_MAX 64

struct message_header_parser {
	size_t max_field_size;
	buffer_t cur;          /* pending field: "name\0value" */
	size_t cur_name_len;   /* bytes of name in cur, before the NUL */
	bool have_cur, cur_missing_colon, cur_truncated;
	buffer_t done;         /* the field handed to the caller */
};

struct message_header_parser *message_header_parser_init(size_t max_field_size)
{
	struct message_header_parser *hp = i_malloc(sizeof(*hp));

	hp->max_field_size = max_field_size;
	buffer_init(&hp->cur, max_field_size + MESSAGE_HEADER_NAME_MAX + 1);
	buffer_init(&hp->done, max_field_size + MESSAGE_HEADER_NAME_MAX + 1);
	return hp;
}

void message_header_parser_deinit(struct message_header_parser **_hp)
{
	struct message_header_parser *hp = *_hp;

	*_hp = NULL;
	buffer_free(&hp->cur);
	buffer_free(&hp->done);
	i_free(hp);
}

void message_header_parser_reset(struct message_header_parser *hp)
{
	buffer_reset(&hp->cur);
	hp->have_cur = false;
}

/* Append value bytes, NULs replaced, cut at the field bound. */
static void header_append_value(struct message_header_parser *hp,
				const unsigned char *data, size_t len)
{
	size_t room = hp->cur_name_len + 1 + hp->max_field_size;

	if (hp->cur.used + len > room) {
		len = room > hp->cur.used ? room - hp->cur.used : 0;
		hp->cur_truncated = true;
	}
	char *dest = buffer_reserve(&hp->cur, len);
	i_assert(dest != NULL);
	/* a copy, then the rare NULs found by memchr: most of a header's
	   parse is here */
	memcpy(dest, data, len);
	for (char *z = memchr(dest, '\0', len); z != NULL;
	     z = memchr(z + 1, '\0', (size_t)(dest + len - (z + 1))))
		*z = (char)0x80;
	buffer_commit(&hp->cur, len);
}

static void header_start_field(struct message_header_parser *hp,
			       const unsigned char *line, size_t len,
			       bool line_truncated)
{
	const unsigned char *colon = memchr(line, ':', len);
	size_t name_len = colon != NULL ? (size_t)(colon - line) : len;

	buffer_reset(&hp->cur);
	hp->have_cur = true;
	hp->cur_missing_colon = colon == NULL;
	hp->cur_truncated = line_truncated;
	while (name_len > 0 && (line[name_len - 1] == ' ' ||
				line[name_len - 1] == '\t'))
		name_len--;
	if (name_len > MESSAGE_HEADER_NAME_MAX) {
		name_len = MESSAGE_HEADER_NAME_MAX;
		hp->cur_truncated = true;
	}
	hp->cur_name_len = 0;
	header_append_value(hp, line, name_len);
	hp->cur_name_len = hp->cur.used;
	buffer_append_trunc(&hp->cur, "", 1);
	if (colon == NULL)
		return;
	const unsigned char *p = colon + 1, *end = line + len;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	header_append_value(hp, p, (size_t)(end - p));
}

static void header_output(struct message_header_parser *hp,
			  struct message_header_field *field_r)
{
	/* Swap so the caller's view stays valid while cur is refilled. */
	buffer_t tmp = hp->done;

	hp->done = hp->cur;
	hp->cur = tmp;
	buffer_reset(&hp->cur);
	field_r->name = hp->done.data;
	field_r->value = hp->done.data + hp->cur_name_len + 1;
	field_r->value_len = hp->done.used - hp->cur_name_len - 1;
	field_r->missing_colon = hp->cur_missing_colon;
	field_r->truncated = hp->cur_truncated;
	hp->have_cur = false;
}

bool message_header_parser_line(struct message_header_parser *hp,
				const unsigned char *line, size_t len,
				bool line_truncated,
				struct message_header_field *field_r)
{
	bool output = false;

	if (len > 0 && (line[0] == ' ' || line[0] == '\t') && hp->have_cur) {
		/* Continuation line: the fold is kept as one LF so the
		   caller can tell folded from unfolded text (IMAP output
		   differs); unfolding later drops the LF. */
		header_append_value(hp, (const unsigned char *)"\n", 1);
		header_append_value(hp, line, len);
		if (line_truncated)
			hp->cur_truncated = true;
		return false;
	}
	if (hp->have_cur) {
		header_output(hp, field_r);
		output = true;
	}
	header_start_field(hp, line, len, line_truncated);
	return output;
}

bool message_header_parser_flush(struct message_header_parser *hp,
				 struct message_header_field *field_r)
{
	if (!hp->have_cur)
		return false;
	header_output(hp, field_r);
	return true;
}

void buffer_append_trunc(buffer_t *buf, const void *data, size_t size)
{
	if (buf->used + size > buf->max_size)
		size = buf->max_size - buf->used;
	if (buffer_append(buf, data, size) < 0)
		i_unreached();
}

/* ---- lexer ---- */

void rfc822_lexer_init(struct rfc822_lexer *lex, const char *data, size_t len)
{
	memset(lex, 0, sizeof(*lex));
	lex->data = (const unsigned char *)data;
	lex->end = lex->data + len;
}

static void rfc822_skip_comment(struct rfc822_lexer *lex)
{
	unsigned int depth = 0;
	buffer_t *out = lex->last_comment;

	if (out != NULL)
		buffer_reset(out);
	for (; lex->data < lex->end; lex->data++) {
		unsigned char c = *lex->data;
		if (c == '\\' && lex->data + 1 < lex->end) {
			lex->data++;
			if (out != NULL)
				buffer_append_trunc(out, lex->data, 1);
			continue;
		}
		if (c == '(') {
			depth++;
			if (depth == 1 || depth > RFC822_COMMENT_DEPTH_MAX)
				continue;
		} else if (c == ')') {
			if (--depth == 0) {
				lex->data++;
				return;
			}
		} else if (c == '\r' || c == '\n') {
			continue;
		}
		if (out != NULL)
			buffer_append_trunc(out, lex->data, 1);
	}
}

bool rfc822_skip_cfws(struct rfc822_lexer *lex)
{
	while (lex->data < lex->end) {
		unsigned char c = *lex->data;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			lex->data++;
		else if (c == '(')
			rfc822_skip_comment(lex);
		else
			return true;
	}
	return false;
}

static bool is_atext(unsigned char c)
{
	if (c >= 0x80)
		return true;  /* 8-bit: accepted as text (RFC 6532 UTF-8) */
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

static bool is_mime_token_char(unsigned char c)
{
	if (c <= ' ' || c == 0x7f)
		return false;
	return strchr("()<>@,;:\\\"/[]?=", c) == NULL;
}

bool rfc822_read_atom(struct rfc822_lexer *lex, buffer_t *out)
{
	const unsigned char *start = lex->data;

	while (lex->data < lex->end && is_atext(*lex->data))
		lex->data++;
	buffer_append_trunc(out, start, (size_t)(lex->data - start));
	return lex->data > start;
}

bool rfc822_read_dot_atom(struct rfc822_lexer *lex, buffer_t *out)
{
	if (!rfc822_read_atom(lex, out))
		return false;
	for (;;) {
		const unsigned char *save = lex->data;
		(void)rfc822_skip_cfws(lex);
		if (rfc822_lexer_peek(lex) != '.') {
			lex->data = save;
			return true;
		}
		lex->data++;
		buffer_append_trunc(out, ".", 1);
		(void)rfc822_skip_cfws(lex);
		if (!rfc822_read_atom(lex, out))
			return true;
	}
}

bool rfc822_read_mime_token(struct rfc822_lexer *lex, buffer_t *out)
{
	const unsigned char *start = lex->data;

	while (lex->data < lex->end && is_mime_token_char(*lex->data))
		lex->data++;
	buffer_append_trunc(out, start, (size_t)(lex->data - start));
	return lex->data > start;
}

bool rfc822_read_quoted(struct rfc822_lexer *lex, buffer_t *out)
{
	if (rfc822_lexer_peek(lex) != '"')
		return false;
	for (lex->data++; lex->data < lex->end; lex->data++) {
		unsigned char c = *lex->data;
		if (c == '"') {
			lex->data++;
			return true;
		}
		if (c == '\\' && lex->data + 1 < lex->end)
			c = *++lex->data;
		else if (c == '\n')
			continue;   /* a fold: the white space after it stays */
		buffer_append_trunc(out, &c, 1);
	}
	return true;
}

/* The closing quote of the quoted string at data (just after its opening
   quote), or NULL. */
static const unsigned char *quoted_end(const unsigned char *data,
				       const unsigned char *end)
{
	for (; data < end; data++) {
		if (*data == '\\' && data + 1 < end)
			data++;
		else if (*data == '"')
			return data;
	}
	return NULL;
}

bool rfc822_read_quoted_param(struct rfc822_lexer *lex, buffer_t *out)
{
	const unsigned char *p;

	if (rfc822_lexer_peek(lex) != '"')
		return false;
	if (quoted_end(lex->data + 1, lex->end) != NULL)
		return rfc822_read_quoted(lex, out);
	for (p = lex->data + 1; p < lex->end && *p != '\r' && *p != '\n' &&
	     *p != ';'; p++) {
		if (*p == '\\' && p + 1 < lex->end && p[1] != '\r' &&
		    p[1] != '\n')
			p++;
		buffer_append_trunc(out, p, 1);
	}
	lex->data = p;
	return false;
}

bool rfc822_read_domain_literal(struct rfc822_lexer *lex, buffer_t *out)
{
	const unsigned char *start = lex->data;

	if (rfc822_lexer_peek(lex) != '[')
		return false;
	for (lex->data++; lex->data < lex->end; lex->data++) {
		if (*lex->data == '\\' && lex->data + 1 < lex->end)
			lex->data++;
		else if (*lex->data == ']') {
			lex->data++;
			break;
		}
	}
	buffer_append_trunc(out, start, (size_t)(lex->data - start));
	return true;
}
