/* libFuzzer target for the PROXY protocol header parser
   (lib/haproxy-header.c), which imap-login runs on the first bytes of
   every connection to a haproxy = yes listener. Built and run by
   tests/fuzz/run.sh.

   Checked besides ASan/UBSan: a DONE header is no longer than the input
   and its maximum, its addresses are valid text addresses, and parsing
   only its bytes gives the same header; every shorter prefix of it is
   MORE, which is what lets imap-login consume all bytes of a MORE
   answer without ever taking a byte past the header. */

#include "lib.h"
#include "haproxy-header.h"

#include <arpa/inet.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

static bool ip_valid(const char *ip)
{
	unsigned char addr[16];

	check(memchr(ip, '\0', HAPROXY_IP_STR_MAX) != NULL, "ip NUL");
	return inet_pton(AF_INET, ip, addr) == 1 ||
		inet_pton(AF_INET6, ip, addr) == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct haproxy_header hdr, again;
	const char *error = NULL;

	enum haproxy_parse_result res =
		haproxy_header_parse(data, size, &hdr, &error);
	if (res == HAPROXY_PARSE_ERROR) {
		check(error != NULL, "error text");
		return 0;
	}
	if (res == HAPROXY_PARSE_MORE) {
		check(size < HAPROXY_HEADER_MAX_SIZE, "MORE past the maximum");
		return 0;
	}
	check(hdr.size > 0 && hdr.size <= size &&
	      hdr.size <= HAPROXY_HEADER_MAX_SIZE, "header size");
	check(hdr.version == 1 || hdr.version == 2, "version");
	if (hdr.have_addresses) {
		check(ip_valid(hdr.src_ip) && ip_valid(hdr.dst_ip), "addresses");
		check(hdr.src_port <= 65535 && hdr.dst_port <= 65535, "ports");
	}
	check(haproxy_header_parse(data, hdr.size, &again, &error) ==
	      HAPROXY_PARSE_DONE && again.size == hdr.size &&
	      again.have_addresses == hdr.have_addresses &&
	      strcmp(again.src_ip, hdr.src_ip) == 0 &&
	      strcmp(again.dst_ip, hdr.dst_ip) == 0 &&
	      again.src_port == hdr.src_port && again.dst_port == hdr.dst_port &&
	      again.client_ssl == hdr.client_ssl,
	      "the header's bytes alone give the same header");
	for (size_t i = 0; i < hdr.size; i++) {
		check(haproxy_header_parse(data, i, &again, &error) ==
		      HAPROXY_PARSE_MORE, "a prefix of a header is MORE");
	}
	return 0;
}
