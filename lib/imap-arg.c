/* Accessors for parsed IMAP arguments and quoting of response strings
   (the API is in imap-parser.h). */
#include "lib.h"
#include "buffer.h"
#include "imap-parser.h"

#include <strings.h>

/* ---- argument accessors ---- */

/* A C string view of arg: no literal8 and no NUL inside. */
static bool imap_arg_cstr(const struct imap_arg *arg, const char **str_r)
{
	if (arg->literal8 || strlen(arg->str) != arg->str_len)
		return false;
	*str_r = arg->str;
	return true;
}

bool imap_arg_get_atom(const struct imap_arg *arg, const char **str_r)
{
	if (arg->type != IMAP_ARG_ATOM && arg->type != IMAP_ARG_NIL)
		return false;
	return imap_arg_cstr(arg, str_r);
}

bool imap_arg_get_astring(const struct imap_arg *arg, const char **str_r)
{
	switch (arg->type) {
	case IMAP_ARG_NIL:
	case IMAP_ARG_ATOM:
	case IMAP_ARG_STRING:
	case IMAP_ARG_LITERAL:
		return imap_arg_cstr(arg, str_r);
	default:
		return false;
	}
}

bool imap_arg_get_string(const struct imap_arg *arg, const char **str_r)
{
	if (arg->type != IMAP_ARG_STRING && arg->type != IMAP_ARG_LITERAL)
		return false;
	return imap_arg_cstr(arg, str_r);
}

bool imap_arg_get_nstring(const struct imap_arg *arg, const char **str_r)
{
	if (arg->type == IMAP_ARG_NIL) {
		*str_r = NULL;
		return true;
	}
	return imap_arg_get_astring(arg, str_r);
}

bool imap_arg_get_list(const struct imap_arg *arg,
		       const struct imap_arg **list_r, unsigned int *count_r)
{
	if (arg->type != IMAP_ARG_LIST)
		return false;
	*list_r = arg->list;
	*count_r = arg->list_count;
	return true;
}

bool imap_arg_atom_equals(const struct imap_arg *arg, const char *str)
{
	const char *atom;

	return imap_arg_get_atom(arg, &atom) && strcasecmp(atom, str) == 0;
}

/* ---- response quoting ---- */

static bool imap_str_is_quotable(const char *str, size_t len)
{
	if (len >= IMAP_QUOTED_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];
		if (c == '\r' || c == '\n' || c >= 0x80)
			return false;
	}
	return true;
}

static bool imap_str_is_atom(const char *str, size_t len)
{
	if (len == 0 || len >= IMAP_QUOTED_MAX_LEN ||
	    (len == 3 && strcasecmp(str, "NIL") == 0))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];
		/* ASTRING-CHAR; '+' is fine outside tags */
		if (c == '+')
			continue;
		if (!imap_is_tag_char(c) || c == '[' || c == ']')
			return false;
	}
	return true;
}

static int imap_append_quoted_form(buffer_t *buf, const char *str, size_t len)
{
	size_t start = 0;

	if (buffer_append_c(buf, '"') < 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (str[i] != '"' && str[i] != '\\')
			continue;
		if (buffer_append(buf, str + start, i - start) < 0 ||
		    buffer_append_c(buf, '\\') < 0)
			return -1;
		start = i;
	}
	if (buffer_append(buf, str + start, len - start) < 0 ||
	    buffer_append_c(buf, '"') < 0)
		return -1;
	return 0;
}

static int imap_append_string(buffer_t *buf, const char *str)
{
	size_t len = strlen(str);

	if (imap_str_is_quotable(str, len))
		return imap_append_quoted_form(buf, str, len);
	if (buffer_printf(buf, "{%zu}\r\n", len) < 0)
		return -1;
	return buffer_append(buf, str, len);
}

int imap_append_quoted(buffer_t *buf, const char *str)
{
	size_t old_used = buf->used;

	if (imap_append_string(buf, str) < 0) {
		buffer_truncate(buf, old_used);
		return -1;
	}
	return 0;
}

int imap_append_astring(buffer_t *buf, const char *str)
{
	if (imap_str_is_atom(str, strlen(str)))
		return buffer_append_str(buf, str);
	return imap_append_quoted(buf, str);
}

int imap_append_nstring(buffer_t *buf, const char *str)
{
	if (str == NULL)
		return buffer_append_str(buf, "NIL");
	return imap_append_quoted(buf, str);
}
