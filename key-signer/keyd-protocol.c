/* Shared by imap-login and the key-signer; keyd-protocol.h. */
#include "lib.h"
#include "keyd-protocol.h"

#include <openssl/x509.h>

int keyd_key_id(EVP_PKEY *pub, char id_r[KEYD_KEY_ID_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char *der = NULL, hash[32];
	int der_len = i2d_PUBKEY(pub, &der);

	if (der_len <= 0)
		return -1;
	if (EVP_Digest(der, (size_t)der_len, hash, NULL, EVP_sha256(), NULL) != 1) {
		OPENSSL_free(der);
		return -1;
	}
	OPENSSL_free(der);
	for (unsigned int i = 0; i < sizeof(hash); i++) {
		id_r[i * 2] = hex[hash[i] >> 4];
		id_r[i * 2 + 1] = hex[hash[i] & 0xf];
	}
	id_r[sizeof(hash) * 2] = '\0';
	return 0;
}

const char *keyd_md_name(const EVP_MD *md)
{
	static const char *const names[][2] = {
		{ "SHA256", "sha256" }, { "SHA384", "sha384" },
		{ "SHA512", "sha512" }, { "SHA224", "sha224" },
	};

	for (unsigned int i = 0; i < N_ELEMENTS(names); i++) {
		if (EVP_MD_is_a(md, names[i][0]))
			return names[i][1];
	}
	return NULL;
}
