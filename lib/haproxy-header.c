/* PROXY protocol v1 and v2 header parsing (haproxy-header.h). */
#include "lib.h"
#include "haproxy-header.h"

#include <arpa/inet.h>
#include <sys/socket.h>

static const unsigned char v2_signature[12] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a
};
#define V1_PREFIX "PROXY "
#define V2_FIXED_SIZE 16
/* v2 address blocks: two addresses and two ports */
#define V2_INET_SIZE (4 + 4 + 2 + 2)
#define V2_INET6_SIZE (16 + 16 + 2 + 2)
#define V2_UNIX_SIZE (108 + 108)
/* TLV types (proxy-protocol.txt 2.2) */
#define PP2_TYPE_SSL 0x20
#define PP2_CLIENT_SSL 0x01
/* PP2_TYPE_SSL's value: client (1 byte), verify (4 bytes), sub-TLVs */
#define PP2_SSL_FIXED_SIZE 5
/* The fields of a v1 line: PROXY, protocol, 2 addresses, 2 ports. */
#define V1_MAX_FIELDS 6

/* Text form of a binary address; an IPv4-mapped IPv6 address as IPv4. */
static void addr_to_str(int family, const unsigned char *addr,
			char str_r[HAPROXY_IP_STR_MAX])
{
	static const unsigned char mapped[12] =
		{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (family == AF_INET6 && memcmp(addr, mapped, sizeof(mapped)) == 0) {
		family = AF_INET;
		addr += sizeof(mapped);
	}
	if (inet_ntop(family, addr, str_r, HAPROXY_IP_STR_MAX) == NULL)
		i_unreached();
}

/* ---- version 1 */

/* A decimal port, 0..65535, no sign, no leading zero. */
static int v1_port_parse(const char *str, size_t len, unsigned int *port_r)
{
	unsigned int port = 0;

	if (len == 0 || len > 5 || (len > 1 && str[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (str[i] < '0' || str[i] > '9')
			return -1;
		port = port * 10 + (unsigned int)(str[i] - '0');
	}
	if (port > 65535)
		return -1;
	*port_r = port;
	return 0;
}

static int v1_addr_parse(int family, const char *str, size_t len,
			 char str_r[HAPROXY_IP_STR_MAX])
{
	char tmp[HAPROXY_IP_STR_MAX];
	unsigned char addr[16];

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, str, len);
	tmp[len] = '\0';
	if (inet_pton(family, tmp, addr) != 1)
		return -1;
	addr_to_str(family, addr, str_r);
	return 0;
}

/* line[0..len) is the line without its CRLF: no control bytes in it. */
static int v1_line_parse(const char *line, size_t len,
			 struct haproxy_header *hdr, const char **error_r)
{
	const char *field[V1_MAX_FIELDS];
	size_t field_len[V1_MAX_FIELDS];
	unsigned int count = 0;
	size_t start = 0;

	/* Single spaces separate fields; UNKNOWN may be followed by
	   anything, which is ignored. */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && line[i] != ' ')
			continue;
		if (count == V1_MAX_FIELDS || i == start) {
			*error_r = "PROXY v1: malformed line";
			return -1;
		}
		field[count] = line + start;
		field_len[count++] = i - start;
		start = i + 1;
		if (count == 2 && field_len[1] == 7 &&
		    memcmp(field[1], "UNKNOWN", 7) == 0) {
			hdr->have_addresses = false;
			return 0;
		}
	}
	int family;
	if (count >= 2 && field_len[1] == 4 && memcmp(field[1], "TCP4", 4) == 0)
		family = AF_INET;
	else if (count >= 2 && field_len[1] == 4 &&
		 memcmp(field[1], "TCP6", 4) == 0)
		family = AF_INET6;
	else {
		*error_r = "PROXY v1: unknown protocol";
		return -1;
	}
	if (count != V1_MAX_FIELDS ||
	    v1_addr_parse(family, field[2], field_len[2], hdr->src_ip) < 0 ||
	    v1_addr_parse(family, field[3], field_len[3], hdr->dst_ip) < 0 ||
	    v1_port_parse(field[4], field_len[4], &hdr->src_port) < 0 ||
	    v1_port_parse(field[5], field_len[5], &hdr->dst_port) < 0) {
		*error_r = "PROXY v1: bad address or port";
		return -1;
	}
	hdr->have_addresses = true;
	return 0;
}

static enum haproxy_parse_result
v1_parse(const unsigned char *data, size_t size, struct haproxy_header *hdr_r,
	 const char **error_r)
{
	size_t limit = MIN(size, HAPROXY_V1_MAX_SIZE);
	size_t i;

	for (i = 0; i < limit; i++) {
		if (data[i] == '\n')
			break;
		/* CR only right before the LF; no other control byte */
		if ((data[i] < 0x20 && data[i] != '\r') || data[i] >= 0x7f ||
		    (data[i] == '\r' && i + 1 < size && data[i + 1] != '\n')) {
			*error_r = "PROXY v1: invalid byte in line";
			return HAPROXY_PARSE_ERROR;
		}
	}
	if (i == limit) {
		if (size < HAPROXY_V1_MAX_SIZE)
			return HAPROXY_PARSE_MORE;
		*error_r = "PROXY v1: line too long";
		return HAPROXY_PARSE_ERROR;
	}
	if (i == 0 || data[i - 1] != '\r') {
		*error_r = "PROXY v1: line does not end with CRLF";
		return HAPROXY_PARSE_ERROR;
	}
	struct haproxy_header hdr;
	memset(&hdr, 0, sizeof(hdr));
	if (v1_line_parse((const char *)data, i - 1, &hdr, error_r) < 0)
		return HAPROXY_PARSE_ERROR;
	hdr.version = 1;
	hdr.size = i + 1;
	*hdr_r = hdr;
	return HAPROXY_PARSE_DONE;
}

/* ---- version 2 */

static uint16_t get_be16(const unsigned char *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

/* The TLVs after the address block: each is bounded by the header,
   unknown types are skipped; PP2_TYPE_SSL is noted. */
static int v2_tlvs_parse(const unsigned char *p, size_t len,
			 struct haproxy_header *hdr, const char **error_r)
{
	while (len > 0) {
		if (len < 3) {
			*error_r = "PROXY v2: truncated TLV";
			return -1;
		}
		size_t vlen = get_be16(p + 1);
		if (vlen > len - 3) {
			*error_r = "PROXY v2: TLV longer than the header";
			return -1;
		}
		if (p[0] == PP2_TYPE_SSL) {
			if (vlen < PP2_SSL_FIXED_SIZE) {
				*error_r = "PROXY v2: short SSL TLV";
				return -1;
			}
			hdr->client_ssl = (p[3] & PP2_CLIENT_SSL) != 0;
		}
		p += 3 + vlen;
		len -= 3 + vlen;
	}
	return 0;
}

/* The address block of a PROXY command; returns its size or -1. */
static int v2_addresses_parse(unsigned char fam, const unsigned char *p,
			      size_t len, struct haproxy_header *hdr,
			      const char **error_r)
{
	unsigned int family = fam >> 4, transport = fam & 0x0f;
	size_t addr_len, need;

	switch (family) {
	case 0x0:               /* AF_UNSPEC: whatever follows is ignored */
		hdr->have_addresses = false;
		return (int)len;
	case 0x1: addr_len = 4; need = V2_INET_SIZE; break;
	case 0x2: addr_len = 16; need = V2_INET6_SIZE; break;
	case 0x3:               /* AF_UNIX: no IP to use */
		if (len < V2_UNIX_SIZE) {
			*error_r = "PROXY v2: short address block";
			return -1;
		}
		hdr->have_addresses = false;
		return V2_UNIX_SIZE;
	default:
		*error_r = "PROXY v2: unknown address family";
		return -1;
	}
	/* 0x1 STREAM: we serve TCP only; a DGRAM or unspecified transport
	   with IP addresses is not a connection we could be behind. */
	if (transport != 0x1) {
		*error_r = "PROXY v2: not a stream transport";
		return -1;
	}
	if (len < need) {
		*error_r = "PROXY v2: short address block";
		return -1;
	}
	int af = family == 0x1 ? AF_INET : AF_INET6;
	addr_to_str(af, p, hdr->src_ip);
	addr_to_str(af, p + addr_len, hdr->dst_ip);
	hdr->src_port = get_be16(p + 2 * addr_len);
	hdr->dst_port = get_be16(p + 2 * addr_len + 2);
	hdr->have_addresses = true;
	return (int)need;
}

static enum haproxy_parse_result
v2_parse(const unsigned char *data, size_t size, struct haproxy_header *hdr_r,
	 const char **error_r)
{
	if (size < V2_FIXED_SIZE)
		return HAPROXY_PARSE_MORE;
	unsigned int version = data[12] >> 4, command = data[12] & 0x0f;
	size_t len = get_be16(data + 14);

	if (version != 2) {
		*error_r = "PROXY v2: unknown version";
		return HAPROXY_PARSE_ERROR;
	}
	if (command > 1) {      /* 0x0 LOCAL, 0x1 PROXY */
		*error_r = "PROXY v2: unknown command";
		return HAPROXY_PARSE_ERROR;
	}
	if (len > HAPROXY_V2_MAX_SIZE - V2_FIXED_SIZE) {
		*error_r = "PROXY v2: header too long";
		return HAPROXY_PARSE_ERROR;
	}
	if (size < V2_FIXED_SIZE + len)
		return HAPROXY_PARSE_MORE;

	struct haproxy_header hdr;
	memset(&hdr, 0, sizeof(hdr));
	const unsigned char *p = data + V2_FIXED_SIZE;
	int used = 0;
	/* LOCAL (a health check of the proxy itself): the connection's
	   own addresses; its address block, if any, is ignored. */
	if (command == 1) {
		used = v2_addresses_parse(data[13], p, len, &hdr, error_r);
		if (used < 0)
			return HAPROXY_PARSE_ERROR;
	} else {
		hdr.have_addresses = false;
		used = (int)len;
	}
	if (v2_tlvs_parse(p + used, len - (size_t)used, &hdr, error_r) < 0)
		return HAPROXY_PARSE_ERROR;
	hdr.version = 2;
	hdr.size = V2_FIXED_SIZE + len;
	*hdr_r = hdr;
	return HAPROXY_PARSE_DONE;
}

enum haproxy_parse_result
haproxy_header_parse(const unsigned char *data, size_t size,
		     struct haproxy_header *hdr_r, const char **error_r)
{
	size_t n;

	if (size == 0)
		return HAPROXY_PARSE_MORE;
	if (data[0] == v2_signature[0]) {
		n = MIN(size, sizeof(v2_signature));
		if (memcmp(data, v2_signature, n) != 0) {
			*error_r = "not a PROXY protocol header";
			return HAPROXY_PARSE_ERROR;
		}
		if (size < sizeof(v2_signature))
			return HAPROXY_PARSE_MORE;
		return v2_parse(data, size, hdr_r, error_r);
	}
	n = MIN(size, strlen(V1_PREFIX));
	if (memcmp(data, V1_PREFIX, n) != 0) {
		*error_r = "not a PROXY protocol header";
		return HAPROXY_PARSE_ERROR;
	}
	if (size < strlen(V1_PREFIX))
		return HAPROXY_PARSE_MORE;
	return v1_parse(data, size, hdr_r, error_r);
}
