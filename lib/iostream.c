/* Buffered non-blocking streams. Input keeps one contiguous buffer that
   is compacted before reading; output keeps one buffer and a write io that
   is armed only while data is pending. */
#include "lib.h"
#include "iostream.h"
#include "buffer.h"

#include <sys/socket.h>

/* Bytes asked from the transport per read(): a whole TCP segment train. */
#define ISTREAM_READ_CHUNK 16384

static ssize_t fd_read(void *ctx, void *buf, size_t size)
{
	return read((int)(intptr_t)ctx, buf, size);
}

static ssize_t fd_write(void *ctx, const void *buf, size_t size)
{
	/* send() with MSG_NOSIGNAL: a peer that closed must not kill us with
	   SIGPIPE; fall back to write() for non-sockets. */
	int fd = (int)(intptr_t)ctx;
	ssize_t ret = send(fd, buf, size, MSG_NOSIGNAL);
	if (ret < 0 && errno == ENOTSOCK)
		ret = write(fd, buf, size);
	return ret;
}

/* ---- input ---- */

struct istream {
	struct stream_transport transport;
	buffer_t buf;
	size_t skip;          /* consumed bytes at the start of buf */
	bool eof;
	int error;            /* errno of a failed read, 0 = none */
	bool line_pending;    /* next_line returned a line not yet skipped */
	size_t line_size;
	uint64_t *bytes_counter;  /* i_stream_set_bytes_counter(), or NULL */
};

struct istream *i_stream_create_transport(const struct stream_transport *t,
					  size_t max_buffer_size)
{
	struct istream *stream = i_malloc(sizeof(*stream));
	stream->transport = *t;
	buffer_init(&stream->buf, max_buffer_size);
	return stream;
}

struct istream *i_stream_create_fd(int fd, size_t max_buffer_size)
{
	struct stream_transport t = {
		.read = fd_read, .write = fd_write, .ctx = (void *)(intptr_t)fd
	};
	return i_stream_create_transport(&t, max_buffer_size);
}

void i_stream_destroy(struct istream **_stream)
{
	struct istream *stream = *_stream;
	if (stream == NULL)
		return;
	*_stream = NULL;
	buffer_free(&stream->buf);
	free(stream);
}

static void i_stream_compact(struct istream *stream)
{
	if (stream->skip > 0) {
		buffer_delete_head(&stream->buf, stream->skip);
		stream->skip = 0;
	}
}

int i_stream_prepend(struct istream *stream, const void *data, size_t size)
{
	i_stream_compact(stream);
	if (size > stream->buf.max_size - stream->buf.used)
		return -1;
	size_t old_used = stream->buf.used;
	if (buffer_reserve(&stream->buf, size) == NULL)
		return -1;
	memmove(stream->buf.data + size, stream->buf.data, old_used);
	memcpy(stream->buf.data, data, size);
	buffer_commit(&stream->buf, size);
	return 0;
}

ssize_t i_stream_read(struct istream *stream)
{
	if (stream->eof || stream->error != 0)
		return -1;
	i_stream_compact(stream);
	size_t avail = stream->buf.max_size - stream->buf.used;
	if (avail == 0)
		return -2;
	size_t want = MIN(avail, (size_t)ISTREAM_READ_CHUNK);
	char *dest = buffer_reserve(&stream->buf, want);
	i_assert(dest != NULL);
	ssize_t ret;
	do {
		ret = stream->transport.read(stream->transport.ctx, dest, want);
	} while (ret < 0 && errno == EINTR);
	if (ret > 0) {
		buffer_commit(&stream->buf, (size_t)ret);
		if (stream->bytes_counter != NULL)
			*stream->bytes_counter += (uint64_t)ret;
		return ret;
	}
	if (ret == 0) {
		stream->eof = true;
		return -1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	stream->error = errno;
	return -1;
}

const unsigned char *i_stream_get_data(struct istream *stream, size_t *size_r)
{
	*size_r = stream->buf.used - stream->skip;
	return (const unsigned char *)stream->buf.data + stream->skip;
}

void i_stream_skip(struct istream *stream, size_t count)
{
	i_assert(count <= stream->buf.used - stream->skip);
	stream->skip += count;
}

char *i_stream_next_line(struct istream *stream)
{
	char *start = stream->buf.data + stream->skip;
	size_t size = stream->buf.used - stream->skip;
	char *lf = memchr(start, '\n', size);
	if (lf == NULL)
		return NULL;
	stream->skip += (size_t)(lf - start) + 1;
	*lf = '\0';
	if (lf > start && lf[-1] == '\r')
		lf[-1] = '\0';
	return start;
}

bool i_stream_is_eof(struct istream *stream)
{
	return stream->eof || stream->error != 0;
}

const char *i_stream_get_error(struct istream *stream)
{
	if (stream->error != 0)
		return strerror(stream->error);
	return stream->eof ? "EOF" : "no error";
}

/* ---- output ---- */

struct ostream {
	struct ioloop *ioloop;
	struct stream_transport transport;
	int fd;               /* for the write io; -1 if the transport has none */
	buffer_t buf;
	struct io *io;
	unsigned int cork;
	int error;
	o_stream_flush_callback_t *flush_callback;
	void *flush_context;
	uint64_t *bytes_counter;  /* o_stream_set_bytes_counter(), or NULL */
};

struct ostream *o_stream_create_transport(struct ioloop *ioloop,
					  const struct stream_transport *t,
					  size_t max_buffer_size)
{
	struct ostream *stream = i_malloc(sizeof(*stream));
	stream->ioloop = ioloop;
	stream->transport = *t;
	stream->fd = -1;
	buffer_init(&stream->buf, max_buffer_size);
	return stream;
}

struct ostream *o_stream_create_fd(struct ioloop *ioloop, int fd,
				   size_t max_buffer_size)
{
	struct stream_transport t = {
		.read = fd_read, .write = fd_write, .ctx = (void *)(intptr_t)fd
	};
	struct ostream *stream = o_stream_create_transport(ioloop, &t, max_buffer_size);
	stream->fd = fd;
	return stream;
}

void i_stream_set_bytes_counter(struct istream *stream, uint64_t *counter)
{
	stream->bytes_counter = counter;
}

void o_stream_set_bytes_counter(struct ostream *stream, uint64_t *counter)
{
	stream->bytes_counter = counter;
}

void o_stream_set_io_fd(struct ostream *stream, int fd)
{
	i_assert(stream->io == NULL);
	stream->fd = fd;
}

void o_stream_destroy(struct ostream **_stream)
{
	struct ostream *stream = *_stream;
	if (stream == NULL)
		return;
	*_stream = NULL;
	io_remove(&stream->io);
	buffer_free(&stream->buf);
	free(stream);
}

static int o_stream_write_buffer(struct ostream *stream)
{
	while (stream->buf.used > 0) {
		ssize_t ret = stream->transport.write(stream->transport.ctx,
						      stream->buf.data, stream->buf.used);
		if (ret > 0) {
			buffer_delete_head(&stream->buf, (size_t)ret);
			if (stream->bytes_counter != NULL)
				*stream->bytes_counter += (uint64_t)ret;
			continue;
		}
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		stream->error = ret < 0 ? errno : EPIPE;
		buffer_reset(&stream->buf);
		return -1;
	}
	return 1;
}

static void o_stream_io_callback(void *context)
{
	struct ostream *stream = context;
	int ret = o_stream_write_buffer(stream);
	if (ret == 0)
		return;
	io_remove(&stream->io);
	/* Drained or failed: let the owner continue (or notice the error). */
	if (stream->flush_callback != NULL)
		stream->flush_callback(stream->flush_context);
}

int o_stream_flush(struct ostream *stream)
{
	if (stream->error != 0)
		return -1;
	int ret = o_stream_write_buffer(stream);
	if (ret == 0 && stream->io == NULL) {
		i_assert(stream->fd >= 0);
		stream->io = io_add(stream->ioloop, stream->fd, IO_WRITE,
				    o_stream_io_callback, stream);
	} else if (ret != 0) {
		io_remove(&stream->io);
	}
	return ret;
}

int o_stream_send(struct ostream *stream, const void *data, size_t size)
{
	if (stream->error != 0)
		return -1;
	if (buffer_append(&stream->buf, data, size) < 0)
		return -1;
	if (stream->cork == 0 && stream->io == NULL)
		(void)o_stream_flush(stream);
	return stream->error != 0 ? -1 : 0;
}

int o_stream_send_str(struct ostream *stream, const char *str)
{
	return o_stream_send(stream, str, strlen(str));
}

int o_stream_printf(struct ostream *stream, const char *fmt, ...)
{
	va_list args;
	if (stream->error != 0)
		return -1;
	va_start(args, fmt);
	int ret = buffer_vprintf(&stream->buf, fmt, args);
	va_end(args);
	if (ret < 0)
		return -1;
	if (stream->cork == 0 && stream->io == NULL)
		(void)o_stream_flush(stream);
	return stream->error != 0 ? -1 : 0;
}

unsigned char *o_stream_reserve(struct ostream *stream, size_t size)
{
	if (stream->error != 0)
		return NULL;
	return (unsigned char *)buffer_reserve(&stream->buf, size);
}

int o_stream_commit(struct ostream *stream, size_t size)
{
	if (stream->error != 0)
		return -1;
	buffer_commit(&stream->buf, size);
	if (stream->cork == 0 && stream->io == NULL)
		(void)o_stream_flush(stream);
	return stream->error != 0 ? -1 : 0;
}

void o_stream_cork(struct ostream *stream)
{
	stream->cork++;
}

void o_stream_uncork(struct ostream *stream)
{
	i_assert(stream->cork > 0);
	if (--stream->cork == 0 && stream->io == NULL)
		(void)o_stream_flush(stream);
}

size_t o_stream_get_buffer_used(struct ostream *stream)
{
	return stream->buf.used;
}

void o_stream_clear(struct ostream *stream)
{
	buffer_reset(&stream->buf);
	io_remove(&stream->io);
}

size_t o_stream_get_buffer_avail(struct ostream *stream)
{
	return stream->buf.max_size - stream->buf.used;
}

void o_stream_set_flush_callback(struct ostream *stream,
				 o_stream_flush_callback_t *callback,
				 void *context)
{
	stream->flush_callback = callback;
	stream->flush_context = context;
}

bool o_stream_is_failed(struct ostream *stream)
{
	return stream->error != 0;
}

const char *o_stream_get_error(struct ostream *stream)
{
	return stream->error != 0 ? strerror(stream->error) : "no error";
}
