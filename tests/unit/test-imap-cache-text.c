/* Unit tests for imap/imap-cache-text.c: round trips of ENVELOPE-like
   texts, the size gain, the limits, and that garbled stored data (every
   truncation, every single-byte change) is refused or at worst unpacks to
   a bounded other text, never a crash. */
#include "test-common.h"
#include "imap-cache-text.h"
#include "buffer.h"

#include <string.h>
#include <zlib.h>

static const char envelope[] =
	"(\"Mon, 29 Apr 2019 08:41:45 +1000\" \"Re: [PATCH] xfs: add missing "
	"error check in xfs_prepare_shift()\" ((\"Dave Chinner\" NIL \"david\" "
	"\"fromorbit.com\")) ((NIL NIL \"linux-xfs-owner\" \"vger.kernel.org\")) "
	"((\"Dave Chinner\" NIL \"david\" \"fromorbit.com\")) ((\"Brian Foster\" "
	"NIL \"bfoster\" \"redhat.com\")) ((NIL NIL \"linux-xfs\" "
	"\"vger.kernel.org\")) NIL \"<20190426120633.36420-1-bfoster@redhat.com>\" "
	"\"<20190428224145.GG29573@dread.disaster.area>\")";
static const char bodystructure[] =
	"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 1234 "
	"31 NIL NIL NIL NIL)";

static void round_trip(const char *text, size_t len, size_t *packed_r)
{
	buffer_t packed, out;

	buffer_init(&packed, IMAP_CACHE_TEXT_MAX + 16);
	buffer_init(&out, IMAP_CACHE_TEXT_MAX + 16);
	test_assert(buffer_append_str(&out, "prefix ") == 0);
	test_assert(imap_cache_text_pack(text, len, &packed) == 0);
	test_assert(imap_cache_text_unpack(packed.data, packed.used, &out) == 0);
	/* short texts are stored as they are, the rest deflated */
	test_assert(imap_cache_text_is_packed(packed.data, packed.used) ==
		    (packed.used < len + 1));
	test_assert(out.used == len + 7);
	test_assert(memcmp(out.data, "prefix ", 7) == 0);
	test_assert(memcmp(out.data + 7, text, len) == 0);
	*packed_r = packed.used;
	buffer_free(&packed);
	buffer_free(&out);
}

static void test_round_trip(void)
{
	size_t packed;

	round_trip(envelope, strlen(envelope), &packed);
	/* the dictionary pays: well under two thirds */
	test_assert(packed < strlen(envelope) * 2 / 3);
	round_trip(bodystructure, strlen(bodystructure), &packed);
	test_assert(packed < strlen(bodystructure) / 2);
	round_trip("", 0, &packed);
	test_assert_int(packed, 1);
	round_trip("NIL", 3, &packed);
	test_assert_int(packed, 4);
	test_assert(!imap_cache_text_is_packed("", 0));
	/* binary bytes (literals in an ENVELOPE) and a NUL */
	static const char binary[] = "{5}\r\n\xff\x00\x80" "ab plus more text";
	round_trip(binary, sizeof(binary) - 1, &packed);
}

static void test_limits(void)
{
	buffer_t packed, out;
	char *big = i_malloc(IMAP_CACHE_TEXT_MAX + 1);
	size_t packed_size;

	/* incompressible-ish text of exactly the maximum */
	for (size_t i = 0; i < IMAP_CACHE_TEXT_MAX + 1; i++)
		big[i] = (char)('a' + (i * 7919 + i / 13) % 26);
	round_trip(big, IMAP_CACHE_TEXT_MAX, &packed_size);
	buffer_init(&packed, IMAP_CACHE_TEXT_MAX + 16);
	test_assert(imap_cache_text_pack(big, IMAP_CACHE_TEXT_MAX + 1,
					 &packed) == -1);
	/* an output buffer too small for the text: refused, unchanged */
	test_assert(imap_cache_text_pack(envelope, strlen(envelope),
					 &packed) == 0);
	buffer_init(&out, 32);
	test_assert(buffer_append_str(&out, "keep") == 0);
	test_assert(imap_cache_text_unpack(packed.data, packed.used,
					   &out) == -1);
	test_assert(out.used == 4 && strcmp(out.data, "keep") == 0);
	buffer_free(&out);
	buffer_free(&packed);
	i_free(big);
}

static void test_garbled(void)
{
	buffer_t packed, out;
	static const unsigned char huge_len[] = { 'Z', 0xff, 0xff, 0xff, 0x7f };
	static const unsigned char unknown_tag[] = { 'Q', 'a' };

	buffer_init(&packed, IMAP_CACHE_TEXT_MAX + 16);
	buffer_init(&out, IMAP_CACHE_TEXT_MAX);
	test_assert(imap_cache_text_unpack("", 0, &out) == -1);
	test_assert(imap_cache_text_unpack(unknown_tag, sizeof(unknown_tag),
					   &out) == -1);
	test_assert(imap_cache_text_unpack(huge_len, sizeof(huge_len),
					   &out) == -1);
	test_assert(out.used == 0);
	test_assert(imap_cache_text_pack(envelope, strlen(envelope),
					 &packed) == 0);
	/* every truncation of a deflated text is refused */
	for (size_t len = 1; len < packed.used; len++) {
		test_assert(imap_cache_text_unpack(packed.data, len, &out) == -1);
		test_assert(out.used == 0);
	}
	/* every byte flipped: refused, or some bounded text */
	unsigned char *copy = i_malloc(packed.used);
	for (size_t i = 0; i < packed.used; i++) {
		memcpy(copy, packed.data, packed.used);
		copy[i] ^= 0x5a;
		buffer_reset(&out);
		if (imap_cache_text_unpack(copy, packed.used, &out) == 0)
			test_assert(out.used <= IMAP_CACHE_TEXT_MAX);
	}
	i_free(copy);
	buffer_free(&packed);
	buffer_free(&out);
}

/* Raw deflate of data (no dictionary: inflate with one reads it too),
   after tag. */
static void deflate_raw(char tag, const void *data, size_t len, buffer_t *out)
{
	z_stream zs;

	memset(&zs, 0, sizeof(zs));
	test_assert(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8,
				 Z_DEFAULT_STRATEGY) == Z_OK);
	buffer_reset(out);
	test_assert(buffer_append_c(out, tag) == 0);
	/* a bound for incompressible data; the texts here compress */
	size_t bound = MIN(deflateBound(&zs, (uLong)len), out->max_size - out->used);
	char *dest = buffer_reserve(out, bound);
	test_assert(dest != NULL);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)dest;
	zs.avail_out = (uInt)bound;
	test_assert(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	buffer_commit(out, bound - zs.avail_out);
	deflateEnd(&zs);
}

/* 'Y' (no stored length) is what is written; the 'Z' form of earlier
   builds (length, then the same deflate data) still reads. */
static void test_tags(void)
{
	buffer_t packed, old, out;
	size_t len = strlen(envelope);

	buffer_init(&packed, IMAP_CACHE_TEXT_MAX + 16);
	buffer_init(&old, IMAP_CACHE_TEXT_MAX + 16);
	buffer_init(&out, IMAP_CACHE_TEXT_MAX + 16);
	test_assert(imap_cache_text_pack(envelope, len, &packed) == 0);
	test_assert(packed.data[0] == 'Y');
	/* the old form: 'Z', LEB128 length, the same stream */
	unsigned char head[4] = { 'Z', (unsigned char)(0x80 | (len & 0x7f)),
				  (unsigned char)(len >> 7) };
	test_assert(len >= 128 && len < 16384);
	test_assert(buffer_append(&old, head, 3) == 0 &&
		    buffer_append(&old, packed.data + 1, packed.used - 1) == 0);
	test_assert(imap_cache_text_unpack(old.data, old.used, &out) == 0);
	test_assert(out.used == len && memcmp(out.data, envelope, len) == 0);
	buffer_reset(&out);
	test_assert(imap_cache_text_unpack(packed.data, packed.used, &out) == 0);
	test_assert(out.used == len && memcmp(out.data, envelope, len) == 0);

	/* trailing bytes after the stream's end: refused */
	test_assert(buffer_append_c(&packed, 'x') == 0);
	buffer_reset(&out);
	test_assert(imap_cache_text_unpack(packed.data, packed.used, &out) == -1);
	test_assert(out.used == 0);

	/* a stream that inflates past IMAP_CACHE_TEXT_MAX (a few KB of
	   stored data): refused, out unchanged, nothing huge kept */
	char *big = i_malloc(IMAP_CACHE_TEXT_MAX + 2);
	memset(big, 'a', IMAP_CACHE_TEXT_MAX + 2);
	for (size_t over = 0; over <= 2; over++) {
		deflate_raw('Y', big, IMAP_CACHE_TEXT_MAX + over, &packed);
		test_assert(packed.used < 4096);
		buffer_reset(&out);
		test_assert(buffer_append_str(&out, "keep") == 0);
		int ret = imap_cache_text_unpack(packed.data, packed.used, &out);
		if (over == 0) {
			test_assert(ret == 0 && out.used == 4 + IMAP_CACHE_TEXT_MAX);
		} else {
			test_assert(ret == -1 && out.used == 4);
		}
	}
	i_free(big);
	/* a text that does not fit what out may hold: refused, unchanged */
	deflate_raw('Y', envelope, len, &packed);
	buffer_t small;
	buffer_init(&small, len - 1);
	test_assert(imap_cache_text_unpack(packed.data, packed.used, &small) == -1);
	test_assert(small.used == 0);
	buffer_free(&small);
	buffer_init(&small, len);
	test_assert(imap_cache_text_unpack(packed.data, packed.used, &small) == 0);
	test_assert(small.used == len);
	buffer_free(&small);
	buffer_free(&packed);
	buffer_free(&old);
	buffer_free(&out);
}

TEST_MAIN(TEST(test_round_trip), TEST(test_limits), TEST(test_garbled),
	  TEST(test_tags))
