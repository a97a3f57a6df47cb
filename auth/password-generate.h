#ifndef PASSWORD_GENERATE_H
#define PASSWORD_GENERATE_H
/* Hashing a new password for the admin (moat-pw): the result verifies
   with password_verify(). Every scheme of password-scheme.h is supported;
   {CRYPT} makes a SHA512-CRYPT hash. */

#include "mempool.h"

/* rounds == 0 picks the scheme's default: sha-crypt 5000 (crypt's
   default), bcrypt cost 12, PBKDF2 rounds 5000, argon2 t=3 (with m=64 MiB,
   p=1), SCRAM iterations 4096. Returns "{SCHEME}data" in pool, or NULL
   with *error_r for an unknown scheme or bad rounds. */
const char *password_generate(pool_t pool, const char *scheme,
			      const char *plain, unsigned int rounds,
			      const char **error_r);

#endif
