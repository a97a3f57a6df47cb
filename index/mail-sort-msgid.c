/* Message-IDs in Message-ID:, References: and In-Reply-To: for THREAD
   REFERENCES (mail-sort-keys.h): found and normalized as RFC 5256
   section 3 asks ("<"01KF"@x.y>" and "<01KF@x.y>" are one id), and as
   Dovecot does for the shapes real mail has.

   From each '<', up to the first of '>', '<', '"', '(', '[':
   - '>' first: the id is what lies between, without whitespace (so
     "< a @ b >" is "a@b"), if it has an '@'. Either side may be empty:
     "<87y0pmj4uc.fsf@>" and "<@x>" are sent by real clients and must
     link their replies. No '@' ("<nodomain>") is not an id.
   - '<' first: the id, if any, starts at that '<' ("<<a@b>>" gives
     "a@b").
   - '"', '(' or '[': the RFC 5322 msg-id syntax with its obsolete forms
     (CFWS between words and dots, quoted-strings, domain literals),
     normalized: comments and folding whitespace dropped, quoted-strings
     unquoted and unescaped, literals kept with their brackets. Text
     that does not fit that syntax ("<a(b)c@d>", "<"q"s@d>") is no id.
   Ids without angle brackets are not ids (RFC 5322 msg-id). Comparison
   is of the bytes: case-sensitive (RFC 5256 section 3, step 1A). */
#include "lib.h"
#include "mail-sort-keys.h"
#include "message-header.h"

#include <string.h>

struct msgid_parser {
	const char *p, *end;
	buffer_t *out;
};

static bool is_wsp(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* RFC 5322 atext, and 8-bit bytes (UTF-8 ids, RFC 6532). */
static bool is_atext(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || (unsigned char)c >= 0x80 ||
		(c != '\0' && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL);
}

/* Skip [CFWS]. Returns false on an unterminated comment. */
static bool skip_cfws(struct msgid_parser *mp)
{
	unsigned int depth = 0;

	for (; mp->p < mp->end; mp->p++) {
		char c = *mp->p;
		if (depth > 0 && c == '\\') {
			if (++mp->p == mp->end)
				return false;
		} else if (c == '(') {
			depth++;
		} else if (depth > 0 && c == ')') {
			depth--;
		} else if (depth == 0 && !is_wsp(c)) {
			return true;
		}
	}
	return depth == 0;
}

/* quoted-string at mp->p ('"'): its content, unescaped, without the
   CR LF of folds. */
static bool read_quoted(struct msgid_parser *mp)
{
	for (mp->p++; mp->p < mp->end; mp->p++) {
		char c = *mp->p;
		if (c == '"') {
			mp->p++;
			return true;
		}
		if (c == '\\') {
			if (++mp->p == mp->end)
				return false;
			c = *mp->p;
		} else if (c == '\r' || c == '\n') {
			continue;
		}
		buffer_append_trunc(mp->out, &c, 1);
	}
	return false;
}

/* domain-literal at mp->p ('['), without its whitespace. */
static bool read_literal(struct msgid_parser *mp)
{
	buffer_append_trunc(mp->out, "[", 1);
	for (mp->p++; mp->p < mp->end; mp->p++) {
		char c = *mp->p;
		if (c == '[')
			return false;
		if (c == '\\') {
			if (++mp->p == mp->end)
				return false;
			c = *mp->p;
		} else if (is_wsp(c)) {
			continue;
		}
		buffer_append_trunc(mp->out, &c, 1);
		if (c == ']') {
			mp->p++;
			return true;
		}
	}
	return false;
}

static bool read_atom(struct msgid_parser *mp)
{
	const char *start = mp->p;

	while (mp->p < mp->end && is_atext(*mp->p))
		mp->p++;
	buffer_append_trunc(mp->out, start, (size_t)(mp->p - start));
	return mp->p > start;
}

/* word *("." word) up to stop ('@' or '>'), CFWS allowed around each
   word and dot; an empty list is allowed. left: the id-left, whose
   words may be quoted-strings; else the id-right, which may be a
   domain-literal instead. */
static bool read_words(struct msgid_parser *mp, char stop, bool left)
{
	if (!skip_cfws(mp) || mp->p == mp->end)
		return false;
	if (*mp->p == stop)
		return true;
	if (!left && *mp->p == '[')
		return read_literal(mp) && skip_cfws(mp) &&
			mp->p < mp->end && *mp->p == stop;
	for (;;) {
		bool ok = left && *mp->p == '"' ? read_quoted(mp) : read_atom(mp);
		if (!ok || !skip_cfws(mp) || mp->p == mp->end)
			return false;
		if (*mp->p == stop)
			return true;
		if (*mp->p != '.')
			return false;
		buffer_append_trunc(mp->out, ".", 1);
		mp->p++;
		if (!skip_cfws(mp) || mp->p == mp->end)
			return false;
	}
}

/* The full syntax from just after '<'. */
static bool msgid_parse_full(struct msgid_parser *mp)
{
	if (!read_words(mp, '@', true))
		return false;
	buffer_append_trunc(mp->out, "@", 1);
	mp->p++;
	if (!read_words(mp, '>', false))
		return false;
	mp->p++;
	return true;
}

/* The id whose '<' is at *p. Returns true with it in out; false if it is
   none, with *p where the search for the next '<' goes on. */
static bool msgid_read(const char **p, const char *end, buffer_t *out)
{
	const char *s = *p + 1;
	bool at = false;

	buffer_reset(out);
	for (; s < end; s++) {
		char c = *s;
		if (c == '>') {
			*p = s + 1;
			return at;
		}
		if (c == '<') {
			*p = s;
			return false;
		}
		if (c == '"' || c == '(' || c == '[')
			break;
		at = at || c == '@';
		if (!is_wsp(c))
			buffer_append_trunc(out, &c, 1);
	}
	if (s == end) {
		*p = end;
		return false;
	}
	struct msgid_parser mp = { .p = *p + 1, .end = end, .out = out };
	buffer_reset(out);
	if (msgid_parse_full(&mp)) {
		*p = mp.p;
		return true;
	}
	*p += 1;
	return false;
}

bool mail_thread_msgid_next(const char **p, const char *end, buffer_t *out)
{
	while (*p < end) {
		const char *lt = memchr(*p, '<', (size_t)(end - *p));
		if (lt == NULL)
			break;
		*p = lt;
		if (msgid_read(p, end, out))
			return true;
	}
	*p = end;
	return false;
}
