/* Digests, HMAC and PBKDF2 over OpenSSL 3 EVP: see password-crypto.h. */
#include "lib.h"
#include "mempool.h"
#include "password-crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

static const EVP_MD *password_digest_md(enum password_digest digest)
{
	switch (digest) {
	case PASSWORD_DIGEST_MD5:
		return EVP_md5();
	case PASSWORD_DIGEST_SHA1:
		return EVP_sha1();
	case PASSWORD_DIGEST_SHA256:
		return EVP_sha256();
	case PASSWORD_DIGEST_SHA512:
		return EVP_sha512();
	}
	i_unreached();
}

size_t password_digest_size(enum password_digest digest)
{
	return (size_t)EVP_MD_get_size(password_digest_md(digest));
}

void password_hash2(enum password_digest digest, const void *data1,
		    size_t size1, const void *data2, size_t size2,
		    unsigned char *out)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len;

	if (ctx == NULL ||
	    EVP_DigestInit_ex(ctx, password_digest_md(digest), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, data1, size1) != 1 ||
	    EVP_DigestUpdate(ctx, data2, size2) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &len) != 1)
		i_panic("OpenSSL digest failed");
	EVP_MD_CTX_free(ctx);
}

void password_hmac(enum password_digest digest, const void *key,
		   size_t key_size, const void *data, size_t size,
		   unsigned char *out)
{
	unsigned int len;

	/* HMAC() with an explicit output buffer is thread-safe and goes
	   through the EVP_MAC provider in OpenSSL 3. */
	if (HMAC(password_digest_md(digest), key, (int)key_size, data, size,
		 out, &len) == NULL)
		i_panic("OpenSSL HMAC failed");
}

void password_pbkdf2(enum password_digest digest, const char *password,
		     size_t password_len, const void *salt, size_t salt_size,
		     unsigned int iterations, unsigned char *out,
		     size_t out_size)
{
	i_assert(iterations > 0 && iterations <= INT_MAX);
	if (PKCS5_PBKDF2_HMAC(password, (int)password_len, salt, (int)salt_size,
			      (int)iterations, password_digest_md(digest),
			      (int)out_size, out) != 1)
		i_panic("OpenSSL PBKDF2 failed");
}

void password_scram_keys(enum password_digest digest,
			 const unsigned char *salted_password,
			 unsigned char *stored_key_r,
			 unsigned char *server_key_r)
{
	size_t size = password_digest_size(digest);
	unsigned char client_key[PASSWORD_CRYPTO_MAX_DIGEST];

	password_hmac(digest, salted_password, size, "Client Key", 10,
		      client_key);
	password_hash2(digest, client_key, size, "", 0, stored_key_r);
	password_hmac(digest, salted_password, size, "Server Key", 10,
		      server_key_r);
	safe_memset(client_key, 0, sizeof(client_key));
}

const char *password_hex(pool_t pool, const unsigned char *data, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	char *hex = p_malloc(pool, i_add_size(i_mul_size(size, 2), 1));

	for (size_t i = 0; i < size; i++) {
		hex[i * 2] = digits[data[i] >> 4];
		hex[i * 2 + 1] = digits[data[i] & 0x0f];
	}
	hex[size * 2] = '\0';
	return hex;
}
