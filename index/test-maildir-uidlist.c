/* Unit tests: maildir-uidlist.c */
#include "test-common.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-uidlist-lookup.h"

#include <fcntl.h>
#include <sys/stat.h>

static const char *mkdir_sub(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	(void)mkdir(path, 0700);
	return path;
}

static void test_uidlist_write_read(void)
{
	const char *dir = mkdir_sub("ul1"), *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);

	test_assert_int(maildir_uidlist_refresh(ul, &error), 1);
	uint32_t validity = maildir_uidlist_get_uidvalidity(ul);
	test_assert(validity != 0);
	test_assert_int(maildir_uidlist_get_next_uid(ul), 1);
	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	test_assert(maildir_uidlist_is_locked(ul));
	test_assert_int(maildir_uidlist_add(ul, "b", 1, 10, 12)->uid, 1);
	test_assert_int(maildir_uidlist_add(ul, "a,S=5", 5, 5,
					    MAILDIR_SIZE_UNKNOWN)->uid, 2);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);
	test_assert_int(maildir_uidlist_refresh(ul, &error), 0);

	struct maildir_uidlist *ul2 = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul2, &error), 1);
	test_assert_int(maildir_uidlist_get_uidvalidity(ul2), validity);
	test_assert_int(maildir_uidlist_get_next_uid(ul2), 3);
	test_assert_int(maildir_uidlist_count(ul2), 2);
	test_assert_str(maildir_uidlist_get(ul2, 0)->base, "b");
	test_assert_int(maildir_uidlist_get(ul2, 0)->size, 10);
	test_assert_int(maildir_uidlist_get(ul2, 0)->vsize, 12);
	test_assert_int(maildir_uidlist_get(ul2, 1)->uid, 2);
	test_assert(maildir_uidlist_get(ul2, 1)->vsize == MAILDIR_SIZE_UNKNOWN);

	unsigned int count;
	struct maildir_uidlist_rec *const *sorted =
		maildir_uidlist_get_sorted_by_base(ul2, &count);
	test_assert_int(count, 2);
	test_assert_str(sorted[0]->base, "a,S=5");
	maildir_uidlist_deinit(&ul2);
	maildir_uidlist_deinit(&ul);
}

static void test_uidlist_monotonic(void)
{
	const char *dir = mkdir_sub("ul2"), *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);

	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	(void)maildir_uidlist_add(ul, "a", 1, 1, 1);
	(void)maildir_uidlist_add(ul, "b", 1, 1, 1);
	/* expunge the last one: its UID must never come back */
	maildir_uidlist_get(ul, 1)->expunged = true;
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);
	maildir_uidlist_deinit(&ul);

	ul = maildir_uidlist_init(dir, false);
	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	test_assert_int(maildir_uidlist_count(ul), 1);
	test_assert_int(maildir_uidlist_get_next_uid(ul), 3);
	test_assert_int(maildir_uidlist_add(ul, "c", 1, 1, 1)->uid, 3);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);
	maildir_uidlist_deinit(&ul);
}

static void test_uidlist_lock(void)
{
	const char *dir = mkdir_sub("ul3"), *error;
	struct maildir_uidlist *a = maildir_uidlist_init(dir, false);
	struct maildir_uidlist *b = maildir_uidlist_init(dir, false);

	test_assert(maildir_uidlist_lock(a, &error) == 0);
	/* the lock is per open file: a second open in this process must
	   see it held (probed without waiting the full timeout) */
	char path[600];
	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_LOCK_NAME, dir);
	int fd = open(path, O_RDWR);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	test_assert(fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) < 0);
	close(fd);
	maildir_uidlist_unlock(a);
	test_assert(maildir_uidlist_lock(b, &error) == 0);
	maildir_uidlist_unlock(b);
	maildir_uidlist_deinit(&a);
	maildir_uidlist_deinit(&b);
}

static void test_uidlist_corrupt(void)
{
	const char *dir = mkdir_sub("ul4"), *error;
	char path[600];

	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
	FILE *f = fopen(path, "w");
	fputs("V1 100 5\n3 a\n2 b\n", f);   /* uids out of order */
	fclose(f);
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul, &error), 1);
	test_assert_int(maildir_uidlist_count(ul), 0);
	test_assert(maildir_uidlist_get_uidvalidity(ul) > 100);
	test_assert(maildir_uidlist_is_dirty(ul));
	maildir_uidlist_deinit(&ul);

	f = fopen(path, "w");
	fputs("V1 100 2\n7 a S=3 X=future\n", f);
	fclose(f);
	ul = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul, &error), 1);
	test_assert_int(maildir_uidlist_count(ul), 1);
	test_assert_int(maildir_uidlist_get(ul, 0)->size, 3);
	/* uidnext never below the highest uid + 1 */
	test_assert_int(maildir_uidlist_get_next_uid(ul), 8);
	maildir_uidlist_deinit(&ul);
}

/* Records enough to fill the write buffer several times; names in
   order (no sort needed) and one out of order. */
#define BIG_COUNT 5000

static void test_uidlist_big_write(void)
{
	const char *dir = mkdir_sub("ul5"), *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);
	char base[64];

	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	for (unsigned int i = 0; i < BIG_COUNT; i++) {
		int len = snprintf(base, sizeof(base), "%u.M%uP1.host,S=%u",
				   1600000000 + i, i, i);
		if (i == BIG_COUNT - 1)
			base[0] = '0';   /* sorts first */
		maildir_uidlist_add(ul, base, (size_t)len, i,
				    i % 2 == 0 ? i + 10 : MAILDIR_SIZE_UNKNOWN);
	}
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);

	struct maildir_uidlist *ul2 = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul2, &error), 1);
	test_assert_int(maildir_uidlist_count(ul2), BIG_COUNT);
	test_assert_int(maildir_uidlist_get_next_uid(ul2), BIG_COUNT + 1);
	for (unsigned int i = 0; i < BIG_COUNT - 1; i++) {
		const struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul2, i);
		snprintf(base, sizeof(base), "%u.M%uP1.host,S=%u",
			 1600000000 + i, i, i);
		test_assert_str(rec->base, base);
		test_assert_int(rec->uid, i + 1);
		test_assert_int(rec->size, i);
		test_assert(rec->vsize == (i % 2 == 0 ? i + 10 :
					   MAILDIR_SIZE_UNKNOWN));
	}
	unsigned int count;
	struct maildir_uidlist_rec *const *sorted =
		maildir_uidlist_get_sorted_by_base(ul2, &count);
	test_assert_int(count, BIG_COUNT);
	test_assert_int(sorted[0]->uid, BIG_COUNT);
	test_assert_int(sorted[1]->uid, 1);
	for (unsigned int i = 1; i < count; i++)
		test_assert(strcmp(sorted[i - 1]->base, sorted[i]->base) < 0);
	maildir_uidlist_deinit(&ul2);
	maildir_uidlist_deinit(&ul);
}

/* A new list takes the UIDVALIDITY of an index that never had mail. */
static void test_uidlist_adopt_uidvalidity(void)
{
	const char *dir = mkdir_sub("ul6"), *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);

	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	test_assert(maildir_uidlist_was_reset(ul));
	maildir_uidlist_adopt_uidvalidity(ul, 12345);
	test_assert_int(maildir_uidlist_get_uidvalidity(ul), 12345);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	test_assert(!maildir_uidlist_was_reset(ul));
	maildir_uidlist_unlock(ul);
	struct maildir_uidlist *ul2 = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul2, &error), 1);
	test_assert_int(maildir_uidlist_get_uidvalidity(ul2), 12345);
	maildir_uidlist_deinit(&ul2);
	maildir_uidlist_deinit(&ul);
}

static off_t file_size(const char *dir)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
	return stat(path, &st) < 0 ? -1 : st.st_size;
}

static void file_append(const char *dir, const char *data, size_t size)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
	int fd = open(path, O_WRONLY | O_APPEND);
	test_assert(fd != -1 && write(fd, data, size) == (ssize_t)size);
	close(fd);
}

/* Add n records named "<prefix><i>" and write; returns the first uid. */
static uint32_t add_n(struct maildir_uidlist *ul, const char *prefix,
		      unsigned int n, bool tail)
{
	const char *error;
	char base[64];

	test_assert((tail ? maildir_uidlist_lock_append(ul, &error) :
		     maildir_uidlist_lock(ul, &error)) == 0);
	uint32_t first = maildir_uidlist_get_next_uid(ul);
	for (unsigned int i = 0; i < n; i++) {
		int len = snprintf(base, sizeof(base), "%s%u", prefix, i);
		maildir_uidlist_add(ul, base, (size_t)len, 100 + i,
				    MAILDIR_SIZE_UNKNOWN);
	}
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);
	return first;
}

/* Appends grow the file by their lines only; other handles (full and
   tail readers) see every record and the right next uid. */
static void test_uidlist_append_mode(void)
{
	const char *dir = mkdir_sub("ul7"), *error;
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);

	test_assert_int(add_n(ul, "a", 2000, false), 1);   /* a rewrite */
	off_t size = file_size(dir);
	struct maildir_uidlist *reader = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(reader, &error), 1);

	char base[MAILDIR_UIDLIST_MAX_LINE + 1];
	uint64_t msize;
	struct maildir_uidlist_lookup *lookup = maildir_uidlist_lookup_init(dir);
	test_assert_int(maildir_uidlist_lookup(lookup, 1999, base, &msize,
					       &error), 1);
	test_assert_str(base, "a1998");

	/* a second handle appends from the tail of a big file */
	struct maildir_uidlist *app = maildir_uidlist_init(dir, false);
	test_assert_int(add_n(app, "b", 1, true), 2001);
	test_assert_int(file_size(dir), size + (off_t)strlen("2001 b0 S=100\n"));
	test_assert_int(add_n(app, "c", 3, true), 2002);
	test_assert_int(add_n(ul, "d", 1, true), 2005);
	/* the lookup samples the appended lines on */
	test_assert_int(maildir_uidlist_lookup(lookup, 2004, base, &msize,
					       &error), 1);
	test_assert_str(base, "c2");
	test_assert_int(maildir_uidlist_lookup(lookup, 2006, base, &msize,
					       &error), 0);
	test_assert_int(maildir_uidlist_lookup(lookup, 1, base, &msize,
					       &error), 1);
	test_assert_str(base, "a0");
	maildir_uidlist_lookup_deinit(&lookup);

	/* the old reader still has its consistent old view, then the new */
	test_assert_int(maildir_uidlist_count(reader), 2000);
	test_assert_int(maildir_uidlist_refresh(reader, &error), 1);
	test_assert_int(maildir_uidlist_count(reader), 2005);
	test_assert_int(maildir_uidlist_get_next_uid(reader), 2006);
	test_assert_str(maildir_uidlist_get(reader, 2003)->base, "c2");
	test_assert_str(maildir_uidlist_get(reader, 2004)->base, "d0");
	test_assert(!maildir_uidlist_is_dirty(reader));

	/* an expunge rewrites (compacts) the file with the header's uidnext */
	test_assert(maildir_uidlist_lock(reader, &error) == 0);
	for (unsigned int i = 0; i < 2004; i++)
		maildir_uidlist_get(reader, i)->expunged = true;
	maildir_uidlist_set_dirty(reader);
	test_assert(maildir_uidlist_write(reader, &error) == 0);
	maildir_uidlist_unlock(reader);
	test_assert(file_size(dir) < 100);
	maildir_uidlist_deinit(&reader);
	reader = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(reader, &error), 1);
	test_assert_int(maildir_uidlist_count(reader), 1);
	test_assert_int(maildir_uidlist_get_next_uid(reader), 2006);
	/* the appender notices the replacement */
	test_assert_int(add_n(app, "e", 1, true), 2006);
	test_assert_int(maildir_uidlist_refresh(reader, &error), 1);
	test_assert_int(maildir_uidlist_count(reader), 2);
	maildir_uidlist_deinit(&reader);
	maildir_uidlist_deinit(&app);
	maildir_uidlist_deinit(&ul);
}

/* A crash during an append leaves a torn tail: readers ignore it, the
   next append cuts it, no uid in it is trusted or reused wrongly. */
static void test_uidlist_torn_tail(void)
{
	const char *dir = mkdir_sub("ul8"), *error;
	static const char zeros[300];

	for (unsigned int big = 0; big < 2; big++) {
		struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);
		uint32_t first = add_n(ul, big ? "big" : "s", big ? 3000 : 3,
				       false);
		uint32_t next = first + (big ? 3000 : 3);
		off_t size = file_size(dir);

		for (unsigned int kind = 0; kind < 2; kind++) {
			if (kind == 0)
				file_append(dir, "99999 torn", 10);
			else
				file_append(dir, zeros, sizeof(zeros));
			struct maildir_uidlist *r = maildir_uidlist_init(dir, false);
			test_assert_int(maildir_uidlist_refresh(r, &error), 1);
			test_assert(!maildir_uidlist_was_reset(r));
			test_assert_int(maildir_uidlist_get_next_uid(r), next);
			maildir_uidlist_deinit(&r);
			/* the tail appender cuts it before writing */
			r = maildir_uidlist_init(dir, false);
			test_assert_int(add_n(r, "t", 1, true), next);
			test_assert_int(file_size(dir),
					size + (off_t)snprintf(NULL, 0,
						"%u t0 S=100\n", next));
			maildir_uidlist_deinit(&r);
			next++;
			size = file_size(dir);
		}
		/* a bad complete line is corruption, not a torn tail */
		file_append(dir, "5 x\n", 4);
		struct maildir_uidlist *r = maildir_uidlist_init(dir, false);
		test_assert_int(maildir_uidlist_refresh(r, &error), 1);
		test_assert(maildir_uidlist_was_reset(r));
		maildir_uidlist_deinit(&r);
		maildir_uidlist_deinit(&ul);
		char path[600];
		snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
		unlink(path);
	}
}

/* Files written before append mode (V1, header uidnext current). */
static void test_uidlist_v1(void)
{
	const char *dir = mkdir_sub("ul9"), *error;
	char path[600];

	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
	FILE *f = fopen(path, "w");
	fputs("V1 77 10\n3 a S=1\n4 b\n", f);
	fclose(f);
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul, &error), 1);
	test_assert_int(maildir_uidlist_get_uidvalidity(ul), 77);
	test_assert_int(maildir_uidlist_count(ul), 2);
	test_assert_int(maildir_uidlist_get_next_uid(ul), 10);
	/* appended to as it is; a rewrite makes it V2 */
	test_assert_int(add_n(ul, "c", 1, true), 10);
	test_assert_int(add_n(ul, "d", 1, false), 11);
	f = fopen(path, "r");
	char line[64];
	test_assert(fgets(line, sizeof(line), f) != NULL);
	test_assert_str(line, "V1 77 10\n");
	fclose(f);
	test_assert(maildir_uidlist_lock(ul, &error) == 0);
	maildir_uidlist_get(ul, 0)->expunged = true;
	maildir_uidlist_set_dirty(ul);
	test_assert(maildir_uidlist_write(ul, &error) == 0);
	maildir_uidlist_unlock(ul);
	f = fopen(path, "r");
	test_assert(fgets(line, sizeof(line), f) != NULL);
	test_assert_str(line, "V2 77 12\n");
	fclose(f);
	maildir_uidlist_deinit(&ul);
}

/* The fields after a record's base as the reader has always taken them:
   separated by runs of spaces, at most six of them read, a well-formed
   S= or W= replaces an earlier one, a bad value (empty, not digits, too
   big, "S" without "=") leaves what was there. */
static void test_uidlist_rec_fields(void)
{
	const char *dir = mkdir_sub("ul10"), *error;
	char path[600];

	snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME, dir);
	FILE *f = fopen(path, "w");
	fputs("V2 55 20\n"
	      "1 a S=10   W=20\n"
	      "2 b S=x W= S=7\n"
	      "3 c S=5 S=6\n"
	      "4 d S=99999999999999999999 W=12a\n"
	      "5 e X=1 Y=2 Z=3 Q=4 R=5 T=6 S=9\n"
	      "6 f  S S= s=4 W=3\n"
	      "7 g\n", f);
	fclose(f);
	struct maildir_uidlist *ul = maildir_uidlist_init(dir, false);
	test_assert_int(maildir_uidlist_refresh(ul, &error), 1);
	test_assert_int(maildir_uidlist_count(ul), 7);
	static const struct {
		const char *base;
		uint64_t size, vsize;
	} want[] = {
		{ "a", 10, 20 },
		{ "b", 7, MAILDIR_SIZE_UNKNOWN },
		{ "c", 6, MAILDIR_SIZE_UNKNOWN },
		{ "d", MAILDIR_SIZE_UNKNOWN, MAILDIR_SIZE_UNKNOWN },
		{ "e", MAILDIR_SIZE_UNKNOWN, MAILDIR_SIZE_UNKNOWN },
		{ "f", MAILDIR_SIZE_UNKNOWN, 3 },
		{ "g", MAILDIR_SIZE_UNKNOWN, MAILDIR_SIZE_UNKNOWN },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(want); i++) {
		const struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul, i);
		test_assert_int(rec->uid, i + 1);
		test_assert_str(rec->base, want[i].base);
		test_assert(rec->size == want[i].size);
		test_assert(rec->vsize == want[i].vsize);
	}
	maildir_uidlist_deinit(&ul);
}

TEST_MAIN(TEST(test_uidlist_write_read), TEST(test_uidlist_monotonic),
	  TEST(test_uidlist_lock), TEST(test_uidlist_corrupt),
	  TEST(test_uidlist_big_write), TEST(test_uidlist_adopt_uidvalidity),
	  TEST(test_uidlist_append_mode), TEST(test_uidlist_torn_tail),
	  TEST(test_uidlist_v1), TEST(test_uidlist_rec_fields))
