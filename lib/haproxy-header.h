#ifndef HAPROXY_HEADER_H
#define HAPROXY_HEADER_H
/* The PROXY protocol header a load balancer (HAProxy, a Kubernetes
   ingress) writes before a connection's own bytes, so the server learns
   the client's address: version 1 (one text line) and version 2 (binary).
   From HAProxy's proxy-protocol.txt. Pure parsing, no I/O; unit-tested.

   The caller reads the connection's first bytes and calls
   haproxy_header_parse() on everything read so far. While the answer is
   MORE, every byte given is part of the header (a header is a prefix of
   the stream), so a reader that must not consume the client's own bytes
   (a TLS hello follows at once) can peek, parse, and then read exactly
   the header's size once it is DONE. */

/* INET6_ADDRSTRLEN: 46 bytes with the NUL. */
#define HAPROXY_IP_STR_MAX 46
/* A version 1 line: at most 107 bytes with its CRLF (the spec's bound
   for "PROXY TCP6" with the longest addresses and ports). */
#define HAPROXY_V1_MAX_SIZE 107
/* A version 2 header: 16 fixed bytes and the address block (at most 216
   bytes, AF_UNIX) plus TLVs. The TLVs load balancers send (ALPN,
   authority, unique id of at most 128 bytes, SSL version, cipher and
   client CN) fit in well under this; a bigger header is refused rather
   than buffered. */
#define HAPROXY_V2_MAX_SIZE 2048
#define HAPROXY_HEADER_MAX_SIZE HAPROXY_V2_MAX_SIZE

enum haproxy_parse_result {
	HAPROXY_PARSE_ERROR = -1,
	HAPROXY_PARSE_MORE = 0,     /* all bytes so far are header, need more */
	HAPROXY_PARSE_DONE = 1,
};

struct haproxy_header {
	size_t size;               /* bytes of the header */
	unsigned int version;      /* 1 or 2 */
	/* false: v1 UNKNOWN, v2 LOCAL, or a v2 family without IP addresses
	   (UNSPEC, UNIX): the connection's own addresses stay */
	bool have_addresses;
	char src_ip[HAPROXY_IP_STR_MAX];   /* the client */
	char dst_ip[HAPROXY_IP_STR_MAX];   /* the address it connected to */
	unsigned int src_port, dst_port;
	/* v2 PP2_TYPE_SSL with PP2_CLIENT_SSL: the client reached the proxy
	   over TLS, which the proxy terminated */
	bool client_ssl;
};

/* Parse the header at the start of data[0..size). DONE: *hdr_r is
   filled (hdr_r->size bytes were the header; bytes after it are the
   connection's own). MORE: data is a valid start, nothing written.
   ERROR: not a PROXY header, malformed, or over its maximum size;
   *error_r is a static text (no client bytes), safe to log. Addresses
   are written in their canonical text form (an IPv4-mapped IPv6
   address as IPv4). */
enum haproxy_parse_result
haproxy_header_parse(const unsigned char *data, size_t size,
		     struct haproxy_header *hdr_r, const char **error_r);

#endif
