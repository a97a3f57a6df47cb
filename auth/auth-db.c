/* passdb/userdb lookups over passwd-files: see auth-db.h. */
#include "lib.h"
#include "log.h"
#include "strfuncs.h"
#include "moat-settings.h"
#include "auth-fields.h"
#include "password-scheme.h"
#include "passwd-file.h"
#include "auth-oauth2-file.h"
#include "landlock.h"
#include "auth-cache.h"
#include "auth-db.h"
#include "config-parser.h"

#include <grp.h>
#include <pwd.h>

/* passdb/userdb blocks: a handful in any real setup. */
#define AUTH_DB_MAX_SOURCES 8
#define AUTH_DB_DEFAULT_SCHEME "CRYPT"
#define AUTH_DB_NOLOGIN_TEXT "Login disabled."
/* Hashed when the user is unknown, so that answering "no such user"
   costs about as much as a wrong password (no timing oracle). It is the
   SHA512-CRYPT of a random string nobody knows. */
#define AUTH_DB_DUMMY_HASH "$6$Rw3qZ8sXpL1vK0aT$mrURTEwRU/.bzJOZShsNL5N9" \
	"/wHfDyX3/CF1ZiHxsyngIDNrQOZwQ5Azb5pxV3pQLLlBwxc2MHQsPtIhtZ0jN0"

struct auth_db_source {
	struct auth_db_worker_db worker;  /* driver NULL: a passwd-file */
	struct passwd_file *file;       /* owned by auth_db.files */
	const char *default_scheme;
	struct auth_fields default_fields;
	struct auth_fields override_fields;
};

struct auth_db {
	pool_t pool;
	const struct moat_settings *set;
	struct passwd_file *files[AUTH_DB_MAX_SOURCES * 2];
	unsigned int file_count;
	struct auth_db_source passdbs[AUTH_DB_MAX_SOURCES];
	unsigned int passdb_count;
	struct auth_db_source userdbs[AUTH_DB_MAX_SOURCES];
	unsigned int userdb_count;
	/* pam/shadow passdbs and passwd userdbs, run by auth-worker */
	struct auth_db_source worker_passdbs[AUTH_DB_MAX_SOURCES];
	unsigned int worker_passdb_count;
	struct auth_db_source worker_userdbs[AUTH_DB_MAX_SOURCES];
	unsigned int worker_userdb_count;
	const char *oauth2_path;        /* passdb oauth2-file, or NULL */
	struct auth_cache *cache;       /* of passwd-file verifications */
};

/* A copy of a passwd-file entry that survives the file being re-read. */
struct auth_db_entry {
	const struct auth_db_source *source;
	const char *user, *password, *uid, *gid, *home, *extra_fields;
	const char *path;
	unsigned int line;
};

static struct passwd_file *auth_db_file_get(struct auth_db *db, const char *path)
{
	for (unsigned int i = 0; i < db->file_count; i++) {
		if (strcmp(passwd_file_get_path(db->files[i]), path) == 0)
			return db->files[i];
	}
	i_assert(db->file_count < N_ELEMENTS(db->files));
	return db->files[db->file_count++] = passwd_file_create(path);
}

/* args: "[scheme=NAME] PATH" */
static int auth_db_parse_args(struct auth_db *db, struct auth_db_source *source,
			      const char *args, const char **error_r)
{
	const char **words = p_strsplit(db->pool, args, ' ');
	const char *path = NULL, *value;

	source->default_scheme = AUTH_DB_DEFAULT_SCHEME;
	for (unsigned int i = 0; words[i] != NULL; i++) {
		if (words[i][0] == '\0')
			continue;
		if (str_begins(words[i], "scheme=", &value)) {
			if (!password_scheme_is_known(value)) {
				*error_r = p_strdup_printf(db->pool,
					"unknown password scheme '%s'", value);
				return -1;
			}
			source->default_scheme = value;
		} else if (strchr(words[i], '=') != NULL || path != NULL) {
			*error_r = p_strdup_printf(db->pool,
				"unknown passwd-file argument '%s'", words[i]);
			return -1;
		} else {
			path = words[i];
		}
	}
	if (path == NULL) {
		*error_r = "passwd-file needs a file path in args";
		return -1;
	}
	source->file = auth_db_file_get(db, path);
	return 0;
}

static int auth_db_parse_fields(pool_t pool, const char *str,
				struct auth_fields *fields, const char **error_r)
{
	if (str == NULL)
		return 0;
	if (auth_fields_parse(pool, str, fields, error_r) < 0)
		return -1;
	for (unsigned int i = 0; i < fields->count; i++) {
		const char *value = fields->fields[i].value;
		if (value != NULL && auth_fields_check_vars(value, error_r) < 0)
			return -1;
	}
	return 0;
}

static const char *
auth_db_source_check(struct auth_db *db, const struct moat_db_settings *dbset,
		     struct auth_db_source *source)
{
	const char *error;

	if (source->worker.driver != NULL) {
		source->worker.args = p_strdup(db->pool, dbset->args == NULL ?
					       "" : dbset->args);
	} else if (strcmp(dbset->driver, "passwd-file") != 0) {
		return p_strdup_printf(db->pool, "unknown driver '%s' "
				       "(supported: passwd-file)", dbset->driver);
	} else if (auth_db_parse_args(db, source, dbset->args == NULL ? "" :
				      dbset->args, &error) < 0) {
		return error;
	}
	if (auth_db_parse_fields(db->pool, dbset->default_fields,
				 &source->default_fields, &error) < 0)
		return p_strdup_printf(db->pool, "default_fields: %s", error);
	if (auth_db_parse_fields(db->pool, dbset->override_fields,
				 &source->override_fields, &error) < 0)
		return p_strdup_printf(db->pool, "override_fields: %s", error);
	return NULL;
}

static int auth_db_source_init(struct auth_db *db, const char *kind,
			       unsigned int idx, const struct moat_db_settings *dbset,
			       struct auth_db_source *source, const char **error_r)
{
	const char *error = auth_db_source_check(db, dbset, source);

	if (error == NULL)
		return 0;
	*error_r = p_strdup_printf(db->pool, "%s #%u: %s", kind, idx + 1, error);
	return -1;
}

/* passdb { driver = oauth2-file  args = PATH }: tokens for OAUTHBEARER
   and XOAUTH2 only; it knows no passwords. */
static int auth_db_oauth2_init(struct auth_db *db, unsigned int idx,
			       const struct moat_db_settings *dbset,
			       const char **error_r)
{
	const char *path = dbset->args == NULL ? "" : dbset->args;

	if (path[0] != '/' || strchr(path, ' ') != NULL ||
	    db->oauth2_path != NULL) {
		*error_r = p_strdup_printf(db->pool, "passdb #%u: oauth2-file "
			"needs one absolute path in args (and only one "
			"oauth2-file passdb may exist)", idx + 1);
		return -1;
	}
	db->oauth2_path = p_strdup(db->pool, path);
	return 0;
}

static int auth_db_init_sources(struct auth_db *db, const char **error_r)
{
	const struct moat_settings *set = db->set;

	if (set->passdb_count == 0) {
		*error_r = "no passdb configured";
		return -1;
	}
	if (set->passdb_count > AUTH_DB_MAX_SOURCES ||
	    set->userdb_count > AUTH_DB_MAX_SOURCES) {
		*error_r = "too many passdb/userdb blocks";
		return -1;
	}
	for (unsigned int i = 0; i < set->passdb_count; i++) {
		const struct moat_db_settings *dbset = &set->passdbs[i];

		if (strcmp(dbset->driver, "oauth2-file") == 0) {
			if (auth_db_oauth2_init(db, i, dbset, error_r) < 0)
				return -1;
			continue;
		}
		if (strcmp(dbset->driver, "pam") == 0 ||
		    strcmp(dbset->driver, "shadow") == 0) {
			struct auth_db_source *src =
				&db->worker_passdbs[db->worker_passdb_count++];
			src->worker.driver = p_strdup(db->pool, dbset->driver);
			if (auth_db_source_init(db, "passdb", i, dbset, src,
						error_r) < 0)
				return -1;
			continue;
		}
		if (auth_db_source_init(db, "passdb", i, dbset,
					&db->passdbs[db->passdb_count],
					error_r) < 0)
			return -1;
		db->passdb_count++;
	}
	for (unsigned int i = 0; i < set->userdb_count; i++) {
		const struct moat_db_settings *dbset = &set->userdbs[i];
		struct auth_db_source *src;

		if (strcmp(dbset->driver, "passwd") == 0) {
			src = &db->worker_userdbs[db->worker_userdb_count++];
			src->worker.driver = p_strdup(db->pool, dbset->driver);
		} else {
			src = &db->userdbs[db->userdb_count++];
		}
		if (auth_db_source_init(db, "userdb", i, dbset, src, error_r) < 0)
			return -1;
	}
	return 0;
}

/* Error strings point into a static buffer so they outlive the db. */
static const char *auth_db_static_error(const char *error)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s", error);
	return buf;
}

struct auth_db *auth_db_init(const struct moat_settings *set,
			     const char **error_r)
{
	struct auth_db *db = i_malloc(sizeof(*db));
	const char *error;

	db->pool = pool_create("auth db", 1024);
	db->set = set;
	db->cache = auth_cache_create(set->auth_cache_size, set->auth_cache_ttl,
				      set->auth_cache_negative_ttl);
	if (auth_db_init_sources(db, &error) < 0) {
		*error_r = auth_db_static_error(error);
		auth_db_deinit(&db);
		return NULL;
	}
	return db;
}

void auth_db_deinit(struct auth_db **_db)
{
	struct auth_db *db = *_db;

	*_db = NULL;
	auth_cache_destroy(&db->cache);
	for (unsigned int i = 0; i < db->file_count; i++)
		passwd_file_destroy(&db->files[i]);
	pool_unref(&db->pool);
	free(db);
}

/* dir of path into a new string from pool ("." for a bare name). */
static const char *auth_db_path_dir(pool_t pool, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return ".";
	if (slash == path)
		return "/";
	return p_strndup(pool, path, (size_t)(slash - path));
}

static void auth_db_add_dir(pool_t pool, const char **dirs, unsigned int *count,
			    const char *path)
{
	const char *dir = auth_db_path_dir(pool, path);

	for (unsigned int i = 0; i < *count; i++) {
		if (strcmp(dirs[i], dir) == 0)
			return;
	}
	dirs[(*count)++] = dir;
}

const char *const *auth_db_landlock_ro_paths(struct auth_db *db)
{
	unsigned int sys = 0, count = 0;

	while (landlock_system_ro_paths[sys] != NULL)
		sys++;
	/* the system list, a directory per file, NULL */
	unsigned int max = sys + db->file_count + 1 + 1;
	i_assert(max <= LANDLOCK_MAX_RO_PATHS + 1);
	const char **dirs = p_malloc(db->pool, i_mul_size(max, sizeof(*dirs)));

	for (; count < sys; count++)
		dirs[count] = landlock_system_ro_paths[count];
	/* The directory, not the file: a passwd-file replaced by a rename
	   (how editors and tools write it) is a new inode, which a rule on
	   the old file would not cover. */
	for (unsigned int i = 0; i < db->file_count; i++)
		auth_db_add_dir(db->pool, dirs, &count,
				passwd_file_get_path(db->files[i]));
	if (db->oauth2_path != NULL)
		auth_db_add_dir(db->pool, dirs, &count, db->oauth2_path);
	dirs[count] = NULL;
	return dirs;
}

void auth_db_preload(struct auth_db *db)
{
	for (unsigned int i = 0; i < db->file_count; i++)
		(void)passwd_file_refresh(db->files[i]);
}

/* Find user in the first source that knows it. 1 found, 0 not, -1 error. */
static int auth_db_lookup(const struct auth_db_source *sources,
			  unsigned int count, pool_t pool, const char *user,
			  struct auth_db_entry *entry_r)
{
	const struct passwd_file_entry *e;

	for (unsigned int i = 0; i < count; i++) {
		int ret = passwd_file_lookup(sources[i].file, user, &e);
		if (ret < 0)
			return -1;
		if (ret == 0)
			continue;
		entry_r->source = &sources[i];
		entry_r->user = p_strdup(pool, e->user);
		entry_r->password = p_strdup(pool, e->password);
		entry_r->uid = p_strdup(pool, e->uid);
		entry_r->gid = p_strdup(pool, e->gid);
		entry_r->home = p_strdup(pool, e->home);
		entry_r->extra_fields = p_strdup(pool, e->extra_fields);
		entry_r->path = passwd_file_get_path(sources[i].file);
		entry_r->line = e->line;
		return 1;
	}
	return 0;
}

/* Expand src's values for user and set them in dest. */
static int auth_db_apply_fields(pool_t pool, struct auth_fields *dest,
				const struct auth_fields *src, const char *user,
				const char **error_r)
{
	for (unsigned int i = 0; i < src->count; i++) {
		const char *value = src->fields[i].value;

		if (value != NULL &&
		    auth_fields_expand(pool, value, user, &value, error_r) < 0)
			return -1;
		if (auth_fields_set(dest, src->fields[i].key, value) < 0) {
			*error_r = "too many fields";
			return -1;
		}
	}
	return 0;
}

static int auth_db_set_column(struct auth_fields *fields, const char *key,
			      const char *value)
{
	if (value[0] == '\0')
		return 0;
	return auth_fields_set(fields, key, value);
}

/* defaults, then the entry's columns and extra fields, then overrides. */
static int auth_db_entry_fields(pool_t pool, const struct auth_db_entry *entry,
				struct auth_fields *fields, const char **error_r)
{
	struct auth_fields extra = { .count = 0 };

	if (auth_db_apply_fields(pool, fields, &entry->source->default_fields,
				 entry->user, error_r) < 0)
		return -1;
	if (auth_fields_parse(pool, entry->extra_fields, &extra, error_r) < 0)
		return -1;
	if (auth_db_set_column(fields, "uid", entry->uid) < 0 ||
	    auth_db_set_column(fields, "gid", entry->gid) < 0 ||
	    auth_db_set_column(fields, "home", entry->home) < 0) {
		*error_r = "too many fields";
		return -1;
	}
	/* The file's extra fields are literal: no %-expansion. */
	for (unsigned int i = 0; i < extra.count; i++) {
		if (auth_fields_set(fields, extra.fields[i].key,
				    extra.fields[i].value) < 0) {
			*error_r = "too many fields";
			return -1;
		}
	}
	return auth_db_apply_fields(pool, fields, &entry->source->override_fields,
				    entry->user, error_r);
}

/* uid: a number or a user name. */
static int auth_db_resolve_uid(const char *str, uid_t *uid_r, gid_t *gid_r)
{
	const struct passwd *pw;
	unsigned int num;

	if (str_to_uint(str, &num) == 0) {
		*uid_r = num;
		return 0;
	}
	/* getpwnam may block on NSS; passwd-files name local system users
	   (files NSS), which answers from /etc/passwd at once. */
	if ((pw = getpwnam(str)) == NULL)
		return -1;
	*uid_r = pw->pw_uid;
	*gid_r = pw->pw_gid;
	return 0;
}

static int auth_db_resolve_gid(const char *str, gid_t *gid_r)
{
	const struct group *gr;
	unsigned int num;

	if (str_to_uint(str, &num) == 0) {
		*gid_r = num;
		return 0;
	}
	if ((gr = getgrnam(str)) == NULL)
		return -1;
	*gid_r = gr->gr_gid;
	return 0;
}

static const char *field_or(const struct auth_fields *fields, const char *key,
			    const char *def)
{
	const char *value = auth_fields_get(fields, key);

	return value != NULL && value[0] != '\0' ? value :
		(def == NULL ? "" : def);
}

/* quota_storage and quota_messages: a bad value is the admin's mistake,
   logged; the user then has the configured default. */
static void auth_db_user_quota(const struct auth_fields *fields,
			       struct auth_user_info *info)
{
	const char *storage = auth_fields_get(fields, "quota_storage");
	const char *messages = auth_fields_get(fields, "quota_messages");
	const char *error;

	info->quota_storage_set = info->quota_messages_set = false;
	if (storage != NULL) {
		if (config_parse_size(storage, &info->quota_storage, &error) < 0)
			i_error("user %s: quota_storage=%s: %s", info->user,
				storage, error);
		else
			info->quota_storage_set = true;
	}
	if (messages != NULL) {
		if (messages[0] < '0' || messages[0] > '9' ||
		    str_to_uint64(messages, &info->quota_messages) < 0)
			i_error("user %s: quota_messages=%s: not a number",
				info->user, messages);
		else
			info->quota_messages_set = true;
	}
}

/* uid, gid, home, mail from the userdb fields. Logs and returns -1. */
static int auth_db_user_info(const struct auth_db *db,
			     const struct auth_fields *fields,
			     struct auth_user_info *info)
{
	const char *uid = field_or(fields, "uid", db->set->mail_uid);
	const char *gid = field_or(fields, "gid", db->set->mail_gid);
	gid_t name_gid = (gid_t)-1;

	if (uid[0] == '\0' ||
	    auth_db_resolve_uid(uid, &info->uid, &name_gid) < 0) {
		i_error("user %s: no usable uid ('%s'): set it in the userdb "
			"or mail_uid", info->user, uid);
		return -1;
	}
	if (gid[0] == '\0' && name_gid != (gid_t)-1) {
		info->gid = name_gid;
	} else if (gid[0] == '\0' || auth_db_resolve_gid(gid, &info->gid) < 0) {
		i_error("user %s: no usable gid ('%s'): set it in the userdb "
			"or mail_gid", info->user, gid);
		return -1;
	}
	info->home = field_or(fields, "home", NULL);
	info->mail = field_or(fields, "mail", db->set->mail_location);
	auth_db_user_quota(fields, info);
	return 0;
}

static bool auth_db_uid_valid(const struct auth_db *db,
			      const struct auth_user_info *info)
{
	const struct moat_settings *set = db->set;
	unsigned int uid = info->uid;

	/* uid 0 would make the imap process root: never, whatever the
	   range says. */
	if (uid == 0 || uid < set->first_valid_uid ||
	    (set->last_valid_uid != 0 && uid > set->last_valid_uid)) {
		i_error("user %s: uid %u is outside first_valid_uid=%u..."
			"last_valid_uid=%u (uid 0 is never allowed): login "
			"refused", info->user, uid, set->first_valid_uid,
			set->last_valid_uid);
		return false;
	}
	return true;
}

/* The userdb step for a user whose password was right. */
static enum auth_db_result
auth_db_userdb(struct auth_db *db, pool_t pool, const struct auth_db_entry *pass,
	       struct auth_user_info *info_r)
{
	struct auth_db_entry entry = *pass;
	struct auth_fields fields = { .count = 0 };
	const char *error;
	int ret = 1;

	if (db->userdb_count > 0)
		ret = auth_db_lookup(db->userdbs, db->userdb_count, pool,
				     pass->user, &entry);
	else if (db->worker_userdb_count > 0)
		ret = 0;
	if (ret < 0)
		return AUTH_DB_TEMPFAIL;
	if (ret == 0 && db->worker_userdb_count > 0) {
		info_r->user = pass->user;
		return AUTH_DB_WORKER_USERDB;
	}
	if (ret == 0) {
		i_error("user %s is in a passdb but in no userdb", pass->user);
		return AUTH_DB_TEMPFAIL;
	}
	if (auth_db_entry_fields(pool, &entry, &fields, &error) < 0) {
		i_error("userdb %s:%u: user %s: %s", entry.path, entry.line,
			entry.user, error);
		return AUTH_DB_TEMPFAIL;
	}
	info_r->user = pass->user;
	if (auth_db_user_info(db, &fields, info_r) < 0)
		return AUTH_DB_TEMPFAIL;
	return auth_db_uid_valid(db, info_r) ? AUTH_DB_OK :
		AUTH_DB_UID_OUT_OF_RANGE;
}

/* nologin in the passdb's fields refuses a user whose password was right. */
static enum auth_db_result
auth_db_passdb_fields(pool_t pool, const struct auth_db_entry *entry,
		      const char **reason_r)
{
	struct auth_fields fields = { .count = 0 };
	const char *error, *reason;

	if (auth_db_entry_fields(pool, entry, &fields, &error) < 0) {
		i_error("passdb %s:%u: user %s: %s", entry->path, entry->line,
			entry->user, error);
		return AUTH_DB_TEMPFAIL;
	}
	if (!auth_fields_has(&fields, "nologin"))
		return AUTH_DB_OK;
	reason = auth_fields_get(&fields, "reason");
	*reason_r = reason != NULL && reason[0] != '\0' ? reason :
		AUTH_DB_NOLOGIN_TEXT;
	return AUTH_DB_NOLOGIN;
}

/* The cache's clock: monotonic, so a clock step neither keeps entries
   forever nor drops them all. */
static time_t auth_db_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		i_fatal("clock_gettime(CLOCK_MONOTONIC): %m");
	return ts.tv_sec;
}

enum auth_db_result auth_db_login(struct auth_db *db, pool_t pool,
				  const char *user, const char *password,
				  struct auth_user_info *info_r,
				  const char **reason_r)
{
	struct auth_db_entry entry;
	enum auth_db_result result;
	const char *error;
	int ret;

	ret = auth_db_lookup(db->passdbs, db->passdb_count, pool, user, &entry);
	if (ret < 0)
		return AUTH_DB_TEMPFAIL;
	time_t now = auth_db_now();
	if (ret == 0) {
		/* Worker passdbs come next and hash on their own. */
		if (db->worker_passdb_count == 0 &&
		    auth_cache_lookup(db->cache, user, NULL, password, now) < 0) {
			(void)password_verify(password, AUTH_DB_DUMMY_HASH,
					      AUTH_DB_DEFAULT_SCHEME, &error);
			auth_cache_add(db->cache, user, NULL, password, false,
				       now);
		}
		return AUTH_DB_UNKNOWN_USER;
	}
	ret = auth_cache_lookup(db->cache, entry.user, entry.password,
				password, now);
	if (ret < 0) {
		ret = password_verify(password, entry.password,
				      entry.source->default_scheme, &error);
		if (ret >= 0)
			auth_cache_add(db->cache, entry.user, entry.password,
				       password, ret > 0, now);
	}
	/* The file's copy of the hash is not needed any more. */
	safe_memset((char *)entry.password, 0, strlen(entry.password));
	if (ret < 0) {
		i_error("passdb %s:%u: user %s: %s", entry.path, entry.line,
			entry.user, error);
		return AUTH_DB_TEMPFAIL;
	}
	if (ret == 0)
		return AUTH_DB_PASSWORD_MISMATCH;
	result = auth_db_passdb_fields(pool, &entry, reason_r);
	if (result != AUTH_DB_OK)
		return result;
	return auth_db_userdb(db, pool, &entry, info_r);
}

int auth_db_lookup_password(struct auth_db *db, pool_t pool, const char *user,
			    const char **scheme_r, const char **data_r)
{
	struct auth_db_entry entry;
	int ret;

	ret = auth_db_lookup(db->passdbs, db->passdb_count, pool, user, &entry);
	if (ret <= 0)
		return ret;
	if (entry.password[0] == '\0' ||
	    password_split_scheme(entry.password, entry.source->default_scheme,
				  scheme_r, data_r) < 0) {
		i_error("passdb %s:%u: user %s: empty password or unknown "
			"scheme", entry.path, entry.line, entry.user);
		return -1;
	}
	return 1;
}

enum auth_db_result
auth_db_login_verified(struct auth_db *db, pool_t pool, const char *user,
		       struct auth_user_info *info_r, const char **reason_r)
{
	struct auth_db_entry entry;
	enum auth_db_result result;
	int ret;

	ret = auth_db_lookup(db->passdbs, db->passdb_count, pool, user, &entry);
	if (ret < 0)
		return AUTH_DB_TEMPFAIL;
	if (ret > 0) {
		safe_memset((char *)entry.password, 0, strlen(entry.password));
		result = auth_db_passdb_fields(pool, &entry, reason_r);
		if (result != AUTH_DB_OK)
			return result;
		return auth_db_userdb(db, pool, &entry, info_r);
	}
	/* A token or certificate user that no passwd-file passdb lists:
	   the userdb alone decides (its entry replaces this one). */
	if (db->userdb_count == 0 && db->worker_userdb_count == 0)
		return AUTH_DB_UNKNOWN_USER;
	if (db->worker_userdb_count == 0) {
		/* Here a user in no userdb is unknown, not a configuration
		   error as after a passdb hit. */
		ret = auth_db_lookup(db->userdbs, db->userdb_count, pool, user,
				     &entry);
		if (ret <= 0)
			return ret < 0 ? AUTH_DB_TEMPFAIL : AUTH_DB_UNKNOWN_USER;
		/* The same file may be the passdb: no hash copies linger. */
		safe_memset((char *)entry.password, 0, strlen(entry.password));
	}
	memset(&entry, 0, sizeof(entry));
	entry.user = user;
	return auth_db_userdb(db, pool, &entry, info_r);
}

enum auth_db_result
auth_db_userdb_lookup(struct auth_db *db, pool_t pool, const char *user,
		      struct auth_user_info *info_r)
{
	struct auth_db_entry entry;
	int ret;

	if (db->userdb_count == 0 && db->worker_userdb_count == 0) {
		ret = auth_db_lookup(db->passdbs, db->passdb_count, pool, user,
				     &entry);
		if (ret <= 0)
			return ret < 0 ? AUTH_DB_TEMPFAIL : AUTH_DB_UNKNOWN_USER;
		safe_memset((char *)entry.password, 0, strlen(entry.password));
		return auth_db_userdb(db, pool, &entry, info_r);
	}
	if (db->userdb_count > 0) {
		ret = auth_db_lookup(db->userdbs, db->userdb_count, pool, user,
				     &entry);
		if (ret < 0)
			return AUTH_DB_TEMPFAIL;
		if (ret == 0 && db->worker_userdb_count == 0)
			return AUTH_DB_UNKNOWN_USER;
		if (ret > 0)
			safe_memset((char *)entry.password, 0,
				    strlen(entry.password));
	}
	/* auth_db_userdb() reads the userdb entry again (from the cached
	   file) or defers to the worker userdbs. */
	memset(&entry, 0, sizeof(entry));
	entry.user = p_strdup(pool, user);
	return auth_db_userdb(db, pool, &entry, info_r);
}

const struct auth_db_worker_db *
auth_db_worker_passdb(struct auth_db *db, unsigned int idx)
{
	return idx < db->worker_passdb_count ?
		&db->worker_passdbs[idx].worker : NULL;
}

const struct auth_db_worker_db *
auth_db_worker_userdb(struct auth_db *db, unsigned int idx)
{
	return idx < db->worker_userdb_count ?
		&db->worker_userdbs[idx].worker : NULL;
}

enum auth_db_result
auth_db_login_worker_passdb(struct auth_db *db, pool_t pool, const char *user,
			    struct auth_user_info *info_r)
{
	struct auth_db_entry entry;

	/* No passwd-file entry: a bare one with the name, so a setup
	   without userdbs falls back to mail_uid/mail_gid. */
	memset(&entry, 0, sizeof(entry));
	entry.source = &db->worker_passdbs[0];
	entry.user = p_strdup(pool, user);
	entry.password = entry.uid = entry.gid = entry.home = "";
	entry.extra_fields = "";
	entry.path = "(worker)";
	return auth_db_userdb(db, pool, &entry, info_r);
}

enum auth_db_result
auth_db_worker_user(struct auth_db *db, pool_t pool, const char *user,
		    unsigned int idx, uid_t uid, gid_t gid, const char *home,
		    struct auth_user_info *info_r)
{
	struct auth_db_entry entry;
	struct auth_fields fields = { .count = 0 };
	const char *error;

	i_assert(idx < db->worker_userdb_count);
	memset(&entry, 0, sizeof(entry));
	entry.source = &db->worker_userdbs[idx];
	entry.user = p_strdup(pool, user);
	entry.uid = p_strdup_printf(pool, "%lu", (unsigned long)uid);
	entry.gid = p_strdup_printf(pool, "%lu", (unsigned long)gid);
	entry.home = p_strdup(pool, home);
	entry.password = entry.extra_fields = "";
	if (auth_db_entry_fields(pool, &entry, &fields, &error) < 0) {
		i_error("userdb %s: user %s: %s", entry.source->worker.driver,
			user, error);
		return AUTH_DB_TEMPFAIL;
	}
	info_r->user = entry.user;
	if (auth_db_user_info(db, &fields, info_r) < 0)
		return AUTH_DB_TEMPFAIL;
	return auth_db_uid_valid(db, info_r) ? AUTH_DB_OK :
		AUTH_DB_UID_OUT_OF_RANGE;
}

int auth_db_lookup_token(struct auth_db *db, pool_t pool, const char *token,
			 const char **user_r)
{
	if (db->oauth2_path == NULL)
		return 0;
	return auth_oauth2_file_lookup(db->oauth2_path, pool, token,
				       time(NULL), user_r);
}

void auth_user_info_quota_str(const struct auth_user_info *info,
			      char storage[32], char messages[32])
{
	storage[0] = messages[0] = '\0';
	if (info->quota_storage_set)
		snprintf(storage, 32, "%llu", (unsigned long long)info->quota_storage);
	if (info->quota_messages_set)
		snprintf(messages, 32, "%llu", (unsigned long long)info->quota_messages);
}

const char *auth_db_result_reason(enum auth_db_result result)
{
	switch (result) {
	case AUTH_DB_OK:
		return "ok";
	case AUTH_DB_UNKNOWN_USER:
		return "unknown user";
	case AUTH_DB_PASSWORD_MISMATCH:
		return "password mismatch";
	case AUTH_DB_NOLOGIN:
		return "nologin";
	case AUTH_DB_UID_OUT_OF_RANGE:
		return "uid out of range";
	case AUTH_DB_TEMPFAIL:
		return "internal error";
	case AUTH_DB_WORKER_USERDB:
		return "userdb lookup pending";
	}
	i_unreached();
}
