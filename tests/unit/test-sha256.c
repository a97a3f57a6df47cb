/* Unit tests for lib/sha256.c: the FIPS 180-4 example messages, and
   OpenSSL's SHA-256 (linked into this test only) on every length across
   several blocks, fed whole and in uneven pieces. */
#include "test-common.h"
#include "sha256.h"

#include <openssl/evp.h>
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

TEST_MAIN(
	TEST(test_sha256_known),
	TEST(test_sha256_against_openssl),
)
