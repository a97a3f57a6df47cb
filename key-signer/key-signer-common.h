#ifndef KEY_SIGNER_COMMON_H
#define KEY_SIGNER_COMMON_H
/* key-signer: holds the TLS private key and signs handshake digests for
   the imap-login processes (keyd-protocol.h). */

#include "lib.h"
#include "ioloop.h"
#include "ipc.h"
#include "log.h"
#include "master-service.h"
#include "moat-settings.h"

#include <openssl/evp.h>

#include "keyd-protocol.h"

struct keyd_conn;

struct keyd_process {
	struct master_service *service;
	struct ioloop *ioloop;
	struct ipc_conn *master;
	EVP_PKEY *key;
	char key_id[KEYD_KEY_ID_SIZE];
	/* one per imap-login process, at most conn_limit (client_limit) */
	struct keyd_conn *conns;
	unsigned int conn_count, conn_limit;
	bool stopping;
};

/* keyd-conn.c: a socket to one imap-login process (owns fd). */
void keyd_conn_create(struct keyd_process *kp, int fd, const char *login_pid);
void keyd_conns_destroy_all(struct keyd_process *kp);

#endif
