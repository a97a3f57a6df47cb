/* Unit tests for lib/haproxy-header.c: PROXY protocol v1 and v2. */
#include "test-common.h"
#include "haproxy-header.h"

static const unsigned char sig[12] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a
};

static enum haproxy_parse_result parse_str(const char *s,
					   struct haproxy_header *hdr)
{
	const char *error = NULL;

	return haproxy_header_parse((const unsigned char *)s, strlen(s), hdr,
				    &error);
}

/* Every prefix of a valid header is MORE, the whole is DONE. */
static bool prefixes_are_more(const unsigned char *data, size_t size)
{
	struct haproxy_header hdr;
	const char *error;

	for (size_t i = 0; i < size; i++) {
		if (haproxy_header_parse(data, i, &hdr, &error) !=
		    HAPROXY_PARSE_MORE)
			return false;
	}
	return true;
}

static void test_v1_tcp4(void)
{
	struct haproxy_header hdr;
	const char *line = "PROXY TCP4 192.0.2.7 198.51.100.1 56324 143\r\nA1 NOOP\r\n";

	test_assert(parse_str(line, &hdr) == HAPROXY_PARSE_DONE);
	test_assert_int(hdr.version, 1);
	test_assert_int(hdr.size, strlen(line) - strlen("A1 NOOP\r\n"));
	test_assert(hdr.have_addresses);
	test_assert_str(hdr.src_ip, "192.0.2.7");
	test_assert_str(hdr.dst_ip, "198.51.100.1");
	test_assert_int(hdr.src_port, 56324);
	test_assert_int(hdr.dst_port, 143);
	test_assert(prefixes_are_more((const unsigned char *)line, hdr.size));
}

static void test_v1_tcp6_unknown(void)
{
	struct haproxy_header hdr;

	test_assert(parse_str("PROXY TCP6 2001:DB8::0:1 2001:db8::2 1 65535\r\n",
			      &hdr) == HAPROXY_PARSE_DONE);
	test_assert_str(hdr.src_ip, "2001:db8::1");
	test_assert_str(hdr.dst_ip, "2001:db8::2");
	test_assert_int(hdr.dst_port, 65535);
	/* an IPv4-mapped address is shown as IPv4, as accept() shows it */
	test_assert(parse_str("PROXY TCP6 ::ffff:192.0.2.9 ::1 1 2\r\n",
			      &hdr) == HAPROXY_PARSE_DONE);
	test_assert_str(hdr.src_ip, "192.0.2.9");
	test_assert(parse_str("PROXY UNKNOWN\r\n", &hdr) == HAPROXY_PARSE_DONE);
	test_assert(!hdr.have_addresses);
	test_assert_int(hdr.size, 15);
	test_assert(parse_str("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n", &hdr) ==
		    HAPROXY_PARSE_DONE);
	test_assert(!hdr.have_addresses);
	/* the longest line of the spec: 107 bytes (UNKNOWN, then the
	   longest TCP6 addresses and ports) */
	const char *longest = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
	test_assert_int(strlen(longest), HAPROXY_V1_MAX_SIZE);
	test_assert(parse_str(longest, &hdr) == HAPROXY_PARSE_DONE);
	test_assert(parse_str("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", &hdr) ==
		HAPROXY_PARSE_DONE);
}

static void test_v1_bad(void)
{
	static const char *const bad[] = {
		"GET / HTTP/1.0\r\n",
		"A1 LOGIN x y\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 56324 143\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 56324 143 1\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 56324\r\n",
		"PROXY TCP4 192.0.2.7  198.51.100.1 56324 143\r\n",
		"PROXY TCP4 2001:db8::1 198.51.100.1 56324 143\r\n",
		"PROXY TCP6 192.0.2.7 2001:db8::1 56324 143\r\n",
		"PROXY TCP4 192.0.2.256 198.51.100.1 1 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 65536 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 012 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 -1 2\r\n",
		"PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",
		"PROXY tcp4 192.0.2.7 198.51.100.1 1 2\r\n",
		"PROXY TCP4 192.0.2.7\r198.51.100.1 1 2\r\n",
		"PROXY TCP4 192.0.2.7\t198.51.100.1 1 2\r\n",
		"PROXY \r\n",
		"PROXY\r\n",
	};
	struct haproxy_header hdr;

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		if (parse_str(bad[i], &hdr) != HAPROXY_PARSE_ERROR) {
			test_current = bad[i];
			test_assert(!"accepted a bad v1 line");
		}
	}
	/* garbage is refused at its first byte, without waiting */
	test_assert(parse_str("X", &hdr) == HAPROXY_PARSE_ERROR);
	test_assert(parse_str("PROX", &hdr) == HAPROXY_PARSE_MORE);
	/* no CRLF within 107 bytes */
	char big[200];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "PROXY UNKNOWN ", 14);
	big[HAPROXY_V1_MAX_SIZE - 1] = '\0';
	test_assert(parse_str(big, &hdr) == HAPROXY_PARSE_MORE);
	big[HAPROXY_V1_MAX_SIZE - 1] = 'a';
	big[HAPROXY_V1_MAX_SIZE] = '\0';
	test_assert(parse_str(big, &hdr) == HAPROXY_PARSE_ERROR);
}

/* A v2 header: command, family byte, then body of len bytes. */
static size_t v2_build(unsigned char *out, unsigned char ver_cmd,
		       unsigned char fam, const unsigned char *body, size_t len)
{
	memcpy(out, sig, sizeof(sig));
	out[12] = ver_cmd;
	out[13] = fam;
	out[14] = (unsigned char)(len >> 8);
	out[15] = (unsigned char)len;
	if (len > 0)
		memcpy(out + 16, body, len);
	return 16 + len;
}

static void test_v2_inet(void)
{
	static const unsigned char body[] = {
		192, 0, 2, 7, 198, 51, 100, 1, 0xdc, 0x04, 0x03, 0xe1,
		/* NOOP TLV of 2 bytes, SSL TLV: client SSL, verify 0 */
		0x04, 0x00, 0x02, 0xaa, 0xbb,
		0x20, 0x00, 0x05, 0x01, 0, 0, 0, 0,
	};
	unsigned char buf[256];
	struct haproxy_header hdr;
	const char *error;

	size_t n = v2_build(buf, 0x21, 0x11, body, sizeof(body));
	memcpy(buf + n, "\x16\x03\x01", 3);   /* a TLS hello follows */
	test_assert(haproxy_header_parse(buf, n + 3, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert_int(hdr.version, 2);
	test_assert_int(hdr.size, n);
	test_assert(hdr.have_addresses);
	test_assert_str(hdr.src_ip, "192.0.2.7");
	test_assert_str(hdr.dst_ip, "198.51.100.1");
	test_assert_int(hdr.src_port, 0xdc04);
	test_assert_int(hdr.dst_port, 993);
	test_assert(hdr.client_ssl);
	test_assert(prefixes_are_more(buf, n));
}

static void test_v2_inet6_local_unspec(void)
{
	unsigned char body[36 + 3], buf[256];
	struct haproxy_header hdr;
	const char *error;

	memset(body, 0, sizeof(body));
	body[0] = 0x20; body[1] = 0x01; body[2] = 0x0d; body[3] = 0xb8;
	body[15] = 0x05;
	body[31] = 0x01;                           /* ::1 */
	body[32] = 0x12; body[33] = 0x34; body[35] = 143;
	/* a TLV of length 0 */
	body[36] = 0x05;
	size_t n = v2_build(buf, 0x21, 0x21, body, sizeof(body));
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert_str(hdr.src_ip, "2001:db8::5");
	test_assert_str(hdr.dst_ip, "::1");
	test_assert_int(hdr.src_port, 0x1234);
	test_assert(!hdr.client_ssl);

	/* LOCAL: the connection's addresses, whatever the block says */
	n = v2_build(buf, 0x20, 0x11, body, 12);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert(!hdr.have_addresses);
	test_assert_int(hdr.size, 28);
	n = v2_build(buf, 0x20, 0x00, NULL, 0);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert_int(hdr.size, 16);
	/* PROXY with UNSPEC: accepted, no addresses */
	n = v2_build(buf, 0x21, 0x00, NULL, 0);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert(!hdr.have_addresses);
}

static void test_v2_bad(void)
{
	unsigned char body[64], buf[HAPROXY_V2_MAX_SIZE + 64];
	struct haproxy_header hdr;
	const char *error;

	memset(body, 1, sizeof(body));
	/* version 1 in the v2 format, command 2, family 4, DGRAM */
	static const unsigned char bad_vc[][2] = {
		{ 0x11, 0x11 }, { 0x22, 0x11 }, { 0x21, 0x41 }, { 0x21, 0x12 },
		{ 0x21, 0x10 },
	};
	for (unsigned int i = 0; i < N_ELEMENTS(bad_vc); i++) {
		size_t n = v2_build(buf, bad_vc[i][0], bad_vc[i][1], body, 12);
		test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
			    HAPROXY_PARSE_ERROR);
	}
	/* address block shorter than its family needs */
	size_t n = v2_build(buf, 0x21, 0x11, body, 11);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	n = v2_build(buf, 0x21, 0x21, body, 35);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	/* a TLV running past the header, a truncated TLV, a short SSL TLV */
	body[12] = 0x04; body[13] = 0x00; body[14] = 0x09;
	n = v2_build(buf, 0x21, 0x11, body, 12 + 3 + 8);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	n = v2_build(buf, 0x21, 0x11, body, 12 + 2);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	body[12] = 0x20; body[13] = 0x00; body[14] = 0x04;
	n = v2_build(buf, 0x21, 0x11, body, 12 + 3 + 4);
	test_assert(haproxy_header_parse(buf, n, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	/* over the maximum: refused from the fixed part alone */
	memcpy(buf, sig, sizeof(sig));
	buf[12] = 0x21; buf[13] = 0x11;
	size_t len = HAPROXY_V2_MAX_SIZE - 16 + 1;
	buf[14] = (unsigned char)(len >> 8); buf[15] = (unsigned char)len;
	test_assert(haproxy_header_parse(buf, 16, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	/* the largest allowed: TLVs up to the maximum */
	len = HAPROXY_V2_MAX_SIZE - 16;
	buf[14] = (unsigned char)(len >> 8); buf[15] = (unsigned char)len;
	memcpy(buf + 16, "\xc0\x00\x02\x07\xc6\x33\x64\x01\x00\x01\x00\x02", 12);
	size_t tlv = len - 12 - 3;
	buf[28] = 0xe0; buf[29] = (unsigned char)(tlv >> 8);
	buf[30] = (unsigned char)tlv;
	memset(buf + 31, 0, tlv);
	test_assert(haproxy_header_parse(buf, HAPROXY_V2_MAX_SIZE, &hdr, &error) ==
		    HAPROXY_PARSE_DONE);
	test_assert_str(hdr.src_ip, "192.0.2.7");
	/* a broken signature */
	memcpy(buf, sig, sizeof(sig));
	buf[5] = 'x';
	test_assert(haproxy_header_parse(buf, 6, &hdr, &error) ==
		    HAPROXY_PARSE_ERROR);
	test_assert(haproxy_header_parse(buf, 5, &hdr, &error) ==
		    HAPROXY_PARSE_MORE);
}

TEST_MAIN(TEST(test_v1_tcp4), TEST(test_v1_tcp6_unknown), TEST(test_v1_bad),
	  TEST(test_v2_inet), TEST(test_v2_inet6_local_unspec),
	  TEST(test_v2_bad))
