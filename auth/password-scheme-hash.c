/* The non-crypt(3) schemes: salted SHA-2, PBKDF2, SCRAM stored keys and
   argon2. See password-scheme.h for the stored forms. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-scheme.h"
#include "password-scheme-private.h"
#include "password-scram.h"

#include <argon2.h>

/* Longest stored value we decode: hashes are a few hundred bytes. */
#define PASSWORD_STORED_MAX 1024
/* PBKDF2 rounds accepted from a stored hash: bounds the CPU one
   verification costs if the passdb holds a silly value. */
#define PASSWORD_PBKDF2_MAX_ROUNDS 10000000
/* Dovecot's PBKDF2 uses SHA-1 with a 20-byte key. */
#define PASSWORD_PBKDF2_KEY_SIZE 20

int password_verify_ssha(enum password_digest digest, const char *plain,
			 const char *data, const char **error_r)
{
	size_t dsize = password_digest_size(digest), size, len = strlen(data);
	unsigned char hash[PASSWORD_CRYPTO_MAX_DIGEST], *raw;
	pool_t pool;
	int ret;

	if (len > PASSWORD_STORED_MAX) {
		*error_r = "stored hash too long";
		return -1;
	}
	pool = pool_create("ssha", 256);
	if (p_base64_decode(pool, data, len, &raw, &size) < 0 || size <= dsize) {
		pool_unref(&pool);
		*error_r = "malformed salted hash";
		return -1;
	}
	password_hash2(digest, plain, strlen(plain), raw + dsize, size - dsize,
		       hash);
	ret = mem_equals_timing_safe(hash, raw, dsize) ? 1 : 0;
	safe_memset(hash, 0, sizeof(hash));
	pool_unref(&pool);
	return ret;
}


static int hex_decode(const char *hex, unsigned char *out, size_t size)
{
	if (strlen(hex) != size * 2)
		return -1;
	for (size_t i = 0; i < size; i++) {
		int hi = hex_digit_value(hex[i * 2]), lo = hex_digit_value(hex[i * 2 + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* $1$salt$rounds$hex */
int password_verify_pbkdf2(const char *plain, const char *data,
			   const char **error_r)
{
	unsigned char want[PASSWORD_PBKDF2_KEY_SIZE], got[PASSWORD_PBKDF2_KEY_SIZE];
	const char *salt, *p, *q;
	char rounds_str[16];
	unsigned int rounds;
	int ret;

	if (!str_begins(data, "$1$", &salt) ||
	    (p = strchr(salt, '$')) == NULL || (q = strchr(p + 1, '$')) == NULL ||
	    (size_t)(q - p - 1) >= sizeof(rounds_str)) {
		*error_r = "malformed PBKDF2 hash";
		return -1;
	}
	memcpy(rounds_str, p + 1, q - p - 1);
	rounds_str[q - p - 1] = '\0';
	if (str_to_uint(rounds_str, &rounds) < 0 || rounds == 0 ||
	    rounds > PASSWORD_PBKDF2_MAX_ROUNDS ||
	    hex_decode(q + 1, want, sizeof(want)) < 0) {
		*error_r = "malformed PBKDF2 hash";
		return -1;
	}
	password_pbkdf2(PASSWORD_DIGEST_SHA1, plain, strlen(plain), salt,
			p - salt, rounds, got, sizeof(got));
	ret = mem_equals_timing_safe(got, want, sizeof(got)) ? 1 : 0;
	safe_memset(got, 0, sizeof(got));
	return ret;
}

int password_verify_scram(enum password_digest digest, const char *plain,
			  const char *data, const char **error_r)
{
	struct password_scram_creds creds;
	unsigned char stored[PASSWORD_CRYPTO_MAX_DIGEST];
	unsigned char server[PASSWORD_CRYPTO_MAX_DIGEST];
	int ret;

	if (password_scram_parse(digest, data, &creds, error_r) < 0)
		return -1;
	password_scram_from_plain(digest, plain, creds.salt, creds.salt_size,
				  creds.iterations, stored, server);
	ret = mem_equals_timing_safe(stored, creds.stored_key,
				     creds.key_size) ? 1 : 0;
	safe_memset(stored, 0, sizeof(stored));
	safe_memset(server, 0, sizeof(server));
	safe_memset(&creds, 0, sizeof(creds));
	return ret;
}

/* Bounds on a stored argon2 hash's cost, so one login cannot take the
   auth process's memory or minutes of CPU: 1 GiB, 64 passes, 16 lanes
   (moat-pw makes 64 MiB, t=3, p=1). */
#define PASSWORD_ARGON2_MAX_M_KIB (1024 * 1024)
#define PASSWORD_ARGON2_MAX_T 64
#define PASSWORD_ARGON2_MAX_P 16

/* "[v=19$]m=M,t=T,p=P$..." after the prefix (old hashes lack v=). */
static bool argon2_params_ok(const char *params)
{
	unsigned int v, m, t, p;
	int n = 0;

	if (str_begins(params, "v=", NULL) &&
	    (sscanf(params, "v=%u$%n", &v, &n) != 1 || n == 0))
		return false;
	params += n;
	n = 0;
	if (sscanf(params, "m=%u,t=%u,p=%u$%n", &m, &t, &p, &n) != 3 || n == 0)
		return false;
	return m <= PASSWORD_ARGON2_MAX_M_KIB && t <= PASSWORD_ARGON2_MAX_T &&
		p <= PASSWORD_ARGON2_MAX_P;
}

/* libargon2 decodes the parameters from the encoded string, allocates
   m KiB and compares the result itself in constant time. */
int password_verify_argon2(bool argon2id, const char *plain,
			   const char *data, const char **error_r)
{
	const char *prefix = argon2id ? "$argon2id$" : "$argon2i$";
	const char *params;
	int ret;

	if (!str_begins(data, prefix, &params)) {
		*error_r = "hash does not match its scheme";
		return -1;
	}
	if (!argon2_params_ok(params)) {
		*error_r = "malformed argon2 parameters or a cost above "
			"the limits";
		return -1;
	}
	ret = argon2_verify(data, plain, strlen(plain),
			    argon2id ? Argon2_id : Argon2_i);
	if (ret == ARGON2_OK)
		return 1;
	if (ret == ARGON2_VERIFY_MISMATCH)
		return 0;
	*error_r = argon2_error_message(ret);
	return -1;
}
