/* Unit tests for passwd-file.c, auth-fields.c and auth-db.c. */
#include "test-common.h"
#include "moat-settings.h"
#include "auth-fields.h"
#include "passwd-file.h"
#include "auth-db.h"

#include <sys/stat.h>
#include <time.h>

static const char *write_file(const char *name, const char *content)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	fputs(content, f);
	fclose(f);
	return path;
}

static void test_parse(void)
{
	const char *path = write_file("users",
		"# comment line\n"
		"\n"
		"   \n"
		"alice:{PLAIN}pw1:1001:1002:Alice A:/home/alice:/bin/sh:mail=maildir:/m/alice nologin\r\n"
		"bob:{PLAIN}pw2\n"
		"carol:{PLAIN}pw3:::::\n"
		"malformed line without colon\n"
		":{PLAIN}nouser\n"
		"Alice:{PLAIN}dup\n"
		"dave:{PLAIN}pw4::::/home/dave");
	struct passwd_file *pf = passwd_file_create(path);
	const struct passwd_file_entry *e;

	test_assert_int(passwd_file_lookup(pf, "alice", &e), 1);
	test_assert_str(e->user, "alice");
	test_assert_str(e->password, "{PLAIN}pw1");
	test_assert_str(e->uid, "1001");
	test_assert_str(e->gid, "1002");
	test_assert_str(e->home, "/home/alice");
	test_assert_str(e->extra_fields, "mail=maildir:/m/alice nologin");
	test_assert_int(e->line, 4);
	/* case-insensitive, canonical name from the file, first line wins */
	test_assert_int(passwd_file_lookup(pf, "ALICE", &e), 1);
	test_assert_str(e->user, "alice");
	test_assert_str(e->password, "{PLAIN}pw1");
	test_assert_int(passwd_file_lookup(pf, "bob", &e), 1);
	test_assert_str(e->uid, "");
	test_assert_str(e->home, "");
	test_assert_str(e->extra_fields, "");
	test_assert_int(passwd_file_lookup(pf, "carol", &e), 1);
	test_assert_int(passwd_file_lookup(pf, "dave", &e), 1);
	test_assert_str(e->home, "/home/dave");
	test_assert_int(passwd_file_lookup(pf, "malformed", &e), 0);
	test_assert_int(passwd_file_lookup(pf, "", &e), 0);
	test_assert_int(passwd_file_lookup(pf, "nobody", &e), 0);
	test_assert_int(passwd_file_get_count(pf), 4);
	passwd_file_destroy(&pf);
}

static void test_long_line(void)
{
	size_t len = PASSWD_FILE_MAX_LINE + 100;
	char *content = i_malloc(len + 64);
	const char *path;
	struct passwd_file *pf;
	const struct passwd_file_entry *e;

	memcpy(content, "long:{PLAIN}", 12);
	memset(content + 12, 'x', len - 12);
	strcpy(content + len, "\nshort:{PLAIN}ok\n");
	path = write_file("long", content);
	pf = passwd_file_create(path);
	test_assert_int(passwd_file_lookup(pf, "long", &e), 0);
	test_assert_int(passwd_file_lookup(pf, "short", &e), 1);
	passwd_file_destroy(&pf);
	free(content);
}

static void test_reload(void)
{
	char path[512], newpath[512];
	struct passwd_file *pf;
	const struct passwd_file_entry *e;

	snprintf(path, sizeof(path), "%s", write_file("reload", "u1:{PLAIN}a\n"));
	pf = passwd_file_create(path);

	test_assert_int(passwd_file_lookup(pf, "u1", &e), 1);
	test_assert_int(passwd_file_lookup(pf, "u2", &e), 0);
	/* replaced by rename: new inode */
	(void)write_file("reload.new", "u2:{PLAIN}b\n");
	snprintf(newpath, sizeof(newpath), "%s/reload.new", test_tmpdir());
	test_assert_int(rename(newpath, path), 0);
	test_assert_int(passwd_file_lookup(pf, "u2", &e), 1);
	test_assert_int(passwd_file_lookup(pf, "u1", &e), 0);
	/* rewritten in place with another size */
	(void)write_file("reload", "u1:{PLAIN}a\nu3:{PLAIN}c\n");
	test_assert_int(passwd_file_lookup(pf, "u3", &e), 1);
	/* gone: lookups fail rather than use stale data */
	test_assert_int(unlink(path), 0);
	test_assert_int(passwd_file_lookup(pf, "u3", &e), -1);
	(void)write_file("reload", "u4:{PLAIN}d\n");
	test_assert_int(passwd_file_lookup(pf, "u4", &e), 1);
	passwd_file_destroy(&pf);
}

static void test_fields(void)
{
	pool_t pool = pool_create("test", 1024);
	struct auth_fields f = { .count = 0 };
	const char *error, *value;

	test_assert_int(auth_fields_parse(pool, " uid=1000  home=/h/%u nologin "
					  "userdb_mail=maildir:~/M", &f, &error), 0);
	test_assert_int(f.count, 4);
	test_assert_str(auth_fields_get(&f, "uid"), "1000");
	test_assert_str(auth_fields_get(&f, "mail"), "maildir:~/M");
	test_assert(auth_fields_has(&f, "nologin"));
	test_assert(auth_fields_get(&f, "nologin") == NULL);
	test_assert(!auth_fields_has(&f, "gid"));
	test_assert_int(auth_fields_parse(pool, "=x", &f, &error), -1);

	test_assert_int(auth_fields_expand(pool, "/srv/%d/%n/%u%%", "bob@ex.org",
					   &value, &error), 0);
	test_assert_str(value, "/srv/ex.org/bob/bob@ex.org%");
	test_assert_int(auth_fields_expand(pool, "%d|%n", "bob", &value, &error), 0);
	test_assert_str(value, "|bob");
	test_assert_int(auth_fields_expand(pool, "%x", "bob", &value, &error), -1);
	test_assert_int(auth_fields_expand(pool, "a%", "bob", &value, &error), -1);
	test_assert_int(auth_fields_check_vars("/a/%u/%%/%d", &error), 0);
	test_assert_int(auth_fields_check_vars("/a/%h", &error), -1);
	pool_unref(&pool);
}

static struct moat_settings *
test_settings(struct moat_db_settings *passdb, struct moat_db_settings *userdb)
{
	struct moat_settings *set = moat_settings_defaults();

	set->passdbs = passdb;
	set->passdb_count = 1;
	set->userdbs = userdb;
	set->userdb_count = userdb == NULL ? 0 : 1;
	set->first_valid_uid = 500;
	set->last_valid_uid = 0;
	set->mail_location = "maildir:~/Maildir";
	set->mail_uid = "";
	set->mail_gid = "";
	return set;
}

static enum auth_db_result login(struct auth_db *db, pool_t pool,
				 const char *user, const char *pw,
				 struct auth_user_info *info, const char **reason)
{
	memset(info, 0, sizeof(*info));
	*reason = NULL;
	return auth_db_login(db, pool, user, pw, info, reason);
}

static void test_db_login(void)
{
	const char *path = write_file("db",
		"alice:{PLAIN}pw:1001:1002::/home/alice\n"
		"bob:{PLAIN}pw::::::mail=mdbox:~/mdbox\n"
		"carol:{PLAIN}pw:1003:1003::/h/c::nologin reason=Moved\n"
		"dan:{PLAIN}pw:1004:1004::/h/d::nologin\n"
		"root2:{PLAIN}pw:0:0::/root\n"
		"low:{PLAIN}pw:10:10::/x\n"
		"high:{PLAIN}pw:70000:70000::/x\n"
		"named:{PLAIN}pw:nobody:::\n"
		"broken:{NOSUCH}pw:1005:1005\n");
	struct moat_db_settings passdb = {
		.driver = "passwd-file", .args = path,
		.default_fields = "", .override_fields = "",
	};
	struct moat_db_settings userdb = {
		.driver = "passwd-file", .args = path,
		.default_fields = "uid=2000 gid=2001 home=/srv/mail/%d/%n",
		.override_fields = "",
	};
	struct moat_settings *set = test_settings(&passdb, &userdb);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info info;
	const char *error, *reason;
	struct auth_db *db = auth_db_init(set, &error);

	test_assert(db != NULL);
	test_assert_int(login(db, pool, "Alice", "pw", &info, &reason), AUTH_DB_OK);
	test_assert_str(info.user, "alice");
	test_assert_int(info.uid, 1001);
	test_assert_int(info.gid, 1002);
	test_assert_str(info.home, "/home/alice");
	test_assert_str(info.mail, "maildir:~/Maildir");
	test_assert_int(login(db, pool, "alice", "wrong", &info, &reason),
			AUTH_DB_PASSWORD_MISMATCH);
	test_assert_int(login(db, pool, "nosuch", "pw", &info, &reason),
			AUTH_DB_UNKNOWN_USER);
	/* defaults fill what the line leaves empty; %d/%n expand */
	test_assert_int(login(db, pool, "bob", "pw", &info, &reason), AUTH_DB_OK);
	test_assert_int(info.uid, 2000);
	test_assert_int(info.gid, 2001);
	test_assert_str(info.home, "/srv/mail//bob");
	test_assert_str(info.mail, "mdbox:~/mdbox");
	test_assert_int(login(db, pool, "carol", "pw", &info, &reason),
			AUTH_DB_NOLOGIN);
	test_assert_str(reason, "Moved");
	test_assert_int(login(db, pool, "carol", "bad", &info, &reason),
			AUTH_DB_PASSWORD_MISMATCH);
	test_assert_int(login(db, pool, "dan", "pw", &info, &reason),
			AUTH_DB_NOLOGIN);
	test_assert_str(reason, "Login disabled.");
	test_assert_int(login(db, pool, "root2", "pw", &info, &reason),
			AUTH_DB_UID_OUT_OF_RANGE);
	test_assert_int(login(db, pool, "low", "pw", &info, &reason),
			AUTH_DB_UID_OUT_OF_RANGE);
	test_assert_int(login(db, pool, "high", "pw", &info, &reason), AUTH_DB_OK);
	set->last_valid_uid = 60000;
	test_assert_int(login(db, pool, "high", "pw", &info, &reason),
			AUTH_DB_UID_OUT_OF_RANGE);
	set->last_valid_uid = 0;
	test_assert_int(login(db, pool, "named", "pw", &info, &reason), AUTH_DB_OK);
	test_assert_int(info.uid, 65534);
	test_assert_int(login(db, pool, "broken", "pw", &info, &reason),
			AUTH_DB_TEMPFAIL);
	test_assert_str(auth_db_result_reason(AUTH_DB_PASSWORD_MISMATCH),
			"password mismatch");
	auth_db_deinit(&db);
	pool_unref(&pool);
	moat_settings_free(&set);
}

static void test_db_no_userdb(void)
{
	const char *path = write_file("db2",
		"eve@example.org:{PLAIN}pw\n"
		"frank:{PLAIN}pw:1010:1010\n");
	struct moat_db_settings passdb = {
		.driver = "passwd-file", .args = path,
		.default_fields = "", .override_fields = "",
	};
	struct moat_settings *set = test_settings(&passdb, NULL);
	pool_t pool = pool_create("test", 1024);
	struct auth_user_info info;
	const char *error, *reason;
	struct auth_db *db = auth_db_init(set, &error);

	test_assert(db != NULL);
	/* no uid anywhere: internal error, logged */
	test_assert_int(login(db, pool, "eve@example.org", "pw", &info, &reason),
			AUTH_DB_TEMPFAIL);
	set->mail_uid = "3000";
	set->mail_gid = "3001";
	test_assert_int(login(db, pool, "eve@example.org", "pw", &info, &reason),
			AUTH_DB_OK);
	test_assert_int(info.uid, 3000);
	test_assert_str(info.home, "");
	test_assert_int(login(db, pool, "frank", "pw", &info, &reason), AUTH_DB_OK);
	test_assert_int(info.uid, 1010);
	auth_db_deinit(&db);
	pool_unref(&pool);
	moat_settings_free(&set);
}

static void test_db_bad_config(void)
{
	struct moat_db_settings passdb = {
		.driver = "ldap", .args = "/x",
		.default_fields = "", .override_fields = "",
	};
	struct moat_db_settings userdb = {
		.driver = "passwd-file", .args = "/x",
		.default_fields = "home=/%h", .override_fields = "",
	};
	struct moat_settings *set = test_settings(&passdb, &userdb);
	const char *error = NULL;

	test_assert(auth_db_init(set, &error) == NULL);
	test_assert(error != NULL && strstr(error, "unknown driver 'ldap'") != NULL);
	passdb.driver = "passwd-file";
	test_assert(auth_db_init(set, &error) == NULL);
	test_assert(error != NULL && strstr(error, "userdb #1: default_fields") != NULL);
	userdb.default_fields = "";
	passdb.args = "scheme=NOPE /x";
	test_assert(auth_db_init(set, &error) == NULL);
	passdb.args = "foo=bar /x";
	test_assert(auth_db_init(set, &error) == NULL);
	passdb.args = "scheme=plain /x";
	struct auth_db *db = auth_db_init(set, &error);
	test_assert(db != NULL);
	auth_db_deinit(&db);
	moat_settings_free(&set);
}

TEST_MAIN(TEST(test_parse), TEST(test_long_line), TEST(test_reload),
	  TEST(test_fields), TEST(test_db_login), TEST(test_db_no_userdb),
	  TEST(test_db_bad_config))
