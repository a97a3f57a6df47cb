#ifndef IOLOOP_H
#define IOLOOP_H
/* The event loop (epoll). One per process, created in main() and passed
   explicitly. Callbacks run one at a time; none may block. */

struct ioloop;
struct io;
struct timeout;

enum io_condition {
	IO_READ = 0x01,
	IO_WRITE = 0x02,
};

typedef void io_callback_t(void *context);

struct ioloop *io_loop_create(void);
void io_loop_destroy(struct ioloop **ioloop);
/* Runs until io_loop_stop(). */
void io_loop_run(struct ioloop *ioloop);
void io_loop_stop(struct ioloop *ioloop);
/* Cached monotonic time of the current iteration, in milliseconds. */
uint64_t io_loop_time_ms(struct ioloop *ioloop);

/* Watch fd for cond (IO_READ or IO_WRITE, not both). An fd may have one
   read io and one write io at the same time. Level-triggered: the callback
   runs again while the condition holds. Hangups and errors wake both. */
struct io *io_add(struct ioloop *ioloop, int fd, enum io_condition cond,
		  io_callback_t *callback, void *context);
/* Safe to call from within any callback, including the io's own. *io=NULL */
void io_remove(struct io **io);

/* One-shot timer after msecs; removes itself before calling callback, so
   the caller must set its pointer to NULL there (or re-add). */
struct timeout *timeout_add(struct ioloop *ioloop, unsigned int msecs,
			    io_callback_t *callback, void *context);
void timeout_remove(struct timeout **timeout);
/* Restart the timer with its original interval. */
void timeout_reset(struct timeout *timeout);

/* Run callback once from the loop, soon (before waiting for I/O again).
   Used to continue a sliced command or process pipelined input. */
struct timeout *io_loop_defer(struct ioloop *ioloop,
			      io_callback_t *callback, void *context);

/* Deliver signo through the loop (signalfd) instead of asynchronously.
   The signal is blocked for the process; callback gets the context. */
void io_loop_add_signal(struct ioloop *ioloop, int signo,
			io_callback_t *callback, void *context);
/* Unblock all signals added by io_loop_add_signal() in a child before exec. */
void io_loop_reset_signals_for_child(void);

#endif
