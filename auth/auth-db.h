#ifndef AUTH_DB_H
#define AUTH_DB_H
/* passdb and userdb lookups, as configured by the passdb/userdb blocks of
   moat.conf (driver "passwd-file" only for now). A login is checked in
   the passdbs in order (the first that knows the user decides), then the
   user's uid, gid, home and mail location come from the first userdb
   that knows the user, completed by the userdb's default_fields, then
   mail_uid/mail_gid/mail_location, and overridden by override_fields.
   passdb and userdb may name the same file: it is read once. */

#include "mempool.h"

struct moat_settings;

struct auth_user_info {
	const char *user;    /* canonical name, as in the passdb */
	uid_t uid;
	gid_t gid;
	const char *home;    /* "" if none */
	const char *mail;    /* mail location, "~" left unexpanded */
};

enum auth_db_result {
	AUTH_DB_OK = 0,
	AUTH_DB_UNKNOWN_USER,
	AUTH_DB_PASSWORD_MISMATCH,
	AUTH_DB_NOLOGIN,            /* password was right; *reason_r set */
	AUTH_DB_UID_OUT_OF_RANGE,   /* password was right; logged as error */
	AUTH_DB_TEMPFAIL,           /* internal problem, logged as error */
};

struct auth_db;

/* Returns NULL with *error_r (for i_fatal) on an unknown driver, bad
   args or bad fields. Files are not read yet. */
struct auth_db *auth_db_init(const struct moat_settings *set,
			     const char **error_r);
void auth_db_deinit(struct auth_db **db);
/* Read every file now (logs errors; used at start-up). */
void auth_db_preload(struct auth_db *db);

/* Check user's password and look up the user. On AUTH_DB_OK, *info_r is
   filled from pool. On AUTH_DB_NOLOGIN, *reason_r is the reason for the
   client (a default text if the admin gave none). */
enum auth_db_result auth_db_login(struct auth_db *db, pool_t pool,
				  const char *user, const char *password,
				  struct auth_user_info *info_r,
				  const char **reason_r);

/* Text for an auth_db_result in "auth failed" log lines. */
const char *auth_db_result_reason(enum auth_db_result result);

#endif
