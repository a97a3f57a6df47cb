/* The socket to the key-signer; login-keyd.h. The records are ipc.h's
   (VERSION first, tab-separated fields), read here without an event
   loop because OpenSSL waits inside the handshake for the answer. */
#include "imap-login-common.h"
#include "login-keyd.h"
#include "keyd-protocol.h"
#include "strfuncs.h"

#include <poll.h>

/* SIG id b64(signature): the longest record the signer sends. */
#define LOGIN_KEYD_RECORD_MAX (KEYD_SIG_MAX / 3 * 4 + 64)
#define LOGIN_KEYD_MAX_FIELDS 4

struct login_keyd {
	int fd;
	bool version_ok;
	unsigned int next_id;
	uint64_t stalled_until_ms;
	char error[128];
};

struct login_keyd *login_keyd_create(void)
{
	struct login_keyd *keyd = i_malloc(sizeof(*keyd));

	keyd->fd = -1;
	return keyd;
}

void login_keyd_destroy(struct login_keyd **_keyd)
{
	struct login_keyd *keyd = *_keyd;

	if (keyd == NULL)
		return;
	*_keyd = NULL;
	i_close_fd(&keyd->fd);
	free(keyd);
}

static void keyd_close(struct login_keyd *keyd, const char *why)
{
	if (keyd->fd >= 0)
		i_warning("key-signer connection: %s; TLS handshakes fail "
			  "until master hands a new one", why);
	i_close_fd(&keyd->fd);
}

void login_keyd_set_fd(struct login_keyd *keyd, int fd)
{
	char version[64];
	int len = snprintf(version, sizeof(version), "VERSION\t%s\t%u\t%u\n",
			   IPC_PROTO_KEYD, IPC_PROTO_MAJOR, IPC_PROTO_MINOR);

	i_close_fd(&keyd->fd);
	keyd->fd = fd;
	keyd->version_ok = false;
	keyd->stalled_until_ms = 0;
	(void)fd_set_nonblock(fd, true);
	if (ipc_send_raw(fd, version, (size_t)len, -1) < 0)
		keyd_close(keyd, "sending VERSION failed");
}

/* Splits a record in place. Returns the field count, 0 if malformed. */
static unsigned int keyd_split(char *rec, size_t size,
			       char *fields[LOGIN_KEYD_MAX_FIELDS])
{
	unsigned int count = 0;

	if (size == 0 || rec[size - 1] != '\n')
		return 0;
	rec[size - 1] = '\0';
	/* The signer's fields need no escapes: a backslash is not ours. */
	if (strchr(rec, '\\') != NULL)
		return 0;
	for (char *p = rec;; ) {
		if (count == LOGIN_KEYD_MAX_FIELDS)
			return 0;
		fields[count++] = p;
		p = strchr(p, '\t');
		if (p == NULL)
			return count;
		*p++ = '\0';
	}
}

/* 1 = the answer to id (0 signed, -1 refused via *ret_r); 0 = another
   record (VERSION, a late answer to an earlier id); -1 = malformed. */
static int keyd_handle_record(struct login_keyd *keyd, char *rec, size_t size,
			      unsigned int id, unsigned char *sig,
			      size_t sig_size, size_t *sig_len_r, int *ret_r)
{
	char *f[LOGIN_KEYD_MAX_FIELDS];
	unsigned int count = keyd_split(rec, size, f), rid;

	if (count == 4 && strcmp(f[0], "VERSION") == 0) {
		keyd->version_ok = strcmp(f[1], IPC_PROTO_KEYD) == 0 &&
			strcmp(f[2], "1") == 0;
		return keyd->version_ok ? 0 : -1;
	}
	if (!keyd->version_ok || count != 3 || str_to_uint(f[1], &rid) < 0)
		return -1;
	if (rid != id)
		return 0;
	if (strcmp(f[0], "FAIL") == 0) {
		snprintf(keyd->error, sizeof(keyd->error),
			 "key-signer refused: %s", f[2]);
		*ret_r = -1;
		return 1;
	}
	if (strcmp(f[0], "SIG") != 0)
		return -1;
	pool_t pool = pool_create("keyd reply", 2048);
	unsigned char *data;
	size_t data_size;
	int ret = p_base64_decode(pool, f[2], strlen(f[2]), &data, &data_size);
	if (ret == 0 && data_size > 0 && data_size <= sig_size) {
		memcpy(sig, data, data_size);
		*sig_len_r = data_size;
		*ret_r = 0;
	}
	pool_unref(&pool);
	return ret == 0 && data_size > 0 && data_size <= sig_size ? 1 : -1;
}

static int keyd_wait_reply(struct login_keyd *keyd, unsigned int id,
			   unsigned char *sig, size_t sig_size,
			   size_t *sig_len_r, const char **error_r)
{
	uint64_t deadline = time_monotonic_ms() + LOGIN_KEYD_TIMEOUT_MS;
	char rec[LOGIN_KEYD_RECORD_MAX + 1];
	int fd, ret = -1;

	for (;;) {
		ssize_t n = ipc_recv_raw(keyd->fd, rec, sizeof(rec), &fd);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			uint64_t now = time_monotonic_ms();
			if (now >= deadline) {
				i_warning("key-signer did not answer in %u ms; "
					  "TLS handshakes fail for %u ms",
					  LOGIN_KEYD_TIMEOUT_MS,
					  LOGIN_KEYD_BACKOFF_MS);
				keyd->stalled_until_ms = now + LOGIN_KEYD_BACKOFF_MS;
				*error_r = "key-signer did not answer in time";
				return -1;
			}
			struct pollfd pfd = { .fd = keyd->fd, .events = POLLIN };
			(void)poll(&pfd, 1, (int)(deadline - now));
			continue;
		}
		i_close_fd(&fd);
		if (n <= 0 || (size_t)n > LOGIN_KEYD_RECORD_MAX) {
			keyd_close(keyd, n == 0 ? "closed" : "receive failed");
			*error_r = "key-signer connection lost";
			return -1;
		}
		int r = keyd_handle_record(keyd, rec, (size_t)n, id, sig,
					   sig_size, sig_len_r, &ret);
		if (r < 0) {
			keyd_close(keyd, "malformed record");
			*error_r = "key-signer sent a malformed record";
			return -1;
		}
		if (r > 0) {
			*error_r = keyd->error;
			return ret;
		}
	}
}

int login_keyd_sign(struct login_keyd *keyd, const char *key_id,
		    const char *alg, const char *md,
		    const unsigned char *digest, size_t digest_size,
		    unsigned char *sig, size_t sig_size, size_t *sig_len_r,
		    const char **error_r)
{
	char rec[256];

	if (keyd->fd < 0) {
		*error_r = "no connection to the key-signer";
		return -1;
	}
	if (time_monotonic_ms() < keyd->stalled_until_ms) {
		*error_r = "key-signer stalled recently";
		return -1;
	}
	i_assert(digest_size <= KEYD_DIGEST_MAX);
	if (++keyd->next_id == 0)
		keyd->next_id = 1;
	pool_t pool = pool_create("keyd request", 512);
	int len = snprintf(rec, sizeof(rec), "SIGN\t%u\t%s\t%s\t%s\t%s\n",
			   keyd->next_id, key_id, alg, md,
			   p_base64_encode(pool, digest, digest_size));
	pool_unref(&pool);
	i_assert(len > 0 && (size_t)len < sizeof(rec));
	if (ipc_send_raw(keyd->fd, rec, (size_t)len, -1) < 0) {
		keyd_close(keyd, "send failed");
		*error_r = "key-signer connection lost";
		return -1;
	}
	return keyd_wait_reply(keyd, keyd->next_id, sig, sig_size, sig_len_r,
			       error_r);
}
