#ifndef SOCK_LINGER_H
#define SOCK_LINGER_H
/* Lingering close of a connection we end with a reason (a BYE, a 421).

   close() on a TCP socket that still has unread input makes the kernel
   send RST instead of FIN, and a reset may discard our last reply on the
   way or in the peer's receive queue before the client reads it: the
   client sees "connection reset" instead of the BYE (RFC 9051 7.1.5 says
   why a client wants it). So the socket is shut down for writing (FIN
   after everything queued), and its input is read and thrown away until
   the peer closes, SOCK_LINGER_MAX_BYTES were discarded or SOCK_LINGER_MAX_MSECS
   passed; then it is closed.

   Memory: a lingering socket costs one small record (no buffers: input
   is read into one shared scratch buffer and dropped); a set holds at
   most max_count of them, beyond that the oldest is closed at once. */

#include "ioloop.h"

/* Time and input a peer gets to read our last reply before the close.
   Long enough for a client on a busy host to be scheduled and read a
   line; short enough that a flood costs a slot for moments only. */
#define SOCK_LINGER_MAX_MSECS 5000
/* Discarded input per socket: what a client that kept sending after its
   last command (a flood, pipelined commands) may have in flight. */
#define SOCK_LINGER_MAX_BYTES (1024 * 1024)

struct sock_linger_set;

/* done (may be NULL) runs after each lingering socket was closed. */
struct sock_linger_set *sock_linger_set_create(struct ioloop *ioloop,
				     unsigned int max_count,
				     void (*done)(void *context),
				     void *context);
/* Closes every socket still lingering. *set = NULL. */
void sock_linger_set_destroy(struct sock_linger_set **set);
/* Takes over *fd (a connected stream socket whose output was flushed)
   and sets *fd = -1. */
void sock_linger_close(struct sock_linger_set *set, int *fd);
unsigned int sock_linger_set_count(const struct sock_linger_set *set);

#endif
