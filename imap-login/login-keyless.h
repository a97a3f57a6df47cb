#ifndef LOGIN_KEYLESS_H
#define LOGIN_KEYLESS_H
/* TLS without the private key (ssl_key_isolation = yes): a small OpenSSL
   provider, built into imap-login, whose RSA and EC keys hold only the
   certificate's public key. When libssl signs a handshake (TLS 1.3
   CertificateVerify, TLS 1.2 ServerKeyExchange) the provider computes
   the digest itself and has the key-signer sign it (login-keyd.h).

   Why a provider: OpenSSL 3.0 lets a provider take the whole signature
   operation, RSA-PSS included, and tells it the digest, the padding and
   the salt length; the deprecated RSA_METHOD sees PSS only as an
   already padded block, so a signer behind it would have to apply the
   private key to raw data, which is decryption. The keys have no export
   function, so libcrypto cannot move them to the default provider and
   must use this provider's signature code. */

#include <openssl/x509.h>

struct login_keyd;

/* Registers and loads the provider (and the default one, which OpenSSL
   then no longer loads by itself), once per process, before the first
   SSL_CTX. Signatures go through keyd. Fatal on failure. */
void login_keyless_init(struct login_keyd *keyd);

/* A private key object for cert's public key (RSA or EC) whose
   signatures come from the key-signer. Fatal for another key type. */
EVP_PKEY *login_keyless_key_new(X509 *cert);

#endif
