/* Unit tests for imap/imap-compress.c: the COMPRESS=DEFLATE transport
   under the client's streams, against zlib on the peer's end of a
   socketpair. */
#include "test-common.h"
#include "iostream.h"
#include "imap-compress.h"

#include <signal.h>
#include <sys/socket.h>
#include <zlib.h>

/* Kills the program if a loop below never finishes. */
#define TEST_ALARM_SECS 60
/* Many times the socket buffer, so writes must wait for the peer. */
#define TEST_BIG_SIZE (600 * 1024)
/* Room for everything the peer inflates. */
#define TEST_PEER_MAX (2 * 1024 * 1024)

struct peer {
	int fd;
	z_stream in, out;
	unsigned char *data;     /* inflated so far */
	size_t size;
};

static void make_socketpair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0) {
		perror("socketpair");
		exit(2);
	}
}

static void peer_init(struct peer *peer, int fd)
{
	memset(peer, 0, sizeof(*peer));
	peer->fd = fd;
	peer->data = i_malloc(TEST_PEER_MAX);
	if (inflateInit2(&peer->in, -15) != Z_OK ||
	    deflateInit2(&peer->out, 6, Z_DEFLATED, -15, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		exit(2);
}

static void peer_deinit(struct peer *peer)
{
	(void)inflateEnd(&peer->in);
	(void)deflateEnd(&peer->out);
	free(peer->data);
}

/* Read and inflate what the socket has now. */
static void peer_read(struct peer *peer)
{
	unsigned char buf[4096];
	ssize_t ret;

	while ((ret = read(peer->fd, buf, sizeof(buf))) > 0) {
		peer->in.next_in = buf;
		peer->in.avail_in = (uInt)ret;
		while (peer->in.avail_in > 0) {
			peer->in.next_out = peer->data + peer->size;
			peer->in.avail_out = (uInt)(TEST_PEER_MAX - peer->size);
			int zret = inflate(&peer->in, Z_SYNC_FLUSH);
			test_assert(zret == Z_OK || zret == Z_BUF_ERROR);
			peer->size = (size_t)(peer->in.next_out - peer->data);
			if (zret != Z_OK)
				break;
		}
	}
}

/* Deflate data with a sync flush into out; returns the compressed size. */
static size_t peer_deflate(struct peer *peer, const void *data, size_t size,
			   unsigned char *out, size_t out_max)
{
	peer->out.next_in = (unsigned char *)data;
	peer->out.avail_in = (uInt)size;
	peer->out.next_out = out;
	peer->out.avail_out = (uInt)out_max;
	test_assert(deflate(&peer->out, Z_SYNC_FLUSH) == Z_OK);
	test_assert(peer->out.avail_in == 0 && peer->out.avail_out > 0);
	return out_max - peer->out.avail_out;
}

static void fill_text(unsigned char *buf, size_t size, unsigned int seed)
{
	/* text-like but not trivially compressible */
	for (size_t i = 0; i < size; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (i % 70 == 69) ? '\n' : (unsigned char)
			('a' + (seed >> 16) % 26);
	}
}

/* Each batch the output stream writes is complete on the wire once the
   stream says it is flushed (Z_SYNC_FLUSH): the peer inflates all of it. */
static void test_compress_output_sync_flush(void)
{
	int sv[2];
	struct peer peer;
	struct stream_transport t;

	alarm(TEST_ALARM_SECS);
	make_socketpair(sv);
	peer_init(&peer, sv[1]);
	struct ioloop *ioloop = io_loop_create();
	struct imap_compress *c = imap_compress_create(sv[0], false, NULL, 0);
	imap_compress_get_transport(c, &t);
	struct ostream *out = o_stream_create_transport(ioloop, &t, 65536);
	o_stream_set_io_fd(out, sv[0]);

	test_assert(o_stream_send_str(out, "* 1 EXISTS\r\n") == 0);
	test_assert(o_stream_get_buffer_used(out) == 0);
	peer_read(&peer);
	test_assert(peer.size == 12 && memcmp(peer.data, "* 1 EXISTS\r\n", 12) == 0);
	o_stream_cork(out);
	test_assert(o_stream_send_str(out, "a OK ") == 0);
	test_assert(o_stream_send_str(out, "done\r\n") == 0);
	o_stream_uncork(out);
	test_assert(o_stream_get_buffer_used(out) == 0);
	peer_read(&peer);
	test_assert(peer.size == 23 &&
		    memcmp(peer.data + 12, "a OK done\r\n", 11) == 0);

	o_stream_destroy(&out);
	imap_compress_destroy(&c);
	test_assert(c == NULL);
	io_loop_destroy(&ioloop);
	peer_deinit(&peer);
	close(sv[0]);
	close(sv[1]);
}

/* A socket that takes less than a batch: the stream's buffer keeps at
   least one byte (and its write io) until the compressed bytes are out,
   and everything arrives in order. */
static void test_compress_output_blocking(void)
{
	int sv[2], sndbuf = 4096;
	struct peer peer;
	struct stream_transport t;
	unsigned char *text = i_malloc(TEST_BIG_SIZE);

	alarm(TEST_ALARM_SECS);
	make_socketpair(sv);
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	peer_init(&peer, sv[1]);
	fill_text(text, TEST_BIG_SIZE, 1);
	struct ioloop *ioloop = io_loop_create();
	struct imap_compress *c = imap_compress_create(sv[0], false, NULL, 0);
	imap_compress_get_transport(c, &t);
	struct ostream *out = o_stream_create_transport(ioloop, &t,
							TEST_BIG_SIZE);
	o_stream_set_io_fd(out, sv[0]);

	o_stream_cork(out);
	size_t sent = 0;
	while (sent < TEST_BIG_SIZE) {
		size_t n = MIN((size_t)7777, TEST_BIG_SIZE - sent);
		test_assert(o_stream_send(out, text + sent, n) == 0);
		sent += n;
	}
	o_stream_uncork(out);
	test_assert(o_stream_get_buffer_used(out) > 0);
	unsigned int rounds = 0;
	while (o_stream_flush(out) == 0) {
		test_assert(o_stream_get_buffer_used(out) > 0);
		peer_read(&peer);
		rounds++;
	}
	test_assert(!o_stream_is_failed(out));
	test_assert(o_stream_get_buffer_used(out) == 0);
	peer_read(&peer);
	test_assert(rounds > 1);
	test_assert(peer.size == TEST_BIG_SIZE &&
		    memcmp(peer.data, text, TEST_BIG_SIZE) == 0);
	/* compressed: the peer received fewer bytes than the text */
	test_assert(peer.in.total_in < TEST_BIG_SIZE);

	o_stream_destroy(&out);
	imap_compress_destroy(&c);
	io_loop_destroy(&ioloop);
	peer_deinit(&peer);
	free(text);
	close(sv[0]);
	close(sv[1]);
}

/* Input: the bytes read before the switch come first; a small burst that
   inflates to more than one read leaves input pending that the socket
   does not announce; bad data is a protocol error, not a crash. */
static void test_compress_input(void)
{
	int sv[2];
	struct peer peer;
	struct stream_transport t;
	unsigned char comp[8192], *big = i_malloc(TEST_BIG_SIZE);
	size_t size;
	const unsigned char *data;

	alarm(TEST_ALARM_SECS);
	make_socketpair(sv);
	peer_init(&peer, sv[1]);
	size_t n1 = peer_deflate(&peer, "b NOOP\r\n", 8, comp, sizeof(comp));
	struct imap_compress *c = imap_compress_create(sv[0], false, comp, n1);
	imap_compress_get_transport(c, &t);
	struct istream *in = i_stream_create_transport(&t, 1024 * 1024);
	test_assert(imap_compress_input_pending(c));
	test_assert_int(i_stream_read(in), 8);
	data = i_stream_get_data(in, &size);
	test_assert(size == 8 && memcmp(data, "b NOOP\r\n", 8) == 0);
	i_stream_skip(in, size);
	test_assert_int(i_stream_read(in), 0);
	test_assert(!imap_compress_input_pending(c));

	/* 600 KiB of one letter deflate to about a KiB */
	memset(big, 'x', TEST_BIG_SIZE);
	size_t n2 = peer_deflate(&peer, big, TEST_BIG_SIZE, comp, sizeof(comp));
	test_assert(n2 < sizeof(comp));
	test_assert(write(sv[1], comp, n2) == (ssize_t)n2);
	size_t total = 0;
	ssize_t ret;
	while ((ret = i_stream_read(in)) > 0) {
		total += (size_t)ret;
		data = i_stream_get_data(in, &size);
		test_assert(memchr(data, 0, size) == NULL);
		i_stream_skip(in, size);
		if (total < TEST_BIG_SIZE)
			test_assert(imap_compress_input_pending(c));
	}
	test_assert_int(total, TEST_BIG_SIZE);
	test_assert(!imap_compress_input_pending(c));

	/* not deflate data: EPROTO, the stream fails */
	test_assert(write(sv[1], "\xff\xff\xff\xff", 4) == 4);
	test_assert_int(i_stream_read(in), -1);
	test_assert(i_stream_is_eof(in));
	test_assert_str(i_stream_get_error(in), strerror(EPROTO));

	i_stream_destroy(&in);
	imap_compress_destroy(&c);
	peer_deinit(&peer);
	free(big);
	close(sv[0]);
	close(sv[1]);
}

/* The client's EOF is the stream's EOF. */
static void test_compress_input_eof(void)
{
	int sv[2];
	struct stream_transport t;

	make_socketpair(sv);
	struct imap_compress *c = imap_compress_create(sv[0], false, NULL, 0);
	imap_compress_get_transport(c, &t);
	struct istream *in = i_stream_create_transport(&t, 4096);
	close(sv[1]);
	test_assert_int(i_stream_read(in), -1);
	test_assert_str(i_stream_get_error(in), "EOF");
	i_stream_destroy(&in);
	imap_compress_destroy(&c);
	close(sv[0]);
}

TEST_MAIN(TEST(test_compress_output_sync_flush),
	  TEST(test_compress_output_blocking),
	  TEST(test_compress_input),
	  TEST(test_compress_input_eof))
