/* Unit tests: maildir-uidlist.c */
#include "test-common.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"

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

TEST_MAIN(TEST(test_uidlist_write_read), TEST(test_uidlist_monotonic),
	  TEST(test_uidlist_lock), TEST(test_uidlist_corrupt),
	  TEST(test_uidlist_big_write), TEST(test_uidlist_adopt_uidvalidity))
