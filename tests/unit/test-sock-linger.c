/* Unit tests for lib/sock-linger.c: a lingering socket sends FIN at
   once, reads and drops what the peer still sends, and is closed when
   the peer closes or SOCK_LINGER_MAX_BYTES were dropped; a full set
   closes its oldest socket. Stream socketpairs stand in for TCP. */
#include "test-common.h"
#include "ioloop.h"
#include "sock-linger.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

/* A test that has not finished after this long is stuck (the linger's
   own timeout is longer). */
#define TEST_GUARD_MSECS 3000

struct state {
	struct ioloop *ioloop;
	unsigned int done_count;
	bool guard_fired;
};

static void linger_done(void *context)
{
	struct state *st = context;

	st->done_count++;
	io_loop_stop(st->ioloop);
}

static void guard_expired(void *context)
{
	struct state *st = context;

	st->guard_fired = true;
	io_loop_stop(st->ioloop);
}

static void make_pair(int fds[2])
{
	test_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
	test_assert(fd_set_nonblock(fds[0], true) == 0);
}

static void run_once(struct state *st)
{
	struct timeout *to = timeout_add(st->ioloop, TEST_GUARD_MSECS,
					 guard_expired, st);
	io_loop_run(st->ioloop);
	if (!st->guard_fired)
		timeout_remove(&to);
}

/* The peer reads our last reply, then EOF, while it may still write;
   its close ends the linger. */
static void test_linger_drains_until_peer_closes(void)
{
	struct state st = { .ioloop = io_loop_create() };
	struct sock_linger_set *set =
		sock_linger_set_create(st.ioloop, 4, linger_done, &st);
	int fds[2];
	char buf[64];

	make_pair(fds);
	test_assert(write(fds[0], "* BYE bye\r\n", 11) == 11);
	sock_linger_close(set, &fds[0]);
	test_assert(fds[0] == -1);
	test_assert_int(sock_linger_set_count(set), 1);
	/* still writable by the peer: its bytes are read and dropped */
	test_assert(write(fds[1], "more input", 10) == 10);
	test_assert(read(fds[1], buf, sizeof(buf)) == 11);
	test_assert(read(fds[1], buf, sizeof(buf)) == 0);   /* our FIN */
	close(fds[1]);
	run_once(&st);
	test_assert(!st.guard_fired);
	test_assert_int(st.done_count, 1);
	test_assert_int(sock_linger_set_count(set), 0);
	sock_linger_set_destroy(&set);
	io_loop_destroy(&st.ioloop);
}

/* A peer that never stops sending is cut off after the byte bound. */
static void test_linger_byte_bound(void)
{
	struct state st = { .ioloop = io_loop_create() };
	struct sock_linger_set *set =
		sock_linger_set_create(st.ioloop, 4, linger_done, &st);
	static char chunk[64 * 1024];
	int fds[2];
	size_t sent = 0;

	signal(SIGPIPE, SIG_IGN);   /* a write after the close: EPIPE */
	make_pair(fds);
	test_assert(fd_set_nonblock(fds[1], true) == 0);
	sock_linger_close(set, &fds[0]);
	while (st.done_count == 0 && sent < 4 * SOCK_LINGER_MAX_BYTES) {
		ssize_t ret = write(fds[1], chunk, sizeof(chunk));
		if (ret > 0)
			sent += (size_t)ret;
		else if (ret < 0 && errno != EAGAIN)
			break;   /* closed by the linger: EPIPE */
		st.guard_fired = false;
		struct timeout *to = timeout_add(st.ioloop, 10, guard_expired, &st);
		io_loop_run(st.ioloop);
		if (!st.guard_fired)
			timeout_remove(&to);
	}
	test_assert_int(st.done_count, 1);
	test_assert(sent >= SOCK_LINGER_MAX_BYTES);
	test_assert(sent < 4 * SOCK_LINGER_MAX_BYTES);
	close(fds[1]);
	sock_linger_set_destroy(&set);
	io_loop_destroy(&st.ioloop);
}

/* A full set closes its oldest socket at once; destroy closes the rest. */
static void test_linger_set_full(void)
{
	struct state st = { .ioloop = io_loop_create() };
	struct sock_linger_set *set =
		sock_linger_set_create(st.ioloop, 2, linger_done, &st);
	int pairs[3][2];
	char buf[8];

	signal(SIGPIPE, SIG_IGN);
	for (unsigned int i = 0; i < 3; i++) {
		make_pair(pairs[i]);
		sock_linger_close(set, &pairs[i][0]);
	}
	test_assert_int(sock_linger_set_count(set), 2);
	/* the first one is gone entirely: writing to it fails */
	test_assert(write(pairs[0][1], "x", 1) < 0 && errno == EPIPE);
	test_assert(write(pairs[2][1], "x", 1) == 1);
	sock_linger_set_destroy(&set);
	test_assert(read(pairs[1][1], buf, sizeof(buf)) == 0);
	test_assert(write(pairs[1][1], "x", 1) < 0 && errno == EPIPE);
	test_assert_int(st.done_count, 0);
	for (unsigned int i = 0; i < 3; i++)
		close(pairs[i][1]);
	io_loop_destroy(&st.ioloop);
}

TEST_MAIN(TEST(test_linger_drains_until_peer_closes),
	  TEST(test_linger_byte_bound),
	  TEST(test_linger_set_full))
