#ifndef KTLS_H
#define KTLS_H
/* The receiving end of a kernel TLS handoff (Linux "tls" ULP).

   imap-login does the TLS handshake with OpenSSL; where the kernel and
   OpenSSL can take over the record layer in both directions (ssl_ktls =
   yes), the socket itself goes to the user's imap process, which then
   reads and writes plaintext on it. Writes need nothing special: write()
   and send() on such a socket produce application-data records. Reads
   must use recvmsg() with room for a control message, because a record
   that is not application data (an alert, a post-handshake message) is
   delivered alone with its type in a TLS_GET_RECORD_TYPE cmsg, and a
   plain read() of it fails with EIO.

   Nobody after the handoff holds the TLS state, so records that need it
   cannot be answered: a KeyUpdate (TLS 1.3) or any other handshake message
   ends the connection, as does any alert. close_notify is a clean EOF. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>

/* TLS ContentType values (RFC 8446 5.1). */
#define KTLS_RECORD_ALERT 21
#define KTLS_RECORD_HANDSHAKE 22
#define KTLS_RECORD_APPLICATION_DATA 23

/* True if fd is a TCP socket with the kernel's TLS ULP attached. */
bool ktls_is_active(int fd);

enum ktls_record_result {
	KTLS_RESULT_DATA,          /* application data (or no cmsg at all) */
	KTLS_RESULT_CLOSE_NOTIFY,  /* the peer's close_notify: EOF */
	KTLS_RESULT_ALERT,         /* any other alert: the peer gave up */
	KTLS_RESULT_HANDSHAKE,     /* KeyUpdate and the like: cannot answer */
	KTLS_RESULT_UNKNOWN,       /* another content type */
};

/* Classify what one recvmsg() returned: msg as filled in by the kernel,
   data/size the payload it wrote. *detail_r is the alert description or
   the handshake message type (0 when not applicable). */
enum ktls_record_result ktls_classify(const struct msghdr *msg,
				      const unsigned char *data, size_t size,
				      unsigned int *detail_r);

/* read(2)-like: >0 bytes of application data, 0 on close_notify or TCP
   EOF, -1 with errno (EAGAIN; EPROTO for a record we cannot handle, after
   logging why; ECONNRESET for an alert). fd is passed as the context so
   this plugs into struct stream_transport. */
ssize_t ktls_read(void *fd_ctx, void *buf, size_t size);

/* Send our close_notify alert, best effort, never blocking. */
void ktls_send_close_notify(int fd);

#endif
