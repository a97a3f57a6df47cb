/* The verification cache: see auth-cache.h. A set-associative table of
   fixed size; positive entries (right passwords) are what saves work, so
   a negative one never evicts a live positive one: a guesser's stream of
   wrong passwords cannot flush the users' logins out. */
#include "lib.h"
#include "log.h"
#include "auth-cache.h"
#include "sha256.h"

/* HMAC-SHA256 from lib/sha256.c and the key from getrandom(), so that a
   login against a crypt(3) hash (libxcrypt) touches no page of libcrypto:
   about 3 MB of auth's RSS. */
#define AUTH_CACHE_WAYS 4
#define AUTH_CACHE_DIGEST SHA256_DIGEST_LEN  /* HMAC-SHA256 */
#define AUTH_CACHE_KEY_SIZE 32
/* Beyond this the table would be silly for one auth process. */
#define AUTH_CACHE_MAX_SETS (1U << 24)

struct auth_cache_entry {
	unsigned char digest[AUTH_CACHE_DIGEST];
	time_t expires;            /* 0: empty */
	bool verified;
};

struct auth_cache {
	struct auth_cache_entry *entries;   /* sets x AUTH_CACHE_WAYS */
	unsigned int sets;
	unsigned int ttl, negative_ttl;
	unsigned char key[AUTH_CACHE_KEY_SIZE];
};

static unsigned int cache_sets(uint64_t size_bytes)
{
	uint64_t sets = size_bytes /
		(AUTH_CACHE_WAYS * sizeof(struct auth_cache_entry));

	return (unsigned int)MIN(sets, AUTH_CACHE_MAX_SETS);
}

unsigned int auth_cache_capacity(uint64_t size_bytes)
{
	return cache_sets(size_bytes) * AUTH_CACHE_WAYS;
}

struct auth_cache *auth_cache_create(uint64_t size_bytes,
				     unsigned int ttl_secs,
				     unsigned int negative_ttl_secs)
{
	unsigned int sets = cache_sets(size_bytes);

	if (sets == 0 || (ttl_secs == 0 && negative_ttl_secs == 0))
		return NULL;
	struct auth_cache *cache = i_malloc(sizeof(*cache));
	cache->sets = sets;
	cache->ttl = ttl_secs;
	cache->negative_ttl = negative_ttl_secs;
	cache->entries = i_malloc(i_mul_size(sets * AUTH_CACHE_WAYS,
					     sizeof(*cache->entries)));
	random_fill(cache->key, sizeof(cache->key));
	return cache;
}

void auth_cache_destroy(struct auth_cache **_cache)
{
	struct auth_cache *cache = *_cache;

	*_cache = NULL;
	if (cache == NULL)
		return;
	safe_memset(cache->key, 0, sizeof(cache->key));
	free(cache->entries);
	free(cache);
}

void auth_cache_clear(struct auth_cache *cache)
{
	if (cache != NULL) {
		memset(cache->entries, 0, (size_t)cache->sets *
		       AUTH_CACHE_WAYS * sizeof(*cache->entries));
	}
}

static void append_field(unsigned char *buf, size_t *pos, const char *s)
{
	/* length-prefixed: ("ab", "c") and ("a", "bc") differ */
	uint32_t len = (uint32_t)strlen(s);

	memcpy(buf + *pos, &len, sizeof(len));
	memcpy(buf + *pos + sizeof(len), s, len);
	*pos += sizeof(len) + len;
}

static void cache_digest(const struct auth_cache *cache, const char *user,
			 const char *stored, const char *password,
			 unsigned char digest[AUTH_CACHE_DIGEST])
{
	/* stored NULL (unknown user) differs from "" by its marker byte */
	size_t size = 1 + 3 * sizeof(uint32_t) + strlen(user) +
		(stored == NULL ? 0 : strlen(stored)) + strlen(password);
	unsigned char *buf = i_malloc(size);
	size_t pos = 1;

	buf[0] = stored == NULL ? 0 : 1;
	append_field(buf, &pos, user);
	append_field(buf, &pos, stored == NULL ? "" : stored);
	append_field(buf, &pos, password);
	sha256_hmac(cache->key, sizeof(cache->key), buf, pos, digest);
	safe_memset(buf, 0, size);
	free(buf);
}

static struct auth_cache_entry *
cache_set(struct auth_cache *cache, const unsigned char *digest)
{
	uint64_t h;

	memcpy(&h, digest, sizeof(h));
	return &cache->entries[(h % cache->sets) * AUTH_CACHE_WAYS];
}

int auth_cache_lookup(struct auth_cache *cache, const char *user,
		      const char *stored, const char *password, time_t now)
{
	unsigned char digest[AUTH_CACHE_DIGEST];

	if (cache == NULL)
		return -1;
	cache_digest(cache, user, stored, password, digest);
	struct auth_cache_entry *set = cache_set(cache, digest);
	for (unsigned int i = 0; i < AUTH_CACHE_WAYS; i++) {
		struct auth_cache_entry *e = &set[i];
		if (e->expires == 0 ||
		    !mem_equals_timing_safe(e->digest, digest, sizeof(digest)))
			continue;
		if (e->expires <= now) {
			e->expires = 0;
			return -1;
		}
		return e->verified ? 1 : 0;
	}
	return -1;
}

/* The way to (re)use: the same digest, an empty or expired one, then
   for a negative entry only another negative one, for a positive one a
   negative one; the one expiring first among those. NULL: keep it out. */
static struct auth_cache_entry *
cache_victim(struct auth_cache_entry *set, const unsigned char *digest,
	     bool verified, time_t now)
{
	struct auth_cache_entry *victim = NULL;

	for (unsigned int i = 0; i < AUTH_CACHE_WAYS; i++) {
		struct auth_cache_entry *e = &set[i];
		if (e->expires != 0 &&
		    mem_equals_timing_safe(e->digest, digest, AUTH_CACHE_DIGEST))
			return e;
	}
	for (unsigned int i = 0; i < AUTH_CACHE_WAYS; i++) {
		struct auth_cache_entry *e = &set[i];
		if (e->expires <= now)
			return e;
	}
	for (int pass = 0; pass < 2 && victim == NULL; pass++) {
		/* pass 0: negative entries; pass 1 (positive only): any */
		if (pass == 1 && !verified)
			break;
		for (unsigned int i = 0; i < AUTH_CACHE_WAYS; i++) {
			struct auth_cache_entry *e = &set[i];
			if (pass == 0 && e->verified)
				continue;
			if (victim == NULL || e->expires < victim->expires)
				victim = e;
		}
	}
	return victim;
}

void auth_cache_add(struct auth_cache *cache, const char *user,
		    const char *stored, const char *password, bool verified,
		    time_t now)
{
	unsigned char digest[AUTH_CACHE_DIGEST];
	unsigned int ttl;

	if (cache == NULL)
		return;
	ttl = verified ? cache->ttl : cache->negative_ttl;
	if (ttl == 0)
		return;
	cache_digest(cache, user, stored, password, digest);
	struct auth_cache_entry *e =
		cache_victim(cache_set(cache, digest), digest, verified, now);
	if (e == NULL)
		return;
	memcpy(e->digest, digest, sizeof(digest));
	e->expires = now + ttl;
	e->verified = verified;
}
