/* COMPRESS=DEFLATE transport (imap-compress.h). */
#include "imap-common.h"
#include "imap-compress.h"
#include "ktls.h"

#include <sys/socket.h>
#include <zlib.h>

/* Raw deflate with the largest window: a client may use any window up to
   32 KiB, so inflate must accept it; deflating with it compresses best. */
#define COMPRESS_WINDOW_BITS (-15)
#define COMPRESS_MEM_LEVEL 8

struct imap_compress {
	int fd;
	bool ktls;

	z_stream in;
	unsigned char *in_buf;      /* compressed bytes read, not inflated */
	size_t in_buf_size;
	/* the last read() filled its buffer: inflate may hold more output */
	bool in_full;
	bool in_end;                /* the client ended its deflate stream */

	z_stream out;
	unsigned char out_buf[IMAP_COMPRESS_OUTPUT_MAX];
	size_t out_pos, out_len;    /* compressed bytes not written yet */
	/* bytes at the start of the next write()'s buffer that deflate has
	   already taken but that were not reported as written */
	size_t out_ahead;
	bool out_flushed;           /* the last Z_SYNC_FLUSH completed */
};

static ssize_t compress_lower_read(struct imap_compress *c, void *buf,
				   size_t size)
{
	if (c->ktls)
		return ktls_read((void *)(intptr_t)c->fd, buf, size);
	return read(c->fd, buf, size);
}

/* Like read(2): inflated bytes, 0 at EOF, -1 with errno. */
static ssize_t compress_read(void *ctx, void *buf, size_t size)
{
	struct imap_compress *c = ctx;
	size_t produced = 0;

	c->in_full = false;
	while (produced < size && !c->in_end) {
		if (c->in.avail_in == 0) {
			if (produced > 0)
				break;
			ssize_t ret = compress_lower_read(c, c->in_buf,
							  c->in_buf_size);
			if (ret <= 0)
				return ret;
			c->in.next_in = c->in_buf;
			c->in.avail_in = (uInt)ret;
		}
		c->in.next_out = (unsigned char *)buf + produced;
		c->in.avail_out = (uInt)(size - produced);
		int zret = inflate(&c->in, Z_SYNC_FLUSH);
		produced = size - c->in.avail_out;
		if (zret == Z_STREAM_END) {
			/* RFC 4978 has no end of compression: the client is
			   done; what it sends after this is not read */
			c->in_end = true;
		} else if (zret == Z_BUF_ERROR) {
			/* no progress: needs input (loop reads) */
			if (c->in.avail_in != 0)
				break;
		} else if (zret != Z_OK) {
			i_info("COMPRESS: invalid deflate data from the client: %s",
			       c->in.msg != NULL ? c->in.msg : "error");
			errno = EPROTO;
			return -1;
		}
	}
	c->in_full = produced == size;
	if (produced == 0 && !c->in_end) {
		/* never a false EOF */
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)produced;
}

static ssize_t compress_lower_write(struct imap_compress *c)
{
	ssize_t ret = send(c->fd, c->out_buf + c->out_pos,
			   c->out_len - c->out_pos, MSG_NOSIGNAL);
	if (ret < 0 && errno == ENOTSOCK)
		ret = write(c->fd, c->out_buf + c->out_pos,
			    c->out_len - c->out_pos);
	return ret;
}

/* The socket would block with compressed bytes waiting: report what
   deflate took, but never the whole batch (see imap-compress.h). */
static ssize_t compress_write_blocked(struct imap_compress *c, size_t size)
{
	size_t report = c->out_ahead < size ? c->out_ahead :
		c->out_ahead - 1;

	c->out_ahead -= report;
	if (report == 0) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)report;
}

static ssize_t compress_write(void *ctx, const void *buf, size_t size)
{
	struct imap_compress *c = ctx;

	i_assert(size >= c->out_ahead);
	for (;;) {
		while (c->out_pos < c->out_len) {
			ssize_t ret = compress_lower_write(c);
			if (ret < 0 && errno == EINTR)
				continue;
			if (ret < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return compress_write_blocked(c, size);
			if (ret <= 0)
				return -1;
			c->out_pos += (size_t)ret;
		}
		c->out_pos = c->out_len = 0;
		if (c->out_ahead == size && c->out_flushed) {
			c->out_ahead = 0;
			return (ssize_t)size;
		}
		uInt give = (uInt)MIN(size - c->out_ahead, (size_t)UINT_MAX);
		c->out.next_in = (unsigned char *)buf + c->out_ahead;
		c->out.avail_in = give;
		c->out.next_out = c->out_buf;
		c->out.avail_out = sizeof(c->out_buf);
		int zret = deflate(&c->out, Z_SYNC_FLUSH);
		/* Z_BUF_ERROR only when there was nothing to do */
		i_assert(zret == Z_OK || zret == Z_BUF_ERROR);
		c->out_ahead += give - c->out.avail_in;
		c->out_len = sizeof(c->out_buf) - c->out.avail_out;
		c->out_flushed = c->out_ahead == size && c->out.avail_out != 0;
	}
}

struct imap_compress *imap_compress_create(int fd, bool ktls,
					   const void *leftover,
					   size_t leftover_size)
{
	struct imap_compress *c = i_malloc(sizeof(*c));

	c->fd = fd;
	c->ktls = ktls;
	c->out_flushed = true;
	c->in_buf_size = MAX(leftover_size, (size_t)IMAP_COMPRESS_INPUT_CHUNK);
	c->in_buf = i_malloc(c->in_buf_size);
	if (leftover_size > 0)
		memcpy(c->in_buf, leftover, leftover_size);
	c->in.next_in = c->in_buf;
	c->in.avail_in = (uInt)leftover_size;
	if (inflateInit2(&c->in, COMPRESS_WINDOW_BITS) != Z_OK)
		i_fatal("inflateInit2() failed");
	if (deflateInit2(&c->out, IMAP_COMPRESS_LEVEL, Z_DEFLATED,
			 COMPRESS_WINDOW_BITS, COMPRESS_MEM_LEVEL,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		i_fatal("deflateInit2() failed");
	return c;
}

void imap_compress_destroy(struct imap_compress **_compress)
{
	struct imap_compress *c = *_compress;

	if (c == NULL)
		return;
	*_compress = NULL;
	(void)inflateEnd(&c->in);
	(void)deflateEnd(&c->out);
	free(c->in_buf);
	free(c);
}

void imap_compress_get_transport(struct imap_compress *compress,
				 struct stream_transport *transport_r)
{
	transport_r->read = compress_read;
	transport_r->write = compress_write;
	transport_r->ctx = compress;
}

bool imap_compress_input_pending(const struct imap_compress *compress)
{
	return !compress->in_end &&
		(compress->in.avail_in > 0 || compress->in_full);
}
