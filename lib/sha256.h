#ifndef SHA256_H
#define SHA256_H
/* SHA-256 (FIPS 180-4), written here so that the imap process, which
   needs one digest (the delivery id, imap/imap-deliver.c), does not map
   libcrypto (1.4 MB of RSS per user). Not constant time with respect to
   the data, which is not secret where it is used. */

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

#endif
