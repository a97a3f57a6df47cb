/* Unit tests for moat.index.cache: add/lookup, chains, garbage, deletion,
   compression, the record framing (sizes, long values, records moved to
   another message, a file of the older version, random images). */
#include "test-common.h"
#include "mail-index.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

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

static off_t cache_size(void)
{
	struct stat st;

	test_assert(stat(cache_path, &st) == 0);
	return st.st_size;
}

/* The framing is part of the 400-bytes-a-message budget: a record of one
   short field costs crc 4 + size 1 + prev 1 + field index 1 + length 1. */
static void test_record_size(void)
{
	struct mail_index *index;
	const char *error;
	char value[16];
	struct mail_index_view *view = setup("recsize", &index, 100);

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	for (uint32_t uid = 1; uid <= 100; uid++) {
		snprintf(value, sizeof(value), "value %04u", uid);
		test_assert(mail_cache_add(t, uid, "envelope", value, 10) == 0);
	}
	commit(&t);
	sync_view(view);
	test_assert_int(cache_size() - 2072, 100 * (8 + 10));
	/* a chained record adds its delta; the newest value wins */
	add_field(index, 7, "sort.date", "(d)");
	sync_view(view);
	test_assert_int(cache_size() - 2072, 100 * 18 + 4 + 1 + 2 + 2 + 3);
	test_assert(lookup_is(view, 7, "sort.date", "(d)"));
	test_assert(lookup_is(view, 7, "envelope", "value 0007"));
	/* compression merges the two into one record */
	test_assert(mail_cache_compress(view, &error) == 1);
	sync_view(view);
	test_assert_int(cache_size() - 2072, 100 * 18 + 2 + 3);
	test_assert(lookup_is(view, 7, "sort.date", "(d)"));
	test_assert(lookup_is(view, 7, "envelope", "value 0007"));
	test_assert(lookup_is(view, 100, "envelope", "value 0100"));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* Values around the LEB128 length steps, up to the largest allowed. */
static void test_long_values(void)
{
	static const size_t sizes[] = {
		0, 1, 127, 128, 16383, 16384, MAIL_CACHE_FIELD_MAX_SIZE
	};
	const unsigned int count = N_ELEMENTS(sizes);
	struct mail_index *index;
	const char *error;
	struct mail_index_view *view = setup("long", &index, count);
	unsigned char *value = i_malloc(MAIL_CACHE_FIELD_MAX_SIZE + 1);

	for (unsigned int i = 0; i < count; i++) {
		struct mail_index_transaction *t = mail_index_transaction_begin(index);
		memset(value, 'a' + (int)i, sizes[i]);
		test_assert(mail_cache_add(t, i + 1, "body", value, sizes[i]) == 0);
		test_assert(mail_cache_add(t, i + 1, "envelope", "(e)", 3) == 0);
		test_assert(mail_cache_add(t, i + 1, "big", value,
					   MAIL_CACHE_FIELD_MAX_SIZE + 1) < 0);
		commit(&t);
	}
	sync_view(view);
	for (unsigned int round = 0; round < 2; round++) {
		for (unsigned int i = 0; i < count; i++) {
			const void *data;
			size_t size;
			memset(value, 'a' + (int)i, sizes[i]);
			test_assert(mail_cache_lookup(view, i + 1, "body", &data, &size) == 1);
			test_assert(size == sizes[i] && memcmp(data, value, size) == 0);
			test_assert(lookup_is(view, i + 1, "envelope", "(e)"));
		}
		test_assert(mail_cache_compress(view, &error) == 1);
		sync_view(view);
	}
	i_free(value);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* The uid is not stored but is in the crc: a record moved under another
   message's offset is a miss, as if garbled. */
static void test_record_of_another_uid(void)
{
	struct mail_index *index;
	struct mail_index_view *view = setup("otheruid", &index, 2);
	unsigned char a[64], b[64];

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	test_assert(mail_cache_add(t, 1, "envelope", "(one)", 5) == 0);
	test_assert(mail_cache_add(t, 2, "envelope", "(two)", 5) == 0);
	commit(&t);
	sync_view(view);
	test_assert(lookup_is(view, 1, "envelope", "(one)"));
	test_assert(lookup_is(view, 2, "envelope", "(two)"));
	/* two records of 4 + 1 + 1 + 1 + 1 + 5 bytes: swap them */
	const size_t rec = 13;
	int fd = open(cache_path, O_RDWR);
	test_assert(fd >= 0 && cache_size() == 2072 + 2 * (off_t)rec);
	test_assert(pread(fd, a, rec, 2072) == (ssize_t)rec);
	test_assert(pread(fd, b, rec, 2072 + rec) == (ssize_t)rec);
	test_assert(pwrite(fd, b, rec, 2072) == (ssize_t)rec);
	test_assert(pwrite(fd, a, rec, 2072 + rec) == (ssize_t)rec);
	close(fd);
	test_assert(lookup_is(view, 1, "envelope", NULL));
	test_assert(lookup_is(view, 2, "envelope", NULL));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* Each record's crc is checked once per message's run of lookups: a
   record garbled after it was read is caught once another message was
   looked up in between (as FETCH goes from message to message). */
static void test_crc_memo(void)
{
	struct mail_index *index;
	struct mail_index_view *view = setup("memo", &index, 2);

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	test_assert(mail_cache_add(t, 1, "envelope", "(one)", 5) == 0);
	test_assert(mail_cache_add(t, 1, "bodystructure", "(bs)", 4) == 0);
	test_assert(mail_cache_add(t, 2, "envelope", "(two)", 5) == 0);
	commit(&t);
	add_field(index, 1, "hdr.subject", "subj");
	sync_view(view);
	/* several fields of message 1, across its chain of two records */
	test_assert(lookup_is(view, 1, "envelope", "(one)"));
	test_assert(lookup_is(view, 1, "hdr.subject", "subj"));
	test_assert(lookup_is(view, 1, "bodystructure", "(bs)"));
	test_assert(lookup_is(view, 1, "sort.date", NULL));
	/* garble the value of message 1's first record in place */
	int fd = open(cache_path, O_RDWR);
	test_assert(fd >= 0 && pwrite(fd, "X", 1, 2072 + 4 + 1 + 1 + 3) == 1);
	close(fd);
	test_assert(lookup_is(view, 2, "envelope", "(two)"));
	test_assert(lookup_is(view, 1, "envelope", NULL));
	test_assert(lookup_is(view, 1, "hdr.subject", "subj"));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A file of an older version (2: the records' crc was zlib's crc32; 1:
   another framing) is never read: misses, and the next write starts a
   file of the current version. */
static void test_older_version(void)
{
	struct mail_index *index, *other;
	const char *error;
	unsigned char hdr[2072];
	uint32_t crc = 0;
	struct mail_index_view *view = setup("oldver", &index, 3);

	add_field(index, 1, "envelope", "(one)");
	sync_view(view);
	test_assert(lookup_is(view, 1, "envelope", "(one)"));
	int fd = open(cache_path, O_RDWR);
	test_assert(fd >= 0 && pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	test_assert(hdr[4] == 3);
	hdr[4] = 2;
	memcpy(hdr + 20, &crc, sizeof(crc));
	crc = (uint32_t)crc32(0L, hdr, sizeof(hdr));
	memcpy(hdr + 20, &crc, sizeof(crc));
	test_assert(pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	close(fd);

	test_assert(mail_index_open(dir_buf, 0, &other, &error) == 1);
	struct mail_index_view *v2 = mail_index_view_open(other);
	test_assert(lookup_is(v2, 1, "envelope", NULL));
	add_field(other, 2, "envelope", "(two)");
	sync_view(v2);
	test_assert(lookup_is(v2, 2, "envelope", "(two)"));
	test_assert(lookup_is(v2, 1, "envelope", NULL));
	fd = open(cache_path, O_RDONLY);
	test_assert(fd >= 0 && pread(fd, hdr, 8, 0) == 8 && hdr[4] == 3);
	close(fd);
	mail_index_view_close(&v2);
	mail_index_close(&other);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* Generated images: a real file cut at every length and with bytes
   flipped, and random record bytes, walk without reading out of bounds
   (the sanitizer build checks) and never count more records than written. */
static void test_check_mem_images(void)
{
	struct mail_index *index;
	struct mail_index_view *view = setup("images", &index, 20);
	unsigned int seed = 7;
	char value[300];

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	for (uint32_t uid = 1; uid <= 20; uid++) {
		size_t len = (size_t)(uid * 13) % sizeof(value);
		memset(value, 'x', len);
		test_assert(mail_cache_add(t, uid, "envelope", value, len) == 0);
		test_assert(mail_cache_add(t, uid, "hdr.subject", "s", 1) == 0);
	}
	commit(&t);
	size_t size = (size_t)cache_size();
	unsigned char *image = i_malloc(size);
	int fd = open(cache_path, O_RDONLY);
	test_assert(fd >= 0 && pread(fd, image, size, 0) == (ssize_t)size);
	close(fd);
	test_assert_int(mail_cache_check_mem(image, size), 20);
	for (size_t cut = 0; cut < size; cut++) {
		/* a copy of exactly cut bytes, so ASan sees any overread */
		unsigned char *copy = i_malloc(cut + 1);
		memcpy(copy, image, cut);
		test_assert(mail_cache_check_mem(copy, cut) <= 20);
		i_free(copy);
	}
	for (unsigned int round = 0; round < 2000; round++) {
		unsigned char *copy = i_malloc(size);
		memcpy(copy, image, size);
		for (unsigned int n = 0; n < 4; n++) {
			size_t at = 2072 + (size_t)rand_r(&seed) % (size - 2072);
			copy[at] = (unsigned char)rand_r(&seed);
		}
		(void)mail_cache_check_mem(copy, size);
		i_free(copy);
	}
	for (size_t i = 2072; i < size; i++)
		image[i] = (unsigned char)rand_r(&seed);
	(void)mail_cache_check_mem(image, size);
	i_free(image);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

TEST_MAIN(TEST(test_add_lookup), TEST(test_garbage_and_delete), TEST(test_compress),
	  TEST(test_record_size), TEST(test_long_values),
	  TEST(test_record_of_another_uid), TEST(test_crc_memo),
	  TEST(test_older_version),
	  TEST(test_check_mem_images))
