/* Unit tests for lib/iostream.c: bounded input/output streams. */
#include "test-common.h"
#include "iostream.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

/* A test that has not finished after this long is stuck: fail it. */
#define TEST_GUARD_MSECS 5000
/* Kills the whole program if a blocking call hangs outside the loop. */
#define TEST_ALARM_SECS 60
/* Bytes sent through a deliberately small socket buffer: many times
   bigger than the buffer so the stream must wait for the peer. */
#define TEST_BIG_SEND (256 * 1024)

static void make_socketpair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(2);
	}
}

static void write_str(int fd, const char *str)
{
	size_t len = strlen(str);
	if (write(fd, str, len) != (ssize_t)len) {
		perror("write");
		exit(2);
	}
}

struct guard {
	struct ioloop *ioloop;
	struct timeout *to;
};

static void guard_cb(void *context)
{
	struct guard *guard = context;
	/* The timeout removed itself before calling us. */
	guard->to = NULL;
	test_assert(!"guard timeout expired");
	io_loop_stop(guard->ioloop);
}

/* ---- input ---- */

static void test_istream_lines(void)
{
	int sv[2];
	char *line;

	alarm(TEST_ALARM_SECS);
	make_socketpair(sv);
	struct istream *input = i_stream_create_fd(sv[0], 1024);

	/* Nothing available yet. */
	test_assert_int(i_stream_read(input), 0);
	test_assert(i_stream_next_line(input) == NULL);
	test_assert(!i_stream_is_eof(input));

	write_str(sv[1], "one\r\ntwo\n\r\n\nthr");
	test_assert_int(i_stream_read(input), 15);
	test_assert_str(i_stream_next_line(input), "one");
	test_assert_str(i_stream_next_line(input), "two");
	test_assert_str(i_stream_next_line(input), "");
	test_assert_str(i_stream_next_line(input), "");
	/* A partial line stays buffered. */
	test_assert(i_stream_next_line(input) == NULL);
	size_t size;
	const unsigned char *data = i_stream_get_data(input, &size);
	test_assert_int(size, 3);
	test_assert(memcmp(data, "thr", 3) == 0);

	/* The rest of it arrives; a lone CR inside a line is kept. */
	write_str(sv[1], "ee\rx\r\nfour");
	test_assert(i_stream_read(input) > 0);
	line = i_stream_next_line(input);
	test_assert_str(line, "three\rx");
	test_assert(i_stream_next_line(input) == NULL);
	write_str(sv[1], "\n");
	test_assert_int(i_stream_read(input), 1);
	test_assert_str(i_stream_next_line(input), "four");
	data = i_stream_get_data(input, &size);
	test_assert_int(size, 0);

	/* A line may hold a NUL; it ends the C string but not the line. */
	test_assert(write(sv[1], "a\0b\nc\n", 6) == 6);
	test_assert_int(i_stream_read(input), 6);
	test_assert_str(i_stream_next_line(input), "a");
	test_assert_str(i_stream_next_line(input), "c");

	i_stream_destroy(&input);
	test_assert(input == NULL);
	close(sv[0]);
	close(sv[1]);
}

static void test_istream_full_eof(void)
{
	int sv[2];
	size_t size;
	const unsigned char *data;

	make_socketpair(sv);
	struct istream *input = i_stream_create_fd(sv[0], 16);
	write_str(sv[1], "0123456789abcdefGHIJ");
	/* Only the maximum is read; then "full" is its own result. */
	test_assert_int(i_stream_read(input), 16);
	test_assert_int(i_stream_read(input), -2);
	test_assert(!i_stream_is_eof(input));
	test_assert(i_stream_next_line(input) == NULL);
	data = i_stream_get_data(input, &size);
	test_assert(size == 16 && memcmp(data, "0123456789abcdef", 16) == 0);

	/* Skipping makes room again. */
	i_stream_skip(input, 10);
	data = i_stream_get_data(input, &size);
	test_assert(size == 6 && memcmp(data, "abcdef", 6) == 0);
	test_assert_int(i_stream_read(input), 4);
	data = i_stream_get_data(input, &size);
	test_assert(size == 10 && memcmp(data, "abcdefGHIJ", 10) == 0);
	i_stream_skip(input, 0);
	i_stream_skip(input, 10);
	data = i_stream_get_data(input, &size);
	test_assert_int(size, 0);

	/* EOF: buffered data stays readable, then -1 and "EOF". */
	write_str(sv[1], "tail");
	close(sv[1]);
	test_assert_int(i_stream_read(input), 4);
	test_assert_int(i_stream_read(input), -1);
	test_assert(i_stream_is_eof(input));
	test_assert_str(i_stream_get_error(input), "EOF");
	test_assert_int(i_stream_read(input), -1);
	data = i_stream_get_data(input, &size);
	test_assert(size == 4 && memcmp(data, "tail", 4) == 0);
	i_stream_destroy(&input);
	close(sv[0]);
}

static void test_istream_prepend(void)
{
	int sv[2];
	make_socketpair(sv);
	struct istream *input = i_stream_create_fd(sv[0], 32);

	/* Bytes another process read before the handoff come first. */
	test_assert(i_stream_prepend(input, "A1 LOGIN", 8) == 0);
	write_str(sv[1], " x y\r\nA2 NOOP\r\n");
	test_assert(i_stream_read(input) > 0);
	test_assert_str(i_stream_next_line(input), "A1 LOGIN x y");
	test_assert_str(i_stream_next_line(input), "A2 NOOP");

	/* Prepending before data that is already buffered. */
	write_str(sv[1], "rest\n");
	test_assert_int(i_stream_read(input), 5);
	test_assert(i_stream_prepend(input, "first-", 6) == 0);
	test_assert_str(i_stream_next_line(input), "first-rest");

	/* Over the maximum: refused, buffer unchanged. */
	write_str(sv[1], "0123456789");
	test_assert_int(i_stream_read(input), 10);
	char big[32];
	memset(big, 'p', sizeof(big));
	test_assert(i_stream_prepend(input, big, 23) < 0);
	size_t size;
	const unsigned char *data = i_stream_get_data(input, &size);
	test_assert(size == 10 && memcmp(data, "0123456789", 10) == 0);
	test_assert(i_stream_prepend(input, big, 22) == 0);
	data = i_stream_get_data(input, &size);
	test_assert_int(size, 32);
	test_assert(data[21] == 'p' && data[22] == '0');
	test_assert_int(i_stream_read(input), -2);
	i_stream_destroy(&input);
	close(sv[0]);
	close(sv[1]);
}

/* A transport that fails with EIO after one chunk. */
struct fail_transport {
	unsigned int reads;
};

static ssize_t fail_read(void *ctx, void *buf, size_t size)
{
	struct fail_transport *t = ctx;
	if (t->reads++ == 0) {
		size_t len = MIN(size, (size_t)6);
		memcpy(buf, "chunk\n", len);
		return (ssize_t)len;
	}
	errno = EIO;
	return -1;
}

static ssize_t fail_write(void *ctx ATTR_UNUSED, const void *buf ATTR_UNUSED,
			  size_t size ATTR_UNUSED)
{
	errno = EIO;
	return -1;
}

static void test_istream_transport_error(void)
{
	struct fail_transport ft = { 0 };
	struct stream_transport t = { fail_read, fail_write, &ft };
	struct istream *input = i_stream_create_transport(&t, 64);

	test_assert_int(i_stream_read(input), 6);
	test_assert_str(i_stream_next_line(input), "chunk");
	test_assert_int(i_stream_read(input), -1);
	test_assert(i_stream_is_eof(input));
	test_assert_str(i_stream_get_error(input), strerror(EIO));
	/* A failed stream stays failed without asking the transport again. */
	test_assert_int(i_stream_read(input), -1);
	test_assert_int(ft.reads, 2);
	i_stream_destroy(&input);
}

/* ---- output ---- */

static void test_ostream_cork(void)
{
	struct ioloop *ioloop = io_loop_create();
	int sv[2];
	char buf[64];

	make_socketpair(sv);
	struct ostream *output = o_stream_create_fd(ioloop, sv[0], 100);
	/* Uncorked: written at once. */
	test_assert(o_stream_send_str(output, "now") == 0);
	test_assert_int(o_stream_get_buffer_used(output), 0);
	test_assert_int(read(sv[1], buf, sizeof(buf)), 3);

	o_stream_cork(output);
	test_assert(o_stream_send_str(output, "a") == 0);
	test_assert(o_stream_printf(output, "%d-%s", 12, "b") == 0);
	test_assert_int(o_stream_get_buffer_used(output), 5);
	test_assert_int(o_stream_get_buffer_avail(output), 95);
	errno = 0;
	test_assert(read(sv[1], buf, sizeof(buf)) < 0 && errno == EAGAIN);

	/* Over the maximum: -1, nothing buffered, the stream still works. */
	char big[100];
	memset(big, 'z', sizeof(big));
	test_assert(o_stream_send(output, big, 96) < 0);
	test_assert_int(o_stream_get_buffer_used(output), 5);
	test_assert(o_stream_printf(output, "%096d", 0) < 0);
	test_assert_int(o_stream_get_buffer_used(output), 5);
	test_assert(!o_stream_is_failed(output));
	test_assert(o_stream_send(output, big, 95) == 0);
	test_assert_int(o_stream_get_buffer_avail(output), 0);

	/* Nested corks: only the last uncork flushes. */
	o_stream_cork(output);
	o_stream_uncork(output);
	errno = 0;
	test_assert(read(sv[1], buf, sizeof(buf)) < 0 && errno == EAGAIN);
	o_stream_uncork(output);
	test_assert_int(o_stream_get_buffer_used(output), 0);
	char all[128];
	ssize_t ret = read(sv[1], all, sizeof(all));
	test_assert_int(ret, 100);
	test_assert(ret == 100 && memcmp(all, "a12-b", 5) == 0 && all[99] == 'z');
	test_assert_int(o_stream_flush(output), 1);

	o_stream_destroy(&output);
	test_assert(output == NULL);
	close(sv[0]);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

struct drain_ctx {
	struct ioloop *ioloop;
	struct ostream *output;
	struct io *io;
	int fd;
	unsigned char *received;
	size_t received_size;
	unsigned int flush_calls;
	size_t used_at_flush;
	bool reading;
};

static void drain_check_done(struct drain_ctx *ctx)
{
	if (ctx->flush_calls > 0 && ctx->received_size == TEST_BIG_SEND)
		io_loop_stop(ctx->ioloop);
}

static void drain_flush_cb(void *context)
{
	struct drain_ctx *ctx = context;
	ctx->flush_calls++;
	ctx->used_at_flush = o_stream_get_buffer_used(ctx->output);
	drain_check_done(ctx);
}

static void drain_read_cb(void *context)
{
	struct drain_ctx *ctx = context;
	/* Small reads: the writer must come back many times. */
	ssize_t ret = read(ctx->fd, ctx->received + ctx->received_size,
			   MIN((size_t)4096, TEST_BIG_SEND - ctx->received_size));
	if (ret > 0)
		ctx->received_size += (size_t)ret;
	drain_check_done(ctx);
}

static void start_reading_cb(void *context)
{
	struct drain_ctx *ctx = context;
	ctx->reading = true;
	ctx->io = io_add(ctx->ioloop, ctx->fd, IO_READ, drain_read_cb, ctx);
}

static void test_ostream_full_socket(void)
{
	struct ioloop *ioloop = io_loop_create();
	int sv[2];
	make_socketpair(sv);
	int small = 4096;
	test_assert(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	test_assert(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0);

	struct drain_ctx ctx = { .ioloop = ioloop, .fd = sv[1] };
	ctx.received = i_malloc(TEST_BIG_SEND);
	unsigned char *data = i_malloc(TEST_BIG_SEND);
	for (size_t i = 0; i < TEST_BIG_SEND; i++)
		data[i] = (unsigned char)(i * 7 + i / 251);

	ctx.output = o_stream_create_fd(ioloop, sv[0], TEST_BIG_SEND + 10);
	o_stream_set_flush_callback(ctx.output, drain_flush_cb, &ctx);
	/* The peer does not read: most of it stays buffered. */
	test_assert(o_stream_send(ctx.output, data, TEST_BIG_SEND) == 0);
	size_t used = o_stream_get_buffer_used(ctx.output);
	test_assert(used > 0 && used < TEST_BIG_SEND);
	test_assert_int(o_stream_flush(ctx.output), 0);
	/* More data while waiting is refused past the maximum and buffers
	   nothing. */
	size_t avail = o_stream_get_buffer_avail(ctx.output);
	test_assert_int(avail, TEST_BIG_SEND + 10 - used);
	test_assert(o_stream_send(ctx.output, data, avail + 1) < 0);
	test_assert_int(o_stream_get_buffer_used(ctx.output), used);
	test_assert(!o_stream_is_failed(ctx.output));
	test_assert_int(ctx.flush_calls, 0);

	/* The peer starts reading after a while; the armed write io
	   continues and the flush callback fires once drained. */
	(void)timeout_add(ioloop, 50, start_reading_cb, &ctx);
	struct guard guard = { .ioloop = ioloop };
	guard.to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_cb, &guard);
	io_loop_run(ioloop);
	timeout_remove(&guard.to);
	test_assert(ctx.reading);
	test_assert_int(ctx.flush_calls, 1);
	test_assert_int(ctx.used_at_flush, 0);
	test_assert_int(o_stream_get_buffer_used(ctx.output), 0);
	test_assert_int(ctx.received_size, TEST_BIG_SEND);
	test_assert(memcmp(ctx.received, data, TEST_BIG_SEND) == 0);
	test_assert(!o_stream_is_failed(ctx.output));
	test_assert_int(o_stream_flush(ctx.output), 1);

	io_remove(&ctx.io);
	o_stream_destroy(&ctx.output);
	i_free(ctx.received);
	i_free(data);
	close(sv[0]);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

static void test_ostream_closed_peer(void)
{
	struct ioloop *ioloop = io_loop_create();
	int sv[2];

	/* SIGPIPE keeps its default action: if the stream raised it, this
	   test program would die here. */
	signal(SIGPIPE, SIG_DFL);
	make_socketpair(sv);
	struct ostream *output = o_stream_create_fd(ioloop, sv[0], 1024);
	close(sv[1]);
	test_assert(o_stream_send_str(output, "to nobody") < 0);
	test_assert(o_stream_is_failed(output));
	test_assert_str(o_stream_get_error(output), strerror(EPIPE));
	test_assert_int(o_stream_get_buffer_used(output), 0);
	test_assert(o_stream_send_str(output, "again") < 0);
	test_assert_int(o_stream_flush(output), -1);
	o_stream_destroy(&output);
	close(sv[0]);
	io_loop_destroy(&ioloop);
}

struct fail_ctx {
	struct ioloop *ioloop;
	struct ostream *output;
	unsigned int flush_calls;
	bool failed_at_flush;
};

static void fail_flush_cb(void *context)
{
	struct fail_ctx *ctx = context;
	ctx->flush_calls++;
	ctx->failed_at_flush = o_stream_is_failed(ctx->output);
	io_loop_stop(ctx->ioloop);
}

static void close_peer_cb(void *context)
{
	int *fd = context;
	i_close_fd(fd);
}

static void test_ostream_peer_closes_while_waiting(void)
{
	struct ioloop *ioloop = io_loop_create();
	int sv[2];
	make_socketpair(sv);
	int small = 4096;
	test_assert(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);

	struct fail_ctx ctx = { .ioloop = ioloop };
	ctx.output = o_stream_create_fd(ioloop, sv[0], TEST_BIG_SEND);
	o_stream_set_flush_callback(ctx.output, fail_flush_cb, &ctx);
	char *data = i_malloc(TEST_BIG_SEND);
	test_assert(o_stream_send(ctx.output, data, TEST_BIG_SEND) == 0);
	test_assert(o_stream_get_buffer_used(ctx.output) > 0);

	/* The write error reaches the owner through the flush callback. */
	(void)timeout_add(ioloop, 20, close_peer_cb, &sv[1]);
	struct guard guard = { .ioloop = ioloop };
	guard.to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_cb, &guard);
	io_loop_run(ioloop);
	timeout_remove(&guard.to);
	test_assert_int(ctx.flush_calls, 1);
	test_assert(ctx.failed_at_flush);
	test_assert(o_stream_send_str(ctx.output, "x") < 0);
	o_stream_destroy(&ctx.output);
	i_free(data);
	close(sv[0]);
	io_loop_destroy(&ioloop);
}

/* The byte counters (metrics): bytes from and to the transport only,
   shared by two streams, and nothing once unset. */
static void test_stream_bytes_counters(void)
{
	int sv[2];
	uint64_t in = 0, out = 0;
	char buf[64];

	alarm(TEST_ALARM_SECS);
	make_socketpair(sv);
	struct ioloop *ioloop = io_loop_create();
	struct istream *input = i_stream_create_fd(sv[0], 1024);
	struct ostream *output = o_stream_create_fd(ioloop, sv[0], 1024);
	i_stream_set_bytes_counter(input, &in);
	o_stream_set_bytes_counter(output, &out);

	write_str(sv[1], "a1 NOOP\r\n");
	test_assert_int(i_stream_read(input), 9);
	test_assert_int(in, 9);
	/* prepended bytes did not come from the transport */
	test_assert(i_stream_prepend(input, "xy", 2) == 0);
	test_assert_int(in, 9);
	/* corked: buffered, not yet written, not counted */
	o_stream_cork(output);
	test_assert(o_stream_send_str(output, "a1 OK\r\n") == 0);
	test_assert_int(out, 0);
	o_stream_uncork(output);
	test_assert_int(out, 7);
	test_assert(read(sv[1], buf, sizeof(buf)) == 7);

	/* a second stream adds to the same counter */
	struct istream *input2 = i_stream_create_fd(sv[0], 1024);
	i_stream_set_bytes_counter(input2, &in);
	write_str(sv[1], "abc");
	test_assert_int(i_stream_read(input2), 3);
	test_assert_int(in, 12);
	i_stream_set_bytes_counter(input2, NULL);
	write_str(sv[1], "def");
	test_assert_int(i_stream_read(input2), 3);
	test_assert_int(in, 12);

	i_stream_destroy(&input2);
	i_stream_destroy(&input);
	o_stream_destroy(&output);
	io_loop_destroy(&ioloop);
	close(sv[0]);
	close(sv[1]);
}

TEST_MAIN(
	TEST(test_stream_bytes_counters),
	TEST(test_istream_lines),
	TEST(test_istream_full_eof),
	TEST(test_istream_prepend),
	TEST(test_istream_transport_error),
	TEST(test_ostream_cork),
	TEST(test_ostream_full_socket),
	TEST(test_ostream_closed_peer),
	TEST(test_ostream_peer_closes_while_waiting),
)
