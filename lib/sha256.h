#ifndef SHA256_H
#define SHA256_H
/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written here so that
   processes that need no other cryptography do not map libcrypto (1.4 MB
   of RSS per user imap process for the delivery id, imap/imap-deliver.c;
   about 3 MB in auth for its cache's HMAC, auth/auth-cache.c). The
   compression function has no branch or table index that depends on the
   data or the key; only the lengths show in the timing. */

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_BLOCK_LEN 64

struct sha256_ctx {
	uint32_t state[8];
	uint64_t total_len;           /* bytes hashed so far */
	unsigned char block[SHA256_BLOCK_LEN];
	size_t block_len;             /* bytes of block in use */
};

void sha256_init(struct sha256_ctx *ctx);
void sha256_update(struct sha256_ctx *ctx, const void *data, size_t size);
/* Writes the digest; ctx must be initialised again before reuse. */
void sha256_final(struct sha256_ctx *ctx,
		  unsigned char digest_r[SHA256_DIGEST_LEN]);

/* HMAC-SHA256 of data under key (any length; RFC 2104). Clears its
   copies of the key. */
void sha256_hmac(const void *key, size_t key_size, const void *data,
		 size_t size, unsigned char digest_r[SHA256_DIGEST_LEN]);

#endif
