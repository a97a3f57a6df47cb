/* New password hashes: see password-generate.h. Salts come from
   random_fill() (getrandom), or from libxcrypt's own source for crypt. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-crypto.h"
#include "password-scram.h"
#include "password-scheme.h"
#include "password-generate.h"

#include <argon2.h>
#include <crypt.h>
#include <strings.h>

#define PWGEN_SALT_SIZE 16
#define PWGEN_PBKDF2_ROUNDS 5000
#define PWGEN_PBKDF2_KEY_SIZE 20
#define PWGEN_ARGON2_T_COST 3
#define PWGEN_ARGON2_M_COST (64 * 1024)   /* KiB */
#define PWGEN_ARGON2_HASH_SIZE 32
/* Encoded argon2 with our parameters is ~100 bytes. */
#define PWGEN_ARGON2_ENCODED_MAX 256
#define PWGEN_BCRYPT_COST 12
/* Upper bounds on what an admin may ask for: beyond them a login takes
   minutes. */
#define PWGEN_MAX_ROUNDS 10000000
#define PWGEN_ARGON2_MAX_T 64

/* 16 characters of crypt's alphabet: PBKDF2 uses its salt as text. */
static void pwgen_text_salt(char out[PWGEN_SALT_SIZE + 1])
{
	static const char chars[] = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz";
	unsigned char raw[PWGEN_SALT_SIZE];

	random_fill(raw, sizeof(raw));
	for (unsigned int i = 0; i < PWGEN_SALT_SIZE; i++)
		out[i] = chars[raw[i] % (sizeof(chars) - 1)];
	out[PWGEN_SALT_SIZE] = '\0';
}

static const char *pwgen_crypt(pool_t pool, const char *prefix,
			       const char *plain, unsigned int rounds,
			       const char **error_r)
{
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *data;
	const char *hash, *result = NULL;

	if (crypt_gensalt_rn(prefix, rounds, NULL, 0, setting,
			     sizeof(setting)) == NULL) {
		*error_r = "crypt_gensalt failed (bad rounds?)";
		return NULL;
	}
	data = i_malloc(sizeof(*data));
	hash = crypt_rn(plain, setting, data, sizeof(*data));
	if (hash == NULL || hash[0] == '*')
		*error_r = "crypt failed";
	else
		result = p_strdup(pool, hash);
	safe_memset(data, 0, sizeof(*data));
	free(data);
	return result;
}

static const char *pwgen_ssha(pool_t pool, enum password_digest digest,
			      const char *plain)
{
	unsigned char buf[PASSWORD_CRYPTO_MAX_DIGEST + PWGEN_SALT_SIZE];
	size_t dsize = password_digest_size(digest);

	random_fill(buf + dsize, PWGEN_SALT_SIZE);
	password_hash2(digest, plain, strlen(plain), buf + dsize,
		       PWGEN_SALT_SIZE, buf);
	return p_base64_encode(pool, buf, dsize + PWGEN_SALT_SIZE);
}

static const char *pwgen_pbkdf2(pool_t pool, const char *plain,
				unsigned int rounds)
{
	unsigned char key[PWGEN_PBKDF2_KEY_SIZE];
	char salt[PWGEN_SALT_SIZE + 1];

	if (rounds == 0)
		rounds = PWGEN_PBKDF2_ROUNDS;
	pwgen_text_salt(salt);
	password_pbkdf2(PASSWORD_DIGEST_SHA1, plain, strlen(plain), salt,
			PWGEN_SALT_SIZE, rounds, key, sizeof(key));
	return p_strdup_printf(pool, "$1$%s$%u$%s", salt, rounds,
			       password_hex(pool, key, sizeof(key)));
}

static const char *pwgen_scram(pool_t pool, enum password_digest digest,
			       const char *plain, unsigned int rounds)
{
	struct password_scram_creds creds;
	unsigned char salt[PASSWORD_SCRAM_SALT_SIZE];
	const char *result;

	random_fill(salt, sizeof(salt));
	password_scram_creds_from_plain(digest, plain, salt, sizeof(salt),
		rounds == 0 ? PASSWORD_SCRAM_DEFAULT_ITERATIONS : rounds,
		&creds);
	result = password_scram_format(pool, &creds);
	safe_memset(&creds, 0, sizeof(creds));
	return result;
}

static const char *pwgen_argon2(pool_t pool, bool id, const char *plain,
				unsigned int rounds, const char **error_r)
{
	unsigned char salt[PWGEN_SALT_SIZE];
	char encoded[PWGEN_ARGON2_ENCODED_MAX];
	int ret;

	if (rounds > PWGEN_ARGON2_MAX_T) {
		*error_r = "argon2 rounds (t_cost) too large";
		return NULL;
	}
	random_fill(salt, sizeof(salt));
	ret = argon2_hash(rounds == 0 ? PWGEN_ARGON2_T_COST : rounds,
			  PWGEN_ARGON2_M_COST, 1, plain, strlen(plain),
			  salt, sizeof(salt), NULL, PWGEN_ARGON2_HASH_SIZE,
			  encoded, sizeof(encoded), id ? Argon2_id : Argon2_i,
			  ARGON2_VERSION_NUMBER);
	if (ret != ARGON2_OK) {
		*error_r = argon2_error_message(ret);
		return NULL;
	}
	return p_strdup(pool, encoded);
}

static const char *pwgen_data(pool_t pool, const char *name, const char *plain,
			      unsigned int rounds, const char **error_r)
{
	if (strcmp(name, "PLAIN") == 0)
		return p_strdup(pool, plain);
	if (strcmp(name, "CRYPT") == 0 || strcmp(name, "SHA512-CRYPT") == 0)
		return pwgen_crypt(pool, "$6$", plain, rounds, error_r);
	if (strcmp(name, "SHA256-CRYPT") == 0)
		return pwgen_crypt(pool, "$5$", plain, rounds, error_r);
	if (strcmp(name, "MD5-CRYPT") == 0)
		return pwgen_crypt(pool, "$1$", plain, rounds, error_r);
	if (strcmp(name, "BLF-CRYPT") == 0)
		return pwgen_crypt(pool, "$2b$", plain, rounds == 0 ?
				   PWGEN_BCRYPT_COST : rounds, error_r);
	if (strcmp(name, "SSHA256") == 0)
		return pwgen_ssha(pool, PASSWORD_DIGEST_SHA256, plain);
	if (strcmp(name, "SSHA512") == 0)
		return pwgen_ssha(pool, PASSWORD_DIGEST_SHA512, plain);
	if (strcmp(name, "PBKDF2") == 0)
		return pwgen_pbkdf2(pool, plain, rounds);
	if (strcmp(name, "SCRAM-SHA-1") == 0)
		return pwgen_scram(pool, PASSWORD_DIGEST_SHA1, plain, rounds);
	if (strcmp(name, "SCRAM-SHA-256") == 0)
		return pwgen_scram(pool, PASSWORD_DIGEST_SHA256, plain, rounds);
	if (strcmp(name, "ARGON2ID") == 0 || strcmp(name, "ARGON2I") == 0)
		return pwgen_argon2(pool, strcmp(name, "ARGON2ID") == 0,
				    plain, rounds,
				    error_r);
	*error_r = "unknown password scheme";
	return NULL;
}

const char *password_generate(pool_t pool, const char *scheme,
			      const char *plain, unsigned int rounds,
			      const char **error_r)
{
	const char *name, *data, *stored;

	if (strlen(plain) == 0 || strlen(plain) > PASSWORD_MAX_LENGTH) {
		*error_r = "password must be 1..1024 bytes";
		return NULL;
	}
	if (rounds > PWGEN_MAX_ROUNDS) {
		*error_r = "rounds too large";
		return NULL;
	}
	stored = p_strdup_printf(pool, "{%s}x", scheme);
	if (password_split_scheme(stored, "PLAIN", &name, &data) < 0 ||
	    stored[1] == '}') {
		*error_r = "unknown password scheme";
		return NULL;
	}
	data = pwgen_data(pool, name, plain, rounds, error_r);
	return data == NULL ? NULL : p_strdup_printf(pool, "{%s}%s", name, data);
}
