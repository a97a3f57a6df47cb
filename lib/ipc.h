#ifndef IPC_H
#define IPC_H
/* Internal messages between moat processes, over SOCK_SEQPACKET Unix
   sockets (each send is one record, so framing is the kernel's).

   A record is one line of tab-separated, tab-escaped fields ending in LF:
       NAME \t arg1 \t arg2 ... \n
   readable with socat or in a log. At most one file descriptor travels
   with a record (SCM_RIGHTS); the record's name says whether it carries
   one. The first record each side sends is
       VERSION \t <protocol name> \t <major> \t <minor>
   and a peer with another protocol name or major version is dropped.

   A record over IPC_MAX_RECORD_SIZE, with a bad escape, without a final
   LF, or with an unexpected fd is malformed: the connection is closed and
   the owner's callback gets NULL args. */

#include "ioloop.h"
#include "mempool.h"

/* 64 KiB: the largest record is a login handoff that carries the bytes the
   client sent after its LOGIN command (bounded by the login line limit,
   base64-encoded) plus a few short fields. */
#define IPC_MAX_RECORD_SIZE (64 * 1024)
#define IPC_MAX_ARGS 64

struct ipc_conn;

/* args: the record's fields, unescaped, NULL-terminated; args[0] is the
   record name. fd: the descriptor that came with the record, or -1; the
   callback owns it (must close or keep it). args == NULL means the
   connection is gone (EOF, error or malformed record): the callback must
   destroy the connection. args point into memory valid only during the
   callback. The VERSION record is handled internally. */
typedef void ipc_input_callback_t(void *context, const char *const *args, int fd);

/* Takes ownership of fd (a SOCK_SEQPACKET socket). name is used in log
   messages about this connection (e.g. "auth"). */
struct ipc_conn *ipc_conn_create(struct ioloop *ioloop, int fd, const char *name,
				 const char *protocol, unsigned int major,
				 unsigned int minor,
				 ipc_input_callback_t *callback, void *context);
/* Closes the socket. */
void ipc_conn_destroy(struct ipc_conn **conn);

/* Send one record (args NULL-terminated, escaped here) with send_fd
   attached unless it is -1 (the caller keeps its copy of send_fd). Sends
   block briefly if the socket buffer is full (peers are our own
   processes and read promptly); returns 0 or -1 (peer gone, or conn
   NULL: its channel was destroyed already). */
int ipc_send(struct ipc_conn *conn, const char *const *args, int send_fd);
/* Convenience: fields as varargs, NULL-terminated. */
int ipc_sendv(struct ipc_conn *conn, int send_fd, ...) ATTR_NULL_TERMINATED;

/* Stop/restart reading records (flow control). */
void ipc_conn_pause(struct ipc_conn *conn, bool pause);
int ipc_conn_get_fd(struct ipc_conn *conn);
const char *ipc_conn_get_name(struct ipc_conn *conn);

/* Lower-level helpers, used by the connection code and unit tests. */
/* Create a connected SOCK_SEQPACKET pair with CLOEXEC set. */
int ipc_socketpair(int fds[2]);
/* Send raw bytes with an optional fd. Returns 0 or -1. */
int ipc_send_raw(int sock, const void *data, size_t size, int send_fd);
/* Receive one record: returns its size (>0), 0 on EOF, -1 on error
   (errno EAGAIN if nothing is waiting, EMSGSIZE if it was too large or
   carried more than one fd). *fd_r is the received fd or -1. */
ssize_t ipc_recv_raw(int sock, void *buf, size_t size, int *fd_r);

#endif
