#ifndef IOSTREAM_H
#define IOSTREAM_H
/* Buffered, non-blocking input and output streams over a transport (a
   plain fd now; TLS plugs in as another transport). Both buffers have a
   hard maximum; "full" is reported as its own result. */

#include "ioloop.h"

struct stream_transport {
	/* Like read(2)/write(2) on a non-blocking fd: >0 bytes, 0 EOF (read
	   only), -1 with errno (EAGAIN when it would block). */
	ssize_t (*read)(void *ctx, void *buf, size_t size);
	ssize_t (*write)(void *ctx, const void *buf, size_t size);
	void *ctx;
};

/* ---- input ---- */
struct istream;

/* The stream does not own fd. max_buffer_size caps buffered bytes. */
struct istream *i_stream_create_fd(int fd, size_t max_buffer_size);
struct istream *i_stream_create_transport(const struct stream_transport *t,
					  size_t max_buffer_size);
void i_stream_destroy(struct istream **stream);
/* Add bytes to the front of the buffer as if they had been read (bytes a
   previous process read before handing the fd over). -1 if too many. */
int i_stream_prepend(struct istream *stream, const void *data, size_t size);

/* Read what the transport has. Returns bytes read (>0), 0 if nothing is
   available now, -1 on EOF or error (see i_stream_get_error), -2 if the
   buffer is full. */
ssize_t i_stream_read(struct istream *stream);
/* Buffered bytes not yet skipped. */
const unsigned char *i_stream_get_data(struct istream *stream, size_t *size_r);
void i_stream_skip(struct istream *stream, size_t count);
/* Returns the next complete line without its LF (and CR before it),
   NUL-terminated, valid until the next read/skip; NULL if none is buffered. */
char *i_stream_next_line(struct istream *stream);
bool i_stream_is_eof(struct istream *stream);
/* "EOF", or strerror of the failure. */
const char *i_stream_get_error(struct istream *stream);

/* Each byte the stream reads from its transport from now on is added to
   *counter (metrics: a process's bytes in). counter must outlive the
   stream; several streams may share one. NULL stops counting. */
void i_stream_set_bytes_counter(struct istream *stream, uint64_t *counter);

/* ---- output ---- */
struct ostream;
typedef void o_stream_flush_callback_t(void *context);

/* The stream does not own fd. Writes are buffered up to max_buffer_size. */
struct ostream *o_stream_create_fd(struct ioloop *ioloop, int fd,
				   size_t max_buffer_size);
struct ostream *o_stream_create_transport(struct ioloop *ioloop,
					  const struct stream_transport *t,
					  size_t max_buffer_size);
/* The fd whose writability the stream waits for when the transport
   would block (a TLS transport over that socket). Without one, a
   transport stream must never see EAGAIN. */
void o_stream_set_io_fd(struct ostream *stream, int fd);
void o_stream_destroy(struct ostream **stream);
/* Each byte the transport took from now on is added to *counter, as
   i_stream_set_bytes_counter() does for input. */
void o_stream_set_bytes_counter(struct ostream *stream, uint64_t *counter);

/* Buffer data; tries to write at once unless corked. Returns 0, or -1 if
   the stream failed or the buffer would exceed its maximum (nothing is
   buffered then). */
int o_stream_send(struct ostream *stream, const void *data, size_t size);
int o_stream_send_str(struct ostream *stream, const char *str);
int o_stream_printf(struct ostream *stream, const char *fmt, ...) ATTR_FORMAT(2, 3);
/* Room for up to size bytes at the end of the buffer, for a caller that
   produces data in place (a file read straight into it, without a copy);
   NULL if the stream failed or the buffer cannot take size more bytes.
   The pointer is valid until the next call on the stream. Follow with
   o_stream_commit(), which sends the bytes like o_stream_send(). */
unsigned char *o_stream_reserve(struct ostream *stream, size_t size);
/* Add size (<= the reserved size) bytes written at o_stream_reserve()'s
   pointer. Returns 0, or -1 if the stream failed. */
int o_stream_commit(struct ostream *stream, size_t size);
/* While corked, sends are only buffered; uncork flushes. */
void o_stream_cork(struct ostream *stream);
void o_stream_uncork(struct ostream *stream);
/* Write as much as possible: 1 when all is written, 0 when some remains
   (a write io is armed and flushing continues from the loop), -1 on
   error. */
int o_stream_flush(struct ostream *stream);
size_t o_stream_get_buffer_used(struct ostream *stream);
size_t o_stream_get_buffer_avail(struct ostream *stream);
/* Drop what is buffered and not written yet (a reply that must not go
   out, before a disconnect); the write io, if armed, stops. */
void o_stream_clear(struct ostream *stream);
/* Called from the loop each time the buffer drained completely after
   being non-empty, or on a write error; used to continue sending a big
   answer in slices. */
void o_stream_set_flush_callback(struct ostream *stream,
				 o_stream_flush_callback_t *callback,
				 void *context);
bool o_stream_is_failed(struct ostream *stream);
const char *o_stream_get_error(struct ostream *stream);

#endif
