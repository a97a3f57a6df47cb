/* Unit tests for lib/sha256.c: the FIPS 180-4 example messages, and
   OpenSSL's SHA-256 (linked into this test only) on every length across
   several blocks, fed whole and in uneven pieces; HMAC-SHA256 against
   RFC 4231's test cases and OpenSSL's HMAC for keys shorter than, equal
   to and longer than a block. */
#include "test-common.h"
#include "sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

/* lengths 0..TEST_SHA256_MAX_LEN cover every padding case (55, 56, 63,
   64 bytes into a block) over four blocks and a bit */
#define TEST_SHA256_MAX_LEN 300

static void hex_of(const unsigned char *md, char out[SHA256_DIGEST_LEN * 2 + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (unsigned int i = 0; i < SHA256_DIGEST_LEN; i++) {
		out[i * 2] = hex[md[i] >> 4];
		out[i * 2 + 1] = hex[md[i] & 15];
	}
	out[SHA256_DIGEST_LEN * 2] = '\0';
}

static const char *digest_hex(const void *data, size_t size)
{
	static char out[SHA256_DIGEST_LEN * 2 + 1];
	unsigned char md[SHA256_DIGEST_LEN];
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, data, size);
	sha256_final(&ctx, md);
	hex_of(md, out);
	return out;
}

static void test_sha256_known(void)
{
	test_assert_str(digest_hex("", 0),
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	test_assert_str(digest_hex("abc", 3),
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	test_assert_str(digest_hex(two, strlen(two)),
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

	/* a million 'a', in pieces of 1000 */
	char piece[1000];
	unsigned char md[SHA256_DIGEST_LEN];
	char out[SHA256_DIGEST_LEN * 2 + 1];
	struct sha256_ctx ctx;
	memset(piece, 'a', sizeof(piece));
	sha256_init(&ctx);
	for (unsigned int i = 0; i < 1000; i++)
		sha256_update(&ctx, piece, sizeof(piece));
	sha256_final(&ctx, md);
	hex_of(md, out);
	test_assert_str(out,
		"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void openssl_hex(const void *data, size_t size,
			char out[SHA256_DIGEST_LEN * 2 + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	test_assert(EVP_Digest(data, size, md, &md_len, EVP_sha256(), NULL) == 1);
	test_assert_int(md_len, SHA256_DIGEST_LEN);
	hex_of(md, out);
}

static void test_sha256_against_openssl(void)
{
	unsigned char data[TEST_SHA256_MAX_LEN];
	char want[SHA256_DIGEST_LEN * 2 + 1], got[SHA256_DIGEST_LEN * 2 + 1];
	unsigned char md[SHA256_DIGEST_LEN];

	srandom(15);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)random();
	for (size_t len = 0; len <= sizeof(data); len++) {
		openssl_hex(data, len, want);
		test_assert_str(digest_hex(data, len), want);

		/* the same bytes in uneven pieces (1..70 bytes) */
		struct sha256_ctx ctx;
		sha256_init(&ctx);
		for (size_t pos = 0; pos < len;) {
			size_t n = (size_t)(random() % 70) + 1;
			if (n > len - pos)
				n = len - pos;
			sha256_update(&ctx, data + pos, n);
			pos += n;
		}
		sha256_final(&ctx, md);
		hex_of(md, got);
		test_assert_str(got, want);
	}
}

static const char *hmac_hex(const void *key, size_t key_size,
			    const void *data, size_t size)
{
	static char out[SHA256_DIGEST_LEN * 2 + 1];
	unsigned char md[SHA256_DIGEST_LEN];

	sha256_hmac(key, key_size, data, size, md);
	hex_of(md, out);
	return out;
}

static void test_hmac_rfc4231(void)
{
	unsigned char key[131];

	/* test case 1: a 20-byte key of 0x0b */
	memset(key, 0x0b, 20);
	test_assert_str(hmac_hex(key, 20, "Hi There", 8),
		"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	/* test case 2: a key shorter than the digest */
	test_assert_str(hmac_hex("Jefe", 4, "what do ya want for nothing?", 28),
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* test case 3: 50 bytes of 0xdd under a 20-byte key of 0xaa */
	unsigned char data[50];
	memset(key, 0xaa, 20);
	memset(data, 0xdd, sizeof(data));
	test_assert_str(hmac_hex(key, 20, data, sizeof(data)),
		"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	/* test case 6: a 131-byte key, longer than a block, is hashed first */
	memset(key, 0xaa, sizeof(key));
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	test_assert_str(hmac_hex(key, sizeof(key), msg, strlen(msg)),
		"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_hmac_against_openssl(void)
{
	unsigned char key[150], data[TEST_SHA256_MAX_LEN];
	unsigned char md[EVP_MAX_MD_SIZE];
	char want[SHA256_DIGEST_LEN * 2 + 1];
	unsigned int md_len;

	srandom(16);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)random();
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)random();
	/* every key length (0, 64 and 65 bytes included) with a few data
	   lengths each */
	for (size_t klen = 0; klen <= sizeof(key); klen++) {
		size_t lens[] = { 0, 1, klen % 130, 64, 119, 200 };
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			md_len = 0;
			test_assert(HMAC(EVP_sha256(), key, (int)klen, data,
					 lens[j], md, &md_len) != NULL);
			test_assert_int(md_len, SHA256_DIGEST_LEN);
			hex_of(md, want);
			test_assert_str(hmac_hex(key, klen, data, lens[j]), want);
		}
	}
}

TEST_MAIN(
	TEST(test_sha256_known),
	TEST(test_sha256_against_openssl),
	TEST(test_hmac_rfc4231),
	TEST(test_hmac_against_openssl),
)
