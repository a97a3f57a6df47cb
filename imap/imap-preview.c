/* FETCH PREVIEW (imap-preview.h). */
#include "imap-common.h"
#include "imap-preview.h"
#include "imap-fetch-cache.h"
#include "message-parser.h"
#include "rfc2047.h"
#include "rfc2231.h"

#include <strings.h>

#define PREVIEW_CACHE_FIELD "imap.preview." IMAP_PREVIEW_VERSION
/* The cached value: this tag, then the preview's bytes (a value is never
   empty, and garbage is recognised). */
#define PREVIEW_CACHE_TAG 'P'
/* Parts looked at for the text part, against a hostile tree. */
#define PREVIEW_MAX_PARTS 1000
/* Longest HTML tag or entity name looked at (<style, &nbsp;). */
#define PREVIEW_NAME_MAX 16

/* ---- text ---- */

struct preview_out {
	char *buf;
	size_t len;
	unsigned int chars;
	bool space;              /* whitespace seen since the last output */
};

static bool preview_full(const struct preview_out *o)
{
	return o->chars >= IMAP_PREVIEW_CHARS;
}

/* One UTF-8 character (clen bytes) of text. */
static void preview_char(struct preview_out *o, const char *p, size_t clen)
{
	unsigned char c = (unsigned char)p[0];

	if (preview_full(o))
		return;
	/* whitespace, controls and U+00A0 (no-break space) collapse */
	if (c <= ' ' || c == 0x7f ||
	    (clen == 2 && c == 0xc2 && (unsigned char)p[1] == 0xa0)) {
		o->space = o->len > 0;
		return;
	}
	if (o->space) {
		/* a space only before a character that still fits: the
		   preview never ends in one */
		if (o->chars + 2 > IMAP_PREVIEW_CHARS) {
			o->chars = IMAP_PREVIEW_CHARS;
			return;
		}
		o->buf[o->len++] = ' ';
		o->chars++;
		o->space = false;
	}
	memcpy(o->buf + o->len, p, clen);
	o->len += clen;
	o->chars++;
}

static size_t utf8_char_len(const char *p, size_t left)
{
	unsigned char c = (unsigned char)*p;
	size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 :
		c >= 0xc0 ? 2 : 1;
	return MIN(n, left);
}

static void preview_text(struct preview_out *o, const char *p, size_t len)
{
	for (size_t i = 0; i < len && !preview_full(o); ) {
		size_t n = utf8_char_len(p + i, len - i);
		preview_char(o, p + i, n);
		i += n;
	}
}

/* Append code point cp (from an HTML character reference). */
static void preview_codepoint(struct preview_out *o, unsigned long cp)
{
	char u[4];
	size_t n;

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		u[0] = (char)cp; n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f)); n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
	}
	preview_char(o, u, n);
}

/* Plain text: quoted lines (a reply's citation) are left out, and the
   text ends at the signature separator "-- " (RFC 3676 4.3). */
static void preview_plain(struct preview_out *o, const char *p, size_t len)
{
	size_t pos = 0;

	while (pos < len && !preview_full(o)) {
		const char *nl = memchr(p + pos, '\n', len - pos);
		size_t end = nl == NULL ? len : (size_t)(nl - p);
		size_t llen = end - pos;
		const char *line = p + pos;

		if (llen > 0 && line[llen - 1] == '\r')
			llen--;
		if (llen == 3 && memcmp(line, "-- ", 3) == 0)
			break;
		if (llen == 0 || line[0] != '>')
			preview_text(o, line, llen);
		/* a line end is whitespace */
		o->space = o->len > 0;
		pos = end + 1;
	}
}

static const char *const html_skip_tags[] = {
	"style", "script", "head", "title",
};
/* Tags that end a line or a block: a word boundary. */
static const char *const html_break_tags[] = {
	"br", "p", "div", "li", "tr", "td", "th", "table", "ul", "ol",
	"h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "hr",
};

static bool name_in(const char *name, const char *const *list,
		    unsigned int count)
{
	for (unsigned int i = 0; i < count; i++) {
		if (strcasecmp(name, list[i]) == 0)
			return true;
	}
	return false;
}

/* The tag name at p (after '<' and an optional '/'), lowercase-compared. */
static void html_tag_name(const char *p, size_t len, char name[PREVIEW_NAME_MAX + 1])
{
	size_t n = 0;

	while (n < len && n < PREVIEW_NAME_MAX &&
	       ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
		(p[n] >= '0' && p[n] <= '9')))
		n++;
	memcpy(name, p, n);
	name[n] = '\0';
}

static const struct {
	const char *name;
	unsigned long cp;
} html_entities[] = {
	{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' },
	{ "apos", '\'' }, { "nbsp", 0xa0 }, { "copy", 0xa9 },
	{ "reg", 0xae }, { "hellip", 0x2026 }, { "mdash", 0x2014 },
	{ "ndash", 0x2013 }, { "rsquo", 0x2019 }, { "lsquo", 0x2018 },
	{ "rdquo", 0x201d }, { "ldquo", 0x201c }, { "euro", 0x20ac },
	{ "zwnj", 0x200c },
};

/* A character reference at p ('&'); returns the bytes it took, 0 if it
   is not one (the '&' is then text). */
static size_t html_entity(struct preview_out *o, const char *p, size_t len)
{
	char name[PREVIEW_NAME_MAX + 1];
	size_t n = 1;

	while (n < len && n <= PREVIEW_NAME_MAX && p[n] != ';' &&
	       p[n] != '&' && p[n] != '<' && (unsigned char)p[n] > ' ')
		n++;
	if (n >= len || p[n] != ';' || n == 1)
		return 0;
	memcpy(name, p + 1, n - 1);
	name[n - 1] = '\0';
	if (name[0] == '#') {
		char *end;
		bool hex = name[1] == 'x' || name[1] == 'X';
		unsigned long cp = strtoul(name + (hex ? 2 : 1), &end,
					   hex ? 16 : 10);
		if (*end != '\0' || end == name + (hex ? 2 : 1))
			return 0;
		/* U+200C and the like are invisible: not text */
		if (cp != 0x200c && cp != 0x200b && cp != 0x034f)
			preview_codepoint(o, cp);
		return n + 1;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(html_entities); i++) {
		if (strcmp(name, html_entities[i].name) == 0) {
			if (html_entities[i].cp != 0x200c)
				preview_codepoint(o, html_entities[i].cp);
			return n + 1;
		}
	}
	return 0;
}

/* Where the element that started at p (after "<name") ends: after its
   "</name>", or len. */
static size_t html_skip_element(const char *p, size_t len, size_t pos,
				const char *name)
{
	size_t nlen = strlen(name);

	for (; pos + 2 + nlen <= len; pos++) {
		if (p[pos] == '<' && p[pos + 1] == '/' &&
		    strncasecmp(p + pos + 2, name, nlen) == 0) {
			const char *gt = memchr(p + pos, '>', len - pos);
			return gt == NULL ? len : (size_t)(gt - p) + 1;
		}
	}
	return len;
}

static void preview_html(struct preview_out *o, const char *p, size_t len)
{
	char name[PREVIEW_NAME_MAX + 1];
	size_t pos = 0;

	while (pos < len && !preview_full(o)) {
		if (p[pos] == '&') {
			size_t n = html_entity(o, p + pos, len - pos);
			if (n > 0) {
				pos += n;
				continue;
			}
		} else if (p[pos] == '<') {
			if (len - pos >= 4 && memcmp(p + pos, "<!--", 4) == 0) {
				const char *end = memmem(p + pos + 4,
							 len - pos - 4, "-->", 3);
				pos = end == NULL ? len : (size_t)(end - p) + 3;
				continue;
			}
			bool closing = pos + 1 < len && p[pos + 1] == '/';
			size_t start = pos + 1 + (closing ? 1 : 0);
			html_tag_name(p + start, len - start, name);
			const char *gt = memchr(p + pos, '>', len - pos);
			pos = gt == NULL ? len : (size_t)(gt - p) + 1;
			if (!closing && name_in(name, html_skip_tags,
						N_ELEMENTS(html_skip_tags)))
				pos = html_skip_element(p, len, pos, name);
			else if (name_in(name, html_break_tags,
					 N_ELEMENTS(html_break_tags)))
				o->space = o->len > 0;
			continue;
		}
		size_t n = utf8_char_len(p + pos, len - pos);
		preview_char(o, p + pos, n);
		pos += n;
	}
}

size_t imap_preview_make(const char *utf8, size_t len, bool html,
			 char out[IMAP_PREVIEW_BYTES_MAX + 1])
{
	struct preview_out o = { .buf = out };

	if (html)
		preview_html(&o, utf8, len);
	else
		preview_plain(&o, utf8, len);
	out[o.len] = '\0';
	return o.len;
}

/* ---- the message ---- */

static bool part_is_attachment(pool_t pool, const struct message_part *part)
{
	const char *disp = part->fields[MPF_CONTENT_DISPOSITION];
	struct mime_value v;

	if (disp == NULL)
		return false;
	rfc2231_parse(pool, disp, false, &v);
	return v.value != NULL && strcasecmp(v.value, "attachment") == 0;
}

/* The first text part of subtype (not an attachment) under part, whose
   section number is path; its number in *path_r. Message/rfc822 parts
   are not entered (a forwarded message is not this one's text). */
static const struct message_part *
preview_find(pool_t pool, const struct message_part *part, const char *path,
	     const char *subtype, unsigned int *budget, const char **path_r)
{
	if (*budget == 0)
		return NULL;
	(*budget)--;
	if ((part->flags & MESSAGE_PART_FLAG_MULTIPART) != 0) {
		unsigned int n = 1;
		for (const struct message_part *c = part->children; c != NULL;
		     c = c->next, n++) {
			const char *cpath = path[0] == '\0' ?
				p_strdup_printf(pool, "%u", n) :
				p_strdup_printf(pool, "%s.%u", path, n);
			const struct message_part *found =
				preview_find(pool, c, cpath, subtype, budget,
					     path_r);
			if (found != NULL)
				return found;
		}
		return NULL;
	}
	if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0 ||
	    part->type == NULL || strcasecmp(part->type, "text") != 0 ||
	    part->subtype == NULL || strcasecmp(part->subtype, subtype) != 0 ||
	    part_is_attachment(pool, part))
		return NULL;
	/* a single-part message's text is its section "1" */
	*path_r = path[0] == '\0' ? "1" : path;
	return part;
}

static const char *part_charset(pool_t pool, const struct message_part *part)
{
	const char *ct = part->fields[MPF_CONTENT_TYPE];
	struct mime_value v;

	if (ct == NULL)
		return "us-ascii";
	rfc2231_parse(pool, ct, true, &v);
	const char *charset = mime_value_get_param(&v, "charset");
	return charset != NULL ? charset : "us-ascii";
}

/* Read up to max decoded bytes of section path of seq into data. */
static int preview_read_part(struct mailbox *box, uint32_t seq,
			     const struct message_part *root,
			     const char *path, buffer_t *data,
			     const char **error_r)
{
	struct imap_section sec = { .part = path, .binary = true };
	struct imap_body_source src;

	if (imap_body_source_get(root, &sec, 0, &src) < 0)
		return 0;   /* an unknown encoding: no text */
	int fd = imap_fetch_msg_open(box, seq, error_r);
	if (fd == -1)
		return -1;
	struct imap_body_stream *s = i_malloc(sizeof(*s));
	imap_body_stream_init(s, fd, !mailbox_msg_is_crlf(box, seq), &sec,
			      &src);
	int ret = 0;
	while (data->used < data->max_size) {
		unsigned char *dest = (unsigned char *)
			buffer_reserve(data, data->max_size - data->used);
		ssize_t n = imap_body_stream_read(s, dest, data->max_size -
						  data->used);
		if (n < 0) {
			*error_r = "Reading the message failed";
			ret = -1;
			break;
		}
		if (n == 0)
			break;
		buffer_commit(data, (size_t)n);
	}
	free(s);
	i_close_fd(&fd);
	return ret;
}

/* Compute the preview of seq into out (NUL-terminated). */
static int preview_compute(struct imap_msg_structure *ms, struct mailbox *box,
			   uint32_t seq, char out[IMAP_PREVIEW_BYTES_MAX + 1],
			   const char **error_r)
{
	const char *path = NULL;
	unsigned int budget = PREVIEW_MAX_PARTS;
	bool html = false;

	out[0] = '\0';
	if (imap_msg_structure_get(ms, box, seq, error_r) < 0)
		return -1;
	const struct message_part *part =
		preview_find(ms->pool, ms->root, "", "plain", &budget, &path);
	if (part == NULL) {
		budget = PREVIEW_MAX_PARTS;
		part = preview_find(ms->pool, ms->root, "", "html", &budget,
				    &path);
		html = true;
	}
	if (part == NULL)
		return 0;   /* no text: the empty preview (RFC 8970 3.2) */

	buffer_t data;
	buffer_init(&data, html ? IMAP_PREVIEW_INPUT_HTML :
		    IMAP_PREVIEW_INPUT_PLAIN);
	int ret = preview_read_part(box, seq, ms->root, path, &data, error_r);
	if (ret == 0 && data.used > 0) {
		/* a NUL would end the converted string early */
		for (size_t i = 0; i < data.used; i++) {
			if (data.data[i] == '\0')
				data.data[i] = ' ';
		}
		const char *utf8 = charset_to_utf8(ms->pool,
			part_charset(ms->pool, part), data.data, data.used);
		if (utf8 == NULL) {
			/* a charset iconv does not know: keep what is
			   valid UTF-8 (ASCII at least) */
			utf8 = charset_to_utf8(ms->pool, "utf-8", data.data,
					       data.used);
		}
		(void)imap_preview_make(utf8, strlen(utf8), html, out);
	}
	buffer_free(&data);
	return ret;
}

/* ---- cache and FETCH ---- */

/* What preview_make produces: UTF-8 without controls, at most
   IMAP_PREVIEW_CHARS characters. */
static bool preview_valid(const unsigned char *p, size_t len)
{
	unsigned int chars = 0;

	for (size_t i = 0; i < len; chars++) {
		unsigned char c = p[i];
		size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 :
			c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ?
			4 : 0;
		if (n == 0 || c < ' ' || c == 0x7f || i + n > len)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		}
		i += n;
	}
	return chars <= IMAP_PREVIEW_CHARS;
}

static bool preview_lookup(struct mailbox *box, uint32_t seq,
			   char out[IMAP_PREVIEW_BYTES_MAX + 1])
{
	const void *data;
	size_t size;

	if (mailbox_msg_cache_lookup(box, seq, PREVIEW_CACHE_FIELD,
				     &data, &size) <= 0)
		return false;
	const unsigned char *p = data;
	/* garbled: compute it again */
	if (size < 1 || p[0] != PREVIEW_CACHE_TAG ||
	    size - 1 > IMAP_PREVIEW_BYTES_MAX || !preview_valid(p + 1, size - 1))
		return false;
	memcpy(out, p + 1, size - 1);
	out[size - 1] = '\0';
	return true;
}

static void preview_cache_add(struct imap_msg_structure *ms,
			      struct mailbox *box, uint32_t seq,
			      const char *text)
{
	char value[IMAP_PREVIEW_BYTES_MAX + 1];
	size_t len = strlen(text);
	const char *error;

	value[0] = PREVIEW_CACHE_TAG;
	memcpy(value + 1, text, len);
	/* only a cache: a failure costs a computation next time */
	if (mailbox_msg_cache_add(box, seq, PREVIEW_CACHE_FIELD, value,
				  len + 1, &error) == 0)
		ms->cache_pending++;
	if (ms->cache_pending >= IMAP_FETCH_CACHE_FLUSH_TEXTS)
		imap_fetch_cache_flush(ms, box);
}

/* A quoted string when it is 7-bit without quoting specials, else a
   literal (8-bit text needs one in IMAP4rev1). */
static int preview_write(buffer_t *out, const char *text)
{
	size_t len = strlen(text);
	bool quoted = true;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c >= 0x80 || c == '"' || c == '\\')
			quoted = false;
	}
	if (quoted)
		return buffer_printf(out, "PREVIEW \"%s\"", text);
	if (buffer_printf(out, "PREVIEW {%zu}\r\n", len) < 0)
		return -1;
	return buffer_append(out, text, len);
}

int imap_preview_append(struct imap_msg_structure *ms, struct mailbox *box,
			uint32_t seq, bool lazy, bool *lazy_missed_r,
			buffer_t *out, const char **error_r)
{
	char text[IMAP_PREVIEW_BYTES_MAX + 1];

	if (preview_lookup(box, seq, text)) {
		imap_fetch_counters.text_hits++;
		return preview_write(out, text);
	}
	if (lazy) {
		if (lazy_missed_r != NULL)
			*lazy_missed_r = true;
		return buffer_append_str(out, "PREVIEW NIL");
	}
	if (preview_compute(ms, box, seq, text, error_r) < 0)
		return -1;
	imap_fetch_counters.text_misses++;
	preview_cache_add(ms, box, seq, text);
	return preview_write(out, text);
}

int imap_preview_precompute(struct mailbox *box, uint32_t seq,
			    const char **error_r)
{
	struct imap_msg_structure ms;
	char text[IMAP_PREVIEW_BYTES_MAX + 1];
	int ret = 0;

	if (preview_lookup(box, seq, text))
		return 0;
	memset(&ms, 0, sizeof(ms));
	if (preview_compute(&ms, box, seq, text, error_r) < 0) {
		ret = -1;
	} else {
		/* not counted: the counters are FETCH's */
		preview_cache_add(&ms, box, seq, text);
		imap_fetch_cache_flush(&ms, box);
	}
	imap_msg_structure_clear(&ms);
	return ret;
}
