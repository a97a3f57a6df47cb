#ifndef KEYD_SIGN_H
#define KEYD_SIGN_H
/* The one private-key operation of the key-signer: sign a digest. */

#include "keyd-protocol.h"

/* Sign digest (digest_size bytes, which must be md's size) with key as
   alg (KEYD_ALG_*) and md ("sha256", ...: keyd_md_name()). alg must fit
   the key (rsa-* an RSA key, ecdsa an EC key). Writes at most sig_size
   bytes to sig. Returns 0, or -1 with *error_r (static text, for the
   FAIL record). */
int keyd_sign(EVP_PKEY *key, const char *alg, const char *md,
	      const unsigned char *digest, size_t digest_size,
	      unsigned char *sig, size_t sig_size, size_t *sig_len_r,
	      const char **error_r);

#endif
