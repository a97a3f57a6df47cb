/* Mailbox names: modified UTF-7, validation and the Maildir++ directory
   form (mailbox-name.h). */
#include "lib.h"
#include "mailbox-name.h"
#include "utf8.h"

#include <strings.h>

/* Escapes inside one on-disk component (doc/mail-storage.md). */
#define DIR_ESCAPE_CHAR '~'

static const char mutf7_b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,";

static int mutf7_b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == ',')
		return 63;
	return -1;
}

static bool is_printable_ascii(uint32_t c)
{
	return c >= 0x20 && c <= 0x7e;
}

/* Append one code point as UTF-8. */
static int utf8_append(buffer_t *dest, uint32_t cp)
{
	unsigned char out[4];
	size_t len;

	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		len = 1;
	} else if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 2;
	} else if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 3;
	} else {
		out[0] = (unsigned char)(0xf0 | (cp >> 18));
		out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[3] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 4;
	}
	return buffer_append(dest, out, len);
}

/* Decode the next UTF-8 sequence strictly (lib/utf8.h) of a string the
   caller has not reached the NUL of. Returns 0 or -1. */
static int utf8_next(const unsigned char **_p, uint32_t *cp_r)
{
	/* the NUL ends it: a sequence cut by it is invalid */
	int len = utf8_decode(*_p, strnlen((const char *)*_p, 4), cp_r);

	if (len < 0)
		return -1;
	*_p += len;
	return 0;
}

bool mailbox_name_is_utf8(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;
	uint32_t cp;

	while (*p != '\0') {
		if (utf8_next(&p, &cp) < 0)
			return false;
	}
	return true;
}

/* One UTF-16 unit of a shift sequence: pairs surrogates, refuses what
   must not be encoded. */
static int mutf7_unit(uint16_t unit, uint16_t *high, buffer_t *dest)
{
	if (*high != 0) {
		if (unit < 0xdc00 || unit > 0xdfff)
			return -1;
		uint32_t cp = 0x10000 + (((uint32_t)*high - 0xd800) << 10) +
			(unit - 0xdc00);
		*high = 0;
		return utf8_append(dest, cp);
	}
	if (unit >= 0xd800 && unit <= 0xdbff) {
		*high = unit;
		return 0;
	}
	if (unit >= 0xdc00 && unit <= 0xdfff)
		return -1;
	if (unit == 0 || is_printable_ascii(unit))
		return -1;   /* U+0000, or ASCII that must represent itself */
	return utf8_append(dest, unit);
}

/* *_p is after "&" and not at "-". Decodes up to and including "-". */
static int mutf7_decode_run(const char **_p, buffer_t *dest)
{
	const char *p = *_p;
	uint32_t bits = 0;
	unsigned int nbits = 0, units = 0;
	uint16_t high = 0;
	int v;

	for (; *p != '-'; p++) {
		if ((v = mutf7_b64_value(*p)) < 0)
			return -1;   /* includes the NUL: unterminated */
		bits = (bits << 6) | (uint32_t)v;
		nbits += 6;
		if (nbits >= 16) {
			nbits -= 16;
			uint16_t unit = (uint16_t)(bits >> nbits);
			bits &= (1U << nbits) - 1;
			if (mutf7_unit(unit, &high, dest) < 0)
				return -1;
			units++;
		}
	}
	/* shortest form: fewer than 6 bits left over and all of them 0 */
	if (units == 0 || nbits >= 6 || bits != 0 || high != 0)
		return -1;
	*_p = p + 1;
	return 0;
}

int mailbox_name_mutf7_to_utf8(const char *src, buffer_t *dest)
{
	const char *p = src;
	bool after_run = false;

	while (*p != '\0') {
		unsigned char c = (unsigned char)*p;
		if (!is_printable_ascii(c))
			return -1;
		if (c != '&') {
			if (buffer_append_c(dest, (char)c) < 0)
				return -1;
			after_run = false;
			p++;
		} else if (p[1] == '-') {
			if (buffer_append_c(dest, '&') < 0)
				return -1;
			after_run = false;
			p += 2;
		} else {
			/* two runs in a row must have been one */
			if (after_run)
				return -1;
			p++;
			if (mutf7_decode_run(&p, dest) < 0)
				return -1;
			after_run = true;
		}
	}
	return 0;
}

struct mutf7_enc {
	buffer_t *dest;
	uint32_t bits;
	unsigned int nbits;
	bool in_run;
	bool failed;
};

static void mutf7_put(struct mutf7_enc *enc, char c)
{
	if (buffer_append_c(enc->dest, c) < 0)
		enc->failed = true;
}

static void mutf7_put_unit(struct mutf7_enc *enc, uint16_t unit)
{
	enc->bits = (enc->bits << 16) | unit;
	enc->nbits += 16;
	while (enc->nbits >= 6) {
		enc->nbits -= 6;
		mutf7_put(enc, mutf7_b64[(enc->bits >> enc->nbits) & 0x3f]);
	}
	enc->bits &= (1U << enc->nbits) - 1;
}

static void mutf7_end_run(struct mutf7_enc *enc)
{
	if (!enc->in_run)
		return;
	if (enc->nbits > 0)
		mutf7_put(enc, mutf7_b64[(enc->bits << (6 - enc->nbits)) & 0x3f]);
	mutf7_put(enc, '-');
	enc->bits = 0;
	enc->nbits = 0;
	enc->in_run = false;
}

int mailbox_name_utf8_to_mutf7(const char *src, buffer_t *dest)
{
	const unsigned char *p = (const unsigned char *)src;
	struct mutf7_enc enc = { .dest = dest };
	uint32_t cp;

	while (*p != '\0' && !enc.failed) {
		if (utf8_next(&p, &cp) < 0)
			return -1;
		if (is_printable_ascii(cp)) {
			mutf7_end_run(&enc);
			mutf7_put(&enc, (char)cp);
			if (cp == '&')
				mutf7_put(&enc, '-');
			continue;
		}
		if (!enc.in_run) {
			mutf7_put(&enc, '&');
			enc.in_run = true;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			mutf7_put_unit(&enc, (uint16_t)(0xd800 + (cp >> 10)));
			mutf7_put_unit(&enc, (uint16_t)(0xdc00 + (cp & 0x3ff)));
		} else {
			mutf7_put_unit(&enc, (uint16_t)cp);
		}
	}
	mutf7_end_run(&enc);
	return enc.failed ? -1 : 0;
}

bool mailbox_name_is_inbox_name(const char *name)
{
	return strcasecmp(name, "INBOX") == 0;
}

/* Characters refused anywhere in a name. */
/* RFC 6855 section 3: no C0, DEL, C1, U+2028 LINE SEPARATOR or U+2029
   PARAGRAPH SEPARATOR in a name; "*" and "%" are LIST wildcards. */
static bool name_char_is_bad(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
		cp == 0x2028 || cp == 0x2029 || cp == '*' || cp == '%';
}

static enum mailbox_name_status
name_check_components(const char *name, const char **error_r)
{
	unsigned int levels = 0;
	const char *p = name;

	for (;;) {
		size_t len = strcspn(p, MAILBOX_NAME_SEP_STR);
		if (len == 0) {
			*error_r = "Empty hierarchy level in mailbox name";
			return MAILBOX_NAME_INVALID;
		}
		if ((len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.')) {
			*error_r = "Mailbox name has a \".\" or \"..\" level";
			return MAILBOX_NAME_INVALID;
		}
		if (++levels > MAILBOX_NAME_LEVELS_MAX) {
			*error_r = "Mailbox hierarchy is too deep";
			return MAILBOX_NAME_TOO_LONG;
		}
		if (p[len] == '\0')
			return MAILBOX_NAME_OK;
		p += len + 1;
	}
}

static enum mailbox_name_status
name_check_chars(const char *name, const char **error_r)
{
	const unsigned char *p = (const unsigned char *)name;
	uint32_t cp;

	while (*p != '\0') {
		if (utf8_next(&p, &cp) < 0) {
			*error_r = "Mailbox name is not valid UTF-8";
			return MAILBOX_NAME_INVALID;
		}
		if (name_char_is_bad(cp)) {
			*error_r = "Mailbox name has control or wildcard characters";
			return MAILBOX_NAME_INVALID;
		}
	}
	return MAILBOX_NAME_OK;
}

enum mailbox_name_status
mailbox_name_normalize(const char *name, char dest[MAILBOX_NAME_MAX + 1],
		       const char **error_r)
{
	char dir[MAILBOX_NAME_DISK_MAX + 1];
	enum mailbox_name_status ret;
	size_t len = strlen(name);

	if (len == 0) {
		*error_r = "Empty mailbox name";
		return MAILBOX_NAME_INVALID;
	}
	if (len > MAILBOX_NAME_MAX) {
		*error_r = "Mailbox name is too long";
		return MAILBOX_NAME_TOO_LONG;
	}
	if ((ret = name_check_chars(name, error_r)) != MAILBOX_NAME_OK ||
	    (ret = name_check_components(name, error_r)) != MAILBOX_NAME_OK)
		return ret;
	memcpy(dest, name, len + 1);
	size_t first = strcspn(dest, MAILBOX_NAME_SEP_STR);
	if (first == 5 && strncasecmp(dest, "INBOX", 5) == 0)
		memcpy(dest, "INBOX", 5);
	if (mailbox_name_to_dir(dest, dir) < 0) {
		*error_r = "Mailbox name is too long";
		return MAILBOX_NAME_TOO_LONG;
	}
	return MAILBOX_NAME_OK;
}

/* Append one component (UTF-8, len bytes) in its disk form. */
static int dir_append_component(buffer_t *dir, const char *comp, size_t len)
{
	char utf8[MAILBOX_NAME_MAX + 1];
	buffer_t mutf7;
	int ret = 0;

	if (len > MAILBOX_NAME_MAX)
		return -1;
	memcpy(utf8, comp, len);
	utf8[len] = '\0';
	buffer_init(&mutf7, MAILBOX_NAME_DISK_MAX);
	if (mailbox_name_utf8_to_mutf7(utf8, &mutf7) < 0)
		ret = -1;
	for (size_t i = 0; i < mutf7.used && ret == 0; i++) {
		char c = mutf7.data[i];
		if (c == '.' || c == DIR_ESCAPE_CHAR)
			ret = buffer_printf(dir, "%c%02x", DIR_ESCAPE_CHAR, c);
		else
			ret = buffer_append_c(dir, c);
	}
	buffer_free(&mutf7);
	return ret;
}

int mailbox_name_to_dir(const char *name, char dir_r[MAILBOX_NAME_DISK_MAX + 1])
{
	buffer_t dir;
	const char *p = name;
	int ret = 0;

	if (strcmp(name, "INBOX") == 0) {
		dir_r[0] = '\0';
		return 0;
	}
	buffer_init(&dir, MAILBOX_NAME_DISK_MAX);
	do {
		size_t len = strcspn(p, MAILBOX_NAME_SEP_STR);
		if (len == 0 || buffer_append_c(&dir, '.') < 0 ||
		    dir_append_component(&dir, p, len) < 0) {
			ret = -1;
			break;
		}
		p += len;
	} while (*p++ != '\0');
	if (ret == 0)
		memcpy(dir_r, dir.data, dir.used + 1);
	buffer_free(&dir);
	return ret;
}

/* Undo the "~XX" escapes of one component into a NUL-terminated string. */
static int dir_unescape(const char *comp, size_t len, buffer_t *dest)
{
	for (size_t i = 0; i < len; i++) {
		char c = comp[i];
		if (c == DIR_ESCAPE_CHAR) {
			if (len - i < 3)
				return -1;
			if (strncmp(comp + i + 1, "2e", 2) == 0)
				c = '.';
			else if (strncmp(comp + i + 1, "7e", 2) == 0)
				c = DIR_ESCAPE_CHAR;
			else
				return -1;
			i += 2;
		}
		if (buffer_append_c(dest, c) < 0)
			return -1;
	}
	return 0;
}

static int dir_decode(const char *dir, buffer_t *name)
{
	buffer_t comp;
	const char *p = dir + 1;
	int ret = 0;

	buffer_init(&comp, MAILBOX_NAME_DISK_MAX);
	do {
		size_t len = strcspn(p, ".");
		buffer_reset(&comp);
		if (len == 0 || dir_unescape(p, len, &comp) < 0 ||
		    (name->used > 0 && buffer_append_c(name, '/') < 0) ||
		    mailbox_name_mutf7_to_utf8(comp.data, name) < 0) {
			ret = -1;
			break;
		}
		p += len;
	} while (*p++ != '\0');
	buffer_free(&comp);
	return ret;
}

int mailbox_name_from_dir(const char *dir, char name_r[MAILBOX_NAME_MAX + 1])
{
	char canon[MAILBOX_NAME_DISK_MAX + 1];
	char norm[MAILBOX_NAME_MAX + 1];
	const char *error;
	buffer_t name;
	int ret = -1;

	if (dir[0] != '.' || strlen(dir) > MAILBOX_NAME_DISK_MAX)
		return -1;
	buffer_init(&name, MAILBOX_NAME_MAX);
	/* only a name that maps back to exactly this directory is ours */
	if (dir_decode(dir, &name) == 0 &&
	    mailbox_name_normalize(name.data, norm, &error) == MAILBOX_NAME_OK &&
	    mailbox_name_to_dir(norm, canon) == 0 && strcmp(canon, dir) == 0) {
		memcpy(name_r, norm, strlen(norm) + 1);
		ret = 0;
	}
	buffer_free(&name);
	return ret;
}

int mailbox_name_to_path(const char *root, const char *name,
			 char *path_r, size_t size)
{
	char norm[MAILBOX_NAME_MAX + 1];
	char dir[MAILBOX_NAME_DISK_MAX + 1];
	const char *error;

	if (mailbox_name_normalize(name, norm, &error) != MAILBOX_NAME_OK ||
	    mailbox_name_to_dir(norm, dir) < 0)
		return -1;
	int ret = dir[0] == '\0' ? snprintf(path_r, size, "%s", root) :
		snprintf(path_r, size, "%s/%s", root, dir);
	return ret < 0 || (size_t)ret >= size ? -1 : 0;
}

bool mailbox_name_is_child(const char *child, const char *parent)
{
	size_t len = strlen(parent);

	return strncmp(child, parent, len) == 0 &&
		child[len] == MAILBOX_NAME_SEP && child[len + 1] != '\0';
}
