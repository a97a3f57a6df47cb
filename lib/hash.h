#ifndef HASH_H
#define HASH_H
/* FNV-1a over bytes, for the process-local hash tables (and the hashes
   moat stores: Message-ID keys in the cache, EMAILID/THREADID, whose own
   final mixes stay with them, so that their values never change). Not
   for anything an attacker should not be able to collide on purpose. */

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A64_INIT 0xcbf29ce484222325ULL
#define HASH_FNV1A32_INIT 2166136261U

/* Continue h (HASH_FNV1A64_INIT to start) over size bytes of data. */
static inline uint64_t hash_fnv1a64_more(uint64_t h, const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static inline uint64_t hash_fnv1a64(const void *data, size_t size)
{
	return hash_fnv1a64_more(HASH_FNV1A64_INIT, data, size);
}

static inline uint32_t hash_fnv1a32(const void *data, size_t size)
{
	const unsigned char *p = data;
	uint32_t h = HASH_FNV1A32_INIT;

	for (size_t i = 0; i < size; i++)
		h = (h ^ p[i]) * 16777619U;
	return h;
}

#endif
