/* Unit tests for what keeps re-opens cheap and the files small: appends
   sharing one log op, rotation of a log that moat.index covers, when
   .log.2 is kept, and cache compression after a big fill (automatic,
   identical values, crash states). */
#include "test-common.h"
#include "mail-index-private.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Messages of the "big" tests: enough for the compression bounds
   (MAIL_CACHE_COMPRESS_MIN_CHAINED). */
#define CKPT_TEST_MESSAGES 3000U
#define CKPT_TEST_PATH_MAX 600

static unsigned int flag_events;

static void ev_flags(void *ctx ATTR_UNUSED, uint32_t seq ATTR_UNUSED,
		     uint32_t uid ATTR_UNUSED)
{
	flag_events++;
}

static const struct mail_index_sync_callbacks ev_callbacks = {
	.flags_changed = ev_flags,
};

static const char *new_dir(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	if (mkdir(path, 0700) < 0)
		abort();
	return path;
}

/* A log's records end before its size: zeros are written ahead. */
static off_t log_used(const char *dir, const char *name)
{
	char path[CKPT_TEST_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return (off_t)test_log_used(path);
}

static off_t file_size(const char *dir, const char *name)
{
	char path[CKPT_TEST_PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) < 0 ? -1 : st.st_size;
}

static void sync_view(struct mail_index_view *view)
{
	const char *error;

	test_assert(mail_index_view_sync(view, &ev_callbacks, NULL, &error) == 0);
}

static void commit(struct mail_index_transaction **t)
{
	const char *error;

	test_assert(mail_index_transaction_commit(t, MAIL_INDEX_FSYNC_NEVER,
						  NULL, &error) == 0);
}

/* n appends in one commit, each with a "savedate" cache value (as a
   Maildir scan does). */
static void build(struct mail_index *index, unsigned int n)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	struct mail_index_status st;
	int64_t date;

	mail_index_view_get_status(index->view, &st);
	for (unsigned int i = 0; i < n; i++) {
		mail_index_append(t, st.next_uid + i, 0, 0, 1000 + i, 1700000000 + i);
		date = 1700000000 + (int64_t)i;
		test_assert(mail_cache_add(t, st.next_uid + i, "savedate",
					   &date, sizeof(date)) == 0);
	}
	commit(&t);
}

static void test_appends_share_one_op(void)
{
	const char *dir = new_dir("oneop"), *error;
	struct mail_index *index;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	off_t before = log_used(dir, MAIL_INDEX_LOG_FILE_NAME);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	for (unsigned int i = 0; i < 100; i++)
		mail_index_append(t, 0, 0, 0, 1, 1);
	commit(&t);
	/* one record: its header, one op header, 100 payloads */
	test_assert_int(log_used(dir, MAIL_INDEX_LOG_FILE_NAME) - before,
			sizeof(struct mail_transaction_rec_header) +
			sizeof(struct mail_transaction_op_header) +
			100 * sizeof(struct mail_transaction_append));
	struct mail_index_view *view = mail_index_view_open(index);
	sync_view(view);
	test_assert_int(mail_index_view_count(view), 100);
	test_assert_int(mail_index_view_lookup(view, 100)->uid, 100);
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* After a first build and its sync, moat.index holds everything, the log
   is a fresh empty file and the build's log is gone: a re-open reads the
   header and no log record. */
static void test_build_is_checkpointed(void)
{
	const char *dir = new_dir("build"), *error;
	struct mail_index *index;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	build(index, CKPT_TEST_MESSAGES);
	sync_view(view);
	mail_index_view_close(&view);
	mail_index_close(&index);

	test_assert_int(log_used(dir, MAIL_INDEX_LOG_FILE_NAME),
			sizeof(struct mail_transaction_log_header));
	test_assert_int(log_used(dir, MAIL_INDEX_LOG2_FILE_NAME), -1);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	test_assert(!mail_index_was_rebuilt(index));
	test_assert_int(index->cursor.file->hdr.file_seq, index->index_file_seq);
	test_assert_int(index->cursor.offset, index->index_file_offset);
	test_assert_int(index->map->hdr.messages_count, CKPT_TEST_MESSAGES);
	view = mail_index_view_open(index);
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A log that is small next to moat.index is kept as .log.2 when rotated:
   a reader a whole file behind follows it (and sees each change, which
   a reload's diff would not: a flag set and cleared again). */
static void test_small_log2_kept(void)
{
	const char *dir = new_dir("log2"), *error;
	struct mail_index *a, *b;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &a, &error) == 1);
	struct mail_index_view *va = mail_index_view_open(a);
	build(a, CKPT_TEST_MESSAGES);
	sync_view(va);
	test_assert(mail_index_open(dir, 0, &b, &error) == 1);
	struct mail_index_view *vb = mail_index_view_open(b);
	mail_index_set_limits(a, 4096, 1024);
	mail_index_set_limits(b, 1U << 30, 1U << 30);
	/* b reads its log to the end, then lags two rotations behind */
	sync_view(vb);
	struct mail_index_transaction *t = mail_index_transaction_begin(a);
	mail_index_update_flags(t, 1, 1, MAIL_SEEN, 0, 0, 0);
	commit(&t);
	t = mail_index_transaction_begin(a);
	mail_index_update_flags(t, 1, 1, 0, MAIL_SEEN, 0, 0);
	commit(&t);
	uint32_t first_seq = a->tail_cursor.file->hdr.file_seq;
	for (uint32_t uid = 2; a->cursor.file->hdr.file_seq < first_seq + 2; uid++) {
		t = mail_index_transaction_begin(a);
		mail_index_update_flags(t, uid, uid, MAIL_FLAGGED, 0, 0, 0);
		commit(&t);
		sync_view(va);
	}
	test_assert(log_used(dir, MAIL_INDEX_LOG2_FILE_NAME) > 0);
	flag_events = 0;
	sync_view(vb);
	/* uid 1 twice (a reload would report none), then each flagged uid */
	test_assert(flag_events >= 3);
	uint32_t flagged = flag_events - 2;
	test_assert_int(mail_index_view_lookup(vb, 1)->flags, 0);
	test_assert_int(mail_index_view_lookup(vb, flagged + 1)->flags, MAIL_FLAGGED);
	test_assert(mail_index_view_check(vb, &error));
	mail_index_view_close(&vb);
	mail_index_close(&b);
	mail_index_view_close(&va);
	mail_index_close(&a);
}

static bool values_intact(struct mail_index_view *view, bool with_envelope)
{
	uint32_t count = mail_index_view_count(view);
	const void *data;
	size_t size;
	char want[64];
	int64_t date;

	for (uint32_t seq = 1; seq <= count; seq++) {
		uint32_t uid = mail_index_view_lookup(view, seq)->uid;
		if (mail_cache_lookup(view, seq, "savedate", &data, &size) != 1 ||
		    size != sizeof(date))
			return false;
		memcpy(&date, data, sizeof(date));
		if (date != 1700000000 + (int64_t)uid - 1)
			return false;
		if (!with_envelope)
			continue;
		int len = snprintf(want, sizeof(want), "(envelope of %u)", uid);
		if (mail_cache_lookup(view, seq, "imap.envelope", &data, &size) != 1 ||
		    size != (size_t)len || memcmp(data, want, size) != 0)
			return false;
	}
	return true;
}

static void fill_envelopes(struct mail_index *index, uint32_t count)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	char value[64];

	for (uint32_t uid = 1; uid <= count; uid++) {
		int len = snprintf(value, sizeof(value), "(envelope of %u)", uid);
		test_assert(mail_cache_add(t, uid, "imap.envelope", value,
					   (size_t)len) == 0);
	}
	commit(&t);
}

/* A FETCH-like fill of records that chain to the savedate records makes
   the next sync compress: one record per message, same values. */
static void test_compress_after_fill(void)
{
	const char *dir = new_dir("compress"), *error;
	struct mail_index *index;
	uint64_t size, used;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	build(index, CKPT_TEST_MESSAGES);
	sync_view(view);
	test_assert(values_intact(view, false));
	fill_envelopes(index, CKPT_TEST_MESSAGES);
	off_t before = file_size(dir, MAIL_INDEX_CACHE_FILE_NAME);
	sync_view(view);
	test_assert(values_intact(view, true));
	off_t after = file_size(dir, MAIL_INDEX_CACHE_FILE_NAME);
	/* a record header less per message (format 2: a crc and two
	   LEB128 sizes, at least 6 bytes) */
	test_assert(after <= before - 6 * (off_t)CKPT_TEST_MESSAGES);
	mail_cache_get_usage(view, &size, &used);
	test_assert_int(size, used);
	mail_index_view_close(&view);
	mail_index_close(&index);

	/* and so does a new handle */
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	test_assert(values_intact(view, true));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* The states a crash during compression can leave: a stale .tmp (before
   the rename) and a renamed file the log does not name yet (before the
   log record). Both read as the old values or as misses, never wrong;
   writes go on. */
static void test_compress_crash_states(void)
{
	const char *dir = new_dir("crash"), *error;
	char path[CKPT_TEST_PATH_MAX];
	struct mail_index *index;

	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	mail_index_set_limits(index, 1U << 30, 1U << 30);
	struct mail_index_view *view = mail_index_view_open(index);
	build(index, CKPT_TEST_MESSAGES);
	sync_view(view);
	/* crash before the rename: garbage in the .tmp */
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, MAIL_INDEX_CACHE_FILE_NAME);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	test_assert(fd >= 0 && write(fd, "garbage", 7) == 7);
	i_close_fd(&fd);
	test_assert(values_intact(view, false));
	/* crash after the rename: cut the log record that names the file */
	off_t log_size = log_used(dir, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(mail_cache_compress(view, &error) == 1);
	test_assert(log_used(dir, MAIL_INDEX_LOG_FILE_NAME) > log_size);
	snprintf(path, sizeof(path), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(truncate(path, log_size) == 0);
	mail_index_view_close(&view);
	mail_index_close(&index);

	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	const void *data;
	size_t size;
	for (uint32_t seq = 1; seq <= CKPT_TEST_MESSAGES; seq++)
		test_assert(mail_cache_lookup(view, seq, "savedate", &data, &size) == 0);
	/* a new write starts a new file and is found */
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	test_assert(mail_cache_add(t, 5, "imap.envelope", "(e)", 3) == 0);
	commit(&t);
	sync_view(view);
	test_assert(mail_cache_lookup(view, 5, "imap.envelope", &data, &size) == 1);
	test_assert(size == 3 && memcmp(data, "(e)", 3) == 0);
	test_assert(mail_index_view_check(view, &error));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

TEST_MAIN(TEST(test_appends_share_one_op), TEST(test_build_is_checkpointed),
	  TEST(test_small_log2_kept), TEST(test_compress_after_fill),
	  TEST(test_compress_crash_states))
