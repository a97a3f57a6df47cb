/* Password schemes: see password-scheme.h. crypt_rn(), argon2 and PBKDF2
   are CPU-bound; the stored hashes' cost parameters (bcrypt cost,
   sha-crypt rounds, PBKDF2 rounds, argon2 t/m) set how long one
   verification blocks the auth process. */
#include "lib.h"
#include "password-scheme.h"
#include "password-scheme-private.h"

#include <crypt.h>
#include <strings.h>

enum password_scheme_type {
	SCHEME_PLAIN,
	SCHEME_CRYPT,
	SCHEME_SSHA256,
	SCHEME_SSHA512,
	SCHEME_PBKDF2,
	SCHEME_SCRAM_SHA1,
	SCHEME_SCRAM_SHA256,
	SCHEME_ARGON2I,
	SCHEME_ARGON2ID,
};

struct password_scheme {
	const char *name;
	enum password_scheme_type type;
	/* crypt hashes of this scheme start with one of these; NULL = any */
	const char *const *prefixes;
};

static const char *const md5_prefixes[] = { "$1$", NULL };
static const char *const sha256_prefixes[] = { "$5$", NULL };
static const char *const sha512_prefixes[] = { "$6$", NULL };
static const char *const blf_prefixes[] = { "$2a$", "$2b$", "$2y$", NULL };

static const struct password_scheme schemes[] = {
	{ "PLAIN", SCHEME_PLAIN, NULL },
	{ "CLEAR", SCHEME_PLAIN, NULL },
	{ "CRYPT", SCHEME_CRYPT, NULL },
	{ "MD5-CRYPT", SCHEME_CRYPT, md5_prefixes },
	{ "SHA256-CRYPT", SCHEME_CRYPT, sha256_prefixes },
	{ "SHA512-CRYPT", SCHEME_CRYPT, sha512_prefixes },
	{ "BLF-CRYPT", SCHEME_CRYPT, blf_prefixes },
	{ "SSHA256", SCHEME_SSHA256, NULL },
	{ "SSHA512", SCHEME_SSHA512, NULL },
	{ "PBKDF2", SCHEME_PBKDF2, NULL },
	{ "SCRAM-SHA-1", SCHEME_SCRAM_SHA1, NULL },
	{ "SCRAM-SHA-256", SCHEME_SCRAM_SHA256, NULL },
	{ "ARGON2I", SCHEME_ARGON2I, NULL },
	{ "ARGON2ID", SCHEME_ARGON2ID, NULL },
};

/* Longest scheme name we look at, braces excluded. */
#define PASSWORD_SCHEME_NAME_MAX 32

static const struct password_scheme *scheme_find(const char *name, size_t len)
{
	for (unsigned int i = 0; i < N_ELEMENTS(schemes); i++) {
		if (strlen(schemes[i].name) == len &&
		    strncasecmp(schemes[i].name, name, len) == 0)
			return &schemes[i];
	}
	return NULL;
}

bool password_scheme_is_known(const char *name)
{
	return scheme_find(name, strlen(name)) != NULL;
}

/* Constant time for equal lengths; different lengths answer "no" after
   the same work, leaking only that the lengths differ. */
static bool secret_equals(const char *a, size_t a_len, const char *b, size_t b_len)
{
	if (a_len != b_len) {
		(void)mem_equals_timing_safe(a, a, a_len);
		return false;
	}
	return mem_equals_timing_safe(a, b, a_len);
}

static bool crypt_prefix_ok(const struct password_scheme *scheme,
			    const char *hash)
{
	if (scheme->prefixes == NULL)
		return true;
	for (unsigned int i = 0; scheme->prefixes[i] != NULL; i++) {
		if (strncmp(hash, scheme->prefixes[i],
			    strlen(scheme->prefixes[i])) == 0)
			return true;
	}
	return false;
}

static int verify_crypt(const struct password_scheme *scheme,
			const char *plain, const char *hash,
			const char **error_r)
{
	struct crypt_data *data;
	const char *result;
	int ret;

	if (hash[0] == '\0' || !crypt_prefix_ok(scheme, hash)) {
		*error_r = "hash does not match its scheme";
		return -1;
	}
	/* struct crypt_data is ~32 KiB: heap, and wiped afterwards since it
	   holds state derived from the password. */
	data = i_malloc(sizeof(*data));
	result = crypt_rn(plain, hash, data, sizeof(*data));
	if (result == NULL || result[0] == '*') {
		*error_r = "malformed or unsupported crypt hash";
		ret = -1;
	} else {
		ret = secret_equals(result, strlen(result),
				    hash, strlen(hash)) ? 1 : 0;
	}
	safe_memset(data, 0, sizeof(*data));
	free(data);
	return ret;
}

/* Split "{SCHEME}data"; without a valid prefix the whole value is data. */
static int split_scheme(const char *stored, const char *default_scheme,
			const struct password_scheme **scheme_r,
			const char **data_r, const char **error_r)
{
	const char *end;

	if (stored[0] == '{' && (end = strchr(stored, '}')) != NULL &&
	    (size_t)(end - stored - 1) <= PASSWORD_SCHEME_NAME_MAX) {
		*scheme_r = scheme_find(stored + 1, end - stored - 1);
		*data_r = end + 1;
		if (*scheme_r == NULL) {
			*error_r = "unknown password scheme";
			return -1;
		}
		return 0;
	}
	*scheme_r = scheme_find(default_scheme, strlen(default_scheme));
	*data_r = stored;
	if (*scheme_r == NULL) {
		*error_r = "unknown default password scheme";
		return -1;
	}
	return 0;
}

int password_verify(const char *plain, const char *stored,
		    const char *default_scheme, const char **error_r)
{
	const struct password_scheme *scheme;
	const char *data;
	size_t plain_len = strlen(plain);

	if (split_scheme(stored, default_scheme, &scheme, &data, error_r) < 0)
		return -1;
	if (data[0] == '\0') {
		/* An empty stored password never matches: an admin who
		   forgot to set one must not open the account. */
		*error_r = "empty stored password";
		return -1;
	}
	if (plain_len == 0 || plain_len > PASSWORD_MAX_LENGTH)
		return 0;
	switch (scheme->type) {
	case SCHEME_PLAIN:
		return secret_equals(plain, plain_len, data, strlen(data)) ? 1 : 0;
	case SCHEME_CRYPT:
		return verify_crypt(scheme, plain, data, error_r);
	case SCHEME_SSHA256:
		return password_verify_ssha(PASSWORD_DIGEST_SHA256, plain,
					    data, error_r);
	case SCHEME_SSHA512:
		return password_verify_ssha(PASSWORD_DIGEST_SHA512, plain,
					    data, error_r);
	case SCHEME_PBKDF2:
		return password_verify_pbkdf2(plain, data, error_r);
	case SCHEME_SCRAM_SHA1:
		return password_verify_scram(PASSWORD_DIGEST_SHA1, plain,
					     data, error_r);
	case SCHEME_SCRAM_SHA256:
		return password_verify_scram(PASSWORD_DIGEST_SHA256, plain,
					     data, error_r);
	case SCHEME_ARGON2I:
		return password_verify_argon2(false, plain, data, error_r);
	case SCHEME_ARGON2ID:
		return password_verify_argon2(true, plain, data, error_r);
	}
	i_unreached();
}

int password_split_scheme(const char *stored, const char *default_scheme,
			  const char **scheme_r, const char **data_r)
{
	const struct password_scheme *scheme;
	const char *error;

	if (split_scheme(stored, default_scheme, &scheme, data_r, &error) < 0)
		return -1;
	/* CLEAR is PLAIN under another name. */
	*scheme_r = scheme->type == SCHEME_PLAIN ? "PLAIN" : scheme->name;
	return 0;
}
