/* MIME header values with parameters, RFC 2231 continuations. */
#include "lib.h"
#include "strfuncs.h"
#include "message-header.h"
#include "rfc2231.h"
#include "rfc2047.h"

#include <strings.h>

/* A parameter value is display data or a boundary: cut past this. */
#define MIME_PARAM_VALUE_MAX (64 * 1024)

struct raw_param {
	const char *orig;      /* the name as written */
	const char *name;      /* base name, without the '*' suffix */
	const char *value;
	int index;             /* continuation number, -1 if none */
	bool extended;         /* ended in '*': charset'lang'%XX form */
};

/* Split "name*N*" into base name, index and extended flag. */
static void param_split_name(pool_t pool, const char *name,
			     struct raw_param *rp)
{
	const char *star = strchr(name, '*');
	const char *p;

	rp->orig = name;
	rp->index = -1;
	rp->extended = false;
	if (star == NULL) {
		rp->name = name;
		return;
	}
	rp->name = p_strndup(pool, name, (size_t)(star - name));
	p = star + 1;
	if (*p >= '0' && *p <= '9') {
		int n = 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (n <= RFC2231_MAX_CONTINUATION)
				n = n * 10 + (*p - '0');
		}
		rp->index = n > RFC2231_MAX_CONTINUATION ? -2 : n;
		if (*p == '*') {
			rp->extended = true;
			p++;
		}
	} else {
		rp->extended = true;
	}
	if (*p != '\0') {
		/* "a*b": not RFC 2231, keep the name as it is */
		rp->name = name;
		rp->index = -1;
		rp->extended = false;
	}
}

/* Skip what cannot be read up to the next ';'. A '"' in it is garbage
   too, not the start of a quoted string (as Dovecot skips): text that
   broke the syntax once is not trusted to quote properly. */
static void skip_to_semicolon(struct rfc822_lexer *lex)
{
	while (lex->data < lex->end && *lex->data != ';')
		lex->data++;
}

/* One "; name=value": returns 1 with *name_r and *value_r, 0 for a
   broken one (the caller goes on at the next ';'), -1 at the end. */
static int parse_one_param(pool_t pool, struct rfc822_lexer *lex,
			   buffer_t *tmp, const char **name_r,
			   const char **value_r)
{
	if (!rfc822_skip_cfws(lex) || rfc822_lexer_peek(lex) != ';')
		return -1;
	lex->data++;
	(void)rfc822_skip_cfws(lex);
	buffer_reset(tmp);
	if (!rfc822_read_mime_token(lex, tmp))
		return 0;
	*name_r = p_strndup(pool, tmp->data, tmp->used);
	(void)rfc822_skip_cfws(lex);
	if (rfc822_lexer_peek(lex) != '=')
		return 0;
	lex->data++;
	(void)rfc822_skip_cfws(lex);
	buffer_reset(tmp);
	if (rfc822_lexer_peek(lex) == '"') {
		/* an unterminated quote with nothing before the line end
		   holds no value */
		if (!rfc822_read_quoted_param(lex, tmp) && tmp->used == 0)
			return 0;
	} else if (lex->end - lex->data >= 2 && lex->data[0] == '=' &&
		   lex->data[1] == '?') {
		/* An unquoted encoded word ("name==?utf-8?B?...?=") is
		   common; readers take it up to whitespace or ';'. */
		const unsigned char *start = lex->data;
		while (lex->data < lex->end && *lex->data != ';' &&
		       *lex->data > ' ' && *lex->data != 0x7f)
			lex->data++;
		buffer_append_trunc(tmp, start, (size_t)(lex->data - start));
	} else if (!rfc822_read_mime_token(lex, tmp)) {
		return 0;
	}
	*value_r = p_strndup(pool, tmp->data, tmp->used);
	/* whatever follows up to the next ';' is ignored */
	skip_to_semicolon(lex);
	return 1;
}

/* Merge continuations of raw[i]'s name into one value. */
static void merge_continuations(pool_t pool, struct raw_param *raw,
				unsigned int count, unsigned int first,
				buffer_t *tmp, struct mime_param *out)
{
	bool extended = false;

	buffer_reset(tmp);
	/* Pieces in index order; a missing index ends the value. */
	for (int idx = 0; idx <= RFC2231_MAX_CONTINUATION; idx++) {
		bool found = false;
		for (unsigned int j = first; j < count; j++) {
			if (raw[j].index != idx ||
			    strcasecmp(raw[j].name, raw[first].name) != 0)
				continue;
			if (idx == 0)
				extended = raw[j].extended;
			buffer_append_trunc(tmp, raw[j].value,
					    strlen(raw[j].value));
			found = true;
			break;
		}
		if (!found)
			break;
	}
	out->name = extended ?
		p_strdup_printf(pool, "%s*", raw[first].name) :
		raw[first].name;
	out->value = p_strndup(pool, tmp->data, tmp->used);
}

/* Plain parameters keep their order (they sort equal and first). */
static int raw_param_cmp(const void *p1, const void *p2)
{
	const struct raw_param *a = p1, *b = p2;
	bool a_star = a->index != -1 || a->extended;
	bool b_star = b->index != -1 || b->extended;

	if (!a_star || !b_star)
		return a_star - b_star;
	int ret = strcasecmp(a->name, b->name);
	if (ret != 0)
		return ret;
	return a->index - b->index;
}

static void params_finish(pool_t pool, struct raw_param *raw,
			  unsigned int count, buffer_t *tmp,
			  struct mime_value *result)
{
	struct mime_param *params =
		p_malloc(pool, sizeof(*params) * (count + 1));
	unsigned int n = 0;

	/* Plain parameters first, in order; then merged continuations. */
	for (unsigned int i = 0; i < count; i++) {
		if (raw[i].index != -1 || raw[i].extended)
			continue;
		params[n].name = raw[i].name;
		params[n++].value = raw[i].value;
	}
	/* Dovecot lists the RFC 2231 ones sorted by name: do the same */
	qsort(raw, count, sizeof(*raw), raw_param_cmp);
	for (unsigned int i = 0; i < count; i++) {
		bool seen = false;
		if (raw[i].index < 0) {
			if (raw[i].extended) {
				params[n].name = p_strdup_printf(pool, "%s*",
								 raw[i].name);
				params[n++].value = raw[i].value;
			}
			continue;
		}
		bool have_first = false;
		for (unsigned int j = 0; j < count; j++) {
			if (raw[j].index == 0 &&
			    strcasecmp(raw[j].name, raw[i].name) == 0)
				have_first = true;
		}
		if (!have_first) {
			/* pieces without a piece 0 make no value: kept as
			   they were written (so does Dovecot) */
			params[n].name = raw[i].orig;
			params[n++].value = raw[i].value;
			continue;
		}
		for (unsigned int j = 0; j < i && !seen; j++) {
			seen = raw[j].index >= 0 &&
				strcasecmp(raw[j].name, raw[i].name) == 0;
		}
		if (!seen)
			merge_continuations(pool, raw, count, i, tmp,
					    &params[n++]);
	}
	result->params = params;
	result->params_count = n;
}

static void parse_main_value(pool_t pool, struct rfc822_lexer *lex,
			     bool content_type, buffer_t *tmp,
			     struct mime_value *result)
{
	buffer_reset(tmp);
	(void)rfc822_skip_cfws(lex);
	result->value_valid = rfc822_read_mime_token(lex, tmp);
	if (content_type && result->value_valid) {
		(void)rfc822_skip_cfws(lex);
		if (rfc822_lexer_peek(lex) == '/') {
			lex->data++;
			buffer_append_trunc(tmp, "/", 1);
			(void)rfc822_skip_cfws(lex);
			result->value_valid =
				rfc822_read_mime_token(lex, tmp);
		} else {
			result->value_valid = false;
			result->type_only = rfc822_lexer_eof(lex);
		}
	}
	result->value = p_strndup(pool, tmp->data, tmp->used);
}

void rfc2231_parse(pool_t pool, const char *str, bool content_type,
		   struct mime_value *result_r)
{
	struct rfc822_lexer lex;
	struct raw_param *raw;
	unsigned int count = 0;
	const char *name, *value;
	buffer_t tmp;
	int ret;

	memset(result_r, 0, sizeof(*result_r));
	buffer_init(&tmp, MIME_PARAM_VALUE_MAX);
	rfc822_lexer_init(&lex, str, strlen(str));
	parse_main_value(pool, &lex, content_type, &tmp, result_r);
	(void)rfc822_skip_cfws(&lex);
	if (!rfc822_lexer_eof(&lex) && *lex.data != ';')
		result_r->trailing_garbage = true;
	if ((content_type && !result_r->value_valid) ||
	    result_r->trailing_garbage) {
		/* skip the rest of a broken value, or what follows a good
		   one ("text/plain garbage; charset=x"), up to the
		   parameters */
		skip_to_semicolon(&lex);
	}

	raw = i_malloc(sizeof(*raw) * RFC2231_MAX_PARAMS);
	/* each round consumes a ';', so the field's length bounds them */
	while (count < RFC2231_MAX_PARAMS &&
	       (ret = parse_one_param(pool, &lex, &tmp, &name, &value)) >= 0) {
		if (ret == 0) {
			/* a broken parameter ("x;", ";;", "=y"): what follows
			   it may still be good (Dovecot gives up there) */
			skip_to_semicolon(&lex);
			continue;
		}
		param_split_name(pool, name, &raw[count]);
		raw[count].value = value;
		if (raw[count].index != -2)
			count++;
	}
	params_finish(pool, raw, count, &tmp, result_r);
	i_free(raw);
	buffer_free(&tmp);
}

const char *mime_value_get_param(const struct mime_value *value,
				 const char *name)
{
	for (unsigned int i = 0; i < value->params_count; i++) {
		if (strcasecmp(value->params[i].name, name) == 0)
			return value->params[i].value;
	}
	return NULL;
}


const char *rfc2231_decode_value(pool_t pool, const char *value)
{
	const char *q1 = strchr(value, '\''), *q2, *p;
	const char *charset;
	buffer_t bytes;
	const char *result;

	if (q1 == NULL || (q2 = strchr(q1 + 1, '\'')) == NULL)
		return value;
	charset = p_strndup(pool, value, (size_t)(q1 - value));
	buffer_init(&bytes, MIME_PARAM_VALUE_MAX);
	for (p = q2 + 1; *p != '\0'; p++) {
		int hi, lo;
		char c = *p;
		if (c == '%' && (hi = hex_digit_value(p[1])) >= 0 &&
		    (lo = hex_digit_value(p[2])) >= 0) {
			c = (char)(hi * 16 + lo);
			p += 2;
		}
		buffer_append_trunc(&bytes, &c, 1);
	}
	result = charset_to_utf8(pool, *charset == '\0' ? "us-ascii" : charset,
				 bytes.data, bytes.used);
	buffer_free(&bytes);
	return result;
}
