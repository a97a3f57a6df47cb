/* Table-driven typed settings: parse, check, compare, write. */

#include "lib.h"
#include "strfuncs.h"
#include "config-parser.h"
#include "settings-def.h"

static const char *str_or_empty(const char *str)
{
	return str == NULL ? "" : str;
}


static int string_check(pool_t pool, const struct setting_def *def,
			const char *value, const char **error_r)
{
	if ((def->flags & SET_FLAG_NONEMPTY) != 0 && value[0] == '\0') {
		*error_r = "must not be empty";
		return -1;
	}
	if ((def->flags & SET_FLAG_ABSPATH) != 0 && value[0] != '\0' &&
	    value[0] != '/') {
		*error_r = "must be an absolute path";
		return -1;
	}
	return def->check == NULL ? 0 : def->check(pool, value, error_r);
}

static int enum_find(pool_t pool, const struct setting_def *def,
		     const char *value, unsigned int *idx_r,
		     const char **error_r)
{
	const char *list = "";

	for (unsigned int i = 0; def->enum_values[i] != NULL; i++) {
		if (strcmp(def->enum_values[i], value) == 0) {
			*idx_r = i;
			return 0;
		}
		list = p_strdup_printf(pool, "%s%s%s", list, i == 0 ? "" : ", ",
				       def->enum_values[i]);
	}
	*error_r = p_strdup_printf(pool, "use one of: %s", list);
	return -1;
}

static const char *range_check(pool_t pool, const struct setting_def *def,
			       uint64_t num)
{
	uint64_t max = def->max != 0 ? def->max :
		def->type == SET_SIZE ? UINT64_MAX : UINT_MAX;
	const char *unit = def->type == SET_SIZE ? " bytes" :
		def->type == SET_TIME ? " secs" :
		def->type == SET_TIME_MSECS ? " ms" : "";

	if (num < def->min) {
		return p_strdup_printf(pool, "must be at least %llu%s",
				       (unsigned long long)def->min, unit);
	}
	if (num > max) {
		return p_strdup_printf(pool, "must be at most %llu%s",
				       (unsigned long long)max, unit);
	}
	return NULL;
}

int settings_def_set(pool_t pool, const struct setting_def *def, void *base,
		     const char *value, const char **error_r)
{
	void *ptr = (char *)base + def->offset;
	const char *error = NULL;
	uint64_t num = 0;
	unsigned int secs, idx;
	bool b;

	switch (def->type) {
	case SET_STRING:
		if (string_check(pool, def, value, &error) == 0) {
			*(const char **)ptr = p_strdup(pool, value);
			return 0;
		}
		break;
	case SET_BOOL:
		if (config_parse_bool(value, &b, &error) == 0) {
			*(bool *)ptr = b;
			return 0;
		}
		break;
	case SET_ENUM:
		if (enum_find(pool, def, value, &idx, &error) == 0) {
			*(unsigned int *)ptr = idx;
			return 0;
		}
		break;
	case SET_UINT:
		if (str_to_uint64(value, &num) < 0)
			error = "invalid number";
		break;
	case SET_SIZE:
		(void)config_parse_size(value, &num, &error);
		break;
	case SET_TIME:
		if (config_parse_time(value, &secs, &error) == 0)
			num = secs;
		break;
	case SET_TIME_MSECS:
		if (config_parse_time_msecs(value, &secs, &error) == 0)
			num = secs;
		break;
	}
	if (error == NULL)
		error = range_check(pool, def, num);
	if (error != NULL) {
		*error_r = p_strdup_printf(pool, "%s = '%s': %s", def->name,
					   value, error);
		return -1;
	}
	if (def->type == SET_SIZE)
		*(uint64_t *)ptr = num;
	else
		*(unsigned int *)ptr = (unsigned int)num;
	return 0;
}

bool settings_def_equal(const struct setting_def *def, const void *a,
			const void *b)
{
	const void *pa = (const char *)a + def->offset;
	const void *pb = (const char *)b + def->offset;

	switch (def->type) {
	case SET_STRING:
		return strcmp(str_or_empty(*(const char *const *)pa),
			      str_or_empty(*(const char *const *)pb)) == 0;
	case SET_UINT:
	case SET_TIME:
	case SET_TIME_MSECS:
	case SET_ENUM:
		return *(const unsigned int *)pa == *(const unsigned int *)pb;
	case SET_SIZE:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case SET_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	}
	i_unreached();
}

bool settings_defs_equal(const struct setting_def *defs, unsigned int count,
			 const void *a, const void *b)
{
	for (unsigned int i = 0; i < count; i++) {
		if (!settings_def_equal(&defs[i], a, b))
			return false;
	}
	return true;
}

int settings_def_append(buffer_t *out, const struct setting_def *def,
			const void *base)
{
	const void *ptr = (const char *)base + def->offset;
	unsigned int idx;

	switch (def->type) {
	case SET_STRING:
		return config_append_value(out,
			str_or_empty(*(const char *const *)ptr));
	case SET_UINT:
		return buffer_printf(out, "%u", *(const unsigned int *)ptr);
	case SET_SIZE:
		return config_append_size(out, *(const uint64_t *)ptr);
	case SET_TIME:
		return config_append_time(out, *(const unsigned int *)ptr);
	case SET_TIME_MSECS:
		return config_append_time_msecs(out, *(const unsigned int *)ptr);
	case SET_BOOL:
		return buffer_append_str(out, *(const bool *)ptr ? "yes" : "no");
	case SET_ENUM:
		idx = *(const unsigned int *)ptr;
		for (unsigned int i = 0; i <= idx; i++)
			i_assert(def->enum_values[i] != NULL);
		return buffer_append_str(out, def->enum_values[idx]);
	}
	i_unreached();
}

int settings_defs_write(buffer_t *out, const char *indent,
			const struct setting_def *defs, unsigned int count,
			const void *base, const void *defaults)
{
	for (unsigned int i = 0; i < count; i++) {
		if ((defs[i].flags & SET_FLAG_SECRET) != 0)
			continue;
		if (defaults != NULL &&
		    settings_def_equal(&defs[i], base, defaults))
			continue;
		if (buffer_printf(out, "%s%s = ", indent, defs[i].name) < 0 ||
		    settings_def_append(out, &defs[i], base) < 0 ||
		    buffer_append_c(out, '\n') < 0)
			return -1;
	}
	return 0;
}

const struct setting_def *
settings_def_find(const struct setting_def *defs, unsigned int count,
		  const char *name)
{
	for (unsigned int i = 0; i < count; i++) {
		if (strcmp(defs[i].name, name) == 0)
			return &defs[i];
	}
	return NULL;
}
