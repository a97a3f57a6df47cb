#ifndef SETTINGS_DEF_H
#define SETTINGS_DEF_H
/* Typed settings described by a table: each entry names a field of a
   struct (by offset) and how its text form is parsed, checked, compared
   and written back. moat-settings.c holds the tables; this knows nothing
   of moat's settings. Text forms are config-parser.h's. */

#include "mempool.h"
#include "buffer.h"

enum setting_type {
	SET_STRING,     /* const char *, duplicated into the pool */
	SET_UINT,       /* unsigned int */
	SET_SIZE,       /* uint64_t bytes */
	SET_TIME,       /* unsigned int seconds */
	SET_TIME_MSECS, /* unsigned int milliseconds ("ms" is a unit) */
	SET_BOOL,       /* bool */
	SET_ENUM,       /* unsigned int index into enum_values */
};

#define SET_FLAG_NONEMPTY 0x01
#define SET_FLAG_ABSPATH  0x02  /* "" or an absolute path */
/* A secret (a private key): settings_defs_write() leaves it out, so it is
   written only where the caller asks for it by name. */
#define SET_FLAG_SECRET   0x04

struct setting_def {
	const char *name;
	enum setting_type type;
	size_t offset;
	const char *default_value;  /* text form; NULL if the caller has
				       defaults of its own */
	uint64_t min;               /* numbers only */
	uint64_t max;               /* 0 = the type's maximum */
	unsigned int flags;
	const char *const *enum_values;  /* NULL-terminated */
	/* extra check of a string value; *error_r may come from pool */
	int (*check)(pool_t pool, const char *value, const char **error_r);
};

/* Parse value into def's field of base. Returns 0, or -1 with *error_r
   = "NAME = 'VALUE': problem" allocated from pool. */
int settings_def_set(pool_t pool, const struct setting_def *def, void *base,
		     const char *value, const char **error_r);
bool settings_def_equal(const struct setting_def *def, const void *a,
			const void *b);
bool settings_defs_equal(const struct setting_def *defs, unsigned int count,
			 const void *a, const void *b);
/* The value in a form config-parser reads back to the same value. */
int settings_def_append(buffer_t *out, const struct setting_def *def,
			const void *base) ATTR_WARN_UNUSED;
/* "INDENTNAME = VALUE\n" for each def except SET_FLAG_SECRET ones; with
   defaults != NULL only those whose value differs from defaults'. -1 if
   out is full. */
int settings_defs_write(buffer_t *out, const char *indent,
			const struct setting_def *defs, unsigned int count,
			const void *base, const void *defaults) ATTR_WARN_UNUSED;
const struct setting_def *
settings_def_find(const struct setting_def *defs, unsigned int count,
		  const char *name);

#endif
