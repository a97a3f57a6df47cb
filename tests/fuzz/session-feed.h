#ifndef SESSION_FEED_H
#define SESSION_FEED_H
/* The client side of a fuzzed session (fuzz-login-session.c,
   fuzz-imap-session.c): writes the fuzz input into our end of the
   client's socketpair in chunks as the server reads it, then shuts down
   writing (the server sees EOF), and reads and drops everything the
   server answers, so it is never throttled. With MOAT_FUZZ_TRACE set in
   the environment the server's output is copied to stderr (for looking
   at a reproducer). */

#include "lib.h"
#include "ioloop.h"

/* Bytes written per write callback: the server sees the input in pieces
   as a real client's would arrive, never all at once when it is long. */
#define SESSION_FEED_CHUNK 1024

struct session_feed;

/* Takes ownership of fd (our end, non-blocking); data must stay valid
   until session_feed_destroy(). done_callback runs when
   session_feed_done() becomes true. */
struct session_feed *session_feed_create(struct ioloop *ioloop, int fd,
					 const void *data, size_t size,
					 io_callback_t *done_callback,
					 void *context);
/* Returns true while the EOF after the input must wait. */
typedef bool session_feed_hold_callback_t(void *context);
/* callback (with session_feed_create()'s context) is asked before the
   EOF, again on every turn of the loop while it returns true: for a
   server that drops a client closing while it waits for another
   process's answer, where a real client would wait too. */
void session_feed_set_hold_eof(struct session_feed *feed,
			       session_feed_hold_callback_t *callback);
/* All input written and the server closed its end (all its output
   was read). */
bool session_feed_done(const struct session_feed *feed);
void session_feed_destroy(struct session_feed **feed);

/* Stop the log (an info line per connection would dominate the run)
   unless MOAT_FUZZ_LOG is set. Call once per process. */
void session_feed_quiet_log(void);

/* Descriptor leak check: remember how many descriptors are open (call
   once, after setting up), then after each input compare, listing them
   and aborting if there are more. */
void session_feed_fds_baseline(void);
void session_feed_fds_check(void);

#endif
