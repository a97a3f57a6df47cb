/* The moat-keyd connections from imap-login processes: one SIGN request
   in, one SIG or FAIL out. imap-login is untrusted: a record that does
   not parse ends its connection (master gives it a new one only when the
   signer restarts), a well-formed request the signer refuses gets FAIL. */
#include "key-signer-common.h"
#include "keyd-sign.h"
#include "strfuncs.h"

/* "SIGN" id keyid alg md digest */
#define KEYD_SIGN_FIELDS 6
/* Request ids are imap-login's counter, echoed back. */
#define KEYD_ID_MAX_LEN 10

struct keyd_conn {
	struct keyd_conn *next, *prev;
	struct keyd_process *kp;
	struct ipc_conn *conn;
	char name[64];
};

static void keyd_conn_destroy(struct keyd_conn *conn)
{
	struct keyd_process *kp = conn->kp;

	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		kp->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	kp->conn_count--;
	ipc_conn_destroy(&conn->conn);
	free(conn);
}

static bool keyd_id_valid(const char *id)
{
	size_t len = strlen(id);

	if (len == 0 || len > KEYD_ID_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (id[i] < '0' || id[i] > '9')
			return false;
	}
	return true;
}

static void keyd_reply_fail(struct keyd_conn *conn, const char *id,
			    const char *reason)
{
	(void)ipc_sendv(conn->conn, -1, "FAIL", id, reason, NULL);
}

/* Returns false if the request is malformed (the connection ends). */
static bool keyd_handle_sign(struct keyd_conn *conn, const char *const *args)
{
	struct keyd_process *kp = conn->kp;
	const char *id = args[1], *error;
	unsigned char *digest, sig[KEYD_SIG_MAX];
	size_t digest_size, sig_len;

	if (!keyd_id_valid(id) ||
	    strlen(args[5]) > (KEYD_DIGEST_MAX + 2) / 3 * 4)
		return false;
	pool_t pool = pool_create("keyd sign", 1024);
	if (p_base64_decode(pool, args[5], strlen(args[5]), &digest,
			    &digest_size) < 0) {
		pool_unref(&pool);
		return false;
	}
	if (strcmp(args[2], kp->key_id) != 0) {
		/* An imap-login started before a reload holds the old
		   certificate: its handshake fails instead of getting a
		   signature that does not match it. */
		keyd_reply_fail(conn, id, "key changed");
	} else if (keyd_sign(kp->key, args[3], args[4], digest, digest_size,
			     sig, sizeof(sig), &sig_len, &error) < 0) {
		keyd_reply_fail(conn, id, error);
	} else {
		(void)ipc_sendv(conn->conn, -1, "SIG", id,
				p_base64_encode(pool, sig, sig_len), NULL);
	}
	pool_unref(&pool);
	return true;
}

static void keyd_conn_input(void *context, const char *const *args, int fd)
{
	struct keyd_conn *conn = context;

	if (args == NULL) {
		keyd_conn_destroy(conn);
		return;
	}
	if (fd >= 0 || strcmp(args[0], "SIGN") != 0 ||
	    str_array_length(args) != KEYD_SIGN_FIELDS ||
	    !keyd_handle_sign(conn, args)) {
		i_close_fd(&fd);
		i_error("%s sent a malformed record, closing its connection",
			conn->name);
		keyd_conn_destroy(conn);
	}
}

void keyd_conn_create(struct keyd_process *kp, int fd, const char *login_pid)
{
	if (kp->conn_count >= kp->conn_limit) {
		i_error("more than %u imap-login connections, refusing one",
			kp->conn_limit);
		close(fd);
		return;
	}
	struct keyd_conn *conn = i_malloc(sizeof(*conn));
	conn->kp = kp;
	snprintf(conn->name, sizeof(conn->name), "imap-login %s", login_pid);
	conn->conn = ipc_conn_create(kp->ioloop, fd, conn->name, IPC_PROTO_KEYD,
				     IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
				     keyd_conn_input, conn);
	conn->next = kp->conns;
	if (kp->conns != NULL)
		kp->conns->prev = conn;
	kp->conns = conn;
	kp->conn_count++;
}

void keyd_conns_destroy_all(struct keyd_process *kp)
{
	while (kp->conns != NULL)
		keyd_conn_destroy(kp->conns);
}
