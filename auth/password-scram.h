#ifndef PASSWORD_SCRAM_H
#define PASSWORD_SCRAM_H
/* SCRAM credentials (RFC 5802): the iteration count, salt, StoredKey and
   ServerKey a server needs to run SCRAM without the password, and their
   stored form {SCRAM-SHA-256}iter,b64(salt),b64(StoredKey),b64(ServerKey)
   (Dovecot's). */

#include "password-crypto.h"

/* Salt bytes we generate; RFC 7677 suggests at least 16. */
#define PASSWORD_SCRAM_SALT_SIZE 16
/* Longest salt accepted from a stored value. */
#define PASSWORD_SCRAM_SALT_MAX 64
/* Iterations we generate (RFC 7677's minimum, Dovecot's default). */
#define PASSWORD_SCRAM_DEFAULT_ITERATIONS 4096
/* Iterations accepted from a stored value: bounds the CPU per login. */
#define PASSWORD_SCRAM_MAX_ITERATIONS 1000000

struct password_scram_creds {
	unsigned int iterations;
	unsigned char salt[PASSWORD_SCRAM_SALT_MAX];
	size_t salt_size;
	unsigned char stored_key[PASSWORD_CRYPTO_MAX_DIGEST];
	unsigned char server_key[PASSWORD_CRYPTO_MAX_DIGEST];
	size_t key_size;     /* password_digest_size() */
};

/* Parse the stored form (without {SCHEME}). -1 with *error_r. */
int password_scram_parse(enum password_digest digest, const char *data,
			 struct password_scram_creds *creds_r,
			 const char **error_r);
/* SaltedPassword = PBKDF2(plain, salt, iterations), then the keys. */
void password_scram_from_plain(enum password_digest digest, const char *plain,
			       const unsigned char *salt, size_t salt_size,
			       unsigned int iterations,
			       unsigned char *stored_key_r,
			       unsigned char *server_key_r);
/* Fill creds from a plaintext password with the given salt. */
void password_scram_creds_from_plain(enum password_digest digest,
				     const char *plain,
				     const unsigned char *salt,
				     size_t salt_size, unsigned int iterations,
				     struct password_scram_creds *creds_r);
/* The stored form (without {SCHEME}) of creds, in pool. */
const char *password_scram_format(pool_t pool,
				  const struct password_scram_creds *creds);

#endif
