#ifndef KEYD_PROTOCOL_H
#define KEYD_PROTOCOL_H
/* moat-keyd: the records between imap-login and the key-signer
   (ipc.h framing, doc/architecture.md), and what both sides check.

   imap-login: SIGN <id> <key id> <alg> <md> <b64:digest>
   key-signer: SIG <id> <b64:signature> | FAIL <id> <reason>

   A request names a digest that imap-login computed and how to sign it;
   there is no request to decrypt or to apply the private key to raw
   data: the signer pads (PKCS#1 v1.5 DigestInfo or PSS) itself. */

#include <stddef.h>
#include <openssl/evp.h>

/* SHA-512, the longest digest TLS signs with. */
#define KEYD_DIGEST_MAX 64
/* An RSA-8192 signature; ECDSA P-521 needs 139 bytes. */
#define KEYD_SIG_MAX 1024
/* Hex SHA-256 of the public key's DER SubjectPublicKeyInfo, NUL. */
#define KEYD_KEY_ID_SIZE (64 + 1)

/* The three ways to sign a digest; names as in the SIGN record. */
#define KEYD_ALG_RSA_PKCS1 "rsa-pkcs1"
#define KEYD_ALG_RSA_PSS "rsa-pss"   /* MGF1 with md, salt = digest size */
#define KEYD_ALG_ECDSA "ecdsa"

/* The key id of pub (a public or private key). Returns 0 or -1. */
int keyd_key_id(EVP_PKEY *pub, char id_r[KEYD_KEY_ID_SIZE]);

/* The record's name of md ("sha256"...), or NULL if the signer does not
   sign with it (only the SHA-2 family: TLS 1.3 allows nothing else and
   TLS 1.2 needs nothing else). */
const char *keyd_md_name(const EVP_MD *md);

#endif
