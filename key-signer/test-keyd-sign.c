/* Unit tests of the key-signer's signing: every algorithm and digest
   gives a signature that the public key verifies in the same scheme,
   and whatever does not fit is refused (keyd-sign.h). */
#include "test-common.h"
#include "keyd-sign.h"

#include <openssl/rsa.h>
#include <openssl/x509.h>

static EVP_PKEY *test_key(const char *type)
{
	EVP_PKEY *key = strcmp(type, "RSA") == 0 ?
		EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048) :
		EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	test_assert(key != NULL);
	return key;
}

/* Verifies sig over digest with key's public half only. */
static bool test_verify(EVP_PKEY *key, const EVP_MD *md, int padding,
			const unsigned char *digest, size_t digest_size,
			const unsigned char *sig, size_t sig_len)
{
	unsigned char *der = NULL;
	int der_len = i2d_PUBKEY(key, &der);
	const unsigned char *p = der;
	EVP_PKEY *pub = d2i_PUBKEY(NULL, &p, der_len);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pub, NULL);
	bool ok = ctx != NULL && EVP_PKEY_verify_init(ctx) == 1 &&
		EVP_PKEY_CTX_set_signature_md(ctx, md) == 1;

	if (ok && padding != 0) {
		ok = EVP_PKEY_CTX_set_rsa_padding(ctx, padding) == 1 &&
			(padding != RSA_PKCS1_PSS_PADDING ||
			 EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx,
				RSA_PSS_SALTLEN_DIGEST) == 1);
	}
	ok = ok && EVP_PKEY_verify(ctx, sig, sig_len, digest, digest_size) == 1;
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(pub);
	OPENSSL_free(der);
	return ok;
}

static void test_one(EVP_PKEY *key, const char *alg, int padding)
{
	static const struct {
		const char *name;
		const EVP_MD *(*md)(void);
	} mds[] = {
		{ "sha256", EVP_sha256 }, { "sha384", EVP_sha384 },
		{ "sha512", EVP_sha512 }, { "sha224", EVP_sha224 },
	};
	unsigned char digest[KEYD_DIGEST_MAX], sig[KEYD_SIG_MAX];
	size_t sig_len;
	const char *error;

	for (unsigned int i = 0; i < N_ELEMENTS(mds); i++) {
		size_t size = (size_t)EVP_MD_get_size(mds[i].md());
		memset(digest, (int)i + 1, size);
		test_assert(keyd_sign(key, alg, mds[i].name, digest, size, sig,
				      sizeof(sig), &sig_len, &error) == 0);
		test_assert(test_verify(key, mds[i].md(), padding, digest, size,
					sig, sig_len));
		/* a digest of another length than md's is refused */
		test_assert(keyd_sign(key, alg, mds[i].name, digest, size - 1,
				      sig, sizeof(sig), &sig_len, &error) < 0);
		test_assert_str(error, "digest has the wrong length");
	}
	test_assert(keyd_md_name(EVP_sha384()) != NULL &&
		    strcmp(keyd_md_name(EVP_sha384()), "sha384") == 0);
	test_assert(keyd_md_name(EVP_sha1()) == NULL);
}

static void test_keyd_sign_rsa(void)
{
	EVP_PKEY *key = test_key("RSA");
	unsigned char digest[32] = { 0 }, sig[KEYD_SIG_MAX];
	size_t sig_len;
	const char *error;

	test_one(key, KEYD_ALG_RSA_PKCS1, RSA_PKCS1_PADDING);
	test_one(key, KEYD_ALG_RSA_PSS, RSA_PKCS1_PSS_PADDING);
	test_assert(keyd_sign(key, KEYD_ALG_ECDSA, "sha256", digest, 32, sig,
			      sizeof(sig), &sig_len, &error) < 0);
	test_assert_str(error, "algorithm does not fit the key");
	test_assert(keyd_sign(key, "rsa-raw", "sha256", digest, 32, sig,
			      sizeof(sig), &sig_len, &error) < 0);
	test_assert(keyd_sign(key, KEYD_ALG_RSA_PSS, "sha1", digest, 20, sig,
			      sizeof(sig), &sig_len, &error) < 0);
	test_assert_str(error, "unsupported digest");
	/* the signature does not fit the buffer */
	test_assert(keyd_sign(key, KEYD_ALG_RSA_PSS, "sha256", digest, 32, sig,
			      100, &sig_len, &error) < 0);
	EVP_PKEY_free(key);
}

static void test_keyd_sign_ecdsa(void)
{
	EVP_PKEY *key = test_key("EC");
	unsigned char digest[32] = { 0 }, sig[KEYD_SIG_MAX];
	size_t sig_len;
	const char *error;

	test_one(key, KEYD_ALG_ECDSA, 0);
	test_assert(keyd_sign(key, KEYD_ALG_RSA_PSS, "sha256", digest, 32, sig,
			      sizeof(sig), &sig_len, &error) < 0);
	test_assert(keyd_sign(key, KEYD_ALG_RSA_PKCS1, "sha256", digest, 32,
			      sig, sizeof(sig), &sig_len, &error) < 0);
	EVP_PKEY_free(key);
}

static void test_keyd_key_id(void)
{
	EVP_PKEY *a = test_key("EC"), *b = test_key("EC");
	char id_a[KEYD_KEY_ID_SIZE], id_a2[KEYD_KEY_ID_SIZE], id_b[KEYD_KEY_ID_SIZE];
	unsigned char *der = NULL;
	int der_len = i2d_PUBKEY(a, &der);
	const unsigned char *p = der;
	EVP_PKEY *pub_a = d2i_PUBKEY(NULL, &p, der_len);

	/* the private key and its public half name the same key */
	test_assert(keyd_key_id(a, id_a) == 0 && keyd_key_id(pub_a, id_a2) == 0);
	test_assert_str(id_a, id_a2);
	test_assert_int(strlen(id_a), KEYD_KEY_ID_SIZE - 1);
	test_assert(keyd_key_id(b, id_b) == 0 && strcmp(id_a, id_b) != 0);
	OPENSSL_free(der);
	EVP_PKEY_free(pub_a);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
}

TEST_MAIN(TEST(test_keyd_sign_rsa),
	  TEST(test_keyd_sign_ecdsa),
	  TEST(test_keyd_key_id))
