/* Unit tests for admin/admin-backup-manifest.c: a manifest written for a
   tree reads back record by record; every malformed or truncated one,
   and every path that could leave the backup directory, is refused. */

#include "test-common.h"
#include "admin-backup.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

static void put(const char *dir, const char *name, const char *data)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	test_assert(f != NULL);
	fputs(data, f);
	fclose(f);
}

static void write_manifest(const char *dir, const char *text)
{
	put(dir, ADMIN_BACKUP_MANIFEST_NAME, text);
}

/* The error of reading dir's manifest to its end, or NULL. */
static const char *read_all(const char *dir, pool_t pool, unsigned int *count_r)
{
	struct admin_backup_manifest m;
	struct admin_backup_record r;
	const char *error = NULL;
	int ret;

	*count_r = 0;
	if (admin_backup_manifest_open(dir, pool, &m, &error) < 0)
		return error;
	while ((ret = admin_backup_manifest_next(&m, &r, pool, &error)) > 0)
		(*count_r)++;
	admin_backup_manifest_close(&m);
	return ret < 0 ? error : NULL;
}

static void test_manifest_round_trip(void)
{
	pool_t pool = pool_create("test", 1024);
	const char *dir = test_tmpdir(), *error = NULL;
	char path[1024];
	unsigned int files, count;

	snprintf(path, sizeof(path), "%s/cur", dir);
	test_assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/.A b", dir);
	test_assert(mkdir(path, 0700) == 0);
	put(dir, "cur/1.M1P1.x,S=5:2,S", "hello");
	put(dir, ".A b/dovecot-uidlist", "3 V1 N2\n1 :1.M1P1.x\n");
	test_assert(admin_backup_manifest_write(dir, "alice", pool, &files,
						&error) == 0);
	test_assert_int(files, 2);

	struct admin_backup_manifest m;
	struct admin_backup_record r;
	test_assert(admin_backup_manifest_open(dir, pool, &m, &error) == 0);
	test_assert_str(m.user, "alice");
	unsigned int dirs = 0, seen = 0;
	while (admin_backup_manifest_next(&m, &r, pool, &error) > 0) {
		if (r.dir) {
			dirs++;
			continue;
		}
		seen++;
		if (strcmp(r.path, "cur/1.M1P1.x,S=5:2,S") == 0) {
			test_assert_int(r.size, 5);
			/* sha256("hello") */
			test_assert_str(r.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e"
					"1b161e5c1fa7425e73043362938b9824");
			test_assert(r.mtime > 0);
		}
	}
	test_assert(m.ended);
	admin_backup_manifest_close(&m);
	test_assert_int(dirs, 2);
	test_assert_int(seen, 2);
	test_assert(read_all(dir, pool, &count) == NULL);
	test_assert_int(count, 4);
	pool_unref(&pool);
}

static void test_manifest_refused(void)
{
	static const char *const bad[] = {
		"",                                           /* empty */
		"moat-backup 2\nuser a\ncreated 1\nend 0\n",  /* version */
		"moat-backup 1\nuser a\ncreated 1\n",         /* no end */
		"moat-backup 1\nuser a\ncreated 1\ndir cur\nend 2\n", /* count */
		"moat-backup 1\nuser a\ncreated 1\ndir cur\nend 1",   /* torn */
		"moat-backup 1\nuser a\ncreated 1\nend 0\ndir x\n",   /* after */
		"moat-backup 1\nuser a\ncreated 1\ndir ../x\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\ndir /etc\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\ndir a//b\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\ndir a/./b\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\ndir a/\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\nfile xyz 1 1 a\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\nfile "
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
		" -1 1 a\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\nfile "
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
		" 1 x a\nend 1\n",
		"moat-backup 1\nuser a\ncreated 1\nlink a b\nend 1\n",
		"moat-backup 1\nuser \ncreated 1\nend 0\n",
	};
	pool_t pool = pool_create("test", 1024);
	unsigned int count;

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		const char *dir = test_tmpdir();
		write_manifest(dir, bad[i]);
		test_assert_at(read_all(dir, pool, &count) != NULL, bad[i],
			       __FILE__, __LINE__);
	}
	/* and a good one of the same shape */
	const char *dir = test_tmpdir();
	write_manifest(dir, "moat-backup 1\nuser a\ncreated 1\ndir cur\n"
		       "dir .x y/cur\nend 2\n");
	test_assert(read_all(dir, pool, &count) == NULL);
	test_assert_int(count, 2);
	pool_unref(&pool);
}

static void test_path_is_valid(void)
{
	test_assert(admin_backup_path_is_valid("cur/1.M2:2,S"));
	test_assert(admin_backup_path_is_valid(".Work.Sub/new/x"));
	test_assert(admin_backup_path_is_valid(".Space Name/cur"));
	test_assert(!admin_backup_path_is_valid(""));
	test_assert(!admin_backup_path_is_valid(".."));
	test_assert(!admin_backup_path_is_valid("a/../b"));
	test_assert(!admin_backup_path_is_valid("/abs"));
	test_assert(!admin_backup_path_is_valid("a\nb"));
	test_assert(!admin_backup_path_is_valid("a\tb"));
}

TEST_MAIN(TEST(test_manifest_round_trip), TEST(test_manifest_refused),
	  TEST(test_path_is_valid))
