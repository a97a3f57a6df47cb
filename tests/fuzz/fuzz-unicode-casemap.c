/* libFuzzer target for lib/unicode-casemap.c (i;unicode-casemap). Build
   (from the source tree, with config.h and lib/unicode-casemap-data.h
   from a built directory BUILD):
     clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
       -I BUILD -I lib tests/fuzz/fuzz-unicode-casemap.c \
       lib/unicode-casemap.c lib/buffer.c lib/lib.c lib/log.c \
       -o fuzz-unicode-casemap
   Run: ./fuzz-unicode-casemap -max_total_time=30 [corpus-dir]

   Input: byte 0 seeds the chunk sizes; the rest is text, valid UTF-8 or
   not. Checks: the folding stays within UNICODE_CASEMAP_GROWTH_MAX per
   byte; folding in chunks that keep back the partial tail, as the
   SEARCH body matcher does, gives the folding of the whole; a bounded
   output stops at a character boundary that a second call continues
   from; unicode_casemap_append() agrees with unicode_casemap(). */

#include "lib.h"
#include "buffer.h"
#include "unicode-casemap.h"

/* Text folded at most per input (bounds the buffers below). */
#define FUZZ_INPUT_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

static unsigned char whole[FUZZ_INPUT_MAX * UNICODE_CASEMAP_GROWTH_MAX];
static unsigned char parts[sizeof(whole)];

static size_t fold_in_chunks(const uint8_t *p, size_t size, unsigned int seed)
{
	unsigned char chunk[64 + 4], carry[4];
	size_t carry_len = 0, n = 0, used;

	for (size_t pos = 0; pos < size;) {
		seed = seed * 1103515245u + 12345u;
		size_t step = MIN(size - pos, 1 + (seed >> 16) % 64);
		memcpy(chunk, carry, carry_len);
		memcpy(chunk + carry_len, p + pos, step);
		size_t len = carry_len + step;
		pos += step;
		size_t keep = pos < size ? unicode_utf8_partial_tail(chunk, len) : 0;
		check(keep <= 3, "partial tail of at most 3 bytes");
		n += unicode_casemap(chunk, len - keep, &used, parts + n,
				     sizeof(parts) - n);
		check(used == len - keep, "a chunk folds whole");
		memcpy(carry, chunk + len - keep, keep);
		carry_len = keep;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t used, n, n2, used2;

	if (size < 1)
		return 0;
	unsigned int seed = data[0];
	data++;
	size = MIN(size - 1, FUZZ_INPUT_MAX);

	n = unicode_casemap(data, size, &used, whole, sizeof(whole));
	check(used == size, "everything folds");
	check(n <= size * UNICODE_CASEMAP_GROWTH_MAX, "growth bound");
	check(fold_in_chunks(data, size, seed) == n &&
	      memcmp(parts, whole, n) == 0, "chunks fold as the whole");

	/* a small output: a prefix, continued by a second call */
	size_t limit = seed % 97;
	n2 = unicode_casemap(data, size, &used2, parts, limit);
	check(n2 <= limit && memcmp(parts, whole, n2) == 0, "bounded prefix");
	size_t rest = unicode_casemap(data + used2, size - used2, &used,
				      parts + n2, sizeof(parts) - n2);
	check(used2 + used == size && n2 + rest == n &&
	      memcmp(parts, whole, n) == 0, "continued from the cut");

	buffer_t buf;
	buffer_init(&buf, n);
	check(unicode_casemap_append(&buf, data, size) == 0 && buf.used == n &&
	      memcmp(buf.data, whole, n) == 0, "append agrees");
	buffer_free(&buf);
	return 0;
}
