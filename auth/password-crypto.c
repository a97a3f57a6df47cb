/* Digests, HMAC and PBKDF2 over OpenSSL 3 EVP: see password-crypto.h.

   libcrypto is opened on the first call, not linked: only the schemes
   and mechanisms that need it (the digest schemes, PBKDF2, SCRAM,
   CRAM-MD5) use it, and loading it costs auth 1.4 MB of RSS at start
   whether they are used or not (doc/performance.md, "auth without
   libcrypto at start"). The common SHA512-CRYPT passwd-file never loads
   it. auth's seccomp profile lets it map code after the drop (as for
   NSS modules); every symbol is looked up with the version of the API
   it was compiled against. */
#include "lib.h"
#include "mempool.h"
#include "password-crypto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>

#define PASSWORD_CRYPTO_STR2(x) #x
#define PASSWORD_CRYPTO_STR(x) PASSWORD_CRYPTO_STR2(x)
/* "libcrypto.so.3" for the OpenSSL 3 headers we build with */
#define PASSWORD_CRYPTO_SONAME \
	"libcrypto.so." PASSWORD_CRYPTO_STR(OPENSSL_SHLIB_VERSION)
/* every function below exists since 3.0 and carries this version */
#define PASSWORD_CRYPTO_SYMVER "OPENSSL_3.0.0"

/* the functions used, typed by the headers' own prototypes */
struct password_crypto_lib {
	__typeof__(&EVP_md5) md5;
	__typeof__(&EVP_sha1) sha1;
	__typeof__(&EVP_sha256) sha256;
	__typeof__(&EVP_sha512) sha512;
	__typeof__(&EVP_MD_CTX_new) ctx_new;
	__typeof__(&EVP_MD_CTX_free) ctx_free;
	__typeof__(&EVP_DigestInit_ex) init;
	__typeof__(&EVP_DigestUpdate) update;
	__typeof__(&EVP_DigestFinal_ex) final;
	__typeof__(&HMAC) hmac;
	__typeof__(&PKCS5_PBKDF2_HMAC) pbkdf2;
};

static struct password_crypto_lib password_crypto;
static pthread_once_t password_crypto_once = PTHREAD_ONCE_INIT;

static void *password_crypto_sym(void *lib, const char *name)
{
	void *sym = dlvsym(lib, name, PASSWORD_CRYPTO_SYMVER);

	if (sym == NULL)
		i_panic("%s: no %s@%s: %s", PASSWORD_CRYPTO_SONAME, name,
			PASSWORD_CRYPTO_SYMVER, dlerror());
	return sym;
}

static void password_crypto_load(void)
{
	/* never closed: the process uses it until it exits */
	void *lib = dlopen(PASSWORD_CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (lib == NULL)
		i_panic("cannot load %s: %s", PASSWORD_CRYPTO_SONAME, dlerror());
#define LOAD(field, name) \
	password_crypto.field = \
		(__typeof__(password_crypto.field))password_crypto_sym(lib, name)
	LOAD(md5, "EVP_md5");
	LOAD(sha1, "EVP_sha1");
	LOAD(sha256, "EVP_sha256");
	LOAD(sha512, "EVP_sha512");
	LOAD(ctx_new, "EVP_MD_CTX_new");
	LOAD(ctx_free, "EVP_MD_CTX_free");
	LOAD(init, "EVP_DigestInit_ex");
	LOAD(update, "EVP_DigestUpdate");
	LOAD(final, "EVP_DigestFinal_ex");
	LOAD(hmac, "HMAC");
	LOAD(pbkdf2, "PKCS5_PBKDF2_HMAC");
#undef LOAD
}

static const struct password_crypto_lib *password_crypto_lib(void)
{
	(void)pthread_once(&password_crypto_once, password_crypto_load);
	return &password_crypto;
}

bool password_crypto_loaded(void)
{
	return password_crypto.pbkdf2 != NULL;
}

static const EVP_MD *password_digest_md(const struct password_crypto_lib *c,
					enum password_digest digest)
{
	switch (digest) {
	case PASSWORD_DIGEST_MD5:
		return c->md5();
	case PASSWORD_DIGEST_SHA1:
		return c->sha1();
	case PASSWORD_DIGEST_SHA256:
		return c->sha256();
	case PASSWORD_DIGEST_SHA512:
		return c->sha512();
	}
	i_unreached();
}

size_t password_digest_size(enum password_digest digest)
{
	/* fixed by the algorithms; asking libcrypto would load it */
	switch (digest) {
	case PASSWORD_DIGEST_MD5:
		return 16;
	case PASSWORD_DIGEST_SHA1:
		return 20;
	case PASSWORD_DIGEST_SHA256:
		return 32;
	case PASSWORD_DIGEST_SHA512:
		return 64;
	}
	i_unreached();
}

void password_hash2(enum password_digest digest, const void *data1,
		    size_t size1, const void *data2, size_t size2,
		    unsigned char *out)
{
	const struct password_crypto_lib *c = password_crypto_lib();
	EVP_MD_CTX *ctx = c->ctx_new();
	unsigned int len;

	if (ctx == NULL ||
	    c->init(ctx, password_digest_md(c, digest), NULL) != 1 ||
	    c->update(ctx, data1, size1) != 1 ||
	    c->update(ctx, data2, size2) != 1 ||
	    c->final(ctx, out, &len) != 1)
		i_panic("OpenSSL digest failed");
	c->ctx_free(ctx);
}

void password_hmac(enum password_digest digest, const void *key,
		   size_t key_size, const void *data, size_t size,
		   unsigned char *out)
{
	const struct password_crypto_lib *c = password_crypto_lib();
	unsigned int len;

	/* HMAC() with an explicit output buffer is thread-safe and goes
	   through the EVP_MAC provider in OpenSSL 3. */
	if (c->hmac(password_digest_md(c, digest), key, (int)key_size, data,
		    size, out, &len) == NULL)
		i_panic("OpenSSL HMAC failed");
}

void password_pbkdf2(enum password_digest digest, const char *password,
		     size_t password_len, const void *salt, size_t salt_size,
		     unsigned int iterations, unsigned char *out,
		     size_t out_size)
{
	const struct password_crypto_lib *c = password_crypto_lib();

	i_assert(iterations > 0 && iterations <= INT_MAX);
	if (c->pbkdf2(password, (int)password_len, salt, (int)salt_size,
		      (int)iterations, password_digest_md(c, digest),
		      (int)out_size, out) != 1)
		i_panic("OpenSSL PBKDF2 failed");
}

void password_scram_keys(enum password_digest digest,
			 const unsigned char *salted_password,
			 unsigned char *stored_key_r,
			 unsigned char *server_key_r)
{
	size_t size = password_digest_size(digest);
	unsigned char client_key[PASSWORD_CRYPTO_MAX_DIGEST];

	password_hmac(digest, salted_password, size, "Client Key", 10,
		      client_key);
	password_hash2(digest, client_key, size, "", 0, stored_key_r);
	password_hmac(digest, salted_password, size, "Server Key", 10,
		      server_key_r);
	safe_memset(client_key, 0, sizeof(client_key));
}

const char *password_hex(pool_t pool, const unsigned char *data, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	char *hex = p_malloc(pool, i_add_size(i_mul_size(size, 2), 1));

	for (size_t i = 0; i < size; i++) {
		hex[i * 2] = digits[data[i] >> 4];
		hex[i * 2 + 1] = digits[data[i] & 0x0f];
	}
	hex[size * 2] = '\0';
	return hex;
}
