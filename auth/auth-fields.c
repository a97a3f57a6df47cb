/* Field lists and %-variable expansion: see auth-fields.h. */
#include "lib.h"
#include "buffer.h"
#include "auth-fields.h"

#define USERDB_PREFIX "userdb_"

static int auth_field_add(pool_t pool, struct auth_fields *fields,
			  const char *token, size_t len, const char **error_r)
{
	const char *eq = memchr(token, '=', len);
	size_t key_len = eq == NULL ? len : (size_t)(eq - token);
	const char *key = p_strndup(pool, token, key_len);
	const char *value = eq == NULL ? NULL :
		p_strndup(pool, eq + 1, len - key_len - 1);

	if (strncmp(key, USERDB_PREFIX, strlen(USERDB_PREFIX)) == 0)
		key += strlen(USERDB_PREFIX);
	if (key[0] == '\0') {
		*error_r = "field with an empty name";
		return -1;
	}
	if (auth_fields_set(fields, key, value) < 0) {
		*error_r = "too many fields";
		return -1;
	}
	return 0;
}

int auth_fields_parse(pool_t pool, const char *str, struct auth_fields *fields,
		      const char **error_r)
{
	const char *p = str;

	while (*p != '\0') {
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		len = strcspn(p, " \t");
		if (len == 0)
			break;
		if (auth_field_add(pool, fields, p, len, error_r) < 0)
			return -1;
		p += len;
	}
	return 0;
}

static const struct auth_field *
auth_fields_find(const struct auth_fields *fields, const char *key)
{
	for (unsigned int i = 0; i < fields->count; i++) {
		if (strcmp(fields->fields[i].key, key) == 0)
			return &fields->fields[i];
	}
	return NULL;
}

const char *auth_fields_get(const struct auth_fields *fields, const char *key)
{
	const struct auth_field *field = auth_fields_find(fields, key);

	return field == NULL ? NULL : field->value;
}

bool auth_fields_has(const struct auth_fields *fields, const char *key)
{
	return auth_fields_find(fields, key) != NULL;
}

int auth_fields_set(struct auth_fields *fields, const char *key,
		    const char *value)
{
	struct auth_field *field =
		(struct auth_field *)auth_fields_find(fields, key);

	if (field == NULL) {
		if (fields->count >= AUTH_FIELDS_MAX)
			return -1;
		field = &fields->fields[fields->count++];
		field->key = key;
	}
	field->value = value;
	return 0;
}

/* Append the value of variable c for user; -1 if c is unknown. */
static int expand_var(buffer_t *out, char c, const char *user)
{
	const char *at = strrchr(user, '@');
	int ret;

	switch (c) {
	case 'u':
		ret = buffer_append_str(out, user);
		break;
	case 'n':
		ret = buffer_append(out, user,
				    at == NULL ? strlen(user) : (size_t)(at - user));
		break;
	case 'd':
		ret = buffer_append_str(out, at == NULL ? "" : at + 1);
		break;
	case '%':
		ret = buffer_append_c(out, '%');
		break;
	default:
		return -1;
	}
	/* Cannot fail: expand_into() keeps used below the cap minus one
	   user name. */
	if (ret < 0)
		i_unreached();
	return 0;
}

/* Bound of an expanded value: a path or a mail location. */
#define AUTH_FIELD_EXPANDED_MAX 4096

static int expand_into(buffer_t *out, const char *value, const char *user,
		       const char **error_r)
{
	for (const char *p = value; *p != '\0'; p++) {
		if (out->used > AUTH_FIELD_EXPANDED_MAX) {
			*error_r = "expanded value is too long";
			return -1;
		}
		if (*p != '%') {
			if (buffer_append_c(out, *p) < 0)
				i_unreached();
			continue;
		}
		if (p[1] == '\0' || expand_var(out, p[1], user) < 0) {
			*error_r = "unknown %variable (use %u, %n, %d or %%)";
			return -1;
		}
		p++;
	}
	return 0;
}

int auth_fields_expand(pool_t pool, const char *value, const char *user,
		       const char **result_r, const char **error_r)
{
	buffer_t out;
	int ret;

	/* Room for the longest result plus one user name, so the appends
	   in expand_var() never fail before the length check. */
	buffer_init(&out, AUTH_FIELD_EXPANDED_MAX * 2 + strlen(user));
	ret = expand_into(&out, value, user, error_r);
	if (ret == 0)
		*result_r = p_strndup(pool, out.data, out.used);
	buffer_free(&out);
	return ret;
}

int auth_fields_check_vars(const char *value, const char **error_r)
{
	for (const char *p = strchr(value, '%'); p != NULL;
	     p = strchr(p + 2, '%')) {
		if (p[1] == '\0' || strchr("und%", p[1]) == NULL) {
			*error_r = "unknown %variable (use %u, %n, %d or %%)";
			return -1;
		}
	}
	return 0;
}
