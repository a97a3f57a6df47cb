#ifndef AUTH_FIELDS_H
#define AUTH_FIELDS_H
/* "key=value" field lists, as in passwd-file extra fields and the
   default_fields/override_fields settings: fields separated by spaces, a
   field without '=' is a flag ("nologin"). Values may use variables
   expanded per user: %u the user name, %n its local part (before '@'),
   %d its domain (after '@', empty if none), %% a '%'. */

#include "mempool.h"

/* Fields per list: extra fields and settings are written by the admin;
   more than this is a mistake, not a need. */
#define AUTH_FIELDS_MAX 64

struct auth_field {
	const char *key;
	const char *value;   /* NULL for a flag */
};

struct auth_fields {
	struct auth_field fields[AUTH_FIELDS_MAX];
	unsigned int count;
};

/* Parse str into fields (strings from pool). A key "userdb_X" is stored
   as "X" (Dovecot's passwd-file convention). Returns 0, or -1 with
   *error_r on an empty key or too many fields. */
int auth_fields_parse(pool_t pool, const char *str, struct auth_fields *fields,
		      const char **error_r);
/* NULL if absent. A flag is found with value NULL: use auth_fields_has. */
const char *auth_fields_get(const struct auth_fields *fields, const char *key);
bool auth_fields_has(const struct auth_fields *fields, const char *key);
/* Set key=value, replacing an existing field. -1 if full. */
int auth_fields_set(struct auth_fields *fields, const char *key,
		    const char *value);

/* Check that value uses only known variables. */
int auth_fields_check_vars(const char *value, const char **error_r);
/* Expand variables of value for user into pool. -1 with *error_r on an
   unknown variable. */
int auth_fields_expand(pool_t pool, const char *value, const char *user,
		       const char **result_r, const char **error_r);

#endif
