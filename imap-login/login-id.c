/* ID argument validation (RFC 2971). */
#include "lib.h"
#include "imap-parser.h"
#include "login-id.h"

#include <strings.h>

static int id_pair_validate(const struct imap_arg *field,
			    const struct imap_arg *value, const char **error_r)
{
	const char *str;

	/* The RFC says string; atoms are accepted as clients send them. */
	if (!imap_arg_get_astring(field, &str) || field->type == IMAP_ARG_NIL) {
		*error_r = "Invalid ID field name";
		return -1;
	}
	if (strlen(str) > LOGIN_ID_MAX_FIELD_LEN) {
		*error_r = "ID field name too long";
		return -1;
	}
	if (!imap_arg_get_nstring(value, &str)) {
		*error_r = "Invalid ID field value";
		return -1;
	}
	if (str != NULL && strlen(str) > LOGIN_ID_MAX_VALUE_LEN) {
		*error_r = "ID field value too long";
		return -1;
	}
	return 0;
}

int login_id_args_validate(const struct imap_arg *args, const char **error_r)
{
	const struct imap_arg *list;
	unsigned int count;

	if (args[0].type == IMAP_ARG_NIL && imap_arg_is_eol(&args[1]))
		return 0;
	if (!imap_arg_get_list(&args[0], &list, &count) ||
	    !imap_arg_is_eol(&args[1])) {
		*error_r = "Invalid ID parameters";
		return -1;
	}
	/* RFC 2971's "#(...)" allows an empty list. */
	if (count % 2 != 0) {
		*error_r = "ID list must hold field-value pairs";
		return -1;
	}
	if (count / 2 > LOGIN_ID_MAX_PAIRS) {
		*error_r = "Too many ID fields";
		return -1;
	}
	for (unsigned int i = 0; i < count; i += 2) {
		if (id_pair_validate(&list[i], &list[i + 1], error_r) < 0)
			return -1;
	}
	return 0;
}

const char *login_id_get_field(const struct imap_arg *args, const char *name)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *field, *value;

	if (!imap_arg_get_list(&args[0], &list, &count))
		return NULL;
	for (unsigned int i = 0; i + 1 < count; i += 2) {
		if (imap_arg_get_astring(&list[i], &field) &&
		    strcasecmp(field, name) == 0 &&
		    imap_arg_get_nstring(&list[i + 1], &value))
			return value;
	}
	return NULL;
}
