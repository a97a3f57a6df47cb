#ifndef MESSAGE_HEADER_H
#define MESSAGE_HEADER_H
/* RFC 5322 header fields: a line-fed parser that unfolds fields, and a
   small lexer for structured field bodies (comments, quoted strings,
   atoms, MIME tokens) shared by the address and MIME parameter parsers.

   The field parser never holds more than max_field_size bytes of one field:
   the rest of a longer field is dropped and the field is marked truncated. */

#include "buffer.h"

/* A field name longer than this is not a field name (RFC 5322 allows any
   length, but real ones are short; the cap bounds the work per line). */
#define MESSAGE_HEADER_NAME_MAX 1000

struct message_header_field {
	/* Name as written (case kept, trailing whitespace removed). */
	const char *name;
	/* Value with each fold as a single LF (CR dropped), whitespace
	   after the colon on the first line removed. Unfolding (RFC 5322
	   2.2.3) is removing the LFs. NUL bytes in the field are replaced
	   by 0x80 so value is also a C string. Valid until the next call
	   into the parser. */
	const char *value;
	size_t value_len;
	bool missing_colon;   /* the line had no ':' (value is empty) */
	bool truncated;       /* longer than max_field_size, cut */
};

struct message_header_parser;

struct message_header_parser *message_header_parser_init(size_t max_field_size);
void message_header_parser_deinit(struct message_header_parser **hp);
/* Forget any pending field (start of a new header block). */
void message_header_parser_reset(struct message_header_parser *hp);

/* Feed one physical header line without its line ending; line_truncated
   says the caller already cut it. Returns true when this line completed
   the previous field, which is then in *field_r. */
bool message_header_parser_line(struct message_header_parser *hp,
				const unsigned char *line, size_t len,
				bool line_truncated,
				struct message_header_field *field_r);
/* End of the header block: returns true if a last field was pending. */
bool message_header_parser_flush(struct message_header_parser *hp,
				 struct message_header_field *field_r);

/* ---- lexer for structured field bodies ---- */

struct rfc822_lexer {
	const unsigned char *data, *end;
	/* Text of the last comment seen by rfc822_skip_cfws() (without
	   parentheses), for "addr (Real Name)"; kept up to a bound. */
	buffer_t *last_comment;
};

void rfc822_lexer_init(struct rfc822_lexer *lex, const char *data, size_t len);
/* Skip whitespace and (nested) comments. Returns false at end of data. */
bool rfc822_skip_cfws(struct rfc822_lexer *lex);
/* RFC 5322 atom (atext run). Appends it to out; false if none. */
bool rfc822_read_atom(struct rfc822_lexer *lex, buffer_t *out);
/* dot-atom, allowing the obsolete CFWS around dots. */
bool rfc822_read_dot_atom(struct rfc822_lexer *lex, buffer_t *out);
/* RFC 2045 token (no tspecials). */
bool rfc822_read_mime_token(struct rfc822_lexer *lex, buffer_t *out);
/* Quoted string at '"': appends the unescaped content without its folds
   (a bare CR is content). The closing quote may be missing at end of
   data. */
bool rfc822_read_quoted(struct rfc822_lexer *lex, buffer_t *out);
/* A quoted parameter value at '"' (RFC 2045 5.1). Like
   rfc822_read_quoted(), except when the closing quote is missing: then
   the value ends at the first ';' or the end of its line (the first CR
   or LF: a fold or a bare CR), not at the end of the field, so the
   following parameters and lines are not swallowed into it; the lexer
   continues there. Returns false if the quote was unterminated. */
bool rfc822_read_quoted_param(struct rfc822_lexer *lex, buffer_t *out);
/* Domain literal at '[': appends it including the brackets. */
bool rfc822_read_domain_literal(struct rfc822_lexer *lex, buffer_t *out);

static inline bool rfc822_lexer_eof(const struct rfc822_lexer *lex)
{
	return lex->data >= lex->end;
}
static inline int rfc822_lexer_peek(const struct rfc822_lexer *lex)
{
	return lex->data < lex->end ? *lex->data : -1;
}

/* Append the buffer ignoring the max_size failure: the callers use large
   bounded buffers and a cut value is acceptable for display data. */
void buffer_append_trunc(buffer_t *buf, const void *data, size_t size);

#endif
