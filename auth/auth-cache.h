#ifndef AUTH_CACHE_H
#define AUTH_CACHE_H
/* A cache of password verifications (auth_cache_size, auth_cache_ttl,
   auth_cache_negative_ttl): a login whose user, stored password hash and
   password were checked recently is answered without hashing again, so
   repeated logins (clients that log in every few minutes, many sessions
   of one user) do not cost a SHA512-CRYPT or argon2 each.

   An entry is a keyed digest (HMAC-SHA256 under a random per-process
   key) of all three: a changed passwd-file entry (a new hash) simply
   misses, so the cache never answers differently from hashing; its TTLs
   only bound how long a verification is remembered. Memory is fixed at
   creation (auth_cache_size bytes); no password or hash is stored. */

#include "lib.h"

#include <time.h>

struct auth_cache;

/* size_bytes 0: no cache (NULL; the functions below accept NULL). TTLs in
   seconds; a TTL of 0 caches nothing of that kind. */
struct auth_cache *auth_cache_create(uint64_t size_bytes,
				     unsigned int ttl_secs,
				     unsigned int negative_ttl_secs);
void auth_cache_destroy(struct auth_cache **cache);

/* stored: the passdb's password field, or NULL for a user no passdb
   knows (so that a repeated wrong login of an unknown user is as fast as
   one of a known user: no timing oracle). now: a monotonic clock in
   seconds. Returns 1 (verified), 0 (known mismatch) or -1 (not cached). */
int auth_cache_lookup(struct auth_cache *cache, const char *user,
		      const char *stored, const char *password, time_t now);
void auth_cache_add(struct auth_cache *cache, const char *user,
		    const char *stored, const char *password, bool verified,
		    time_t now);
/* Forget every entry. Nothing needs it on a passwd-file change (a new
   hash misses by itself); for tests and an admin's flush. */
void auth_cache_clear(struct auth_cache *cache);

/* Entries a cache of size_bytes holds (for the docs and tests). */
unsigned int auth_cache_capacity(uint64_t size_bytes);

#endif
