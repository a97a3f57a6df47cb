/* Unit tests for password-scheme.c. */
#include "test-common.h"
#include "password-scheme.h"
#include "password-crypto.h"

#include <crypt.h>

/* Computed once with openssl passwd -6/-5/-1 and python3 crypt. */
#define SHA512_SECRET "$6$saltsaltsalt$PMWE8DTlam1JU37Piyk43bHcMxTJq6sgu5DKB0" \
	"/tGPjanN35jcY68QkpDfPFUGPWX5uCxIQkSPzMmqEiVNgts."
#define SHA256_SECRET "$5$saltsaltsalt$TihBZCRsJxAxHgKub.mCOdu9X7QLi980jJxe7T2aZg7"
#define MD5_SECRET "$1$abcdefgh$cHJi5PXp/ki/ktXzqlk6I1"
#define BLF_SECRET "$2b$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a"

static int verify(const char *plain, const char *stored)
{
	const char *error = NULL;

	return password_verify(plain, stored, "CRYPT", &error);
}

static void test_plain(void)
{
	const char *error;

	test_assert_int(verify("secret", "{PLAIN}secret"), 1);
	test_assert_int(verify("secret", "{plain}secret"), 1);
	test_assert_int(verify("secret", "{CLEAR}secret"), 1);
	test_assert_int(verify("secreT", "{PLAIN}secret"), 0);
	test_assert_int(verify("secret2", "{PLAIN}secret"), 0);
	test_assert_int(verify("", "{PLAIN}secret"), 0);
	test_assert_int(verify("a:b}{c", "{PLAIN}a:b}{c"), 1);
	/* default scheme PLAIN for a value without prefix */
	test_assert_int(password_verify("secret", "secret", "PLAIN", &error), 1);
	test_assert_int(password_verify("x", "secret", "PLAIN", &error), 0);
}

static void test_literal_vectors(void)
{
	test_assert_int(verify("secret", "{SHA512-CRYPT}" SHA512_SECRET), 1);
	test_assert_int(verify("secret", SHA512_SECRET), 1);
	test_assert_int(verify("Secret", "{SHA512-CRYPT}" SHA512_SECRET), 0);
	test_assert_int(verify("secret", "{SHA256-CRYPT}" SHA256_SECRET), 1);
	test_assert_int(verify("secret!", "{SHA256-CRYPT}" SHA256_SECRET), 0);
	test_assert_int(verify("secret", "{MD5-CRYPT}" MD5_SECRET), 1);
	test_assert_int(verify("secre", "{MD5-CRYPT}" MD5_SECRET), 0);
	test_assert_int(verify("secret", "{BLF-CRYPT}" BLF_SECRET), 1);
	test_assert_int(verify("secret", "{CRYPT}" BLF_SECRET), 1);
	test_assert_int(verify("wrong", "{BLF-CRYPT}" BLF_SECRET), 0);
}

/* Hash with crypt_r and a fixed setting, then verify through each name. */
static void check_generated(const char *scheme, const char *setting)
{
	struct crypt_data data;
	char stored[256];
	const char *hash;

	memset(&data, 0, sizeof(data));
	hash = crypt_r("pass word", setting, &data);
	test_assert(hash != NULL && hash[0] != '*');
	if (hash == NULL || hash[0] == '*')
		return;
	snprintf(stored, sizeof(stored), "{%s}%s", scheme, hash);
	test_assert_int(verify("pass word", stored), 1);
	test_assert_int(verify("Pass word", stored), 0);
	test_assert_int(verify("pass word", hash), 1);
}

static void test_generated(void)
{
	check_generated("SHA512-CRYPT", "$6$rounds=1000$fixedsalt");
	check_generated("SHA256-CRYPT", "$5$rounds=1000$fixedsalt");
	check_generated("MD5-CRYPT", "$1$fixedsal");
	check_generated("BLF-CRYPT", "$2y$04$0123456789abcdefghijkl");
	check_generated("CRYPT", "ab");
}

static void test_errors(void)
{
	const char *error = NULL;

	test_assert_int(password_verify("x", "{NOSUCH}abc", "CRYPT", &error), -1);
	test_assert(error != NULL && strstr(error, "abc") == NULL);
	test_assert_int(password_verify("x", "{PLAIN}", "CRYPT", &error), -1);
	test_assert_int(password_verify("x", "", "CRYPT", &error), -1);
	/* scheme and hash format must agree */
	test_assert_int(password_verify("secret", "{SHA256-CRYPT}" SHA512_SECRET,
					"CRYPT", &error), -1);
	test_assert_int(password_verify("secret", "{CRYPT}!locked", "CRYPT",
					&error), -1);
	test_assert(password_scheme_is_known("blf-crypt"));
	test_assert(!password_scheme_is_known("MD5"));
}

static void test_long_password(void)
{
	char *plain = i_malloc(PASSWORD_MAX_LENGTH + 2);
	char *stored = i_malloc(PASSWORD_MAX_LENGTH + 10);

	memset(plain, 'a', PASSWORD_MAX_LENGTH + 1);
	snprintf(stored, PASSWORD_MAX_LENGTH + 10, "{PLAIN}%s", plain);
	test_assert_int(verify(plain, stored), 0);
	plain[PASSWORD_MAX_LENGTH] = '\0';
	stored[7 + PASSWORD_MAX_LENGTH] = '\0';
	test_assert_int(verify(plain, stored), 1);
	free(plain);
	free(stored);
}

/* Computed with python3 hashlib (password "pencil") and the argon2 CLI
   (echo -n pencil | argon2 'somesalt16bytes!' -id -t 2 -m 10 -p 1 -e). */
#define SSHA256_PENCIL "ultA1uOh23UB19JVRwqktNNpOKKleED/b5Iy3AfVCCcwMTIzNDU2" \
	"Nzg5YWJjZGVm"
#define SSHA512_PENCIL "N9Qc/kuD2noFVTWBKrooq+QiI/v4VbIIJ4Y/hR1N6uGIPPAkeNSw" \
	"oPFiplsT2SbzEHaE8vACFrhHq8x9/SC4eDAxMjM="
#define PBKDF2_PENCIL "$1$Zx8.abcdEFGH1234$1000$" \
	"2004c01030eabefbb4669f67bac07143a639c59b"
#define ARGON2ID_PENCIL "$argon2id$v=19$m=1024,t=2,p=1$c29tZXNhbHQxNmJ5dGVz" \
	"IQ$oH0vUDMtOxk4cTDVrYVhwKNyBA5/vsNljrpbzLtEtuc"
/* RFC 7677's salt and iterations: StoredKey/ServerKey of "pencil". */
#define SCRAM256_PENCIL "4096,W22ZaJ0SNY7soEsUEjb6gQ==," \
	"WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=," \
	"wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="

static void test_new_schemes(void)
{
	const char *error;

	test_assert_int(verify("pencil", "{SSHA256}" SSHA256_PENCIL), 1);
	test_assert_int(verify("pencil2", "{SSHA256}" SSHA256_PENCIL), 0);
	test_assert_int(verify("pencil", "{SSHA512}" SSHA512_PENCIL), 1);
	test_assert_int(verify("Pencil", "{SSHA512}" SSHA512_PENCIL), 0);
	test_assert_int(verify("pencil", "{PBKDF2}" PBKDF2_PENCIL), 1);
	test_assert_int(verify("pencil ", "{PBKDF2}" PBKDF2_PENCIL), 0);
	test_assert_int(verify("pencil", "{ARGON2ID}" ARGON2ID_PENCIL), 1);
	test_assert_int(verify("pencil", "{argon2id}" ARGON2ID_PENCIL), 1);
	test_assert_int(verify("pencilx", "{ARGON2ID}" ARGON2ID_PENCIL), 0);
	test_assert_int(verify("pencil", "{ARGON2I}" ARGON2ID_PENCIL), -1);
	test_assert_int(verify("pencil", "{SCRAM-SHA-256}" SCRAM256_PENCIL), 1);
	test_assert_int(verify("pencil1", "{SCRAM-SHA-256}" SCRAM256_PENCIL), 0);
	/* malformed stored values are errors, never matches */
	test_assert_int(password_verify("x", "{SSHA256}AAAA", "PLAIN", &error), -1);
	test_assert_int(password_verify("x", "{SSHA256}!!", "PLAIN", &error), -1);
	test_assert_int(password_verify("x", "{PBKDF2}$1$s$0$00", "PLAIN",
					&error), -1);
	test_assert_int(password_verify("x", "{PBKDF2}$1$s$10$zz", "PLAIN",
					&error), -1);
	test_assert_int(password_verify("x", "{PBKDF2}$2$s$10$00", "PLAIN",
					&error), -1);
	test_assert_int(password_verify("x", "{SCRAM-SHA-256}4096,AAAA,AA,AA",
					"PLAIN", &error), -1);
	test_assert_int(password_verify("x", "{SCRAM-SHA-1}" SCRAM256_PENCIL,
					"PLAIN", &error), -1);
	test_assert_int(password_verify("x", "{ARGON2ID}$argon2id$v=19$junk",
					"PLAIN", &error), -1);
	/* a cost above the limits is refused before libargon2 allocates */
	test_assert_int(password_verify("x", "{ARGON2ID}$argon2id$v=19$m=4194304,"
					"t=2,p=1$c29tZXNhbHQxNmJ5dGVzIQ$oH0vUDMt"
					"Oxk4cTDVrYVhwKNyBA5/vsNljrpbzLtEtuc",
					"PLAIN", &error), -1);
	test_assert(password_scheme_is_known("ssha512"));
	test_assert(password_scheme_is_known("SCRAM-SHA-256"));
}

/* First of the tests: the crypt(3) schemes and PLAIN never open
   libcrypto; a scheme built on a digest opens it. */
static void test_libcrypto_on_demand(void)
{
	test_assert(!password_crypto_loaded());
	test_assert_int(verify("secret", "{SHA512-CRYPT}" SHA512_SECRET), 1);
	test_assert_int(verify("secret", "{PLAIN}secret"), 1);
	test_assert_int((int)password_digest_size(PASSWORD_DIGEST_SHA512), 64);
	test_assert(!password_crypto_loaded());
	test_assert_int(verify("pencil", "{SCRAM-SHA-256}" SCRAM256_PENCIL), 1);
	test_assert(password_crypto_loaded());
}

TEST_MAIN(TEST(test_libcrypto_on_demand), TEST(test_plain), TEST(test_literal_vectors), TEST(test_generated),
	  TEST(test_errors), TEST(test_long_password), TEST(test_new_schemes))
