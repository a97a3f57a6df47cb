/* SCRAM credentials: see password-scram.h. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-scram.h"

/* "iter,salt,stored,server" for SHA-512 keys fits in 512 bytes. */
#define PASSWORD_SCRAM_STORED_MAX 512

static int decode_exact(pool_t pool, const char *b64, unsigned char *out,
			size_t min_size, size_t max_size, size_t *size_r)
{
	unsigned char *data;
	size_t size;

	if (p_base64_decode(pool, b64, strlen(b64), &data, &size) < 0 ||
	    size < min_size || size > max_size)
		return -1;
	memcpy(out, data, size);
	*size_r = size;
	return 0;
}

static int scram_parse_fields(pool_t pool, enum password_digest digest,
			      const char *const *f,
			      struct password_scram_creds *creds)
{
	size_t ksize = password_digest_size(digest), size;

	if (str_array_length(f) != 4 ||
	    str_to_uint(f[0], &creds->iterations) < 0 ||
	    creds->iterations == 0 ||
	    creds->iterations > PASSWORD_SCRAM_MAX_ITERATIONS)
		return -1;
	if (decode_exact(pool, f[1], creds->salt, 1, sizeof(creds->salt),
			 &creds->salt_size) < 0 ||
	    decode_exact(pool, f[2], creds->stored_key, ksize, ksize,
			 &size) < 0 ||
	    decode_exact(pool, f[3], creds->server_key, ksize, ksize,
			 &size) < 0)
		return -1;
	creds->key_size = ksize;
	return 0;
}

int password_scram_parse(enum password_digest digest, const char *data,
			 struct password_scram_creds *creds_r,
			 const char **error_r)
{
	pool_t pool;
	int ret;

	memset(creds_r, 0, sizeof(*creds_r));
	if (strlen(data) > PASSWORD_SCRAM_STORED_MAX) {
		*error_r = "SCRAM credentials too long";
		return -1;
	}
	pool = pool_create("scram", 512);
	ret = scram_parse_fields(pool, digest, p_strsplit(pool, data, ','),
				 creds_r);
	pool_unref(&pool);
	if (ret < 0)
		*error_r = "malformed SCRAM credentials";
	return ret;
}

void password_scram_from_plain(enum password_digest digest, const char *plain,
			       const unsigned char *salt, size_t salt_size,
			       unsigned int iterations,
			       unsigned char *stored_key_r,
			       unsigned char *server_key_r)
{
	unsigned char salted[PASSWORD_CRYPTO_MAX_DIGEST];
	size_t size = password_digest_size(digest);

	password_pbkdf2(digest, plain, strlen(plain), salt, salt_size,
			iterations, salted, size);
	password_scram_keys(digest, salted, stored_key_r, server_key_r);
	safe_memset(salted, 0, sizeof(salted));
}

void password_scram_creds_from_plain(enum password_digest digest,
				     const char *plain,
				     const unsigned char *salt,
				     size_t salt_size, unsigned int iterations,
				     struct password_scram_creds *creds_r)
{
	i_assert(salt_size <= sizeof(creds_r->salt));
	memset(creds_r, 0, sizeof(*creds_r));
	creds_r->iterations = iterations;
	memcpy(creds_r->salt, salt, salt_size);
	creds_r->salt_size = salt_size;
	creds_r->key_size = password_digest_size(digest);
	password_scram_from_plain(digest, plain, salt, salt_size, iterations,
				  creds_r->stored_key, creds_r->server_key);
}

const char *password_scram_format(pool_t pool,
				  const struct password_scram_creds *creds)
{
	return p_strdup_printf(pool, "%u,%s,%s,%s", creds->iterations,
		p_base64_encode(pool, creds->salt, creds->salt_size),
		p_base64_encode(pool, creds->stored_key, creds->key_size),
		p_base64_encode(pool, creds->server_key, creds->key_size));
}
