/* SHA-256 as FIPS 180-4 section 6.2 states it: 64-byte blocks, a
   64-word message schedule, 64 rounds, the length in bits at the end of
   the padding, all words big-endian. */
#include "lib.h"
#include "sha256.h"

#include <string.h>

/* The first 32 bits of the fractional parts of the cube roots of the
   first 64 primes (FIPS 180-4 4.2.2). */
static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr32(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t be32_get(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
		((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void be32_put(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

void sha256_init(struct sha256_ctx *ctx)
{
	/* the first 32 bits of the fractional parts of the square roots of
	   the first 8 primes (FIPS 180-4 5.3.3) */
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(ctx->state, h0, sizeof(h0));
	ctx->total_len = 0;
	ctx->block_len = 0;
}

static void sha256_block(uint32_t state[8], const unsigned char *block)
{
	uint32_t w[64];
	unsigned int t;

	for (t = 0; t < 16; t++)
		w[t] = be32_get(block + t * 4);
	for (; t < 64; t++) {
		uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^
			(w[t - 15] >> 3);
		uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^
			(w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}

	uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
	uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
	for (t = 0; t < 64; t++) {
		uint32_t sum1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = h + sum1 + ch + sha256_k[t] + w[t];
		uint32_t sum0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = sum0 + maj;
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
	state[5] += f;
	state[6] += g;
	state[7] += h;
}

void sha256_update(struct sha256_ctx *ctx, const void *data, size_t size)
{
	const unsigned char *p = data;

	ctx->total_len += size;
	if (ctx->block_len > 0) {
		size_t n = MIN(size, SHA256_BLOCK_LEN - ctx->block_len);
		memcpy(ctx->block + ctx->block_len, p, n);
		ctx->block_len += n;
		p += n;
		size -= n;
		if (ctx->block_len < SHA256_BLOCK_LEN)
			return;
		sha256_block(ctx->state, ctx->block);
		ctx->block_len = 0;
	}
	for (; size >= SHA256_BLOCK_LEN; size -= SHA256_BLOCK_LEN) {
		sha256_block(ctx->state, p);
		p += SHA256_BLOCK_LEN;
	}
	if (size > 0) {
		memcpy(ctx->block, p, size);
		ctx->block_len = size;
	}
}

void sha256_final(struct sha256_ctx *ctx,
		  unsigned char digest_r[SHA256_DIGEST_LEN])
{
	uint64_t bits = ctx->total_len * 8;

	/* a 1 bit, zeros up to 56 bytes into a block, the 64-bit length */
	ctx->block[ctx->block_len++] = 0x80;
	if (ctx->block_len > SHA256_BLOCK_LEN - 8) {
		memset(ctx->block + ctx->block_len, 0,
		       SHA256_BLOCK_LEN - ctx->block_len);
		sha256_block(ctx->state, ctx->block);
		ctx->block_len = 0;
	}
	memset(ctx->block + ctx->block_len, 0,
	       SHA256_BLOCK_LEN - 8 - ctx->block_len);
	be32_put(ctx->block + 56, (uint32_t)(bits >> 32));
	be32_put(ctx->block + 60, (uint32_t)bits);
	sha256_block(ctx->state, ctx->block);
	for (unsigned int i = 0; i < 8; i++)
		be32_put(digest_r + i * 4, ctx->state[i]);
}

void sha256_hmac(const void *key, size_t key_size, const void *data,
		 size_t size, unsigned char digest_r[SHA256_DIGEST_LEN])
{
	unsigned char k[SHA256_BLOCK_LEN], pad[SHA256_BLOCK_LEN];
	unsigned char inner[SHA256_DIGEST_LEN];
	struct sha256_ctx ctx;

	/* RFC 2104: a key longer than a block is hashed first */
	memset(k, 0, sizeof(k));
	if (key_size > SHA256_BLOCK_LEN) {
		sha256_init(&ctx);
		sha256_update(&ctx, key, key_size);
		sha256_final(&ctx, k);
	} else if (key_size > 0) {
		memcpy(k, key, key_size);
	}

	for (unsigned int i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, data, size);
	sha256_final(&ctx, inner);

	for (unsigned int i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, inner, sizeof(inner));
	sha256_final(&ctx, digest_r);

	/* the key (and what the data left in the context) is secret */
	safe_memset(k, 0, sizeof(k));
	safe_memset(pad, 0, sizeof(pad));
	safe_memset(inner, 0, sizeof(inner));
	safe_memset(&ctx, 0, sizeof(ctx));
}
