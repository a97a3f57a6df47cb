/* Unit tests: maildir-import*.c (Dovecot's and Courier's files) and the
   dovecot-uidlist kept in step by maildir-uidlist.c */
#include "test-common.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"
#include "maildir-import.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

static const char *imp_dir(const char *name)
{
	static char path[512];
	char sub[600];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	(void)mkdir(path, 0700);
	snprintf(sub, sizeof(sub), "%s/cur", path);
	(void)mkdir(sub, 0700);
	return path;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	test_assert(fd != -1);
	test_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static char *read_file(const char *dir, const char *name)
{
	static char buf[8192];
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	if (fd == -1)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_headers(void)
{
	uint32_t uv, next;

	test_assert_int(maildir_foreign_uidlist_header(
		"3 V1275660208 N25022 G3085f01b7f11094c501100008c4a11c1",
		&uv, &next), 3);
	test_assert_int(uv, 1275660208);
	test_assert_int(next, 25022);
	/* any order, unknown fields skipped */
	test_assert_int(maildir_foreign_uidlist_header("3 N7 X1 V9", &uv,
						       &next), 3);
	test_assert_int(uv, 9);
	test_assert_int(next, 7);
	test_assert_int(maildir_foreign_uidlist_header("1 1500000000 12", &uv,
						       &next), 1);
	test_assert_int(uv, 1500000000);
	test_assert_int(next, 12);
	test_assert(maildir_foreign_uidlist_header("2 1 2", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("3 N7", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("3 V0 N7", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("3 Vx N7", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("1 5", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("1 5 6 7", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("V2 5 6", &uv, &next) < 0);
	test_assert(maildir_foreign_uidlist_header("", &uv, &next) < 0);
}

static void test_records(void)
{
	uint32_t uid;
	const char *base;
	size_t len;

	test_assert(maildir_foreign_uidlist_record(3,
		"12 W2048 S2000 G0123abcd P+3Aa:b :1.M2P3.host,S=2000,W=2048",
		&uid, &base, &len) == 0);
	test_assert_int(uid, 12);
	test_assert(len == strlen("1.M2P3.host,S=2000,W=2048") &&
		    strncmp(base, "1.M2P3.host,S=2000,W=2048", len) == 0);
	test_assert(maildir_foreign_uidlist_record(3, "1 :a.b", &uid, &base,
						   &len) == 0 && len == 3);
	/* Courier's (version 1) keeps the info part: cut off */
	test_assert(maildir_foreign_uidlist_record(1, "7 1.M1.h:2,FS", &uid,
						   &base, &len) == 0);
	test_assert(uid == 7 && len == 6 && strncmp(base, "1.M1.h", 6) == 0);
	test_assert(maildir_foreign_uidlist_record(3, "1 W5", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(3, "0 :a", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(3, "x :a", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(3, "1 :a b", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(3, "1 :", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(1, "1 a b", &uid, &base,
						   &len) < 0);
	test_assert(maildir_foreign_uidlist_record(1, "1", &uid, &base,
						   &len) < 0);
}

static int import_into(const char *dir, struct maildir_uidlist **ul_r,
		       enum maildir_import_source *source_r, uint32_t *fuv_r)
{
	const char *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);

	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	int ret = maildir_import_uidlist(ul, dir, source_r, fuv_r);
	*ul_r = ul;
	return ret;
}

static void test_import_dovecot(void)
{
	const char *dir = imp_dir("dv1"), *error;
	struct maildir_uidlist *ul;
	enum maildir_import_source source;
	uint32_t fuv;

	/* a gap (2), a record above N, and a torn last line (ignored) */
	write_file(dir, "dovecot-uidlist",
		   "3 V1796127091 N4 G77d7\n1 :a.M1.h,S=28,W=32\n"
		   "3 W30 :b.M2.h\n9 :c.M3.h\n10 :d.M4");
	test_assert(import_into(dir, &ul, &source, &fuv) == 1);
	test_assert(source == MAILDIR_IMPORT_DOVECOT && fuv == 1796127091);
	test_assert_int(maildir_uidlist_get_uidvalidity(ul), 1796127091);
	test_assert_int(maildir_uidlist_get_next_uid(ul), 10);
	test_assert_int(maildir_uidlist_count(ul), 3);
	test_assert_int(maildir_uidlist_get(ul, 1)->uid, 3);
	test_assert_str(maildir_uidlist_get(ul, 1)->base, "b.M2.h");
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_deinit(&ul);
	/* moat's own file has it now; Dovecot's is as it was */
	test_assert(strstr(read_file(dir, MAILDIR_UIDLIST_NAME),
			   "V2 1796127091 10\n1 a.M1.h,S=28,W=32\n") != NULL);
	test_assert(strstr(read_file(dir, "dovecot-uidlist"), "10 :d.M4") != NULL);
}

static void test_import_corrupt(void)
{
	const char *bad[] = {
		"3 V5 N4\n2 :a\n1 :b\n",          /* not ascending */
		"3 V5 N4\n1 :a\ngarbage\n2 :b\n", /* a broken line */
		"3 V5 N4\n1 :a/b\n",              /* not a file name */
		"7 V5\n1 :a\n",                   /* unknown version */
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		char name[32];
		snprintf(name, sizeof(name), "bad%u", i);
		const char *dir = imp_dir(name);
		struct maildir_uidlist *ul;
		enum maildir_import_source source;
		uint32_t fuv;
		write_file(dir, "dovecot-uidlist", bad[i]);
		test_assert(import_into(dir, &ul, &source, &fuv) == -1);
		test_assert(source == MAILDIR_IMPORT_DOVECOT);
		test_assert_int(fuv, i < 3 ? 5 : 0);
		maildir_uidlist_deinit(&ul);
	}
	/* a line too long */
	const char *dir = imp_dir("long");
	char text[MAILDIR_IMPORT_LINE_MAX + 64];
	snprintf(text, sizeof(text), "3 V5 N4\n1 ");
	size_t len = strlen(text);
	memset(text + len, 'W', MAILDIR_IMPORT_LINE_MAX);
	memcpy(text + len + MAILDIR_IMPORT_LINE_MAX, " :a\n", 5);
	write_file(dir, "dovecot-uidlist", text);
	struct maildir_uidlist *ul;
	enum maildir_import_source source;
	uint32_t fuv;
	test_assert(import_into(dir, &ul, &source, &fuv) == -1);
	maildir_uidlist_deinit(&ul);
	/* nothing at all */
	dir = imp_dir("none");
	test_assert(import_into(dir, &ul, &source, &fuv) == 0);
	test_assert(source == MAILDIR_IMPORT_NONE);
	maildir_uidlist_deinit(&ul);
}

static void test_import_courier(void)
{
	const char *dir = imp_dir("co1"), *error;
	struct maildir_uidlist *ul;
	enum maildir_import_source source;
	uint32_t fuv;

	write_file(dir, "courierimapuiddb", "1 77 9\n2 m1.h:2,S\n5 m2.h\n");
	test_assert(import_into(dir, &ul, &source, &fuv) == 1);
	test_assert(source == MAILDIR_IMPORT_COURIER);
	test_assert_int(maildir_uidlist_get_next_uid(ul), 9);
	test_assert_str(maildir_uidlist_get(ul, 0)->base, "m1.h");
	maildir_uidlist_deinit(&ul);

	/* keywords: :list, a newer per-message file, Courier's own file
	   names without letters */
	char kwdir[600];
	snprintf(kwdir, sizeof(kwdir), "%s/courierimapkeywords", dir);
	test_assert(mkdir(kwdir, 0700) == 0);
	write_file(kwdir, ":list", "$A\nbad name\nB\n\nm1.h:0 2\nm2.h:1\n");
	write_file(kwdir, ".4.m2.h", "C\n$A\n");
	write_file(kwdir, ".2.m2.h", "D\n");
	char cur[600];
	snprintf(cur, sizeof(cur), "%s/cur", dir);
	write_file(cur, "m1.h:2,S", "x");
	write_file(cur, "m2.h:2,", "x");
	write_file(cur, "m3.h:2,T", "x");
	struct maildir_keywords *kw = maildir_keywords_init(dir, false);
	test_assert(maildir_import_courier_keywords(kw, dir, &error) == 1);
	test_assert_str(maildir_keywords_name(kw, 0), "$A");
	test_assert_str(maildir_keywords_name(kw, 1), "B");
	test_assert_str(maildir_keywords_name(kw, 2), "C");
	test_assert(maildir_keywords_name(kw, 3) == NULL);
	maildir_keywords_deinit(&kw);
	test_assert(read_file(cur, "m1.h:2,Sab") != NULL);
	test_assert(read_file(cur, "m2.h:2,ac") != NULL);
	test_assert(read_file(cur, "m3.h:2,T") != NULL);
}

static void test_dovecot_keywords_and_mirror(void)
{
	const char *dir = imp_dir("mirror"), *error;
	struct maildir_uidlist *ul;
	enum maildir_import_source source;
	uint32_t fuv;
	unsigned int idx;

	write_file(dir, "dovecot-keywords", "0 $Forwarded\n2 $label1\n");
	struct maildir_keywords *kw = maildir_keywords_init(dir, false);
	test_assert(maildir_import_dovecot_keywords(kw, dir, &error) == 1);
	test_assert_str(maildir_keywords_name(kw, 2), "$label1");
	test_assert(maildir_keywords_name(kw, 1) == NULL);

	write_file(dir, "dovecot-uidlist", "3 V42 N3 Gabc\n1 :a.h\n2 :b.h");
	test_assert(import_into(dir, &ul, &source, &fuv) == 1);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	/* a new message: its UID goes to Dovecot's list too (and the torn
	   line without LF, which we did not import, is ended first) */
	maildir_uidlist_add(ul, "c.h", 3, MAILDIR_SIZE_UNKNOWN,
			    MAILDIR_SIZE_UNKNOWN);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	test_assert_str(read_file(dir, "dovecot-uidlist"),
			"3 V42 N3 Gabc\n1 :a.h\n2 :b.h\n3 :c.h\n");
	/* a new keyword: into dovecot-keywords with the same letter */
	test_assert(maildir_keywords_add(kw, "New", &idx, &error) == 1);
	test_assert_int(idx, 1);
	maildir_dovecot_keywords_mirror(dir, 42, kw);
	test_assert_str(read_file(dir, "dovecot-keywords"),
			"0 $Forwarded\n1 New\n2 $label1\n");
	/* another UIDVALIDITY: Dovecot's files are not ours to touch */
	maildir_dovecot_keywords_mirror(dir, 43, kw);
	write_file(dir, "dovecot-uidlist", "3 V41 N3\n");
	maildir_uidlist_add(ul, "d.h", 3, MAILDIR_SIZE_UNKNOWN,
			    MAILDIR_SIZE_UNKNOWN);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	test_assert_str(read_file(dir, "dovecot-uidlist"), "3 V41 N3\n");
	maildir_uidlist_unlock(ul);
	maildir_uidlist_deinit(&ul);
	maildir_keywords_deinit(&kw);
}

TEST_MAIN(TEST(test_headers), TEST(test_records), TEST(test_import_dovecot),
	  TEST(test_import_corrupt), TEST(test_import_courier),
	  TEST(test_dovecot_keywords_and_mirror))
