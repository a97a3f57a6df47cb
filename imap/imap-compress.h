#ifndef IMAP_COMPRESS_H
#define IMAP_COMPRESS_H
/* COMPRESS=DEFLATE (RFC 4978): a stream transport that inflates what the
   client sends and deflates what we send, over the connection's plaintext
   socket (imap-login's relay socketpair, or the kTLS socket itself: the
   imap process never sees TLS records, so deflate sits right on the fd).

   Raw deflate (no zlib or gzip header), windowBits 15 both ways. Every
   write() of the transport ends with Z_SYNC_FLUSH, so each batch of
   responses the output stream writes is complete on the wire for the
   client to decode.

   Memory per connection is fixed when compression starts and never grows:
   zlib's deflate state with windowBits 15 and memLevel 8 (about 256 KiB +
   6 KiB), inflate's 32 KiB window (+ 7 KiB), and the two buffers below.

   write() contract (as for a TLS write): after it returned -1 with EAGAIN
   or a short count, the next call must pass the same bytes again from
   where the short count ended (the output stream's buffer does this). It
   reports the last byte of a batch as written only when all compressed
   output is on the socket, so the output stream's buffer stays non-empty,
   and its write io armed, while compressed bytes wait. */

#include "iostream.h"

/* Compressed bytes read from the socket per read(): one read of the
   socket, as the plain stream does. */
#define IMAP_COMPRESS_INPUT_CHUNK 16384
/* Compressed output held before it is written: one deflate call's worth;
   a full buffer is written before deflate runs again. */
#define IMAP_COMPRESS_OUTPUT_MAX 16384
/* zlib level: 6 is zlib's default, a balance of CPU against bytes. */
#define IMAP_COMPRESS_LEVEL 6

struct imap_compress;

/* Start compressing on fd (not owned; ktls: read it with ktls_read()).
   leftover: bytes already read from fd after the COMPRESS command line
   (compressed: the client sent them after our OK, bounded by the input
   stream's maximum); they are inflated first. */
struct imap_compress *imap_compress_create(int fd, bool ktls,
					   const void *leftover,
					   size_t leftover_size);
void imap_compress_destroy(struct imap_compress **compress);
/* The transport to create the connection's streams over. */
void imap_compress_get_transport(struct imap_compress *compress,
				 struct stream_transport *transport_r);
/* True if compressed input is buffered (or inflate holds output) that a
   read() would return without the socket becoming readable: the caller
   must read again without waiting for the fd. */
bool imap_compress_input_pending(const struct imap_compress *compress);

#endif
