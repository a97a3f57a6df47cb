#ifndef LOGIN_SSL_H
#define LOGIN_SSL_H
/* TLS for imap-login (OpenSSL 3): the server context built from the
   settings before the privilege drop, and one non-blocking TLS session
   per client socket.

   With ssl_key_isolation = yes (the default) the context holds the
   certificate and a key object without the private key: the key-signer
   signs (login-keyless.h). With no, it holds the private key in memory;
   the key never exists as a file imap-login could open (master read it
   and passed it in imap-login's copy of the settings, doc/security.md). */

#include "ioloop.h"
#include "iostream.h"
#include "moat-settings.h"

struct login_ssl_ctx;
struct login_ssl;
struct login_keyd;

/* Build the context from set. Returns NULL when TLS is not offered
   (ssl = no, or no ssl_cert). A bad certificate, key or cipher list is
   fatal. keyd: where signatures go with ssl_key_isolation = yes (else
   unused). Wipes the key text in set afterwards (set is ours to scribble
   on: the process's private copy). */
struct login_ssl_ctx *login_ssl_ctx_init(const struct moat_settings *set,
					 struct login_keyd *keyd);
void login_ssl_ctx_deinit(struct login_ssl_ctx **ctx);

/* A server session on the connected, non-blocking socket fd (not
   owned). Returns NULL (and logs) if OpenSSL cannot allocate one. */
struct login_ssl *login_ssl_create(struct login_ssl_ctx *ctx, int fd);
void login_ssl_destroy(struct login_ssl **ssl);

/* Drive the handshake. 1 = done; 0 = wait until fd is ready for
   *cond_r and call again; -1 = failed, *error_r says why (OpenSSL's
   text, safe to log). */
int login_ssl_handshake(struct login_ssl *ssl, enum io_condition *cond_r,
			const char **error_r);

/* read(2)/write(2) semantics: >0 bytes, 0 = EOF (read only), -1 with
   errno (EAGAIN: call again once the fd is ready for
   login_ssl_last_want()). */
ssize_t login_ssl_read(struct login_ssl *ssl, void *buf, size_t size);
ssize_t login_ssl_write(struct login_ssl *ssl, const void *buf, size_t size);
/* What the last EAGAIN of read or write waits for. */
enum io_condition login_ssl_last_want(struct login_ssl *ssl);
/* Decrypted bytes buffered inside OpenSSL that no fd event announces. */
bool login_ssl_has_pending(struct login_ssl *ssl);
/* Transport for iostream.h over login_ssl_read/login_ssl_write. */
void login_ssl_get_transport(struct login_ssl *ssl, struct stream_transport *t_r);
/* Send close_notify, best effort, never blocking. */
void login_ssl_shutdown(struct login_ssl *ssl);
/* RFC 9266 tls-exporter channel binding (SCRAM-*-PLUS). */
#define LOGIN_SSL_CBIND_SIZE 32
/* Fill out with the channel binding of an established session. Returns
   -1 where RFC 9266 says it must not be used (TLS 1.2 without the
   extended master secret). */
int login_ssl_get_channel_binding(struct login_ssl *ssl,
				  unsigned char out[LOGIN_SSL_CBIND_SIZE]);
/* Longest user name taken from a client certificate (auth's
   SASL_MAX_USERNAME). */
#define LOGIN_SSL_CERT_USER_MAX 256
/* The user named by the client certificate of an established session
   (for EXTERNAL): the subject's field (ssl_cert_username_field), if the
   client sent a certificate that verified against ssl_ca. NULL without
   one, or when the subject has the field not exactly once, or its value
   is empty, longer than LOGIN_SSL_CERT_USER_MAX or holds control
   characters. The result is from pool. */
const char *login_ssl_get_cert_user(struct login_ssl *ssl, pool_t pool,
				    enum moat_ssl_cert_username_field field);
/* Whether the kernel carries this established session's records in both
   directions (ssl_ktls) with nothing left buffered in OpenSSL, so the
   socket itself can go to the imap process (lib/ktls.h). false with the
   reason otherwise (a missing tls module, a cipher the kernel lacks, an
   OpenSSL that offloads only sending). */
bool login_ssl_ktls_ready(struct login_ssl *ssl, const char **reason_r);
/* "TLSv1.3" etc., for log lines. */
const char *login_ssl_get_version(struct login_ssl *ssl);

#endif
