/* key-signer: holds the TLS private key (ssl_key) so that imap-login,
   which parses what clients send, never does (ssl_key_isolation = yes).
   It signs the digests of TLS handshakes that imap-login sends it
   (keyd-protocol.h) and does nothing else: no decryption, no raw RSA.

   SECURITY: this process parses only the small, bounded SIGN records of
   imap-login processes, over sockets master hands it (LOGIN-CONN on fd 3,
   moat-keyd-master); it has no listener and cannot create a socket. It
   reads the key from its copy of the settings (fd 4, the only copy with
   ssl_key besides master's) before the drop, then runs as
   default_internal_user (moat-auth: not imap-login's uid, so no
   imap-login can signal it; the process is not dumpable, so auth, which
   shares the uid, cannot read its memory or trace it), chrooted to the
   empty root-owned directory, with no capabilities, no_new_privs and the
   key-signer seccomp allowlist (no open, no socket, no accept, no exec,
   no executable mappings). A compromise yields the private key. A
   compromised imap-login gets signatures of digests of its choice while
   the key-signer runs (it could impersonate the server only for as long
   as it keeps running); requests are not rate-limited. */
#include "key-signer-common.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* Encrypted keys would need a passphrase: refuse instead of prompting. */
static int keyd_no_passphrase(char *buf ATTR_UNUSED, int size ATTR_UNUSED,
			      int rwflag ATTR_UNUSED, void *u ATTR_UNUSED)
{
	return 0;
}

static EVP_PKEY *keyd_read_pem_key(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key;

	if (bio == NULL)
		i_fatal("ssl_key: out of memory");
	key = PEM_read_bio_PrivateKey(bio, NULL, keyd_no_passphrase, NULL);
	BIO_free(bio);
	if (key == NULL)
		i_fatal("ssl_key: no usable private key (encrypted keys are "
			"not supported)");
	return key;
}

/* The key must be the certificate's: imap-login computes the key id from
   the certificate and a mismatch would fail every handshake. */
static void keyd_check_cert(EVP_PKEY *key, const char *cert_pem)
{
	BIO *bio = BIO_new_mem_buf(cert_pem, -1);
	X509 *x = bio == NULL ? NULL :
		PEM_read_bio_X509(bio, NULL, keyd_no_passphrase, NULL);

	BIO_free(bio);
	if (x == NULL)
		i_fatal("ssl_cert: no usable certificate");
	if (X509_check_private_key(x, key) != 1)
		i_fatal("ssl_key does not match ssl_cert");
	X509_free(x);
}

static void keyd_load_key(struct keyd_process *kp,
			  const struct moat_settings *set)
{
	if (set->ssl_key[0] == '\0' || set->ssl_cert[0] == '\0')
		i_fatal("key-signer got no ssl_key or ssl_cert");
	kp->key = keyd_read_pem_key(set->ssl_key);
	keyd_check_cert(kp->key, set->ssl_cert);
	if (keyd_key_id(kp->key, kp->key_id) < 0)
		i_fatal("ssl_key: cannot encode the public key");
	ERR_clear_error();
	/* OpenSSL has its own copy now; the text is of no further use. */
	safe_memset((char *)set->ssl_key, 0, strlen(set->ssl_key));
}

static void keyd_master_input(void *context, const char *const *args, int fd)
{
	struct keyd_process *kp = context;

	if (args == NULL) {
		/* Master is gone (or stops us): no new logins to serve. */
		ipc_conn_destroy(&kp->master);
		kp->stopping = true;
		master_service_stop(kp->service);
		return;
	}
	if (strcmp(args[0], "LOGIN-CONN") == 0 && fd >= 0 && args[1] != NULL &&
	    args[2] == NULL) {
		keyd_conn_create(kp, fd, args[1]);
		return;
	}
	i_close_fd(&fd);
	/* master is trusted: a bad record is a bug there or here. */
	i_fatal("master sent a malformed %s record", args[0]);
}

int main(void)
{
	struct keyd_process kp;

	memset(&kp, 0, sizeof(kp));
	kp.service = master_service_init("key-signer");
	kp.ioloop = master_service_get_ioloop(kp.service);
	const struct moat_service_settings *sset =
		master_service_get_service_settings(kp.service);
	kp.conn_limit = sset->client_limit;

	/* Before the chroot and the filter: OpenSSL loads its providers
	   and configuration now, and the key comes from our settings. */
	keyd_load_key(&kp, master_service_get_settings(kp.service));

	master_service_drop_privileges(kp.service,
				       MOAT_SECCOMP_PROFILE_KEY_SIGNER);
	kp.master = master_service_connect_master(kp.service,
						  IPC_PROTO_KEYD_MASTER,
						  keyd_master_input, &kp);
	master_service_run(kp.service);

	keyd_conns_destroy_all(&kp);
	ipc_conn_destroy(&kp.master);
	EVP_PKEY_free(kp.key);
	master_service_deinit(&kp.service);
	return 0;
}
