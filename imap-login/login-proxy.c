/* Relaying a logged-in TLS session between the client's TLS connection
   and the socketpair end whose peer the imap process holds.

   One function, proxy_pump(), moves whatever can move in both directions
   and then arms exactly the ios that can unblock it; every io callback
   just calls it. Nothing is read from a side whose destination buffer is
   full, so a slow reader throttles the writer through TCP / the pair. */
#include "imap-login-common.h"
#include "login-proxy.h"
#include "login-ssl.h"
#include "login-listen.h"

#include <sys/socket.h>

/* Per direction: one TLS record's worth of plaintext (RFC 8446 5.1). */
#define LOGIN_PROXY_BUFFER_SIZE 16384
/* Rounds of copying per wakeup before yielding to other clients. */
#define LOGIN_PROXY_MAX_ROUNDS 16

struct login_proxy {
	struct login_proxy *prev, *next;
	struct login_process *lp;
	struct login_ssl *ssl;
	int fd;                        /* client socket (TLS) */
	int plain_fd;                  /* our end of the pair to imap */
	struct io *io_fd_read, *io_fd_write;
	struct io *io_plain_read, *io_plain_write;
	struct timeout *to_defer;

	/* client -> imap (decrypted) and imap -> client (to encrypt) */
	unsigned char in_buf[LOGIN_PROXY_BUFFER_SIZE];
	size_t in_used;
	unsigned char out_buf[LOGIN_PROXY_BUFFER_SIZE];
	size_t out_used;

	/* What the last blocked TLS read / write waits for; 0 = not blocked. */
	enum io_condition tls_read_want, tls_write_want;
	bool plain_write_blocked;
	bool tls_eof, plain_eof;
	bool destroyed;
};

static void proxy_pump(struct login_proxy *proxy);

static void proxy_link(struct login_proxy *proxy)
{
	struct login_process *lp = proxy->lp;

	proxy->next = lp->proxies;
	if (lp->proxies != NULL)
		lp->proxies->prev = proxy;
	lp->proxies = proxy;
	lp->proxy_count++;
}

static void proxy_unlink(struct login_proxy *proxy)
{
	struct login_process *lp = proxy->lp;

	if (proxy->prev != NULL)
		proxy->prev->next = proxy->next;
	else
		lp->proxies = proxy->next;
	if (proxy->next != NULL)
		proxy->next->prev = proxy->prev;
	i_assert(lp->proxy_count > 0);
	lp->proxy_count--;
}

static void proxy_destroy(struct login_proxy *proxy, const char *reason)
{
	struct login_process *lp = proxy->lp;

	i_assert(!proxy->destroyed);
	proxy->destroyed = true;
	i_debug("TLS proxy closed: %s", reason);
	proxy_unlink(proxy);
	io_remove(&proxy->io_fd_read);
	io_remove(&proxy->io_fd_write);
	io_remove(&proxy->io_plain_read);
	io_remove(&proxy->io_plain_write);
	if (proxy->to_defer != NULL)
		timeout_remove(&proxy->to_defer);
	login_ssl_destroy(&proxy->ssl);
	i_close_fd(&proxy->fd);
	i_close_fd(&proxy->plain_fd);
	free(proxy);
	login_process_client_gone(lp);
}

static void buf_consume(unsigned char *buf, size_t *used, size_t count)
{
	memmove(buf, buf + count, *used - count);
	*used -= count;
}

static bool errno_is_again(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Each step returns 1 on progress, 0 if blocked or nothing to do, -1 on
   a failure (*reason_r set). */
static int proxy_tls_to_buf(struct login_proxy *proxy, const char **reason_r)
{
	proxy->tls_read_want = 0;
	if (proxy->tls_eof || proxy->in_used == sizeof(proxy->in_buf))
		return 0;
	ssize_t ret = login_ssl_read(proxy->ssl, proxy->in_buf + proxy->in_used,
				     sizeof(proxy->in_buf) - proxy->in_used);
	if (ret > 0) {
		proxy->in_used += (size_t)ret;
		proxy->lp->stats.bytes_in += (uint64_t)ret;
		return 1;
	}
	if (ret == 0) {
		proxy->tls_eof = true;
		return 1;
	}
	if (errno == EAGAIN) {
		proxy->tls_read_want = login_ssl_last_want(proxy->ssl);
		return 0;
	}
	*reason_r = "TLS read failed";
	return -1;
}

static int proxy_buf_to_plain(struct login_proxy *proxy, const char **reason_r)
{
	proxy->plain_write_blocked = false;
	if (proxy->in_used == 0)
		return 0;
	ssize_t ret = send(proxy->plain_fd, proxy->in_buf, proxy->in_used,
			   MSG_NOSIGNAL);
	if (ret > 0) {
		buf_consume(proxy->in_buf, &proxy->in_used, (size_t)ret);
		return 1;
	}
	if (ret < 0 && errno_is_again()) {
		proxy->plain_write_blocked = true;
		return 0;
	}
	*reason_r = "imap process closed its end";
	return -1;
}

static int proxy_plain_to_buf(struct login_proxy *proxy, const char **reason_r)
{
	if (proxy->plain_eof || proxy->out_used == sizeof(proxy->out_buf))
		return 0;
	ssize_t ret = read(proxy->plain_fd, proxy->out_buf + proxy->out_used,
			   sizeof(proxy->out_buf) - proxy->out_used);
	if (ret > 0) {
		proxy->out_used += (size_t)ret;
		return 1;
	}
	if (ret == 0) {
		proxy->plain_eof = true;
		return 1;
	}
	if (errno_is_again())
		return 0;
	*reason_r = "read from imap process failed";
	return -1;
}

static int proxy_buf_to_tls(struct login_proxy *proxy, const char **reason_r)
{
	proxy->tls_write_want = 0;
	if (proxy->out_used == 0)
		return 0;
	ssize_t ret = login_ssl_write(proxy->ssl, proxy->out_buf,
				      proxy->out_used);
	if (ret > 0) {
		buf_consume(proxy->out_buf, &proxy->out_used, (size_t)ret);
		proxy->lp->stats.bytes_out += (uint64_t)ret;
		return 1;
	}
	if (errno == EAGAIN) {
		proxy->tls_write_want = login_ssl_last_want(proxy->ssl);
		return 0;
	}
	*reason_r = "TLS write failed";
	return -1;
}

static void io_want(struct login_proxy *proxy, struct io **io, int fd,
		    enum io_condition cond, bool want);

static void proxy_io_callback(void *context)
{
	proxy_pump(context);
}

static void io_want(struct login_proxy *proxy, struct io **io, int fd,
		    enum io_condition cond, bool want)
{
	if (want && *io == NULL)
		*io = io_add(proxy->lp->ioloop, fd, cond, proxy_io_callback, proxy);
	else if (!want && *io != NULL)
		io_remove(io);
}

static void proxy_defer_callback(void *context)
{
	struct login_proxy *proxy = context;

	proxy->to_defer = NULL;
	proxy_pump(proxy);
}

static void proxy_update_io(struct login_proxy *proxy, bool yielded)
{
	bool in_room = !proxy->tls_eof && proxy->in_used < sizeof(proxy->in_buf);

	io_want(proxy, &proxy->io_fd_read, proxy->fd, IO_READ,
		(in_room && proxy->tls_read_want != IO_WRITE) ||
		proxy->tls_write_want == IO_READ);
	io_want(proxy, &proxy->io_fd_write, proxy->fd, IO_WRITE,
		proxy->tls_write_want == IO_WRITE ||
		(in_room && proxy->tls_read_want == IO_WRITE));
	io_want(proxy, &proxy->io_plain_read, proxy->plain_fd, IO_READ,
		!proxy->plain_eof && proxy->out_used < sizeof(proxy->out_buf));
	io_want(proxy, &proxy->io_plain_write, proxy->plain_fd, IO_WRITE,
		proxy->plain_write_blocked);
	/* Bytes already decrypted inside OpenSSL wake no io. */
	if ((yielded || (in_room && login_ssl_has_pending(proxy->ssl))) &&
	    proxy->to_defer == NULL) {
		proxy->to_defer = io_loop_defer(proxy->lp->ioloop,
						proxy_defer_callback, proxy);
	}
}

static void proxy_pump(struct login_proxy *proxy)
{
	const char *reason = NULL;
	unsigned int rounds = 0;
	int progress;

	do {
		progress = 0;
		int r1 = proxy_tls_to_buf(proxy, &reason);
		int r2 = r1 < 0 ? -1 : proxy_buf_to_plain(proxy, &reason);
		int r3 = r2 < 0 ? -1 : proxy_plain_to_buf(proxy, &reason);
		int r4 = r3 < 0 ? -1 : proxy_buf_to_tls(proxy, &reason);
		if (r1 < 0 || r2 < 0 || r3 < 0 || r4 < 0) {
			proxy_destroy(proxy, reason);
			return;
		}
		progress = r1 + r2 + r3 + r4;
	} while (progress > 0 && ++rounds < LOGIN_PROXY_MAX_ROUNDS);

	if (proxy->tls_eof && proxy->in_used == 0) {
		proxy_destroy(proxy, "client closed the connection");
		return;
	}
	if (proxy->plain_eof && proxy->out_used == 0) {
		login_ssl_shutdown(proxy->ssl);
		proxy_destroy(proxy, "imap process closed the connection");
		return;
	}
	proxy_update_io(proxy, progress > 0);
}

void login_proxy_create(struct login_process *lp, struct login_ssl *ssl,
			int fd, int plain_fd)
{
	struct login_proxy *proxy = i_malloc(sizeof(*proxy));

	proxy->lp = lp;
	proxy->ssl = ssl;
	proxy->fd = fd;
	proxy->plain_fd = plain_fd;
	proxy_link(proxy);
	/* The client may have sent its next commands already. */
	proxy_pump(proxy);
}

void login_proxies_destroy_all(struct login_process *lp)
{
	while (lp->proxies != NULL)
		proxy_destroy(lp->proxies, "Server shutting down");
}
