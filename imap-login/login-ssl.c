/* OpenSSL server context and non-blocking TLS sessions. */
#include "lib.h"
#include "log.h"
#include "login-ssl.h"
#include "login-keyless.h"

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* One line of OpenSSL's error text, as logged. */
#define LOGIN_SSL_ERROR_MAX 256
/* Certificates in ssl_cert after the leaf (intermediates) or in ssl_ca:
   real chains have 1-3; the cap only stops a runaway file. */
#define LOGIN_SSL_MAX_CHAIN 32
/* Bytes of certificate chain a client may send (OpenSSL's default is
   100 KiB per handshake): a client certificate and an intermediate or
   two are a few KiB. */
#define LOGIN_SSL_MAX_CLIENT_CHAIN (16 * 1024)
/* TLS 1.2 sessions kept for resumption by session id (OpenSSL's default
   is 20480 per process, each up to a few KiB): every full handshake adds
   one, so the cap bounds what handshakes alone make a process hold.
   TLS 1.3 and ticket resumption keep nothing here. */
#define LOGIN_SSL_SESSION_CACHE_MAX 1024

struct login_ssl_ctx {
	SSL_CTX *ctx;
};

struct login_ssl {
	SSL *ssl;
	enum io_condition last_want;
	char error[LOGIN_SSL_ERROR_MAX];
};

/* The oldest error of this thread's queue (then cleared) or fallback. */
static const char *ssl_error_text(char *buf, size_t size, const char *fallback)
{
	unsigned long err = ERR_get_error();

	ERR_clear_error();
	if (err == 0)
		return fallback;
	ERR_error_string_n(err, buf, size);
	return buf;
}

static void ATTR_NORETURN ssl_ctx_fatal(const char *what)
{
	char buf[LOGIN_SSL_ERROR_MAX];

	i_fatal("%s: %s", what, ssl_error_text(buf, sizeof(buf), "unknown error"));
}

/* Encrypted keys would need a passphrase: refuse instead of prompting. */
static int ssl_no_passphrase(char *buf ATTR_UNUSED, int size ATTR_UNUSED,
			     int rwflag ATTR_UNUSED, void *u ATTR_UNUSED)
{
	return 0;
}

static void ssl_ctx_load_cert(SSL_CTX *ctx, const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x;

	if (bio == NULL)
		ssl_ctx_fatal("ssl_cert");
	x = PEM_read_bio_X509_AUX(bio, NULL, ssl_no_passphrase, NULL);
	if (x == NULL || SSL_CTX_use_certificate(ctx, x) != 1)
		ssl_ctx_fatal("ssl_cert: no usable certificate");
	X509_free(x);
	/* The rest of the file is the chain, leaf's issuer first. */
	for (unsigned int i = 0; i < LOGIN_SSL_MAX_CHAIN; i++) {
		x = PEM_read_bio_X509(bio, NULL, ssl_no_passphrase, NULL);
		if (x == NULL)
			break;
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1)
			ssl_ctx_fatal("ssl_cert: chain certificate");
	}
	/* Reading past the last certificate leaves "no start line". */
	ERR_clear_error();
	BIO_free(bio);
}

static void ssl_ctx_load_key(SSL_CTX *ctx, const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *pkey;

	if (bio == NULL)
		ssl_ctx_fatal("ssl_key");
	pkey = PEM_read_bio_PrivateKey(bio, NULL, ssl_no_passphrase, NULL);
	BIO_free(bio);
	if (pkey == NULL)
		ssl_ctx_fatal("ssl_key: no usable private key "
			      "(encrypted keys are not supported)");
	if (SSL_CTX_use_PrivateKey(ctx, pkey) != 1)
		ssl_ctx_fatal("ssl_key");
	EVP_PKEY_free(pkey);
	if (SSL_CTX_check_private_key(ctx) != 1)
		ssl_ctx_fatal("ssl_key does not match ssl_cert");
}

/* ssl_ca: trust anchors for client certificates, also announced to the
   client as acceptable issuers. */
static void ssl_ctx_load_ca(SSL_CTX *ctx, const char *pem, bool verify)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	BIO *bio = BIO_new_mem_buf(pem, -1);
	unsigned int count = 0;
	X509 *x;

	if (bio == NULL)
		ssl_ctx_fatal("ssl_ca");
	while (count < LOGIN_SSL_MAX_CHAIN &&
	       (x = PEM_read_bio_X509(bio, NULL, ssl_no_passphrase, NULL)) != NULL) {
		if (X509_STORE_add_cert(store, x) != 1 ||
		    SSL_CTX_add_client_CA(ctx, x) != 1)
			ssl_ctx_fatal("ssl_ca");
		X509_free(x);
		count++;
	}
	ERR_clear_error();
	BIO_free(bio);
	if (count == 0)
		i_fatal("ssl_ca: no certificate found");
	/* Ask for a certificate and verify one that is sent; a client without
	   one is still served (it just cannot use it to log in). */
	if (verify)
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
}

static void ssl_ctx_set_params(SSL_CTX *ctx, const struct moat_settings *set)
{
	static const unsigned char sid_ctx[] = "moat-imap";
	uint64_t options = SSL_OP_NO_RENEGOTIATION |
		SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION;

	if (set->ssl_prefer_server_ciphers)
		options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
#ifndef OPENSSL_NO_KTLS
	/* OpenSSL attaches the kernel's record layer after the handshake
	   where it can; where it cannot, nothing changes. */
	if (set->ssl_ktls)
		options |= SSL_OP_ENABLE_KTLS;
#endif
	SSL_CTX_set_options(ctx, options);
	/* Partial writes let streams send what fits; release buffers keeps
	   idle proxied sessions small. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
			 SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_set_min_proto_version(ctx,
		set->ssl_min_protocol == MOAT_SSL_TLSV1_3 ?
		TLS1_3_VERSION : TLS1_2_VERSION) != 1)
		ssl_ctx_fatal("ssl_min_protocol");
	if (set->ssl_key_isolation) {
		/* The key-signer only signs: TLS 1.2 suites whose key
		   exchange is RSA decryption cannot work, so none is offered
		   (TLS 1.3 has none). */
		char *list = i_strdup_printf("%s:!kRSA:!kRSAPSK",
			set->ssl_cipher_list[0] != '\0' ?
			set->ssl_cipher_list : "DEFAULT");
		int ret = SSL_CTX_set_cipher_list(ctx, list);
		free(list);
		if (ret != 1)
			ssl_ctx_fatal("ssl_cipher_list (without RSA key exchange)");
	} else if (set->ssl_cipher_list[0] != '\0' &&
		   SSL_CTX_set_cipher_list(ctx, set->ssl_cipher_list) != 1) {
		ssl_ctx_fatal("ssl_cipher_list");
	}
	if (set->ssl_cipher_suites[0] != '\0' &&
	    SSL_CTX_set_ciphersuites(ctx, set->ssl_cipher_suites) != 1)
		ssl_ctx_fatal("ssl_cipher_suites");
	SSL_CTX_set_max_cert_list(ctx, LOGIN_SSL_MAX_CLIENT_CHAIN);
	(void)SSL_CTX_sess_set_cache_size(ctx, LOGIN_SSL_SESSION_CACHE_MAX);
	SSL_CTX_set_dh_auto(ctx, 1);
	if (SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1) != 1)
		ssl_ctx_fatal("SSL_CTX_set_session_id_context");
}

/* The key object whose signatures the key-signer makes. */
static void ssl_ctx_use_keyless(SSL_CTX *ctx)
{
	EVP_PKEY *key = login_keyless_key_new(SSL_CTX_get0_certificate(ctx));

	if (SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1)
		ssl_ctx_fatal("ssl_key_isolation: the key object does not "
			      "match ssl_cert");
	EVP_PKEY_free(key);
}

struct login_ssl_ctx *login_ssl_ctx_init(const struct moat_settings *set,
					 struct login_keyd *keyd)
{
	struct login_ssl_ctx *lctx;

	if (set->ssl == MOAT_SSL_NO || set->ssl_cert[0] == '\0')
		return NULL;
	if (set->ssl_key_isolation) {
		/* Our copy of the settings has no ssl_key; were it there
		   anyway, it must not stay. */
		safe_memset((char *)set->ssl_key, 0, strlen(set->ssl_key));
		login_keyless_init(keyd);
	} else if (set->ssl_key[0] == '\0') {
		i_fatal("ssl_cert is set but imap-login got no ssl_key");
	}
	lctx = i_malloc(sizeof(*lctx));
	lctx->ctx = SSL_CTX_new(TLS_server_method());
	if (lctx->ctx == NULL)
		ssl_ctx_fatal("SSL_CTX_new");
	ssl_ctx_set_params(lctx->ctx, set);
	ssl_ctx_load_cert(lctx->ctx, set->ssl_cert);
	if (set->ssl_key_isolation)
		ssl_ctx_use_keyless(lctx->ctx);
	else
		ssl_ctx_load_key(lctx->ctx, set->ssl_key);
	if (set->ssl_ca[0] != '\0')
		ssl_ctx_load_ca(lctx->ctx, set->ssl_ca, set->ssl_verify_client_cert);
	/* OpenSSL has its own copy now; the text is of no further use. */
	safe_memset((char *)set->ssl_key, 0, strlen(set->ssl_key));
	return lctx;
}

void login_ssl_ctx_deinit(struct login_ssl_ctx **_ctx)
{
	struct login_ssl_ctx *lctx = *_ctx;

	if (lctx == NULL)
		return;
	*_ctx = NULL;
	SSL_CTX_free(lctx->ctx);
	free(lctx);
}

struct login_ssl *login_ssl_create(struct login_ssl_ctx *lctx, int fd)
{
	struct login_ssl *ssl = i_malloc(sizeof(*ssl));

	ERR_clear_error();
	ssl->ssl = SSL_new(lctx->ctx);
	if (ssl->ssl == NULL || SSL_set_fd(ssl->ssl, fd) != 1) {
		i_error("SSL_new: %s", ssl_error_text(ssl->error,
			sizeof(ssl->error), "failed"));
		SSL_free(ssl->ssl);
		free(ssl);
		return NULL;
	}
	SSL_set_accept_state(ssl->ssl);
	return ssl;
}

void login_ssl_destroy(struct login_ssl **_ssl)
{
	struct login_ssl *ssl = *_ssl;

	if (ssl == NULL)
		return;
	*_ssl = NULL;
	SSL_free(ssl->ssl);
	free(ssl);
}

/* Map a failed SSL call to errno; EAGAIN records what to wait for. */
static void ssl_set_errno(struct login_ssl *ssl, int ret)
{
	int err = SSL_get_error(ssl->ssl, ret);

	switch (err) {
	case SSL_ERROR_WANT_READ:
		ssl->last_want = IO_READ;
		errno = EAGAIN;
		break;
	case SSL_ERROR_WANT_WRITE:
		ssl->last_want = IO_WRITE;
		errno = EAGAIN;
		break;
	case SSL_ERROR_SYSCALL:
		if (errno == 0)
			errno = ECONNRESET;
		break;
	default:
		(void)ssl_error_text(ssl->error, sizeof(ssl->error), "");
		errno = EPROTO;
		break;
	}
	ERR_clear_error();
}

int login_ssl_handshake(struct login_ssl *ssl, enum io_condition *cond_r,
			const char **error_r)
{
	int ret;

	ERR_clear_error();
	ret = SSL_do_handshake(ssl->ssl);
	if (ret == 1)
		return 1;
	int err = SSL_get_error(ssl->ssl, ret);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
		*cond_r = err == SSL_ERROR_WANT_READ ? IO_READ : IO_WRITE;
		return 0;
	}
	if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN) {
		*error_r = errno == 0 || err == SSL_ERROR_ZERO_RETURN ?
			"connection closed" : strerror(errno);
		ERR_clear_error();
		return -1;
	}
	*error_r = ssl_error_text(ssl->error, sizeof(ssl->error),
				  "handshake failed");
	return -1;
}

ssize_t login_ssl_read(struct login_ssl *ssl, void *buf, size_t size)
{
	size_t done = 0;

	ERR_clear_error();
	errno = 0;
	if (SSL_read_ex(ssl->ssl, buf, size, &done) == 1)
		return (ssize_t)done;
	if (SSL_get_error(ssl->ssl, 0) == SSL_ERROR_ZERO_RETURN) {
		ERR_clear_error();
		return 0;
	}
	ssl_set_errno(ssl, 0);
	return -1;
}

ssize_t login_ssl_write(struct login_ssl *ssl, const void *buf, size_t size)
{
	size_t done = 0;

	ERR_clear_error();
	errno = 0;
	if (SSL_write_ex(ssl->ssl, buf, size, &done) == 1)
		return (ssize_t)done;
	ssl_set_errno(ssl, 0);
	return -1;
}

enum io_condition login_ssl_last_want(struct login_ssl *ssl)
{
	return ssl->last_want;
}

bool login_ssl_has_pending(struct login_ssl *ssl)
{
	return SSL_pending(ssl->ssl) > 0;
}

static ssize_t ssl_transport_read(void *ctx, void *buf, size_t size)
{
	return login_ssl_read(ctx, buf, size);
}

static ssize_t ssl_transport_write(void *ctx, const void *buf, size_t size)
{
	return login_ssl_write(ctx, buf, size);
}

void login_ssl_get_transport(struct login_ssl *ssl, struct stream_transport *t_r)
{
	t_r->read = ssl_transport_read;
	t_r->write = ssl_transport_write;
	t_r->ctx = ssl;
}

void login_ssl_shutdown(struct login_ssl *ssl)
{
	ERR_clear_error();
	/* One attempt: our close_notify goes out if the socket takes it; we
	   do not wait for the peer's. */
	(void)SSL_shutdown(ssl->ssl);
	ERR_clear_error();
}

int login_ssl_get_channel_binding(struct login_ssl *ssl,
				  unsigned char out[LOGIN_SSL_CBIND_SIZE])
{
	static const char label[] = "EXPORTER-Channel-Binding";

	if (SSL_version(ssl->ssl) < TLS1_3_VERSION &&
	    SSL_get_extms_support(ssl->ssl) != 1)
		return -1;
	/* Empty context, as opposed to no context (use_context = 1). */
	if (SSL_export_keying_material(ssl->ssl, out, LOGIN_SSL_CBIND_SIZE,
				       label, sizeof(label) - 1, NULL, 0, 1) != 1) {
		ERR_clear_error();
		return -1;
	}
	return 0;
}

static int cert_field_nid(enum moat_ssl_cert_username_field field)
{
	switch (field) {
	case MOAT_SSL_CERT_USERNAME_COMMONNAME:
		return NID_commonName;
	case MOAT_SSL_CERT_USERNAME_EMAILADDRESS:
		return NID_pkcs9_emailAddress;
	case MOAT_SSL_CERT_USERNAME_X500UNIQUEIDENTIFIER:
		return NID_x500UniqueIdentifier;
	}
	i_unreached();
}

/* The UTF-8 text of an ASN.1 string if it is a usable user name. */
static const char *cert_string_user(pool_t pool, const ASN1_STRING *value)
{
	unsigned char *utf8 = NULL;
	const char *user = NULL;
	int len = ASN1_STRING_to_UTF8(&utf8, value);

	if (len <= 0 || len > LOGIN_SSL_CERT_USER_MAX) {
		OPENSSL_free(utf8);
		ERR_clear_error();
		return NULL;
	}
	for (int i = 0; i < len; i++) {
		/* NUL, control bytes and DEL could forge log lines or
		   break records; no real user name has them. */
		if (utf8[i] < 0x20 || utf8[i] == 0x7f) {
			OPENSSL_free(utf8);
			return NULL;
		}
	}
	user = p_strndup(pool, utf8, (size_t)len);
	OPENSSL_free(utf8);
	return user;
}

const char *login_ssl_get_cert_user(struct login_ssl *ssl, pool_t pool,
				    enum moat_ssl_cert_username_field field)
{
	X509 *cert = SSL_get0_peer_certificate(ssl->ssl);
	const X509_NAME *subject;
	const X509_NAME_ENTRY *entry;
	int nid = cert_field_nid(field), idx;

	/* ssl_verify_client_cert makes a bad certificate fail the
	   handshake; the result is checked anyway, as the second lock. */
	if (cert == NULL || SSL_get_verify_result(ssl->ssl) != X509_V_OK)
		return NULL;
	subject = X509_get_subject_name(cert);
	idx = X509_NAME_get_index_by_NID(subject, nid, -1);
	/* Two values of the field: which one is the user is ambiguous. */
	if (idx < 0 || X509_NAME_get_index_by_NID(subject, nid, idx) >= 0)
		return NULL;
	entry = X509_NAME_get_entry(subject, idx);
	return cert_string_user(pool, X509_NAME_ENTRY_get_data(entry));
}

const char *login_ssl_get_version(struct login_ssl *ssl)
{
	return SSL_get_version(ssl->ssl);
}

bool login_ssl_ktls_ready(struct login_ssl *ssl, const char **reason_r)
{
#ifdef OPENSSL_NO_KTLS
	(void)ssl;
	*reason_r = "OpenSSL was built without kTLS";
	return false;
#else
	bool send_ok = BIO_get_ktls_send(SSL_get_wbio(ssl->ssl));
	bool recv_ok = BIO_get_ktls_recv(SSL_get_rbio(ssl->ssl));

	if (!send_ok && !recv_ok) {
		*reason_r = "the kernel took neither direction (no tls module, "
			"or a cipher it cannot do)";
	} else if (!recv_ok) {
		*reason_r = "the kernel took only sending (OpenSSL before 3.2 "
			"offloads reading for TLS 1.2 only)";
	} else if (!send_ok) {
		*reason_r = "the kernel took only reading";
	} else if (SSL_has_pending(ssl->ssl)) {
		/* Bytes OpenSSL already pulled off the socket would be lost. */
		*reason_r = "TLS data is buffered in OpenSSL";
	} else {
		return true;
	}
	return false;
#endif
}
