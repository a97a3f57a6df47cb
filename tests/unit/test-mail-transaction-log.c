/* Unit tests for moat.index.log: header checks, record framing and crc,
   torn tails and garbled records, replay through the index. */
#include "test-common.h"
#include "mail-index.h"
#include "mail-transaction-log.h"

#include <fcntl.h>
#include <sys/stat.h>

static char path_buf[600];

static const char *tmp_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", test_tmpdir(), name);
	return path_buf;
}

static void test_header(void)
{
	struct mail_transaction_log_header hdr;
	const char *error;

	mail_transaction_log_header_init(&hdr, 7, 6, 0, 1234, 99);
	test_assert(mail_transaction_log_header_is_valid(&hdr, &error));
	hdr.uidvalidity++;
	test_assert(!mail_transaction_log_header_is_valid(&hdr, &error));
	test_assert_str(error, "header crc mismatch");
	mail_transaction_log_header_init(&hdr, 7, 6, 0, 1234, 99);
	hdr.magic = 0;
	test_assert(!mail_transaction_log_header_is_valid(&hdr, &error));
	mail_transaction_log_header_init(&hdr, 0, 0, 0, 1234, 99);
	test_assert(!mail_transaction_log_header_is_valid(&hdr, &error));
}

static void build_rec(buffer_t *rec, uint32_t uid, uint64_t modseq)
{
	struct mail_transaction_append a;
	struct mail_transaction_range r = { uid, uid };

	memset(&a, 0, sizeof(a));
	a.uid = uid;
	buffer_reset(rec);
	mail_transaction_rec_begin(rec);
	mail_transaction_rec_add_op(rec, MAIL_TRANSACTION_APPEND, &a, sizeof(a));
	mail_transaction_rec_add_op(rec, MAIL_TRANSACTION_EXPUNGE, &r, sizeof(r));
	mail_transaction_rec_add_op(rec, MAIL_TRANSACTION_KEYWORD, "\0\0\0\0odd", 7);
	mail_transaction_rec_finish(rec, modseq);
}

static void test_append_read(void)
{
	struct mail_transaction_log_header hdr;
	struct mail_transaction_log_file *file, *file2;
	buffer_t rec, out;
	const char *error;
	bool garbled;

	mail_transaction_log_header_init(&hdr, 1, 0, 0, 1, 0);
	test_assert(mail_transaction_log_file_create(tmp_path("log1"), &hdr, false,
						     true, &file, &error) == 0);
	/* O_EXCL: a second creator fails */
	test_assert(mail_transaction_log_file_create(tmp_path("log1"), &hdr, false,
						     true, &file2, &error) < 0);
	buffer_init(&rec, 4096);
	buffer_init(&out, MAIL_TRANSACTION_MAX_SIZE);
	uint32_t offset = sizeof(hdr), ends[3];
	for (unsigned int i = 0; i < 3; i++) {
		build_rec(&rec, i + 1, i + 10);
		test_assert(rec.used % 4 == 0);
		test_assert(mail_transaction_log_append(file, offset, &rec, &error) == 0);
		offset += (uint32_t)rec.used;
		ends[i] = offset;
	}
	test_assert(mail_transaction_log_file_open(tmp_path("log1"), true, &file2, &error) == 1);
	test_assert_int(file2->hdr.file_seq, 1);
	uint32_t pos = sizeof(hdr);
	for (unsigned int i = 0; i < 3; i++) {
		test_assert(mail_transaction_log_read(file2, &pos, &out, &garbled, &error) == 1);
		test_assert_int(pos, ends[i]);
		struct mail_transaction_op_iter iter;
		const struct mail_transaction_op_header *op;
		const void *payload;
		unsigned int n = 0;
		mail_transaction_op_iter_init(&iter, out.data, out.used);
		while (mail_transaction_op_next(&iter, &op, &payload))
			n++;
		test_assert_int(n, 3);
	}
	test_assert(mail_transaction_log_read(file2, &pos, &out, &garbled, &error) == 0);
	test_assert(!garbled);

	/* Torn tail: half of the last record. */
	test_assert(mail_transaction_log_truncate(file, ends[2] - 10, &error) == 0);
	pos = ends[1];
	test_assert(mail_transaction_log_read(file2, &pos, &out, &garbled, &error) == 0);
	test_assert(garbled);
	test_assert_int(pos, ends[1]);
	/* A flipped byte inside record 2: crc mismatch. */
	unsigned char c = 0xff;
	test_assert(pwrite(file->fd, &c, 1, ends[0] + 20) == 1);
	pos = ends[0];
	test_assert(mail_transaction_log_read(file2, &pos, &out, &garbled, &error) == 0);
	test_assert(garbled);
	/* Garbage size field. */
	uint32_t big = 0x7ffffff0;
	test_assert(pwrite(file->fd, &big, 4, ends[0]) == 4);
	test_assert(mail_transaction_log_read(file2, &pos, &out, &garbled, &error) == 0);
	test_assert(garbled);
	mail_transaction_log_file_unref(&file);
	mail_transaction_log_file_unref(&file2);
	buffer_free(&rec);
	buffer_free(&out);
}

static void test_rec_validation(void)
{
	buffer_t rec;

	buffer_init(&rec, 4096);
	build_rec(&rec, 5, 1);
	test_assert(mail_transaction_rec_is_valid(rec.data, rec.used));
	test_assert(!mail_transaction_rec_is_valid(rec.data, rec.used - 4));
	test_assert(!mail_transaction_rec_is_valid(rec.data, 3));
	/* An op claiming more than the record holds. */
	struct mail_transaction_op_header op;
	memcpy(&op, rec.data + sizeof(struct mail_transaction_rec_header), sizeof(op));
	op.size = 4096;
	memcpy(rec.data + sizeof(struct mail_transaction_rec_header), &op, sizeof(op));
	mail_transaction_rec_finish(&rec, 1);
	test_assert(!mail_transaction_rec_is_valid(rec.data, rec.used));
	buffer_free(&rec);
}

/* A crashed writer left half a record: readers stop before it, the next
   writer cuts it and appends after the last good record. */
static void test_torn_tail_in_index(void)
{
	const char *dir = tmp_path("torn"), *error;
	struct mail_index *index;
	struct mail_index_commit_result res;
	struct stat st;
	char logpath[700];

	test_assert(mkdir(dir, 0700) == 0);
	snprintf(logpath, sizeof(logpath), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_append(t, 0, MAIL_SEEN, 0, 10, 10);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	mail_index_close(&index);
	test_assert(stat(logpath, &st) == 0);
	/* the torn record starts where the records end (the zeros written
	   ahead of them are overwritten, as a real append would) */
	off_t good = (off_t)res.log_file_offset;
	test_assert_int(test_log_used(logpath), good);
	int fd = open(logpath, O_WRONLY);
	static const unsigned char junk[] = { 0x40, 0, 0, 0, 1, 2, 3, 4, 5, 6 };
	test_assert(pwrite(fd, junk, sizeof(junk), good) == (ssize_t)sizeof(junk));
	close(fd);

	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 1);
	t = mail_index_transaction_begin(index);
	mail_index_append(t, 0, 0, 0, 10, 10);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	test_assert_int(res.first_uid, 2);
	test_assert_int(res.log_file_offset > good, 1);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	test_assert_int(mail_index_view_count(view), 2);
	mail_index_view_close(&view);
	mail_index_close(&index);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 2);
	test_assert_int(mail_index_view_lookup(view, 1)->flags, MAIL_SEEN);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* Appends write zeros ahead of the records, so that the next appends
   overwrite blocks the file has (their fdatasync commits no metadata):
   the records end before the file does, readers and the next writer
   find their end, and few appends grow the file. */
static void test_zeros_ahead(void)
{
	const char *dir = tmp_path("ahead"), *error;
	struct mail_index *index;
	struct mail_index_commit_result res;
	struct stat st;
	char logpath[700];

	test_assert(mkdir(dir, 0700) == 0);
	snprintf(logpath, sizeof(logpath), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	test_assert(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) == 1);
	struct mail_index_view *view = mail_index_view_open(index);
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_append(t, 0, 0, 0, 10, 10);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	test_assert(stat(logpath, &st) == 0);
	off_t size = st.st_size;
	test_assert(size >= (off_t)res.log_file_offset + 4096);
	test_assert_int(test_log_used(logpath), res.log_file_offset);
	/* flag changes: each lands at the end of the records, and the file
	   does not grow for them */
	uint32_t end = res.log_file_offset;
	for (unsigned int i = 0; i < 50; i++) {
		t = mail_index_transaction_begin(index);
		mail_index_update_flags(t, 1, 1, (i % 2) ? MAIL_SEEN : 0,
					(i % 2) ? 0 : MAIL_SEEN, 0, 0);
		test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
		test_assert(res.log_file_offset > end);
		end = res.log_file_offset;
	}
	test_assert(stat(logpath, &st) == 0 && st.st_size == size);
	test_assert_int(test_log_used(logpath), end);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	test_assert_int(mail_index_view_count(view), 1);
	test_assert_int(mail_index_view_lookup(view, 1)->flags, MAIL_SEEN);
	mail_index_view_close(&view);
	mail_index_close(&index);
	/* another handle reads every record and appends after them */
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	test_assert_int(mail_index_view_lookup(view, 1)->flags, MAIL_SEEN);
	t = mail_index_transaction_begin(index);
	mail_index_append(t, 0, 0, 0, 10, 10);
	test_assert(mail_index_transaction_commit(&t, 0, &res, &error) == 0);
	test_assert_int(res.first_uid, 2);
	test_assert_int(test_log_used(logpath), res.log_file_offset);
	mail_index_view_close(&view);
	mail_index_close(&index);
	test_assert(mail_index_open(dir, 0, &index, &error) == 1);
	view = mail_index_view_open(index);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	test_assert_int(mail_index_view_count(view), 2);
	test_assert(!mail_index_was_rebuilt(index));
	mail_index_view_close(&view);
	mail_index_close(&index);
}

/* A reader that reached the end reads what is appended there later
   (over the zeros written ahead), a record bigger than any read buffer,
   a torn record as garbled and the record that replaces it once it is
   cut; two handles of the file read the same records in turn; batches
   of records of many sizes come back in order. (Guards
   any buffering of mail_transaction_log_read(): a read-ahead was tried
   and measured no faster, doc/performance.md.) */
static uint64_t read_modseq(struct mail_transaction_log_file *file,
			    uint32_t *pos, buffer_t *out)
{
	struct mail_transaction_rec_header h;
	const char *error;
	bool garbled;

	if (mail_transaction_log_read(file, pos, out, &garbled, &error) != 1)
		return 0;
	memcpy(&h, out->data, sizeof(h));
	return h.modseq;
}

static void test_read_after_changes(void)
{
	struct mail_transaction_log_header hdr;
	struct mail_transaction_log_file *writer, *reader;
	buffer_t rec, out;
	const char *error;
	bool garbled;

	mail_transaction_log_header_init(&hdr, 1, 0, 0, 1, 0);
	test_assert(mail_transaction_log_file_create(tmp_path("changes"), &hdr,
						     false, true, &writer,
						     &error) == 0);
	test_assert(mail_transaction_log_file_open(tmp_path("changes"), true,
						   &reader, &error) == 1);
	buffer_init(&rec, MAIL_TRANSACTION_MAX_SIZE);
	buffer_init(&out, MAIL_TRANSACTION_MAX_SIZE);
	uint32_t end = sizeof(hdr), pos = sizeof(hdr);
	for (unsigned int i = 1; i <= 3; i++) {
		build_rec(&rec, i, i);
		test_assert(mail_transaction_log_append(writer, end, &rec,
							&error) == 0);
		end += (uint32_t)rec.used;
	}
	for (unsigned int i = 1; i <= 3; i++)
		test_assert_int(read_modseq(reader, &pos, &out), i);
	test_assert_int(pos, end);
	test_assert(mail_transaction_log_read(reader, &pos, &out, &garbled,
					      &error) == 0 && !garbled);
	/* appended where the reader saw the zeros ahead */
	build_rec(&rec, 4, 4);
	test_assert(mail_transaction_log_append(writer, end, &rec, &error) == 0);
	end += (uint32_t)rec.used;
	test_assert_int(read_modseq(reader, &pos, &out), 4);
	/* a record bigger than the read-ahead */
	buffer_reset(&rec);
	mail_transaction_rec_begin(&rec);
	static unsigned char big[20000];
	memset(big, 'k', sizeof(big));
	mail_transaction_rec_add_op(&rec, MAIL_TRANSACTION_KEYWORD, big,
				    sizeof(big));
	mail_transaction_rec_finish(&rec, 5);
	test_assert(mail_transaction_log_append(writer, end, &rec, &error) == 0);
	end += (uint32_t)rec.used;
	test_assert_int(read_modseq(reader, &pos, &out), 5);
	test_assert_int(out.used, rec.used);
	test_assert_int(pos, end);
	/* a torn record: garbled; cut, then another record in its place */
	build_rec(&rec, 6, 6);
	test_assert(pwrite(writer->fd, rec.data, rec.used - 8, end) ==
		    (ssize_t)rec.used - 8);
	test_assert(mail_transaction_log_read(reader, &pos, &out, &garbled,
					      &error) == 0 && garbled);
	test_assert(mail_transaction_log_truncate(writer, end, &error) == 0);
	build_rec(&rec, 7, 7);
	test_assert(mail_transaction_log_append(writer, end, &rec, &error) == 0);
	test_assert_int(read_modseq(reader, &pos, &out), 7);
	/* the writer's handle reads them too, in turn with the reader */
	uint32_t wpos = sizeof(hdr), rpos = sizeof(hdr);
	for (unsigned int i = 1; i <= 5; i++) {
		test_assert_int(read_modseq(writer, &wpos, &out), i);
		test_assert_int(read_modseq(reader, &rpos, &out), i);
	}
	test_assert_int(read_modseq(writer, &wpos, &out), 7);
	test_assert_int(read_modseq(reader, &rpos, &out), 7);
	test_assert_int(wpos, pos);
	test_assert_int(rpos, pos);
	/* batches of records of many sizes (a keyword op of 1-300 bytes),
	   the reader catching up after each batch */
	static unsigned char kw[300];
	memset(kw, 'w', sizeof(kw));
	end = pos;
	uint64_t modseq = 100;
	for (unsigned int batch = 1; batch <= 20; batch++) {
		uint64_t first = modseq + 1;
		for (unsigned int i = 0; i < batch * 3; i++) {
			buffer_reset(&rec);
			mail_transaction_rec_begin(&rec);
			mail_transaction_rec_add_op(&rec, MAIL_TRANSACTION_KEYWORD,
						    kw, 1 + (modseq * 37) % 300);
			mail_transaction_rec_finish(&rec, ++modseq);
			test_assert(mail_transaction_log_append(writer, end, &rec,
								&error) == 0);
			end += (uint32_t)rec.used;
		}
		for (uint64_t m = first; m <= modseq; m++)
			test_assert_int(read_modseq(reader, &pos, &out), m);
		test_assert(mail_transaction_log_read(reader, &pos, &out,
						      &garbled, &error) == 0 &&
			    !garbled);
		test_assert_int(pos, end);
	}
	mail_transaction_log_file_unref(&writer);
	mail_transaction_log_file_unref(&reader);
	buffer_free(&rec);
	buffer_free(&out);
}

TEST_MAIN(TEST(test_header), TEST(test_append_read), TEST(test_rec_validation),
	  TEST(test_torn_tail_in_index), TEST(test_zeros_ahead),
	  TEST(test_read_after_changes))
