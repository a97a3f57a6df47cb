#ifndef LOGIN_KEYD_H
#define LOGIN_KEYD_H
/* imap-login's side of moat-keyd: the socket to the key-signer process
   that holds the TLS private key (ssl_key_isolation = yes;
   key-signer/keyd-protocol.h). master hands the socket over (KEYD-CONN)
   and a new one whenever the key-signer restarts.

   Signing is synchronous: OpenSSL asks for the signature inside
   SSL_do_handshake() and needs it before it returns, so the process waits
   for the answer as it would wait for an in-process RSA operation, at
   most LOGIN_KEYD_TIMEOUT_MS. After a timeout the key-signer counts as
   stalled: requests fail at once for LOGIN_KEYD_BACKOFF_MS (or until
   master hands a new socket), so a stopped signer costs each imap-login
   one wait per back-off period, not one per handshake. */

#include <stddef.h>

/* A signature takes a few ms; on a loaded machine, far more. */
#define LOGIN_KEYD_TIMEOUT_MS 3000
#define LOGIN_KEYD_BACKOFF_MS 5000

struct login_keyd;

struct login_keyd *login_keyd_create(void);
void login_keyd_destroy(struct login_keyd **keyd);

/* A new socket to the key-signer (ours; the old one is closed). */
void login_keyd_set_fd(struct login_keyd *keyd, int fd);

/* Sign digest with the key named key_id as alg/md (keyd-protocol.h).
   Writes at most sig_size bytes. Returns 0, or -1 with *error_r
   (static text; the handshake fails). */
int login_keyd_sign(struct login_keyd *keyd, const char *key_id,
		    const char *alg, const char *md,
		    const unsigned char *digest, size_t digest_size,
		    unsigned char *sig, size_t sig_size, size_t *sig_len_r,
		    const char **error_r);

#endif
