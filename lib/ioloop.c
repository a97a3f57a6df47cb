/* epoll event loop with one read and one write io per fd, a binary heap
   of timers, deferred callbacks and signals through signalfd. */
#include "lib.h"
#include "ioloop.h"
#include "log.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>

/* Events taken from the kernel per epoll_wait: enough to batch a busy
   loop, small enough for the stack. */
#define IOLOOP_MAX_EVENTS 64
/* Signal numbers handled through the loop (Linux has < 65). */
#define IOLOOP_MAX_SIGNALS 65

struct io {
	struct ioloop *ioloop;
	int fd;
	enum io_condition cond;
	io_callback_t *callback;
	void *context;
};

struct io_fd {
	struct io *read, *write;
	uint32_t registered;   /* epoll events currently registered */
};

struct timeout {
	struct ioloop *ioloop;
	unsigned int msecs;
	uint64_t next_run;
	uint64_t seq;          /* FIFO order among equal times */
	unsigned int heap_idx;
	io_callback_t *callback;
	void *context;
};

struct ioloop {
	int epfd;
	bool running;
	uint64_t now_ms, timeout_seq;

	struct io_fd *fds;
	unsigned int fds_count;

	struct timeout **heap;
	unsigned int heap_count, heap_alloc;

	int signal_fd;
	struct io *signal_io;
	sigset_t signal_mask;
	struct {
		io_callback_t *callback;
		void *context;
	} signals[IOLOOP_MAX_SIGNALS];
};

/* Signals the process routed through signalfd: children must unblock them. */
static sigset_t ioloop_blocked_signals;

struct ioloop *io_loop_create(void)
{
	struct ioloop *ioloop = i_malloc(sizeof(*ioloop));
	ioloop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ioloop->epfd < 0)
		i_fatal("epoll_create1() failed: %s", strerror(errno));
	ioloop->signal_fd = -1;
	sigemptyset(&ioloop->signal_mask);
	ioloop->now_ms = time_monotonic_ms();
	return ioloop;
}

void io_loop_destroy(struct ioloop **_ioloop)
{
	struct ioloop *ioloop = *_ioloop;
	if (ioloop == NULL)
		return;
	*_ioloop = NULL;
	io_remove(&ioloop->signal_io);
	i_close_fd(&ioloop->signal_fd);
	for (unsigned int i = 0; i < ioloop->heap_count; i++)
		free(ioloop->heap[i]);
	for (unsigned int i = 0; i < ioloop->fds_count; i++) {
		if (ioloop->fds[i].read != NULL || ioloop->fds[i].write != NULL)
			i_warning("ioloop destroyed with io for fd %u still added", i);
		free(ioloop->fds[i].read);
		free(ioloop->fds[i].write);
	}
	free(ioloop->fds);
	free(ioloop->heap);
	i_close_fd(&ioloop->epfd);
	free(ioloop);
}

uint64_t io_loop_time_ms(struct ioloop *ioloop)
{
	return ioloop->now_ms;
}

/* ---- ios ---- */

static void io_fd_update(struct ioloop *ioloop, int fd)
{
	struct io_fd *f = &ioloop->fds[fd];
	uint32_t events = (f->read != NULL ? EPOLLIN : 0) |
		(f->write != NULL ? EPOLLOUT : 0);
	struct epoll_event ev = { .events = events, .data.fd = fd };
	int op;

	if (events == f->registered)
		return;
	if (events == 0)
		op = EPOLL_CTL_DEL;
	else if (f->registered == 0)
		op = EPOLL_CTL_ADD;
	else
		op = EPOLL_CTL_MOD;
	if (epoll_ctl(ioloop->epfd, op, fd, &ev) < 0) {
		/* The owner closed the fd before removing its ios (DEL, or
		   MOD when one of two ios is removed): the kernel dropped the
		   registration already, so start over from nothing. */
		if (op == EPOLL_CTL_ADD || (errno != EBADF && errno != ENOENT))
			i_panic("epoll_ctl(%d, fd=%d) failed: %s", op, fd, strerror(errno));
		f->registered = 0;
		return;
	}
	f->registered = events;
}

struct io *io_add(struct ioloop *ioloop, int fd, enum io_condition cond,
		  io_callback_t *callback, void *context)
{
	i_assert(fd >= 0);
	i_assert(cond == IO_READ || cond == IO_WRITE);
	if ((unsigned int)fd >= ioloop->fds_count) {
		unsigned int new_count = MAX((unsigned int)fd + 1, ioloop->fds_count * 2);
		ioloop->fds = i_realloc(ioloop->fds, i_mul_size(new_count, sizeof(*ioloop->fds)));
		memset(ioloop->fds + ioloop->fds_count, 0,
		       (new_count - ioloop->fds_count) * sizeof(*ioloop->fds));
		ioloop->fds_count = new_count;
	}
	struct io **slot = cond == IO_READ ? &ioloop->fds[fd].read : &ioloop->fds[fd].write;
	i_assert(*slot == NULL);

	struct io *io = i_malloc(sizeof(*io));
	io->ioloop = ioloop;
	io->fd = fd;
	io->cond = cond;
	io->callback = callback;
	io->context = context;
	*slot = io;
	io_fd_update(ioloop, fd);
	return io;
}

void io_remove(struct io **_io)
{
	struct io *io = *_io;
	if (io == NULL)
		return;
	*_io = NULL;
	struct io_fd *f = &io->ioloop->fds[io->fd];
	if (io->cond == IO_READ)
		f->read = NULL;
	else
		f->write = NULL;
	io_fd_update(io->ioloop, io->fd);
	free(io);
}

/* ---- timeouts (min-heap on next_run, then seq) ---- */

static bool timeout_before(const struct timeout *a, const struct timeout *b)
{
	return a->next_run < b->next_run ||
		(a->next_run == b->next_run && a->seq < b->seq);
}

static void heap_swap(struct ioloop *ioloop, unsigned int a, unsigned int b)
{
	struct timeout *t = ioloop->heap[a];
	ioloop->heap[a] = ioloop->heap[b];
	ioloop->heap[b] = t;
	ioloop->heap[a]->heap_idx = a;
	ioloop->heap[b]->heap_idx = b;
}

static void heap_up(struct ioloop *ioloop, unsigned int idx)
{
	while (idx > 0) {
		unsigned int parent = (idx - 1) / 2;
		if (!timeout_before(ioloop->heap[idx], ioloop->heap[parent]))
			break;
		heap_swap(ioloop, idx, parent);
		idx = parent;
	}
}

static void heap_down(struct ioloop *ioloop, unsigned int idx)
{
	for (;;) {
		unsigned int l = idx * 2 + 1, r = l + 1, min = idx;
		if (l < ioloop->heap_count && timeout_before(ioloop->heap[l], ioloop->heap[min]))
			min = l;
		if (r < ioloop->heap_count && timeout_before(ioloop->heap[r], ioloop->heap[min]))
			min = r;
		if (min == idx)
			break;
		heap_swap(ioloop, idx, min);
		idx = min;
	}
}

static void timeout_insert(struct ioloop *ioloop, struct timeout *timeout)
{
	if (ioloop->heap_count == ioloop->heap_alloc) {
		ioloop->heap_alloc = MAX(16u, ioloop->heap_alloc * 2);
		ioloop->heap = i_realloc(ioloop->heap,
			i_mul_size(ioloop->heap_alloc, sizeof(*ioloop->heap)));
	}
	timeout->seq = ioloop->timeout_seq++;
	timeout->heap_idx = ioloop->heap_count;
	ioloop->heap[ioloop->heap_count++] = timeout;
	heap_up(ioloop, timeout->heap_idx);
}

static void timeout_unlink(struct timeout *timeout)
{
	struct ioloop *ioloop = timeout->ioloop;
	unsigned int idx = timeout->heap_idx;
	i_assert(idx < ioloop->heap_count && ioloop->heap[idx] == timeout);
	ioloop->heap_count--;
	if (idx != ioloop->heap_count) {
		ioloop->heap[idx] = ioloop->heap[ioloop->heap_count];
		ioloop->heap[idx]->heap_idx = idx;
		heap_down(ioloop, idx);
		heap_up(ioloop, idx);
	}
}

struct timeout *timeout_add(struct ioloop *ioloop, unsigned int msecs,
			    io_callback_t *callback, void *context)
{
	struct timeout *timeout = i_malloc(sizeof(*timeout));
	timeout->ioloop = ioloop;
	timeout->msecs = msecs;
	timeout->callback = callback;
	timeout->context = context;
	/* Real time, not the cached loop time: a timer added after a long
	   callback must not fire early. */
	timeout->next_run = time_monotonic_ms() + msecs;
	timeout_insert(ioloop, timeout);
	return timeout;
}

struct timeout *io_loop_defer(struct ioloop *ioloop,
			      io_callback_t *callback, void *context)
{
	struct timeout *timeout = timeout_add(ioloop, 0, callback, context);
	/* Due now, but after timers that were already due: with 0 here a
	   callback that keeps re-deferring itself would sort before every
	   due timer forever and starve them. */
	timeout->next_run = ioloop->now_ms;
	heap_up(ioloop, timeout->heap_idx);
	return timeout;
}

void timeout_remove(struct timeout **_timeout)
{
	struct timeout *timeout = *_timeout;
	if (timeout == NULL)
		return;
	*_timeout = NULL;
	timeout_unlink(timeout);
	free(timeout);
}

void timeout_reset(struct timeout *timeout)
{
	timeout_unlink(timeout);
	timeout->next_run = time_monotonic_ms() + timeout->msecs;
	timeout_insert(timeout->ioloop, timeout);
}

static void timeouts_run(struct ioloop *ioloop)
{
	/* Run only timers due now; ones added by callbacks wait for the next
	   iteration so a deferred callback that re-defers cannot starve I/O. */
	uint64_t max_seq = ioloop->timeout_seq;
	while (ioloop->heap_count > 0 && ioloop->running) {
		struct timeout *timeout = ioloop->heap[0];
		if (timeout->next_run > ioloop->now_ms || timeout->seq >= max_seq)
			break;
		timeout_unlink(timeout);
		io_callback_t *callback = timeout->callback;
		void *context = timeout->context;
		free(timeout);
		callback(context);
	}
}

static int next_wait_msecs(struct ioloop *ioloop)
{
	if (ioloop->heap_count == 0)
		return -1;
	uint64_t next = ioloop->heap[0]->next_run;
	if (next <= ioloop->now_ms)
		return 0;
	return (int)MIN(next - ioloop->now_ms, (uint64_t)INT_MAX);
}

/* ---- signals ---- */

static void signal_input(void *context)
{
	struct ioloop *ioloop = context;
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t ret = read(ioloop->signal_fd, &si, sizeof(si));
		if (ret != (ssize_t)sizeof(si)) {
			if (ret < 0 && errno != EAGAIN && errno != EINTR)
				i_error("read(signalfd) failed: %s", strerror(errno));
			return;
		}
		if (si.ssi_signo < IOLOOP_MAX_SIGNALS &&
		    ioloop->signals[si.ssi_signo].callback != NULL)
			ioloop->signals[si.ssi_signo].callback(
				ioloop->signals[si.ssi_signo].context);
	}
}

void io_loop_add_signal(struct ioloop *ioloop, int signo,
			io_callback_t *callback, void *context)
{
	i_assert(signo > 0 && signo < IOLOOP_MAX_SIGNALS);
	ioloop->signals[signo].callback = callback;
	ioloop->signals[signo].context = context;
	sigaddset(&ioloop->signal_mask, signo);
	sigaddset(&ioloop_blocked_signals, signo);
	if (sigprocmask(SIG_BLOCK, &ioloop->signal_mask, NULL) < 0)
		i_fatal("sigprocmask() failed: %s", strerror(errno));
	int fd = signalfd(ioloop->signal_fd, &ioloop->signal_mask,
			  SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		i_fatal("signalfd() failed: %s", strerror(errno));
	if (ioloop->signal_fd < 0) {
		ioloop->signal_fd = fd;
		ioloop->signal_io = io_add(ioloop, fd, IO_READ, signal_input, ioloop);
	}
}

void io_loop_reset_signals_for_child(void)
{
	(void)sigprocmask(SIG_UNBLOCK, &ioloop_blocked_signals, NULL);
}

/* ---- the loop ---- */

static void io_loop_handle_events(struct ioloop *ioloop,
				  struct epoll_event *events, int count)
{
	for (int i = 0; i < count; i++) {
		int fd = events[i].data.fd;
		uint32_t ev = events[i].events;
		bool err = (ev & (EPOLLERR | EPOLLHUP)) != 0;

		/* Each io is looked up again: an earlier callback may have
		   removed it (and its memory is gone). */
		if ((ev & EPOLLIN || err) && (unsigned int)fd < ioloop->fds_count &&
		    ioloop->fds[fd].read != NULL) {
			struct io *io = ioloop->fds[fd].read;
			io->callback(io->context);
		}
		if ((ev & EPOLLOUT || err) && (unsigned int)fd < ioloop->fds_count &&
		    ioloop->fds[fd].write != NULL) {
			struct io *io = ioloop->fds[fd].write;
			io->callback(io->context);
		}
		if (!ioloop->running)
			break;
	}
}

void io_loop_run(struct ioloop *ioloop)
{
	struct epoll_event events[IOLOOP_MAX_EVENTS];

	ioloop->running = true;
	while (ioloop->running) {
		ioloop->now_ms = time_monotonic_ms();
		int wait_ms = next_wait_msecs(ioloop);
		int count = epoll_wait(ioloop->epfd, events, IOLOOP_MAX_EVENTS, wait_ms);
		if (count < 0) {
			if (errno == EINTR)
				continue;
			i_fatal("epoll_wait() failed: %s", strerror(errno));
		}
		ioloop->now_ms = time_monotonic_ms();
		io_loop_handle_events(ioloop, events, count);
		timeouts_run(ioloop);
	}
}

void io_loop_stop(struct ioloop *ioloop)
{
	ioloop->running = false;
}
