#ifndef PASSWORD_CRYPTO_H
#define PASSWORD_CRYPTO_H
/* The digest primitives the password schemes and SASL mechanisms share,
   on OpenSSL 3's EVP API, with libcrypto opened on the first call that
   needs it. Every function aborts on an OpenSSL failure (out of memory,
   a broken or missing library: nothing a caller could handle). */

#include "lib.h"
#include "mempool.h"

/* Largest digest we use (SHA-512). */
#define PASSWORD_CRYPTO_MAX_DIGEST 64

enum password_digest {
	PASSWORD_DIGEST_MD5,
	PASSWORD_DIGEST_SHA1,
	PASSWORD_DIGEST_SHA256,
	PASSWORD_DIGEST_SHA512,
};

/* Needs no libcrypto. */
size_t password_digest_size(enum password_digest digest);
/* Has a call opened libcrypto yet? (for tests) */
bool password_crypto_loaded(void);

/* out must hold password_digest_size(digest) bytes. The two parts are
   hashed one after the other (salted schemes: password then salt). */
void password_hash2(enum password_digest digest, const void *data1,
		    size_t size1, const void *data2, size_t size2,
		    unsigned char *out);
void password_hmac(enum password_digest digest, const void *key,
		   size_t key_size, const void *data, size_t size,
		   unsigned char *out);
/* PBKDF2 (RFC 8018) with HMAC-digest; writes out_size bytes. */
void password_pbkdf2(enum password_digest digest, const char *password,
		     size_t password_len, const void *salt, size_t salt_size,
		     unsigned int iterations, unsigned char *out,
		     size_t out_size);

/* SCRAM keys (RFC 5802 section 3) from a salted password:
   ClientKey = HMAC(SaltedPassword, "Client Key"),
   StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key").
   Each output holds password_digest_size(digest) bytes. */
void password_scram_keys(enum password_digest digest,
			 const unsigned char *salted_password,
			 unsigned char *stored_key_r,
			 unsigned char *server_key_r);

/* Lower-case hex of data into pool. */
const char *password_hex(pool_t pool, const unsigned char *data, size_t size);

#endif
