#ifndef AUTH_DB_H
#define AUTH_DB_H
/* passdb and userdb lookups, as configured by the passdb/userdb blocks of
   moat.conf (driver "passwd-file"; a passdb may also be "oauth2-file",
   auth-oauth2-file.h, which only OAUTHBEARER/XOAUTH2 consult). A login is checked in
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
	/* userdb fields quota_storage=<size>, quota_messages=<n>; without
	   them the imap process uses the quota_* settings */
	bool quota_storage_set, quota_messages_set;
	uint64_t quota_storage, quota_messages;
};

enum auth_db_result {
	AUTH_DB_OK = 0,
	AUTH_DB_UNKNOWN_USER,
	AUTH_DB_PASSWORD_MISMATCH,
	AUTH_DB_NOLOGIN,            /* password was right; *reason_r set */
	AUTH_DB_UID_OUT_OF_RANGE,   /* password was right; logged as error */
	AUTH_DB_TEMPFAIL,           /* internal problem, logged as error */
	/* The password was right (or the user verified) but only an
	   auth-worker userdb (passwd) can tell uid/gid/home: ask it with
	   auth_db_worker_userdb() and finish with auth_db_worker_user(). */
	AUTH_DB_WORKER_USERDB,
};

/* A passdb/userdb that auth-worker runs (pam, shadow, passwd). */
struct auth_db_worker_db {
	const char *driver, *args;
};

struct auth_db;

/* Returns NULL with *error_r (for i_fatal) on an unknown driver, bad
   args or bad fields. Files are not read yet. */
struct auth_db *auth_db_init(const struct moat_settings *set,
			     const char **error_r);
void auth_db_deinit(struct auth_db **db);
/* What auth may read under Landlock (lib/landlock.h): the system list
   and the directory of every passwd-file and the oauth2-file. NULL-
   terminated, valid while db lives. */
const char *const *auth_db_landlock_ro_paths(struct auth_db *db);
/* Read every file now (logs errors; used at start-up). */
void auth_db_preload(struct auth_db *db);

/* Check user's password and look up the user. On AUTH_DB_OK, *info_r is
   filled from pool. On AUTH_DB_NOLOGIN, *reason_r is the reason for the
   client (a default text if the admin gave none). */
enum auth_db_result auth_db_login(struct auth_db *db, pool_t pool,
				  const char *user, const char *password,
				  struct auth_user_info *info_r,
				  const char **reason_r);

/* The user's stored password, for mechanisms that compute on it (SCRAM,
   CRAM-MD5): 1 with the scheme's canonical name and its data (from pool;
   the caller wipes data), 0 for an unknown user, -1 on an error (logged). */
int auth_db_lookup_password(struct auth_db *db, pool_t pool, const char *user,
			    const char **scheme_r, const char **data_r);
/* auth_db_login() for a user whose credentials a mechanism has already
   checked: the passdb's nologin and the userdb lookup. A user no passdb
   lists (an OAuth token's user) is looked up in the userdbs alone. */
enum auth_db_result
auth_db_login_verified(struct auth_db *db, pool_t pool, const char *user,
		       struct auth_user_info *info_r, const char **reason_r);
/* passdb oauth2-file: the user of a live token. 1 found (*user_r from
   pool), 0 unknown/expired or no such passdb, -1 error (logged). */
int auth_db_lookup_token(struct auth_db *db, pool_t pool, const char *token,
			 const char **user_r);

/* A mail recipient's userdb lookup (delivery, not login: no password and
   no nologin). A user in no userdb is unknown; with no userdb blocks at
   all the passwd-file passdbs list the users. May return
   AUTH_DB_WORKER_USERDB (then info_r->user is set) like a login. */
enum auth_db_result
auth_db_userdb_lookup(struct auth_db *db, pool_t pool, const char *user,
		      struct auth_user_info *info_r);

/* The idx-th passdb (pam, shadow) or userdb (passwd) that auth-worker
   runs, in config order; NULL past the last. passwd-file passdbs and
   userdbs are always consulted before these. */
const struct auth_db_worker_db *
auth_db_worker_passdb(struct auth_db *db, unsigned int idx);
const struct auth_db_worker_db *
auth_db_worker_userdb(struct auth_db *db, unsigned int idx);
/* A worker passdb accepted user's password: the userdb step (may return
   AUTH_DB_WORKER_USERDB). */
enum auth_db_result
auth_db_login_worker_passdb(struct auth_db *db, pool_t pool, const char *user,
			    struct auth_user_info *info_r);
/* Worker userdb idx found user: fields, uid range. */
enum auth_db_result
auth_db_worker_user(struct auth_db *db, pool_t pool, const char *user,
		    unsigned int idx, uid_t uid, gid_t gid, const char *home,
		    struct auth_user_info *info_r);

/* The quota fields for the USER records: decimal, "" when not set. */
void auth_user_info_quota_str(const struct auth_user_info *info,
			      char storage[32], char messages[32]);

/* Text for an auth_db_result in "auth failed" log lines. */
const char *auth_db_result_reason(enum auth_db_result result);

#endif
