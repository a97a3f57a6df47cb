/* RFC 2047 encoded-word decoding and iconv charset conversion. */
#include "lib.h"
#include "strfuncs.h"
#include "buffer.h"
#include "message-header.h"
#include "rfc2047.h"

#include <iconv.h>
#include <strings.h>

/* Charset names longer than this are not charsets. */
#define CHARSET_NAME_MAX 64
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
	size_t n;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) { n = 2; cp = p[0] & 0x1f; }
	else if (p[0] >= 0xe0 && p[0] <= 0xef) { n = 3; cp = p[0] & 0x0f; }
	else if (p[0] >= 0xf0 && p[0] <= 0xf4) { n = 4; cp = p[0] & 0x07; }
	else return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* Append data as UTF-8, replacing invalid sequences. Valid runs are
   appended whole (headers are mostly ASCII). */
static void append_utf8_valid(buffer_t *out, const unsigned char *data,
			      size_t size)
{
	while (size > 0) {
		size_t run = 0, n;
		while (run < size &&
		       (n = utf8_seq_len(data + run, size - run)) != 0)
			run += n;
		if (run > 0)
			buffer_append_trunc(out, data, run);
		if (run == size)
			break;
		buffer_append_trunc(out, UTF8_REPLACEMENT, 3);
		data += run + 1;
		size -= run + 1;
	}
}

static bool charset_is_utf8(const char *charset)
{
	return strcasecmp(charset, "utf-8") == 0 ||
		strcasecmp(charset, "utf8") == 0 ||
		strcasecmp(charset, "us-ascii") == 0 ||
		strcasecmp(charset, "ascii") == 0;
}

static int charset_convert(const char *charset, const void *data,
			   size_t size, buffer_t *out)
{
	iconv_t cd;
	char *in = (char *)data;
	char tmp[1024];

	if (charset_is_utf8(charset)) {
		append_utf8_valid(out, data, size);
		return 0;
	}
	cd = iconv_open("UTF-8", charset);
	if (cd == (iconv_t)-1)
		return -1;
	while (size > 0) {
		char *outp = tmp;
		size_t outleft = sizeof(tmp);
		size_t ret = iconv(cd, &in, &size, &outp, &outleft);
		buffer_append_trunc(out, tmp, sizeof(tmp) - outleft);
		if (ret != (size_t)-1 || errno == E2BIG)
			continue;
		/* EILSEQ or EINVAL (cut sequence): skip one byte. */
		buffer_append_trunc(out, UTF8_REPLACEMENT, 3);
		in++;
		size--;
		(void)iconv(cd, NULL, NULL, NULL, NULL);
	}
	/* flush any shift state */
	char *outp = tmp;
	size_t outleft = sizeof(tmp);
	(void)iconv(cd, NULL, NULL, &outp, &outleft);
	buffer_append_trunc(out, tmp, sizeof(tmp) - outleft);
	iconv_close(cd);
	return 0;
}

const char *charset_to_utf8(pool_t pool, const char *charset,
			    const void *data, size_t size)
{
	buffer_t out;
	const char *result = NULL;

	if (size > RFC2047_MAX_INPUT)
		size = RFC2047_MAX_INPUT;
	buffer_init(&out, i_add_size(i_mul_size(size, 4), 16));
	if (charset_convert(charset, data, size, &out) == 0)
		result = p_strndup(pool, out.data, out.used);
	buffer_free(&out);
	return result;
}



/* Lenient decoders: skip what is not part of the alphabet. */
static void decode_b(const unsigned char *p, size_t len, buffer_t *out)
{
	unsigned int acc = 0, bits = 0;

	for (size_t i = 0; i < len; i++) {
		int v = base64_char_value(p[i]);
		if (v < 0)
			continue;
		acc = (acc << 6) | (unsigned int)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			unsigned char c = (unsigned char)(acc >> bits);
			buffer_append_trunc(out, &c, 1);
		}
	}
}

static void decode_q(const unsigned char *p, size_t len, buffer_t *out)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		int hi, lo;
		if (c == '_')
			c = ' ';
		else if (c == '=' && i + 2 < len &&
			 (hi = hex_digit_value(p[i + 1])) >= 0 &&
			 (lo = hex_digit_value(p[i + 2])) >= 0) {
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		}
		buffer_append_trunc(out, &c, 1);
	}
}

struct encoded_word {
	char charset[CHARSET_NAME_MAX + 1];
	char encoding;
	const unsigned char *text;
	size_t text_len;
	size_t total_len;   /* bytes from "=?" to "?=" */
};

/* Parse an encoded word at p. Returns false if it is not one. */
static bool parse_encoded_word(const unsigned char *p, size_t len,
			       struct encoded_word *ew)
{
	size_t i = 2, cs_start = 2, cs_len;

	if (len < 8 || p[0] != '=' || p[1] != '?')
		return false;
	while (i < len && p[i] != '?' && p[i] > ' ')
		i++;
	if (i >= len || p[i] != '?' || i == cs_start)
		return false;
	cs_len = i - cs_start;
	const unsigned char *star = memchr(p + cs_start, '*', cs_len);
	if (star != NULL)
		cs_len = (size_t)(star - (p + cs_start));   /* RFC 2231 lang */
	if (cs_len == 0 || cs_len > CHARSET_NAME_MAX)
		return false;
	memcpy(ew->charset, p + cs_start, cs_len);
	ew->charset[cs_len] = '\0';
	if (i + 3 > len || p[i + 2] != '?')
		return false;
	ew->encoding = (char)(p[i + 1] | 0x20);
	if (ew->encoding != 'b' && ew->encoding != 'q')
		return false;
	i += 3;
	ew->text = p + i;
	while (i + 1 < len && !(p[i] == '?' && p[i + 1] == '=')) {
		if (p[i] == ' ' || p[i] == '\t')
			return false;
		i++;
	}
	if (i + 1 >= len)
		return false;
	ew->text_len = (size_t)(p + i - ew->text);
	ew->total_len = i + 2;
	return true;
}

struct decode_ctx {
	buffer_t out, pending;
	char pending_charset[CHARSET_NAME_MAX + 1];
	const unsigned char *pending_raw;   /* first word's raw text */
	size_t pending_raw_len;
};

static void flush_pending(struct decode_ctx *ctx)
{
	if (ctx->pending_charset[0] == '\0')
		return;
	if (charset_convert(ctx->pending_charset, ctx->pending.data,
			    ctx->pending.used, &ctx->out) < 0) {
		/* unknown charset: keep the words as written */
		append_utf8_valid(&ctx->out, ctx->pending_raw,
				  ctx->pending_raw_len);
	}
	buffer_reset(&ctx->pending);
	ctx->pending_charset[0] = '\0';
}

static void add_word(struct decode_ctx *ctx, const struct encoded_word *ew,
		     const unsigned char *raw)
{
	if (strcasecmp(ctx->pending_charset, ew->charset) != 0) {
		flush_pending(ctx);
		memcpy(ctx->pending_charset, ew->charset,
		       sizeof(ew->charset));
		ctx->pending_raw = raw;
	}
	/* raw span covers from the first word to this one's end */
	ctx->pending_raw_len = (size_t)(raw + ew->total_len - ctx->pending_raw);
	if (ew->encoding == 'b')
		decode_b(ew->text, ew->text_len, &ctx->pending);
	else
		decode_q(ew->text, ew->text_len, &ctx->pending);
}

const char *rfc2047_decode(pool_t pool, const char *value, size_t len)
{
	const unsigned char *p = (const unsigned char *)value, *end;
	struct decode_ctx ctx;
	struct encoded_word ew;
	const char *result;

	if (len > RFC2047_MAX_INPUT)
		len = RFC2047_MAX_INPUT;
	end = p + len;
	memset(&ctx, 0, sizeof(ctx));
	buffer_init(&ctx.out, len * 4 + 16);
	buffer_init(&ctx.pending, len + 16);
	while (p < end) {
		if (parse_encoded_word(p, (size_t)(end - p), &ew)) {
			add_word(&ctx, &ew, p);
			p += ew.total_len;
			/* whitespace up to the next encoded word vanishes */
			const unsigned char *ws = p;
			while (ws < end && (*ws == ' ' || *ws == '\t' ||
					    *ws == '\r' || *ws == '\n'))
				ws++;
			if (ws > p && parse_encoded_word(ws, (size_t)(end - ws), &ew))
				p = ws;
			continue;
		}
		flush_pending(&ctx);
		/* plain text up to the next '=' that may start a word ('='
		   is never inside a UTF-8 sequence) */
		const unsigned char *eq = memchr(p + 1, '=',
						 (size_t)(end - p - 1));
		const unsigned char *stop = eq == NULL ? end : eq;
		append_utf8_valid(&ctx.out, p, (size_t)(stop - p));
		p = stop;
	}
	flush_pending(&ctx);
	result = p_strndup(pool, ctx.out.data, ctx.out.used);
	buffer_free(&ctx.out);
	buffer_free(&ctx.pending);
	return result;
}
