#ifndef PASSWORD_SCHEME_PRIVATE_H
#define PASSWORD_SCHEME_PRIVATE_H
/* The verifiers of password-scheme.c's table that are not crypt(3). Each
   returns 1 match, 0 mismatch, -1 unusable stored data (*error_r). data
   is the stored value without its {SCHEME} prefix and is not empty;
   plain is 1..PASSWORD_MAX_LENGTH bytes. */

#include "password-crypto.h"

int password_verify_ssha(enum password_digest digest, const char *plain,
			 const char *data, const char **error_r);
int password_verify_pbkdf2(const char *plain, const char *data,
			   const char **error_r);
int password_verify_scram(enum password_digest digest, const char *plain,
			  const char *data, const char **error_r);
/* argon2id: true for {ARGON2ID}, false for {ARGON2I}. */
int password_verify_argon2(bool argon2id, const char *plain,
			   const char *data, const char **error_r);

#endif
