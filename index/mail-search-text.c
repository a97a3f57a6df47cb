/* BODY and TEXT matching (mail-search-private.h): a small pipeline fed
   with a part's raw body in chunks: Content-Transfer-Encoding decoding
   (base64, quoted-printable), charset conversion to UTF-8 through iconv,
   i;unicode-casemap folding, then a substring search over a window that
   keeps the last (longest key - 1) folded bytes before it, so a match
   that straddles two chunks is found. Every stage has a fixed-size
   buffer; folding, which may grow text, fills the window in steps. */
#include "lib.h"
#include "strfuncs.h"
#include "buffer.h"
#include "unicode-casemap.h"
#include "mail-search-private.h"

#include <errno.h>
#include <iconv.h>
#include <string.h>
#include <strings.h>

/* Bytes one stage passes to the next at a time. */
#define TEXT_PIECE_MAX MAIL_SEARCH_CHUNK_SIZE
/* An incomplete multibyte input character kept between chunks; no
   charset iconv knows has longer characters. */
#define TEXT_CONV_CARRY_MAX 16

enum text_cte { TEXT_CTE_NONE, TEXT_CTE_BASE64, TEXT_CTE_QP };
enum qp_state { QP_NORMAL, QP_EQ, QP_EQ_HEX, QP_EQ_CR };

struct mail_search_text {
	struct mail_search_program *program;
	enum text_cte cte;
	unsigned int b64_acc, b64_bits;
	bool b64_end;
	enum qp_state qp_state;
	unsigned char qp_hex;

	iconv_t cd;             /* (iconv_t)-1: the text is UTF-8 already */
	unsigned char conv_carry[TEXT_CONV_CARRY_MAX];
	size_t conv_carry_len;
	unsigned char utf8_carry[4];
	size_t utf8_carry_len;

	unsigned char *decoded;   /* TEXT_PIECE_MAX */
	unsigned char *conv_in;   /* TEXT_CONV_CARRY_MAX + TEXT_PIECE_MAX */
	unsigned char *conv_out;  /* TEXT_PIECE_MAX */
	unsigned char *utf8_in;   /* 4 + TEXT_PIECE_MAX */
	/* the last (longest key - 1) folded bytes + up to TEXT_PIECE_MAX +
	   UNICODE_CASEMAP_CHAR_MAX new ones */
	buffer_t window;
};

struct mail_search_text *
mail_search_text_init(struct mail_search_program *program)
{
	struct mail_search_text *text = i_malloc(sizeof(*text));

	text->program = program;
	text->cd = (iconv_t)-1;
	text->decoded = i_malloc(TEXT_PIECE_MAX);
	text->conv_in = i_malloc(TEXT_CONV_CARRY_MAX + TEXT_PIECE_MAX);
	text->conv_out = i_malloc(TEXT_PIECE_MAX);
	text->utf8_in = i_malloc(4 + TEXT_PIECE_MAX);
	buffer_init(&text->window, i_add_size(program->max_text_len,
					      TEXT_PIECE_MAX +
					      UNICODE_CASEMAP_CHAR_MAX));
	return text;
}

void mail_search_text_deinit(struct mail_search_text **_text)
{
	struct mail_search_text *text = *_text;

	*_text = NULL;
	if (text->cd != (iconv_t)-1)
		iconv_close(text->cd);
	buffer_free(&text->window);
	i_free(text->decoded);
	i_free(text->conv_in);
	i_free(text->conv_out);
	i_free(text->utf8_in);
	i_free(text);
}

static bool leaf_wanted(const struct mail_search_arg *leaf, bool only_text)
{
	return leaf->result < 0 && (!only_text || leaf->key == MSK_TEXT);
}

bool mail_search_text_all_found(const struct mail_search_text *text)
{
	const struct mail_search_program *prog = text->program;

	for (unsigned int i = 0; i < prog->text_leaf_count; i++) {
		if (prog->text_leaves[i]->result < 0)
			return false;
	}
	return true;
}

bool mail_search_text_wants_header(const struct mail_search_text *text)
{
	const struct mail_search_program *prog = text->program;

	for (unsigned int i = 0; i < prog->text_leaf_count; i++) {
		if (leaf_wanted(prog->text_leaves[i], true))
			return true;
	}
	return false;
}

static void window_match(struct mail_search_text *text)
{
	const struct mail_search_program *prog = text->program;
	buffer_t *win = &text->window;

	for (unsigned int i = 0; i < prog->text_leaf_count; i++) {
		struct mail_search_arg *leaf = prog->text_leaves[i];
		if (leaf_wanted(leaf, false) &&
		    memmem(win->data, win->used, leaf->str,
			   leaf->str_len) != NULL)
			leaf->result = 1;
	}
	/* keep what a match starting in this piece may still need */
	size_t keep = prog->max_text_len > 0 ? prog->max_text_len - 1 : 0;
	if (win->used > keep)
		buffer_delete_head(win, win->used - keep);
}

/* Fold whole characters into the window and match, as much as fits
   at a time: after window_match() the window has room for at least
   TEXT_PIECE_MAX + UNICODE_CASEMAP_CHAR_MAX bytes, so each step folds
   one character or more. */
static void window_fold(struct mail_search_text *text,
			const unsigned char *p, size_t size)
{
	buffer_t *win = &text->window;

	while (size > 0) {
		size_t room = win->max_size - win->used, used;
		char *dest = buffer_reserve(win, room);

		i_assert(dest != NULL && room >= UNICODE_CASEMAP_CHAR_MAX);
		buffer_commit(win, unicode_casemap(p, size, &used, dest, room));
		p += used;
		size -= used;
		window_match(text);
	}
}

/* Whole UTF-8 characters into the window; a split one waits. */
static void text_utf8(struct mail_search_text *text,
		      const unsigned char *data, size_t size)
{
	size_t len = text->utf8_carry_len;

	i_assert(size <= TEXT_PIECE_MAX);
	memcpy(text->utf8_in, text->utf8_carry, len);
	memcpy(text->utf8_in + len, data, size);
	len += size;
	size_t partial = unicode_utf8_partial_tail(text->utf8_in, len);
	memcpy(text->utf8_carry, text->utf8_in + len - partial, partial);
	text->utf8_carry_len = partial;
	window_fold(text, text->utf8_in, len - partial);
}

static void text_convert(struct mail_search_text *text,
			 const unsigned char *data, size_t size)
{
	static const unsigned char replacement[] = { 0xef, 0xbf, 0xbd };

	if (text->cd == (iconv_t)-1) {
		text_utf8(text, data, size);
		return;
	}
	memcpy(text->conv_in, text->conv_carry, text->conv_carry_len);
	memcpy(text->conv_in + text->conv_carry_len, data, size);
	char *in = (char *)text->conv_in;
	size_t in_left = text->conv_carry_len + size;
	text->conv_carry_len = 0;
	while (in_left > 0) {
		char *out = (char *)text->conv_out;
		size_t out_left = TEXT_PIECE_MAX;
		size_t ret = iconv(text->cd, &in, &in_left, &out, &out_left);
		int err = errno;
		text_utf8(text, text->conv_out, TEXT_PIECE_MAX - out_left);
		if (ret != (size_t)-1 || err == E2BIG)
			continue;
		if (err == EINVAL && in_left <= TEXT_CONV_CARRY_MAX) {
			/* a character continues in the next chunk */
			memcpy(text->conv_carry, in, in_left);
			text->conv_carry_len = in_left;
			break;
		}
		text_utf8(text, replacement, sizeof(replacement));
		in++;
		in_left--;
	}
}


static size_t decode_base64(struct mail_search_text *text,
			    const unsigned char *data, size_t size)
{
	size_t out = 0;

	for (size_t i = 0; i < size && !text->b64_end; i++) {
		int v = base64_char_value(data[i]);
		if (data[i] == '=')
			text->b64_end = true;
		if (v < 0)
			continue;   /* line ends and garbage are skipped */
		text->b64_acc = ((text->b64_acc << 6) | (unsigned int)v) & 0xffffff;
		text->b64_bits += 6;
		if (text->b64_bits >= 8) {
			text->b64_bits -= 8;
			text->decoded[out++] =
				(unsigned char)(text->b64_acc >> text->b64_bits);
		}
	}
	return out;
}


/* One byte of quoted-printable; output is at most 3 bytes (bad escapes
   are kept as written). */
static size_t qp_byte(struct mail_search_text *text, unsigned char c,
		      unsigned char *out)
{
	int v = hex_digit_value(c);

	switch (text->qp_state) {
	case QP_NORMAL:
		if (c == '=') {
			text->qp_state = QP_EQ;
			return 0;
		}
		out[0] = c;
		return 1;
	case QP_EQ:
		if (v >= 0) {
			text->qp_hex = c;
			text->qp_state = QP_EQ_HEX;
			return 0;
		}
		if (c == ' ' || c == '\t')
			return 0;   /* padding before a soft line break */
		text->qp_state = c == '\r' ? QP_EQ_CR : QP_NORMAL;
		if (c == '\r' || c == '\n')
			return 0;   /* soft line break */
		out[0] = '='; out[1] = c;
		return 2;
	case QP_EQ_HEX:
		text->qp_state = QP_NORMAL;
		if (v >= 0) {
			out[0] = (unsigned char)(hex_digit_value(text->qp_hex) * 16 + v);
			return 1;
		}
		out[0] = '='; out[1] = text->qp_hex; out[2] = c;
		return 3;
	case QP_EQ_CR:
		text->qp_state = QP_NORMAL;
		return c == '\n' ? 0 : qp_byte(text, c, out);
	}
	i_unreached();
}

static size_t decode_qp(struct mail_search_text *text,
			const unsigned char *data, size_t size)
{
	size_t out = 0;

	for (size_t i = 0; i < size; i++)
		out += qp_byte(text, data[i], text->decoded + out);
	return out;
}

void mail_search_text_feed(struct mail_search_text *text,
			   const void *data, size_t size)
{
	const unsigned char *p = data;
	/* QP may turn one byte into three (bad escapes): a third per step */
	size_t step = text->cte == TEXT_CTE_QP ? TEXT_PIECE_MAX / 3 :
		TEXT_PIECE_MAX;

	while (size > 0) {
		size_t n = MIN(size, step), out;
		switch (text->cte) {
		case TEXT_CTE_BASE64:
			out = decode_base64(text, p, n);
			text_convert(text, text->decoded, out);
			break;
		case TEXT_CTE_QP:
			out = decode_qp(text, p, n);
			text_convert(text, text->decoded, out);
			break;
		case TEXT_CTE_NONE:
			text_convert(text, p, n);
			break;
		}
		p += n;
		size -= n;
	}
}

static bool charset_is_utf8(const char *charset)
{
	return charset == NULL || strcasecmp(charset, "utf-8") == 0 ||
		strcasecmp(charset, "us-ascii") == 0 ||
		strcasecmp(charset, "utf8") == 0;
}

/* Names mail software writes that glibc's iconv does not know. */
static iconv_t text_iconv_open(const char *charset)
{
	static const struct { const char *name, *iconv_name; } aliases[] = {
		{ "ks_c_5601-1987", "CP949" },
		{ "x-gbk", "GBK" },
		{ "x-sjis", "SHIFT_JIS" },
		{ "x-euc-jp", "EUC-JP" },
		{ "unicode-1-1-utf-7", "UTF-7" },
	};
	iconv_t cd = iconv_open("UTF-8", charset);
	size_t len = strlen(charset);

	if (cd != (iconv_t)-1)
		return cd;
	for (unsigned int i = 0; i < N_ELEMENTS(aliases); i++) {
		if (strcasecmp(charset, aliases[i].name) == 0)
			return iconv_open("UTF-8", aliases[i].iconv_name);
	}
	/* RFC 1556 iso-8859-6-i / -8-e etc.: the same characters */
	if (len > 2 && len < 32 && strncasecmp(charset, "iso-8859-", 9) == 0 &&
	    charset[len - 2] == '-') {
		char base[32];
		memcpy(base, charset, len - 2);
		base[len - 2] = '\0';
		return iconv_open("UTF-8", base);
	}
	return (iconv_t)-1;
}

void mail_search_text_begin(struct mail_search_text *text, const char *cte,
			    const char *charset)
{
	text->cte = TEXT_CTE_NONE;
	if (cte != NULL) {
		while (*cte == ' ' || *cte == '\t')
			cte++;
		if (strncasecmp(cte, "base64", 6) == 0)
			text->cte = TEXT_CTE_BASE64;
		else if (strncasecmp(cte, "quoted-printable", 16) == 0)
			text->cte = TEXT_CTE_QP;
	}
	text->b64_acc = text->b64_bits = 0;
	text->b64_end = false;
	text->qp_state = QP_NORMAL;
	text->conv_carry_len = text->utf8_carry_len = 0;
	buffer_reset(&text->window);
	i_assert(text->cd == (iconv_t)-1);
	/* an unknown charset is searched as if it were UTF-8 */
	if (!charset_is_utf8(charset))
		text->cd = text_iconv_open(charset);
}

void mail_search_text_end(struct mail_search_text *text)
{
	if (text->utf8_carry_len > 0) {
		/* a cut character at the end: compare its bytes as they are */
		window_fold(text, text->utf8_carry, text->utf8_carry_len);
		text->utf8_carry_len = 0;
	}
	if (text->cd != (iconv_t)-1) {
		iconv_close(text->cd);
		text->cd = (iconv_t)-1;
	}
	buffer_reset(&text->window);
}

void mail_search_text_match_utf8(struct mail_search_text *text,
				 const char *str, size_t len, bool only_text)
{
	const struct mail_search_program *prog = text->program;
	buffer_t folded;

	buffer_init(&folded, mail_search_fold_max(len));
	mail_search_fold_utf8((const unsigned char *)str, len, &folded);
	for (unsigned int i = 0; i < prog->text_leaf_count; i++) {
		struct mail_search_arg *leaf = prog->text_leaves[i];
		if (leaf_wanted(leaf, only_text) &&
		    memmem(folded.data, folded.used, leaf->str,
			   leaf->str_len) != NULL)
			leaf->result = 1;
	}
	buffer_free(&folded);
}
