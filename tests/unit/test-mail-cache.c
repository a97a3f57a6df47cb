/* Unit tests for moat.index.cache: add/lookup, chains, garbage, deletion,
   compression. */
#include "test-common.h"
#include "mail-index.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

static char dir_buf[600], cache_path[700];

static const char *new_dir(const char *name)
{
	snprintf(dir_buf, sizeof(dir_buf), "%s/%s", test_tmpdir(), name);
	if (mkdir(dir_buf, 0700) < 0)
		abort();
	snprintf(cache_path, sizeof(cache_path), "%s/%s", dir_buf,
		 MAIL_INDEX_CACHE_FILE_NAME);
	return dir_buf;
}

static void commit(struct mail_index_transaction **t)
{
	const char *error;

	test_assert(mail_index_transaction_commit(t, MAIL_INDEX_FSYNC_NEVER,
						  NULL, &error) == 0);
}

static void sync_view(struct mail_index_view *view)
{
	const char *error;

	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
}

static bool lookup_is(struct mail_index_view *view, uint32_t seq,
		      const char *field, const char *want)
{
	const void *data;
	size_t size;

	if (mail_cache_lookup(view, seq, field, &data, &size) != 1)
		return want == NULL;
	return want != NULL && size == strlen(want) && memcmp(data, want, size) == 0;
}

static void add_field(struct mail_index *index, uint32_t uid, const char *field,
		      const char *value)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);

	test_assert(mail_cache_add(t, uid, field, value, strlen(value)) == 0);
	commit(&t);
}

static struct mail_index_view *setup(const char *name, struct mail_index **index_r,
				     unsigned int count)
{
	const char *error;

	test_assert(mail_index_open(new_dir(name), MAIL_INDEX_OPEN_CREATE,
				    index_r, &error) == 1);
	struct mail_index_transaction *t = mail_index_transaction_begin(*index_r);
	for (unsigned int i = 0; i < count; i++)
		mail_index_append(t, 0, 0, 0, 100, 100);
	commit(&t);
	struct mail_index_view *view = mail_index_view_open(*index_r);
	sync_view(view);
	return view;
}

static void test_add_lookup(void)
{
	struct mail_index *index, *other;
	const char *error;
	struct mail_index_view *view = setup("basic", &index, 3);

	test_assert(lookup_is(view, 1, "envelope", NULL));
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	test_assert(mail_cache_add(t, 1, "envelope", "(env one)", 9) == 0);
	test_assert(mail_cache_add(t, 1, "bodystructure", "(bs one)", 8) == 0);
	test_assert(mail_cache_add(t, 2, "envelope", "(env two)", 9) == 0);
	test_assert(mail_cache_add(t, 2, "an-overly-long-field-name-for-the-cache", "x", 1) < 0);
	test_assert(mail_cache_add(t, 0, "envelope", "x", 1) < 0);
	commit(&t);
	/* Not visible before the view syncs. */
	test_assert(lookup_is(view, 1, "envelope", NULL));
	sync_view(view);
	test_assert(lookup_is(view, 1, "envelope", "(env one)"));
	test_assert(lookup_is(view, 1, "bodystructure", "(bs one)"));
	test_assert(lookup_is(view, 2, "envelope", "(env two)"));
	test_assert(lookup_is(view, 2, "bodystructure", NULL));
	test_assert(lookup_is(view, 3, "envelope", NULL));
	test_assert(lookup_is(view, 1, "hdr.subject", NULL));

	/* A later add chains to the older record; the newest value wins. */
	add_field(index, 2, "hdr.subject", "hello");
	add_field(index, 2, "envelope", "(env two b)");
	sync_view(view);
	test_assert(lookup_is(view, 2, "hdr.subject", "hello"));
	test_assert(lookup_is(view, 2, "envelope", "(env two b)"));

	/* Another handle sees the same. */
	test_assert(mail_index_open(dir_buf, 0, &other, &error) == 1);
	struct mail_index_view *v2 = mail_index_view_open(other);
	test_assert(lookup_is(v2, 2, "envelope", "(env two b)"));
	test_assert(lookup_is(v2, 1, "bodystructure", "(bs one)"));
	mail_index_view_close(&v2);
	mail_index_close(&other);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void test_garbage_and_delete(void)
{
	struct mail_index *index;
	struct mail_index_view *view = setup("garbage", &index, 50);

	for (uint32_t uid = 1; uid <= 50; uid++)
		add_field(index, uid, "envelope", "(some envelope)");
	sync_view(view);
	test_assert(lookup_is(view, 50, "envelope", "(some envelope)"));

	/* Scribble over the records (not the header): every lookup is a
	   valid value or a miss. */
	int fd = open(cache_path, O_RDWR);
	struct stat st;
	test_assert(fd >= 0 && fstat(fd, &st) == 0);
	unsigned int seed = 1;
	for (off_t off = 3000; off < st.st_size; off += 7) {
		unsigned char c = (unsigned char)rand_r(&seed);
		test_assert(pwrite(fd, &c, 1, off) == 1);
	}
	close(fd);
	unsigned int hits = 0;
	for (uint32_t seq = 1; seq <= 50; seq++) {
		const void *data;
		size_t size;
		if (mail_cache_lookup(view, seq, "envelope", &data, &size) == 1) {
			hits++;
			test_assert(size == 15 && memcmp(data, "(some envelope)", 15) == 0);
		}
	}
	test_assert(hits < 50);

	/* Garbled header: a writer notices and starts a new file. */
	fd = open(cache_path, O_RDWR);
	test_assert(pwrite(fd, "XXXX", 4, 0) == 4);
	close(fd);
	add_field(index, 3, "envelope", "(fresh)");
	sync_view(view);
	test_assert(lookup_is(view, 3, "envelope", "(fresh)"));
	test_assert(lookup_is(view, 4, "envelope", NULL));

	/* Deleted: misses, then a new file. */
	test_assert(unlink(cache_path) == 0);
	sync_view(view);
	add_field(index, 5, "envelope", "(five)");
	sync_view(view);
	test_assert(lookup_is(view, 5, "envelope", "(five)"));
	test_assert(lookup_is(view, 3, "envelope", NULL));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void test_compress(void)
{
	struct mail_index *index;
	const char *error;
	uint64_t file_size, used, file_size2, used2;
	char value[64];
	struct mail_index_view *view = setup("compress", &index, 100);

	for (unsigned int round = 0; round < 5; round++) {
		struct mail_index_transaction *t = mail_index_transaction_begin(index);
		for (uint32_t uid = 1; uid <= 100; uid++) {
			snprintf(value, sizeof(value), "value %u round %u", uid, round);
			test_assert(mail_cache_add(t, uid, "sort.date", value, strlen(value)) == 0);
			if (round == 0)
				test_assert(mail_cache_add(t, uid, "envelope", "(e)", 3) == 0);
		}
		commit(&t);
	}
	sync_view(view);
	mail_cache_get_usage(view, &file_size, &used);
	test_assert(file_size > 0 && used <= file_size);
	test_assert(mail_cache_compress(view, &error) == 1);
	sync_view(view);
	mail_cache_get_usage(view, &file_size2, &used2);
	test_assert(file_size2 < file_size / 2);
	test_assert(used2 == file_size2);
	for (uint32_t seq = 1; seq <= 100; seq++) {
		snprintf(value, sizeof(value), "value %u round 4", seq);
		test_assert(lookup_is(view, seq, "sort.date", value));
		test_assert(lookup_is(view, seq, "envelope", "(e)"));
	}
	/* Expunged messages are dropped by the next compression. */
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_expunge(t, 1, 90);
	commit(&t);
	sync_view(view);
	test_assert(mail_cache_compress(view, &error) == 1);
	sync_view(view);
	mail_cache_get_usage(view, &file_size, &used);
	test_assert(file_size < file_size2 / 2);
	test_assert(lookup_is(view, 10, "envelope", "(e)"));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

TEST_MAIN(TEST(test_add_lookup), TEST(test_garbage_and_delete), TEST(test_compress))
