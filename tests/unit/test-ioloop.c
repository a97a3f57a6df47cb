/* Unit tests for lib/ioloop.c: ios, timeouts, deferred callbacks, signals. */
#include "test-common.h"
#include "ioloop.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

/* A test that has not finished after this long is stuck: fail it. */
#define TEST_GUARD_MSECS 3000
/* Kills the whole program if a blocking call hangs outside the loop. */
#define TEST_ALARM_SECS 60

struct guard {
	struct ioloop *ioloop;
	struct timeout *to;
	bool fired;
};

static void guard_expired(void *context)
{
	struct guard *guard = context;
	guard->to = NULL;
	guard->fired = true;
	io_loop_stop(guard->ioloop);
}

static void guard_start(struct guard *guard, struct ioloop *ioloop)
{
	memset(guard, 0, sizeof(*guard));
	guard->ioloop = ioloop;
	guard->to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_expired, guard);
}

/* Removes the guard; a fired guard is a failure of the calling test. */
#define guard_end(guard) do { \
		test_assert(!(guard)->fired); \
		timeout_remove(&(guard)->to); \
	} while (0)

static void make_pipe(int fds[2])
{
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(2);
	}
}

static void write_byte(int fd)
{
	if (write(fd, "x", 1) != 1) {
		perror("write");
		exit(2);
	}
}

/* ---- io read callback ---- */

struct read_ctx {
	struct ioloop *ioloop;
	struct io *io;
	int fd;
	unsigned int calls;
	char data[16];
	ssize_t len;
};

static void read_cb(void *context)
{
	struct read_ctx *ctx = context;
	ctx->calls++;
	ctx->len = read(ctx->fd, ctx->data, sizeof(ctx->data) - 1);
	io_loop_stop(ctx->ioloop);
}

static void test_io_read(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct guard guard;
	struct read_ctx ctx = { .ioloop = ioloop };
	int fds[2];

	alarm(TEST_ALARM_SECS);
	make_pipe(fds);
	ctx.fd = fds[0];
	ctx.io = io_add(ioloop, fds[0], IO_READ, read_cb, &ctx);
	test_assert(write(fds[1], "hello", 5) == 5);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.calls, 1);
	test_assert_int(ctx.len, 5);
	test_assert(memcmp(ctx.data, "hello", 5) == 0);

	/* A closed write end wakes the reader (hangup) with EOF. */
	close(fds[1]);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.calls, 2);
	test_assert_int(ctx.len, 0);

	io_remove(&ctx.io);
	test_assert(ctx.io == NULL);
	io_remove(&ctx.io);   /* NULL is a no-op */
	close(fds[0]);
	io_loop_destroy(&ioloop);
	test_assert(ioloop == NULL);
}

/* ---- removing ios from callbacks ---- */

struct remove_ctx {
	struct ioloop *ioloop;
	struct io *io[2];
	unsigned int calls[2];
};

static void remove_self_cb(void *context)
{
	struct remove_ctx *ctx = context;
	ctx->calls[0]++;
	/* Data stays unread: a level-triggered io would fire again. */
	io_remove(&ctx->io[0]);
}

static void stop_cb(void *context)
{
	io_loop_stop(context);
}

static void test_io_remove_self(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct remove_ctx ctx = { .ioloop = ioloop };
	int fds[2];

	make_pipe(fds);
	write_byte(fds[1]);
	ctx.io[0] = io_add(ioloop, fds[0], IO_READ, remove_self_cb, &ctx);
	(void)timeout_add(ioloop, 50, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls[0], 1);
	test_assert(ctx.io[0] == NULL);

	/* The fd can get a new io after that. */
	ctx.io[0] = io_add(ioloop, fds[0], IO_READ, remove_self_cb, &ctx);
	(void)timeout_add(ioloop, 50, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls[0], 2);
	close(fds[0]);
	close(fds[1]);
	io_loop_destroy(&ioloop);
}

static void remove_both_cb0(void *context)
{
	struct remove_ctx *ctx = context;
	ctx->calls[0]++;
	io_remove(&ctx->io[1]);
	io_remove(&ctx->io[0]);
}

static void remove_both_cb1(void *context)
{
	struct remove_ctx *ctx = context;
	ctx->calls[1]++;
	io_remove(&ctx->io[0]);
	io_remove(&ctx->io[1]);
}

static void test_io_remove_other(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct remove_ctx ctx = { .ioloop = ioloop };
	int p0[2], p1[2];

	/* Both fds are ready in the same epoll_wait(); whichever callback
	   runs first removes the other, which then must not run (its
	   memory is gone: the sanitizer build catches a use after free). */
	make_pipe(p0);
	make_pipe(p1);
	write_byte(p0[1]);
	write_byte(p1[1]);
	ctx.io[0] = io_add(ioloop, p0[0], IO_READ, remove_both_cb0, &ctx);
	ctx.io[1] = io_add(ioloop, p1[0], IO_READ, remove_both_cb1, &ctx);
	(void)timeout_add(ioloop, 50, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls[0] + ctx.calls[1], 1);
	test_assert(ctx.io[0] == NULL && ctx.io[1] == NULL);
	close(p0[0]); close(p0[1]);
	close(p1[0]); close(p1[1]);
	io_loop_destroy(&ioloop);
}

/* ---- read and write ios on one fd ---- */

struct rw_ctx {
	struct ioloop *ioloop;
	int fd;
	struct io *io_read, *io_write;
	unsigned int reads, writes;
	bool remove_write_from_read;
};

static void rw_read_cb(void *context)
{
	struct rw_ctx *ctx = context;
	char buf[16];
	ctx->reads++;
	(void)read(ctx->fd, buf, sizeof(buf));
	io_remove(&ctx->io_read);
	if (ctx->remove_write_from_read) {
		io_remove(&ctx->io_write);
		io_loop_stop(ctx->ioloop);
	}
}

static void rw_write_cb(void *context)
{
	struct rw_ctx *ctx = context;
	if (++ctx->writes == 3) {
		io_remove(&ctx->io_write);
		io_loop_stop(ctx->ioloop);
	}
}

static void test_io_read_write_same_fd(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct guard guard;
	int sv[2];

	test_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	struct rw_ctx ctx = { .ioloop = ioloop, .fd = sv[0] };

	/* Both fire; removing the read io keeps the write io working. */
	test_assert(write(sv[1], "ab", 2) == 2);
	ctx.io_read = io_add(ioloop, sv[0], IO_READ, rw_read_cb, &ctx);
	ctx.io_write = io_add(ioloop, sv[0], IO_WRITE, rw_write_cb, &ctx);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.reads, 1);
	test_assert_int(ctx.writes, 3);
	test_assert(ctx.io_read == NULL && ctx.io_write == NULL);

	/* Removing the write io from the read callback of the same event:
	   the write callback must not run. */
	memset(&ctx, 0, sizeof(ctx));
	ctx.ioloop = ioloop;
	ctx.fd = sv[0];
	ctx.remove_write_from_read = true;
	test_assert(write(sv[1], "cd", 2) == 2);
	ctx.io_read = io_add(ioloop, sv[0], IO_READ, rw_read_cb, &ctx);
	ctx.io_write = io_add(ioloop, sv[0], IO_WRITE, rw_write_cb, &ctx);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.reads, 1);
	test_assert_int(ctx.writes, 0);

	/* Only the write io: not woken for readable data. */
	memset(&ctx, 0, sizeof(ctx));
	ctx.ioloop = ioloop;
	ctx.fd = sv[0];
	ctx.io_write = io_add(ioloop, sv[0], IO_WRITE, rw_write_cb, &ctx);
	test_assert(write(sv[1], "ef", 2) == 2);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.writes, 3);
	test_assert_int(ctx.reads, 0);

	close(sv[0]);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

static void test_io_remove_after_close(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct rw_ctx ctx = { .ioloop = ioloop };
	int sv[2];

	/* An owner may close the fd before removing its ios (e.g. closing
	   a client's socket, then destroying its streams): removing them
	   one at a time must not fail on the gone fd. */
	test_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	ctx.io_read = io_add(ioloop, sv[0], IO_READ, rw_read_cb, &ctx);
	ctx.io_write = io_add(ioloop, sv[0], IO_WRITE, rw_write_cb, &ctx);
	close(sv[0]);
	io_remove(&ctx.io_read);
	io_remove(&ctx.io_write);
	test_assert(ctx.io_read == NULL && ctx.io_write == NULL);

	/* The fd number is reused by a new socket: it can get ios again. */
	int sv2[2];
	test_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv2) == 0);
	ctx.fd = sv2[0];
	ctx.io_write = io_add(ioloop, sv2[0], IO_WRITE, rw_write_cb, &ctx);
	(void)timeout_add(ioloop, TEST_GUARD_MSECS, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.writes, 3);
	test_assert_int(ctx.reads, 0);
	close(sv2[0]);
	close(sv2[1]);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

/* ---- timeouts ---- */

#define TEST_TIMEOUT_COUNT 5

struct order_ctx {
	struct ioloop *ioloop;
	unsigned int order[TEST_TIMEOUT_COUNT + 2];
	uint64_t when[TEST_TIMEOUT_COUNT + 2];
	unsigned int count, stop_after;
};

struct order_item {
	struct order_ctx *ctx;
	unsigned int id;
};

static void order_cb(void *context)
{
	struct order_item *item = context;
	struct order_ctx *ctx = item->ctx;
	if (ctx->count < N_ELEMENTS(ctx->order)) {
		ctx->order[ctx->count] = item->id;
		ctx->when[ctx->count] = time_monotonic_ms();
	}
	if (++ctx->count == ctx->stop_after)
		io_loop_stop(ctx->ioloop);
}

static void test_timeout_order(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct order_ctx ctx = { .ioloop = ioloop, .stop_after = 4 };
	struct order_item items[TEST_TIMEOUT_COUNT];
	static const unsigned int msecs[TEST_TIMEOUT_COUNT] = { 60, 20, 40, 20, 30 };
	struct guard guard;

	for (unsigned int i = 0; i < TEST_TIMEOUT_COUNT; i++)
		items[i] = (struct order_item){ &ctx, i };
	uint64_t start = time_monotonic_ms();
	struct timeout *to[TEST_TIMEOUT_COUNT];
	for (unsigned int i = 0; i < TEST_TIMEOUT_COUNT; i++)
		to[i] = timeout_add(ioloop, msecs[i], order_cb, &items[i]);
	/* A removed timeout never fires. */
	timeout_remove(&to[4]);
	test_assert(to[4] == NULL);

	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.count, 4);
	/* Equal intervals fire in the order they were added. */
	test_assert_int(ctx.order[0], 1);
	test_assert_int(ctx.order[1], 3);
	test_assert_int(ctx.order[2], 2);
	test_assert_int(ctx.order[3], 0);
	for (unsigned int i = 0; i < 4; i++)
		test_assert(ctx.when[i] >= start + msecs[ctx.order[i]]);
	test_assert(io_loop_time_ms(ioloop) >= start + 60);
	io_loop_destroy(&ioloop);
}

struct reset_ctx {
	struct ioloop *ioloop;
	struct timeout *target;
	uint64_t fired_at;
};

static void reset_target_cb(void *context)
{
	struct reset_ctx *ctx = context;
	ctx->target = NULL;
	ctx->fired_at = time_monotonic_ms();
	io_loop_stop(ctx->ioloop);
}

static void reset_cb(void *context)
{
	struct reset_ctx *ctx = context;
	timeout_reset(ctx->target);
}

static void test_timeout_reset(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct reset_ctx ctx = { .ioloop = ioloop };
	struct guard guard;

	uint64_t start = time_monotonic_ms();
	ctx.target = timeout_add(ioloop, 80, reset_target_cb, &ctx);
	(void)timeout_add(ioloop, 50, reset_cb, &ctx);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	/* Reset at ~50 ms restarts the 80 ms interval: fires at >= 130 ms. */
	test_assert(ctx.fired_at >= start + 130);
	test_assert(ctx.fired_at < start + 1000);
	test_assert(ctx.target == NULL);
	io_loop_destroy(&ioloop);
}

/* ---- deferred callbacks ---- */

struct defer_ctx {
	struct ioloop *ioloop;
	unsigned int defers, reads, timeouts;
	uint64_t start;
	bool redefer, gave_up;
	int write_fd;
};

static void defer_once_cb(void *context)
{
	struct defer_ctx *ctx = context;
	ctx->defers++;
	io_loop_stop(ctx->ioloop);
}

static void test_defer_runs_first(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct defer_ctx ctx = { .ioloop = ioloop };
	struct guard guard;

	/* No I/O and only a far timer: the deferred call must not wait. */
	guard_start(&guard, ioloop);
	uint64_t start = time_monotonic_ms();
	(void)io_loop_defer(ioloop, defer_once_cb, &ctx);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.defers, 1);
	test_assert(time_monotonic_ms() - start < 500);

	/* A removed deferred call does not run. */
	struct timeout *d = io_loop_defer(ioloop, defer_once_cb, &ctx);
	timeout_remove(&d);
	(void)timeout_add(ioloop, 30, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.defers, 1);
	io_loop_destroy(&ioloop);
}

static void redefer_cb(void *context)
{
	struct defer_ctx *ctx = context;
	ctx->defers++;
	if (time_monotonic_ms() - ctx->start > TEST_GUARD_MSECS) {
		/* Starved: the other callback never got its turn. */
		ctx->gave_up = true;
		io_loop_stop(ctx->ioloop);
		return;
	}
	/* The io becomes ready only while the deferring is going on. */
	if (ctx->defers == 5 && ctx->write_fd >= 0)
		write_byte(ctx->write_fd);
	if (ctx->redefer)
		(void)io_loop_defer(ctx->ioloop, redefer_cb, ctx);
}

static void defer_read_cb(void *context)
{
	struct defer_ctx *ctx = context;
	ctx->reads++;
	ctx->redefer = false;
	io_loop_stop(ctx->ioloop);
}

static void defer_timeout_cb(void *context)
{
	struct defer_ctx *ctx = context;
	ctx->timeouts++;
	ctx->redefer = false;
	io_loop_stop(ctx->ioloop);
}

static void test_defer_no_starvation(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct defer_ctx ctx = { .ioloop = ioloop, .redefer = true };
	int fds[2];

	/* I/O gets its turn while a callback keeps re-deferring itself. */
	make_pipe(fds);
	ctx.write_fd = fds[1];
	struct io *io = io_add(ioloop, fds[0], IO_READ, defer_read_cb, &ctx);
	ctx.start = time_monotonic_ms();
	(void)io_loop_defer(ioloop, redefer_cb, &ctx);
	io_loop_run(ioloop);
	test_assert(!ctx.gave_up);
	test_assert_int(ctx.reads, 1);
	/* One deferred call per iteration: the read comes right after. */
	test_assert_int(ctx.defers, 5);
	io_remove(&io);

	/* The pending re-deferred call still runs afterwards. */
	unsigned int defers = ctx.defers;
	(void)timeout_add(ioloop, 20, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(ctx.defers, defers + 1);

	/* Due timers get their turn too. */
	memset(&ctx, 0, sizeof(ctx));
	ctx.ioloop = ioloop;
	ctx.redefer = true;
	ctx.write_fd = -1;
	ctx.start = time_monotonic_ms();
	(void)timeout_add(ioloop, 20, defer_timeout_cb, &ctx);
	(void)io_loop_defer(ioloop, redefer_cb, &ctx);
	io_loop_run(ioloop);
	test_assert(!ctx.gave_up);
	test_assert_int(ctx.timeouts, 1);
	/* Let the last re-deferred call run before the loop goes away. */
	(void)timeout_add(ioloop, 10, stop_cb, ioloop);
	io_loop_run(ioloop);

	close(fds[0]);
	close(fds[1]);
	io_loop_destroy(&ioloop);
}

/* An io callback's deferred call runs in the same iteration, before the
   loop waits again (here: before the 100 ms timer). */
struct defer_from_io_ctx {
	struct ioloop *ioloop;
	struct io *io;
	int fd;
	uint64_t io_at, defer_at;
};

static void defer_from_io_defer_cb(void *context)
{
	struct defer_from_io_ctx *ctx = context;
	ctx->defer_at = time_monotonic_ms();
}

static void defer_from_io_cb(void *context)
{
	struct defer_from_io_ctx *ctx = context;
	char c;
	(void)read(ctx->fd, &c, 1);
	io_remove(&ctx->io);
	ctx->io_at = time_monotonic_ms();
	(void)io_loop_defer(ctx->ioloop, defer_from_io_defer_cb, ctx);
}

static void test_defer_from_io(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct defer_from_io_ctx ctx = { .ioloop = ioloop };
	int fds[2];

	make_pipe(fds);
	write_byte(fds[1]);
	ctx.fd = fds[0];
	ctx.io = io_add(ioloop, fds[0], IO_READ, defer_from_io_cb, &ctx);
	(void)timeout_add(ioloop, 100, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert(ctx.io_at != 0 && ctx.defer_at != 0);
	test_assert(ctx.defer_at - ctx.io_at < 50);
	close(fds[0]);
	close(fds[1]);
	io_loop_destroy(&ioloop);
}

/* ---- signals ---- */

struct signal_ctx {
	struct ioloop *ioloop;
	unsigned int usr1, usr2;
};

static void sigusr1_cb(void *context)
{
	struct signal_ctx *ctx = context;
	ctx->usr1++;
	io_loop_stop(ctx->ioloop);
}

static void sigusr2_cb(void *context)
{
	struct signal_ctx *ctx = context;
	ctx->usr2++;
	io_loop_stop(ctx->ioloop);
}

static void raise_usr1_cb(void *context ATTR_UNUSED)
{
	raise(SIGUSR1);
}

static void test_signals(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct signal_ctx ctx = { .ioloop = ioloop };
	struct guard guard;

	/* Delivered through the loop, not asynchronously (the default
	   action would kill the test). */
	io_loop_add_signal(ioloop, SIGUSR1, sigusr1_cb, &ctx);
	raise(SIGUSR1);
	test_assert_int(ctx.usr1, 0);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.usr1, 1);

	/* Raised from inside the loop. */
	(void)io_loop_defer(ioloop, raise_usr1_cb, NULL);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.usr1, 2);

	/* A second signal added later; the first still works. */
	io_loop_add_signal(ioloop, SIGUSR2, sigusr2_cb, &ctx);
	raise(SIGUSR2);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.usr2, 1);
	raise(SIGUSR1);
	guard_start(&guard, ioloop);
	io_loop_run(ioloop);
	guard_end(&guard);
	test_assert_int(ctx.usr1, 3);
	test_assert_int(ctx.usr2, 1);

	/* The signals are blocked for the process, and the child reset
	   unblocks them. */
	sigset_t mask;
	test_assert(sigprocmask(SIG_BLOCK, NULL, &mask) == 0);
	test_assert(sigismember(&mask, SIGUSR1) == 1);
	io_loop_reset_signals_for_child();
	test_assert(sigprocmask(SIG_BLOCK, NULL, &mask) == 0);
	test_assert(sigismember(&mask, SIGUSR1) == 0);
	test_assert(sigismember(&mask, SIGUSR2) == 0);
	io_loop_destroy(&ioloop);
}

/* ---- io_loop_stop ---- */

struct stop_ctx {
	struct ioloop *ioloop;
	unsigned int calls;
};

static void stop_and_count_cb(void *context)
{
	struct stop_ctx *ctx = context;
	ctx->calls++;
	io_loop_stop(ctx->ioloop);
}

static void test_io_loop_stop(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct stop_ctx ctx = { .ioloop = ioloop };

	/* The stopping callback ends the run; a timer due at the same time
	   waits for the next run. */
	(void)timeout_add(ioloop, 10, stop_and_count_cb, &ctx);
	(void)timeout_add(ioloop, 10, stop_and_count_cb, &ctx);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls, 1);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls, 2);

	/* Stopping before run does not prevent the next run. */
	io_loop_stop(ioloop);
	(void)timeout_add(ioloop, 10, stop_and_count_cb, &ctx);
	io_loop_run(ioloop);
	test_assert_int(ctx.calls, 3);
	io_loop_destroy(&ioloop);
}

TEST_MAIN(
	TEST(test_io_read),
	TEST(test_io_remove_self),
	TEST(test_io_remove_other),
	TEST(test_io_read_write_same_fd),
	TEST(test_io_remove_after_close),
	TEST(test_timeout_order),
	TEST(test_timeout_reset),
	TEST(test_defer_runs_first),
	TEST(test_defer_no_starvation),
	TEST(test_defer_from_io),
	TEST(test_signals),
	TEST(test_io_loop_stop),
)
