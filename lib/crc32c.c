/* CRC-32C: reflected polynomial 0x82f63b78, initial and final xor ~0. */
#include "crc32c.h"

#include <string.h>

#define CRC32C_POLY 0x82f63b78U

/* slice-by-8: table[k][b] is the CRC of byte b followed by k zero bytes */
static uint32_t crc32c_table[8][256];
static uint32_t (*crc32c_impl)(uint32_t crc, const unsigned char *p, size_t size);

static uint32_t crc32c_sw_raw(uint32_t crc, const unsigned char *p, size_t size)
{
	while (size > 0 && ((uintptr_t)p & 7) != 0) {
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		size--;
	}
	while (size >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= crc;
		crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
			crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
			crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
			crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
		p += 8;
		size -= 8;
	}
	while (size-- > 0)
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t crc, const unsigned char *p, size_t size)
{
	uint64_t c = crc;

	while (size >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		size -= 8;
	}
	crc = (uint32_t)c;
	while (size-- > 0)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}
#endif

/* Before main(), so that threads never race on the tables or the choice. */
__attribute__((constructor))
static void crc32c_setup(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t crc = b;
		for (int i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (CRC32C_POLY & (0U - (crc & 1)));
		crc32c_table[0][b] = crc;
	}
	for (uint32_t b = 0; b < 256; b++) {
		for (int k = 1; k < 8; k++) {
			uint32_t prev = crc32c_table[k - 1][b];
			crc32c_table[k][b] = crc32c_table[0][prev & 0xff] ^ (prev >> 8);
		}
	}
	crc32c_impl = crc32c_sw_raw;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc32c_impl = crc32c_hw_raw;
#endif
}

uint32_t crc32c(uint32_t crc, const void *data, size_t size)
{
	return ~crc32c_impl(~crc, data, size);
}

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t size)
{
	return ~crc32c_sw_raw(~crc, data, size);
}
