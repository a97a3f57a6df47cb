/* Internal records over SOCK_SEQPACKET sockets; see ipc.h. */
#include "lib.h"
#include "ipc.h"
#include "log.h"
#include "strfuncs.h"
#include "buffer.h"

#include <poll.h>
#include <sys/socket.h>

/* How long a send may wait for a full socket buffer before the peer is
   considered stuck. Peers are our own processes. */
#define IPC_SEND_TIMEOUT_MSECS 5000

struct ipc_conn {
	struct ioloop *ioloop;
	int fd;
	char *name;
	char *protocol;
	unsigned int major;
	struct io *io;
	bool version_received;
	bool paused;
	/* Callbacks may destroy the connection; freeing waits until the
	   callback returns. */
	unsigned int in_callback;
	bool destroyed;
	ipc_input_callback_t *callback;
	void *context;
	char *recv_buf;       /* ipc_recv_buf() */
};

/* One receive buffer for every connection of the process: a record is
   handled completely (its callback returns) before the next is read, and
   no callback reads another connection, so they never overlap. Keeps a
   connection small (lmtp holds one per recipient, master one per child). */
static char *ipc_recv_buf(void)
{
	static char *buf = NULL;

	if (buf == NULL)
		buf = i_malloc(IPC_MAX_RECORD_SIZE + 1);
	return buf;
}

int ipc_socketpair(int fds[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

int ipc_send_raw(int sock, const void *data, size_t size, int send_fd)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = size };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cmsg_buf;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (send_fd >= 0) {
		memset(&cmsg_buf, 0, sizeof(cmsg_buf));
		msg.msg_control = cmsg_buf.buf;
		msg.msg_controllen = sizeof(cmsg_buf.buf);
		struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &send_fd, sizeof(int));
	}
	for (;;) {
		ssize_t ret = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (ret == (ssize_t)size)
			return 0;
		if (ret >= 0) {
			errno = EMSGSIZE;   /* cannot happen with SEQPACKET */
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		struct pollfd pfd = { .fd = sock, .events = POLLOUT };
		int pret = poll(&pfd, 1, IPC_SEND_TIMEOUT_MSECS);
		if (pret == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (pret < 0 && errno != EINTR)
			return -1;
	}
}

static void close_received_fds(struct msghdr *msg)
{
	for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
	     cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
}

ssize_t ipc_recv_raw(int sock, void *buf, size_t size, int *fd_r)
{
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	/* Room for a few fds so a misbehaving peer's extra ones are seen
	   (and closed) rather than silently truncated. */
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cmsg_buf;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cmsg_buf.buf, .msg_controllen = sizeof(cmsg_buf.buf),
	};
	ssize_t ret;

	*fd_r = -1;
	do {
		ret = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (ret < 0 && errno == EINTR);
	if (ret <= 0)
		return ret;

	int fd_count = 0;
	for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
	     cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
			fd_count += (int)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (fd_count == 1)
				memcpy(fd_r, CMSG_DATA(cmsg), sizeof(int));
		}
	}
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || fd_count > 1) {
		close_received_fds(&msg);
		*fd_r = -1;
		errno = EMSGSIZE;
		return -1;
	}
	return ret;
}

int ipc_send(struct ipc_conn *conn, const char *const *args, int send_fd)
{
	/* NULL: a peer whose channel was already destroyed */
	if (conn == NULL || conn->destroyed || conn->fd < 0)
		return -1;

	pool_t pool = pool_create("ipc send", 1024);
	buffer_t buf;
	int ret = 0;

	buffer_init(&buf, IPC_MAX_RECORD_SIZE);
	for (unsigned int i = 0; args[i] != NULL && ret == 0; i++) {
		if (i > 0)
			ret = buffer_append_c(&buf, '\t');
		if (ret == 0)
			ret = buffer_append_str(&buf, str_tabescape(pool, args[i]));
	}
	if (ret == 0)
		ret = buffer_append_c(&buf, '\n');
	if (ret < 0)
		i_panic("ipc %s: record %s too large", conn->name, args[0]);
	if (ipc_send_raw(conn->fd, buf.data, buf.used, send_fd) < 0) {
		if (errno != EPIPE && errno != ECONNRESET)
			i_error("ipc %s: send failed: %s", conn->name, strerror(errno));
		ret = -1;
	}
	buffer_free(&buf);
	pool_unref(&pool);
	return ret;
}

int ipc_sendv(struct ipc_conn *conn, int send_fd, ...)
{
	const char *args[IPC_MAX_ARGS + 1];
	unsigned int count = 0;
	va_list va;

	va_start(va, send_fd);
	for (const char *arg; (arg = va_arg(va, const char *)) != NULL;) {
		i_assert(count < IPC_MAX_ARGS);
		args[count++] = arg;
	}
	va_end(va);
	args[count] = NULL;
	return ipc_send(conn, args, send_fd);
}

static void ipc_conn_free(struct ipc_conn *conn)
{
	free(conn->name);
	free(conn->protocol);
	free(conn);
}

static void ipc_conn_call(struct ipc_conn *conn, const char *const *args, int fd)
{
	conn->in_callback++;
	conn->callback(conn->context, args, fd);
	conn->in_callback--;
}

static void ipc_conn_fail(struct ipc_conn *conn, int fd)
{
	if (fd >= 0)
		close(fd);
	io_remove(&conn->io);
	ipc_conn_call(conn, NULL, -1);
}

/* Returns false when the record was malformed. */
static bool ipc_handle_record(struct ipc_conn *conn, char *data, size_t size, int fd)
{
	const char *args[IPC_MAX_ARGS + 1];
	unsigned int count = 0;

	/* One line: an LF before the last byte would be a second record
	   smuggled into this one (the escaping never produces a raw LF). */
	if (size == 0 || data[size - 1] != '\n' || memchr(data, '\0', size) != NULL ||
	    memchr(data, '\n', size - 1) != NULL)
		return false;
	data[size - 1] = '\0';
	for (char *p = data;;) {
		if (count == IPC_MAX_ARGS)
			return false;
		args[count++] = p;
		char *tab = strchr(p, '\t');
		if (tab != NULL)
			*tab = '\0';
		if (str_tabunescape(p) < 0)
			return false;
		if (tab == NULL)
			break;
		p = tab + 1;
	}
	args[count] = NULL;

	if (!conn->version_received) {
		unsigned int major;
		if (count != 4 || strcmp(args[0], "VERSION") != 0 ||
		    strcmp(args[1], conn->protocol) != 0 ||
		    str_to_uint(args[2], &major) < 0 || major != conn->major || fd >= 0) {
			i_error("ipc %s: bad handshake (expected %s %u)",
				conn->name, conn->protocol, conn->major);
			return false;
		}
		conn->version_received = true;
		return true;
	}
	ipc_conn_call(conn, args, fd);
	return true;
}

static void ipc_conn_input_records(struct ipc_conn *conn);

static void ipc_conn_input(void *context)
{
	struct ipc_conn *conn = context;

	conn->in_callback++;
	ipc_conn_input_records(conn);
	if (--conn->in_callback == 0 && conn->destroyed)
		ipc_conn_free(conn);
}

static void ipc_conn_input_records(struct ipc_conn *conn)
{
	/* A few records per wakeup, then give others a turn. */
	for (unsigned int i = 0; i < 32 && !conn->destroyed && conn->io != NULL &&
	     !conn->paused; i++) {
		int fd;
		ssize_t ret = ipc_recv_raw(conn->fd, conn->recv_buf,
					   IPC_MAX_RECORD_SIZE + 1, &fd);
		if (ret < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (ret < 0) {
			/* ECONNRESET: the peer closed with records unread, an
			   ordinary disconnect like EOF. */
			if (errno != ECONNRESET)
				i_error("ipc %s: receive failed: %s", conn->name, strerror(errno));
			ipc_conn_fail(conn, -1);
			return;
		}
		if (ret == 0) {
			ipc_conn_fail(conn, -1);
			return;
		}
		if ((size_t)ret > IPC_MAX_RECORD_SIZE ||
		    !ipc_handle_record(conn, conn->recv_buf, (size_t)ret, fd)) {
			i_error("ipc %s: malformed record, closing", conn->name);
			ipc_conn_fail(conn, fd);
			return;
		}
	}
}

struct ipc_conn *ipc_conn_create(struct ioloop *ioloop, int fd, const char *name,
				 const char *protocol, unsigned int major,
				 unsigned int minor,
				 ipc_input_callback_t *callback, void *context)
{
	struct ipc_conn *conn = i_malloc(sizeof(*conn));
	char ver[32], min[32];

	conn->ioloop = ioloop;
	conn->fd = fd;
	conn->name = i_strdup(name);
	conn->protocol = i_strdup(protocol);
	conn->major = major;
	conn->callback = callback;
	conn->context = context;
	conn->recv_buf = ipc_recv_buf();
	(void)fd_set_nonblock(fd, true);
	(void)fd_set_cloexec(fd, true);
	conn->io = io_add(ioloop, fd, IO_READ, ipc_conn_input, conn);
	snprintf(ver, sizeof(ver), "%u", major);
	snprintf(min, sizeof(min), "%u", minor);
	(void)ipc_sendv(conn, -1, "VERSION", protocol, ver, min, NULL);
	return conn;
}

void ipc_conn_destroy(struct ipc_conn **_conn)
{
	struct ipc_conn *conn = *_conn;
	if (conn == NULL)
		return;
	*_conn = NULL;
	io_remove(&conn->io);
	i_close_fd(&conn->fd);
	conn->destroyed = true;
	if (conn->in_callback == 0)
		ipc_conn_free(conn);
}

void ipc_conn_pause(struct ipc_conn *conn, bool pause)
{
	if (conn->paused == pause || conn->destroyed)
		return;
	conn->paused = pause;
	if (pause)
		io_remove(&conn->io);
	else if (conn->fd >= 0)
		conn->io = io_add(conn->ioloop, conn->fd, IO_READ, ipc_conn_input, conn);
}

int ipc_conn_get_fd(struct ipc_conn *conn)
{
	return conn->fd;
}

const char *ipc_conn_get_name(struct ipc_conn *conn)
{
	return conn->name;
}
