/* The keyless provider; login-keyless.h. Only what libssl uses of a
   server key is implemented: key objects made from public parameters
   (import), their sizes and group (get_params, answered by the public
   key), comparing them with the certificate (match), and digest-sign.
   No export, no private parameters, no decryption. */
#include "imap-login-common.h"
#include "login-keyless.h"
#include "login-keyd.h"
#include "keyd-protocol.h"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#define KEYLESS_PROVIDER_NAME "moat-keyless"
#define KEYLESS_PROPS "provider=moat-keyless"
/* The default provider's, for the public keys behind ours. */
#define KEYLESS_DEFAULT_PROPS "provider=default"
/* TLS signs with SHA-256 unless the sigalg says otherwise. */
#define KEYLESS_DEFAULT_MD "SHA256"

enum keyless_type { KEYLESS_RSA, KEYLESS_EC };

struct keyless_key {
	enum keyless_type type;
	EVP_PKEY *pub;            /* the default provider's public key */
	char key_id[KEYD_KEY_ID_SIZE];
};

struct keyless_sign {
	struct keyless_key *key;  /* not owned: libcrypto holds the key */
	EVP_MD *md;
	EVP_MD_CTX *mdctx;
	bool pss;
};

/* Where signatures go. A global because OpenSSL's provider init has no
   argument to carry it; set once in login_keyless_init(). */
static struct login_keyd *keyless_keyd;

/* ---- key management ---- */

static void *keyless_key_new(enum keyless_type type)
{
	struct keyless_key *key = i_malloc(sizeof(*key));

	key->type = type;
	return key;
}

static void *keyless_rsa_new(void *provctx ATTR_UNUSED)
{
	return keyless_key_new(KEYLESS_RSA);
}

static void *keyless_ec_new(void *provctx ATTR_UNUSED)
{
	return keyless_key_new(KEYLESS_EC);
}

static void keyless_key_free(void *keydata)
{
	struct keyless_key *key = keydata;

	if (key == NULL)
		return;
	EVP_PKEY_free(key->pub);
	free(key);
}

static int keyless_key_has(const void *keydata, int selection ATTR_UNUSED)
{
	const struct keyless_key *key = keydata;

	/* The private half is the signer's, usable as if it were here. */
	return key != NULL && key->pub != NULL;
}

static int keyless_key_match(const void *keydata1, const void *keydata2,
			     int selection ATTR_UNUSED)
{
	const struct keyless_key *a = keydata1, *b = keydata2;

	return a->type == b->type && a->pub != NULL && b->pub != NULL &&
		EVP_PKEY_eq(a->pub, b->pub) == 1;
}

/* Public parameters only (n and e; the group and the point), as the
   certificate's key exports them. */
static int keyless_key_import(void *keydata, int selection,
			      const OSSL_PARAM params[])
{
	struct keyless_key *key = keydata;
	EVP_PKEY *pub = NULL;

	if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) == 0 || key->pub != NULL)
		return 0;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL,
		key->type == KEYLESS_RSA ? "RSA" : "EC", KEYLESS_DEFAULT_PROPS);
	int ok = ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 &&
		EVP_PKEY_fromdata(ctx, &pub, EVP_PKEY_PUBLIC_KEY,
				  (OSSL_PARAM *)params) == 1 &&
		keyd_key_id(pub, key->key_id) == 0;
	EVP_PKEY_CTX_free(ctx);
	if (!ok) {
		EVP_PKEY_free(pub);
		return 0;
	}
	key->pub = pub;
	return 1;
}

static const OSSL_PARAM *keyless_rsa_import_types(int selection ATTR_UNUSED)
{
	static const OSSL_PARAM types[] = {
		OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_N, NULL, 0),
		OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, NULL, 0),
		OSSL_PARAM_END
	};
	return types;
}

static const OSSL_PARAM *keyless_ec_import_types(int selection ATTR_UNUSED)
{
	static const OSSL_PARAM types[] = {
		OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
		OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, NULL, 0),
		OSSL_PARAM_END
	};
	return types;
}

/* Sizes, security bits, the group: all the public key's. */
static int keyless_key_get_params(void *keydata, OSSL_PARAM params[])
{
	struct keyless_key *key = keydata;

	return key->pub != NULL && EVP_PKEY_get_params(key->pub, params) == 1;
}

static const OSSL_PARAM *keyless_key_gettable_params(void *provctx ATTR_UNUSED)
{
	static const OSSL_PARAM gettable[] = {
		OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
		OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
		OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
		OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, NULL, 0),
		OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
		OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
				       NULL, 0),
		OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0),
		OSSL_PARAM_END
	};
	return gettable;
}

static const char *keyless_rsa_query(int operation_id)
{
	return operation_id == OSSL_OP_SIGNATURE ? "RSA" : NULL;
}

static const char *keyless_ec_query(int operation_id)
{
	return operation_id == OSSL_OP_SIGNATURE ? "ECDSA" : NULL;
}

#define FN(id, fn) { id, (void (*)(void))(fn) }
static const OSSL_DISPATCH keyless_rsa_keymgmt[] = {
	FN(OSSL_FUNC_KEYMGMT_NEW, keyless_rsa_new),
	FN(OSSL_FUNC_KEYMGMT_FREE, keyless_key_free),
	FN(OSSL_FUNC_KEYMGMT_HAS, keyless_key_has),
	FN(OSSL_FUNC_KEYMGMT_MATCH, keyless_key_match),
	FN(OSSL_FUNC_KEYMGMT_IMPORT, keyless_key_import),
	FN(OSSL_FUNC_KEYMGMT_IMPORT_TYPES, keyless_rsa_import_types),
	FN(OSSL_FUNC_KEYMGMT_GET_PARAMS, keyless_key_get_params),
	FN(OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, keyless_key_gettable_params),
	FN(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, keyless_rsa_query),
	{ 0, NULL }
};
static const OSSL_DISPATCH keyless_ec_keymgmt[] = {
	FN(OSSL_FUNC_KEYMGMT_NEW, keyless_ec_new),
	FN(OSSL_FUNC_KEYMGMT_FREE, keyless_key_free),
	FN(OSSL_FUNC_KEYMGMT_HAS, keyless_key_has),
	FN(OSSL_FUNC_KEYMGMT_MATCH, keyless_key_match),
	FN(OSSL_FUNC_KEYMGMT_IMPORT, keyless_key_import),
	FN(OSSL_FUNC_KEYMGMT_IMPORT_TYPES, keyless_ec_import_types),
	FN(OSSL_FUNC_KEYMGMT_GET_PARAMS, keyless_key_get_params),
	FN(OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, keyless_key_gettable_params),
	FN(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, keyless_ec_query),
	{ 0, NULL }
};

/* ---- signatures ---- */

static void *keyless_sign_newctx(void *provctx ATTR_UNUSED,
				 const char *propq ATTR_UNUSED)
{
	return i_malloc(sizeof(struct keyless_sign));
}

static void keyless_sign_freectx(void *vctx)
{
	struct keyless_sign *ctx = vctx;

	EVP_MD_CTX_free(ctx->mdctx);
	EVP_MD_free(ctx->md);
	free(ctx);
}

static void *keyless_sign_dupctx(void *vctx)
{
	struct keyless_sign *ctx = vctx, *dup = i_malloc(sizeof(*dup));

	*dup = *ctx;
	dup->md = NULL;
	dup->mdctx = NULL;
	if (ctx->md != NULL) {
		if (EVP_MD_up_ref(ctx->md) != 1) {
			free(dup);
			return NULL;
		}
		dup->md = ctx->md;
	}
	if (ctx->mdctx != NULL) {
		dup->mdctx = EVP_MD_CTX_new();
		if (dup->mdctx == NULL ||
		    EVP_MD_CTX_copy_ex(dup->mdctx, ctx->mdctx) != 1) {
			keyless_sign_freectx(dup);
			return NULL;
		}
	}
	return dup;
}

/* Only digests the signer signs with; libssl then offers no other. */
static int keyless_sign_set_md(struct keyless_sign *ctx, const char *name)
{
	EVP_MD *md = EVP_MD_fetch(NULL, name, KEYLESS_DEFAULT_PROPS);

	if (md == NULL || keyd_md_name(md) == NULL) {
		EVP_MD_free(md);
		return 0;
	}
	EVP_MD_free(ctx->md);
	ctx->md = md;
	if (ctx->mdctx == NULL && (ctx->mdctx = EVP_MD_CTX_new()) == NULL)
		return 0;
	return EVP_DigestInit_ex(ctx->mdctx, md, NULL);
}

static int keyless_param_pss(const OSSL_PARAM *p, bool *pss_r)
{
	const char *str;
	int pad;

	if (p->data_type == OSSL_PARAM_UTF8_STRING) {
		if (OSSL_PARAM_get_utf8_string_ptr(p, &str) != 1)
			return 0;
		if (strcmp(str, "pss") == 0)
			pad = RSA_PKCS1_PSS_PADDING;
		else if (strcmp(str, "pkcs1") == 0)
			pad = RSA_PKCS1_PADDING;
		else
			return 0;
	} else if (OSSL_PARAM_get_int(p, &pad) != 1) {
		return 0;
	}
	if (pad != RSA_PKCS1_PSS_PADDING && pad != RSA_PKCS1_PADDING)
		return 0;
	*pss_r = pad == RSA_PKCS1_PSS_PADDING;
	return 1;
}

/* The signer salts with the digest's length, as TLS requires. */
static int keyless_param_saltlen_ok(const struct keyless_sign *ctx,
				    const OSSL_PARAM *p)
{
	const char *str;
	int len;

	if (p->data_type == OSSL_PARAM_UTF8_STRING) {
		if (OSSL_PARAM_get_utf8_string_ptr(p, &str) != 1)
			return 0;
		if (strcmp(str, OSSL_PKEY_RSA_PSS_SALT_LEN_DIGEST) == 0)
			return 1;
		char *end;
		long value = strtol(str, &end, 10);
		if (end == str || *end != '\0' || value < -4 || value > 1024)
			return 0;
		len = (int)value;
	} else if (OSSL_PARAM_get_int(p, &len) != 1) {
		return 0;
	}
	return len == RSA_PSS_SALTLEN_DIGEST ||
		(ctx->md != NULL && len == EVP_MD_get_size(ctx->md));
}

static int keyless_sign_set_params(void *vctx, const OSSL_PARAM params[])
{
	struct keyless_sign *ctx = vctx;
	const OSSL_PARAM *p;
	const char *str;

	if (params == NULL)
		return 1;
	p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_DIGEST);
	if (p != NULL && (OSSL_PARAM_get_utf8_string_ptr(p, &str) != 1 ||
			  keyless_sign_set_md(ctx, str) != 1))
		return 0;
	p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
	if (p != NULL && (ctx->key == NULL || ctx->key->type != KEYLESS_RSA ||
			  keyless_param_pss(p, &ctx->pss) != 1))
		return 0;
	p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
	if (p != NULL && keyless_param_saltlen_ok(ctx, p) != 1)
		return 0;
	/* MGF1 uses the signature's digest at the signer. */
	p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
	if (p != NULL && (OSSL_PARAM_get_utf8_string_ptr(p, &str) != 1 ||
			  ctx->md == NULL || !EVP_MD_is_a(ctx->md, str)))
		return 0;
	return 1;
}

static const OSSL_PARAM *keyless_sign_settable(void *vctx ATTR_UNUSED,
					       void *provctx ATTR_UNUSED)
{
	static const OSSL_PARAM settable[] = {
		OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, NULL, 0),
		OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PAD_MODE, NULL, 0),
		OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, NULL, 0),
		OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, NULL, 0),
		OSSL_PARAM_END
	};
	return settable;
}

static int keyless_digest_sign_init(void *vctx, const char *mdname,
				    void *provkey, const OSSL_PARAM params[])
{
	struct keyless_sign *ctx = vctx;

	ctx->key = provkey;
	ctx->pss = false;
	if (ctx->key == NULL || ctx->key->pub == NULL ||
	    keyless_sign_set_md(ctx, mdname != NULL ? mdname :
				KEYLESS_DEFAULT_MD) != 1)
		return 0;
	return keyless_sign_set_params(ctx, params);
}

static int keyless_digest_sign_update(void *vctx, const unsigned char *data,
				      size_t size)
{
	struct keyless_sign *ctx = vctx;

	return ctx->mdctx != NULL && EVP_DigestUpdate(ctx->mdctx, data, size);
}

static int keyless_digest_sign_final(void *vctx, unsigned char *sig,
				     size_t *sig_len, size_t sig_size)
{
	struct keyless_sign *ctx = vctx;
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int digest_size;
	const char *alg, *error;

	if (ctx->key == NULL || ctx->mdctx == NULL)
		return 0;
	if (sig == NULL) {
		*sig_len = (size_t)EVP_PKEY_get_size(ctx->key->pub);
		return 1;
	}
	if (EVP_DigestFinal_ex(ctx->mdctx, digest, &digest_size) != 1 ||
	    digest_size > KEYD_DIGEST_MAX)
		return 0;
	alg = ctx->key->type == KEYLESS_EC ? KEYD_ALG_ECDSA :
		ctx->pss ? KEYD_ALG_RSA_PSS : KEYD_ALG_RSA_PKCS1;
	if (login_keyd_sign(keyless_keyd, ctx->key->key_id, alg,
			    keyd_md_name(ctx->md), digest, digest_size,
			    sig, sig_size, sig_len, &error) < 0) {
		i_debug("TLS signature by the key-signer failed: %s", error);
		return 0;
	}
	return 1;
}

static const OSSL_DISPATCH keyless_signature[] = {
	FN(OSSL_FUNC_SIGNATURE_NEWCTX, keyless_sign_newctx),
	FN(OSSL_FUNC_SIGNATURE_FREECTX, keyless_sign_freectx),
	FN(OSSL_FUNC_SIGNATURE_DUPCTX, keyless_sign_dupctx),
	FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT, keyless_digest_sign_init),
	FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE, keyless_digest_sign_update),
	FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL, keyless_digest_sign_final),
	FN(OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS, keyless_sign_set_params),
	FN(OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS, keyless_sign_settable),
	{ 0, NULL }
};

/* ---- the provider ---- */

/* The default provider's names, so that libssl takes our keys for RSA
   and EC keys (EVP_PKEY_is_a()). */
static const OSSL_ALGORITHM keyless_keymgmt_algs[] = {
	{ "RSA:rsaEncryption:1.2.840.113549.1.1.1", KEYLESS_PROPS,
	  keyless_rsa_keymgmt, NULL },
	{ "EC:id-ecPublicKey:1.2.840.10045.2.1", KEYLESS_PROPS,
	  keyless_ec_keymgmt, NULL },
	{ NULL, NULL, NULL, NULL }
};
static const OSSL_ALGORITHM keyless_signature_algs[] = {
	{ "RSA:rsaEncryption:1.2.840.113549.1.1.1", KEYLESS_PROPS,
	  keyless_signature, NULL },
	{ "ECDSA", KEYLESS_PROPS, keyless_signature, NULL },
	{ NULL, NULL, NULL, NULL }
};

static const OSSL_ALGORITHM *keyless_query(void *provctx ATTR_UNUSED,
					   int operation_id, int *no_cache)
{
	*no_cache = 0;
	switch (operation_id) {
	case OSSL_OP_KEYMGMT:
		return keyless_keymgmt_algs;
	case OSSL_OP_SIGNATURE:
		return keyless_signature_algs;
	}
	return NULL;
}

static const OSSL_DISPATCH keyless_provider_dispatch[] = {
	FN(OSSL_FUNC_PROVIDER_QUERY_OPERATION, keyless_query),
	{ 0, NULL }
};

static int keyless_provider_init(const OSSL_CORE_HANDLE *handle ATTR_UNUSED,
				 const OSSL_DISPATCH *in ATTR_UNUSED,
				 const OSSL_DISPATCH **out, void **provctx)
{
	*out = keyless_provider_dispatch;
	*provctx = NULL;
	return 1;
}

void login_keyless_init(struct login_keyd *keyd)
{
	i_assert(keyless_keyd == NULL);
	keyless_keyd = keyd;
	/* Loading one provider explicitly stops the automatic loading of
	   the default one. Everything without a property query must come
	   from the default provider (a client's ECDHE key must not land in
	   our EC key management, which cannot generate keys). */
	if (OSSL_PROVIDER_load(NULL, "default") == NULL ||
	    OSSL_PROVIDER_add_builtin(NULL, KEYLESS_PROVIDER_NAME,
				      keyless_provider_init) != 1 ||
	    OSSL_PROVIDER_load(NULL, KEYLESS_PROVIDER_NAME) == NULL ||
	    EVP_set_default_properties(NULL, "?provider=default") != 1)
		i_fatal("ssl_key_isolation: cannot load the keyless provider: %s",
			ERR_error_string(ERR_get_error(), NULL));
}

EVP_PKEY *login_keyless_key_new(X509 *cert)
{
	EVP_PKEY *pub = X509_get0_pubkey(cert), *key = NULL;
	OSSL_PARAM *params = NULL;
	const char *type;

	if (pub != NULL && EVP_PKEY_is_a(pub, "RSA"))
		type = "RSA";
	else if (pub != NULL && EVP_PKEY_is_a(pub, "EC"))
		type = "EC";
	else
		i_fatal("ssl_key_isolation = yes supports RSA and EC keys only "
			"(set ssl_key_isolation = no for this certificate)");
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, KEYLESS_PROPS);
	if (ctx == NULL || EVP_PKEY_todata(pub, EVP_PKEY_PUBLIC_KEY, &params) != 1 ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1)
		i_fatal("ssl_key_isolation: no key object for ssl_cert: %s",
			ERR_error_string(ERR_get_error(), NULL));
	OSSL_PARAM_free(params);
	EVP_PKEY_CTX_free(ctx);
	return key;
}
