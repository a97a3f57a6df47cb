/* Unit tests for lib/crc32c.c: the check value and RFC 3720 B.4's
   examples, chaining, and the CPU's instruction (where there is one)
   against the tables on every length and alignment. */
#include "test-common.h"
#include "crc32c.h"

#include <stdlib.h>
#include <string.h>

static void test_crc32c_known(void)
{
	unsigned char buf[32];

	test_assert_int(crc32c(0, "", 0), 0);
	test_assert_int(crc32c(0, "123456789", 9), 0xe3069283U);
	test_assert_int(crc32c_sw(0, "123456789", 9), 0xe3069283U);
	/* RFC 3720 B.4 (its bytes are the CRC little-endian) */
	memset(buf, 0, sizeof(buf));
	test_assert_int(crc32c(0, buf, sizeof(buf)), 0x8a9136aaU);
	memset(buf, 0xff, sizeof(buf));
	test_assert_int(crc32c(0, buf, sizeof(buf)), 0x62a8ab43U);
	for (unsigned int i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)i;
	test_assert_int(crc32c(0, buf, sizeof(buf)), 0x46dd794eU);
	for (unsigned int i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(31 - i);
	test_assert_int(crc32c(0, buf, sizeof(buf)), 0x113fdb5cU);
}

/* lengths past several 8-byte words, from every alignment, in one piece
   and split at every point */
static void test_crc32c_hw_sw_chain(void)
{
	unsigned char data[300 + 8];

	srandom(3720);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)random();
	for (size_t align = 0; align < 8; align++) {
		for (size_t len = 0; len <= 300; len++) {
			const unsigned char *p = data + align;
			uint32_t whole = crc32c_sw(0, p, len);
			test_assert_int(crc32c(0, p, len), whole);
			test_assert_int(crc32c(7, p, len), crc32c_sw(7, p, len));
			size_t cut = (len * 7 + align) % (len + 1);
			test_assert_int(crc32c(crc32c(0, p, cut), p + cut, len - cut),
					whole);
			test_assert_int(crc32c_sw(crc32c_sw(0, p, cut), p + cut,
						  len - cut), whole);
		}
	}
}

TEST_MAIN(
	TEST(test_crc32c_known),
	TEST(test_crc32c_hw_sw_chain),
)
