/* libFuzzer target for the index file readers: the input's first byte
   picks what the rest is:
     0: a moat.index image (map + full consistency check)
     1: a moat.index.log file, opened through mail_index_open in a scratch
        directory, then synced and checked
     2: a moat.index.cache image (every record walked)
     3: log records with valid framing and crc (so the op appliers see
        arbitrary ops, not just crc failures), opened like 1
     4: index + log + cache files split at offsets from the next bytes,
        opened, and every cached field of every message looked up
   The files live in a scratch directory on tmpfs (scratch-dir.h): the
   index fsyncs what it writes, and on a disk that wait was most of each
   input's time.
   Built and run by tests/fuzz/run.sh (clang -fsanitize=fuzzer). */
#include "lib.h"
#include "log.h"
#include "mail-index-private.h"
#include "mail-cache.h"
#include "scratch-dir.h"

#include <fcntl.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *dir;
static char index_path[PATH_MAX], log_path[PATH_MAX], cache_path[PATH_MAX];

static void setup(void)
{
	if (dir != NULL)
		return;
	dir = scratch_dir_create("index");
	snprintf(index_path, sizeof(index_path), "%s/%s", dir, MAIL_INDEX_FILE_NAME);
	snprintf(log_path, sizeof(log_path), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	snprintf(cache_path, sizeof(cache_path), "%s/%s", dir, MAIL_INDEX_CACHE_FILE_NAME);
	/* Corruption is logged by design; keep the fuzzer's output clean. */
	int fd = open("/dev/null", O_WRONLY);
	if (fd >= 0)
		log_set_fd(fd);
}

static void write_file(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		abort();
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

/* Everything the last input's open left, the modseq history and lock
   files included: each input starts from an empty directory. */
static void clean_dir(void)
{
	scratch_clear_dir(dir);
}

static void open_and_walk(void)
{
	struct mail_index *index;
	const char *error;
	const void *fdata;
	size_t fsize;

	if (mail_index_open(dir, 0, &index, &error) != 1)
		return;
	struct mail_index_view *view = mail_index_view_open(index);
	(void)mail_index_view_sync(view, NULL, NULL, &error);
	(void)mail_index_view_check(view, &error);
	uint32_t count = mail_index_view_count(view);
	for (uint32_t seq = 1; seq <= count && seq <= 1000; seq++) {
		(void)mail_index_view_uid_to_seq(view,
			mail_index_view_lookup(view, seq)->uid);
		(void)mail_cache_lookup(view, seq, "envelope", &fdata, &fsize);
		(void)mail_cache_lookup(view, seq, "v", &fdata, &fsize);
	}
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void fuzz_index_image(const uint8_t *data, size_t size)
{
	struct mail_index_map *map;
	const char *error;

	if (mail_index_map_read_mem(data, size, &map, &error) > 0) {
		(void)mail_index_map_check(map, &error);
		mail_index_map_free(&map);
	}
}

/* Framed records: [u16 payload size][payload]... each made valid. */
static void fuzz_framed_log(const uint8_t *data, size_t size)
{
	struct mail_transaction_log_header hdr;
	buffer_t file, rec;

	mail_transaction_log_header_init(&hdr, 1, 0, 0, 1, 0);
	buffer_init(&file, 1024 * 1024);
	buffer_init(&rec, 1024 * 1024);
	if (buffer_append(&file, &hdr, sizeof(hdr)) < 0)
		abort();
	while (size >= 2) {
		size_t n = MIN((size_t)(data[0] | data[1] << 8) & ~(size_t)3, size - 2);
		n &= ~(size_t)3;
		buffer_reset(&rec);
		struct mail_transaction_rec_header rh;
		memset(&rh, 0, sizeof(rh));
		if (buffer_append(&rec, &rh, sizeof(rh)) < 0 ||
		    buffer_append(&rec, data + 2, n) < 0)
			break;
		mail_transaction_rec_finish(&rec, data[2 % size]);
		if (buffer_append(&file, rec.data, rec.used) < 0)
			break;
		data += 2 + n;
		size -= 2 + n;
	}
	write_file(log_path, file.data, file.used);
	buffer_free(&file);
	buffer_free(&rec);
	open_and_walk();
}

static void fuzz_three_files(const uint8_t *data, size_t size)
{
	if (size < 4)
		return;
	size_t a = (size_t)(data[0] | data[1] << 8) % size;
	size_t b = (size_t)(data[2] | data[3] << 8) % size;
	if (a > b) {
		size_t tmp = a; a = b; b = tmp;
	}
	write_file(index_path, data, a);
	write_file(log_path, data + a, b - a);
	write_file(cache_path, data + b, size - b);
	open_and_walk();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	setup();
	clean_dir();
	uint8_t mode = data[0];
	data++;
	size--;
	switch (mode % 5) {
	case 0:
		fuzz_index_image(data, size);
		break;
	case 1:
		write_file(log_path, data, size);
		open_and_walk();
		break;
	case 2:
		(void)mail_cache_check_mem(data, size);
		break;
	case 3:
		fuzz_framed_log(data, size);
		break;
	case 4:
		fuzz_three_files(data, size);
		break;
	}
	return 0;
}
