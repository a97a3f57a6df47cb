/* Signing a digest; keyd-sign.h. */
#include "lib.h"
#include "keyd-sign.h"

#include <openssl/rsa.h>
#include <openssl/err.h>

static const EVP_MD *keyd_md_get(const char *md)
{
	if (strcmp(md, "sha256") == 0)
		return EVP_sha256();
	if (strcmp(md, "sha384") == 0)
		return EVP_sha384();
	if (strcmp(md, "sha512") == 0)
		return EVP_sha512();
	if (strcmp(md, "sha224") == 0)
		return EVP_sha224();
	return NULL;
}

/* Padding for alg on key; -1 = alg does not fit the key. */
static int keyd_alg_padding(EVP_PKEY *key, const char *alg)
{
	bool rsa = EVP_PKEY_is_a(key, "RSA") != 0;

	if (strcmp(alg, KEYD_ALG_RSA_PKCS1) == 0 && rsa)
		return RSA_PKCS1_PADDING;
	if (strcmp(alg, KEYD_ALG_RSA_PSS) == 0 && rsa)
		return RSA_PKCS1_PSS_PADDING;
	if (strcmp(alg, KEYD_ALG_ECDSA) == 0 && EVP_PKEY_is_a(key, "EC"))
		return 0;
	return -1;
}

static int keyd_ctx_setup(EVP_PKEY_CTX *ctx, const EVP_MD *md, int padding)
{
	if (EVP_PKEY_sign_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, md) != 1)
		return -1;
	if (padding == 0)
		return 0;
	if (EVP_PKEY_CTX_set_rsa_padding(ctx, padding) != 1)
		return -1;
	/* PSS as TLS uses it (RFC 8446 4.2.3): MGF1 with the same hash and
	   a salt as long as the digest. */
	if (padding == RSA_PKCS1_PSS_PADDING &&
	    (EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST) != 1 ||
	     EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) != 1))
		return -1;
	return 0;
}

int keyd_sign(EVP_PKEY *key, const char *alg, const char *md_name,
	      const unsigned char *digest, size_t digest_size,
	      unsigned char *sig, size_t sig_size, size_t *sig_len_r,
	      const char **error_r)
{
	const EVP_MD *md = keyd_md_get(md_name);
	int padding = keyd_alg_padding(key, alg);
	size_t len = sig_size;

	if (md == NULL) {
		*error_r = "unsupported digest";
		return -1;
	}
	if (padding < 0) {
		*error_r = "algorithm does not fit the key";
		return -1;
	}
	if (digest_size != (size_t)EVP_MD_get_size(md)) {
		*error_r = "digest has the wrong length";
		return -1;
	}
	if ((size_t)EVP_PKEY_get_size(key) > sig_size) {
		*error_r = "key too large";
		return -1;
	}
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
	int ret = ctx == NULL || keyd_ctx_setup(ctx, md, padding) < 0 ||
		EVP_PKEY_sign(ctx, sig, &len, digest, digest_size) != 1 ? -1 : 0;
	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
	if (ret < 0) {
		*error_r = "signing failed";
		return -1;
	}
	*sig_len_r = len;
	return 0;
}
