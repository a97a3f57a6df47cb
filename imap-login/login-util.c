/* Socket address and base64 helpers (pure). */
#include "lib.h"
#include "login-util.h"

#include <arpa/inet.h>

static bool ipv6_is_v4mapped(const struct in6_addr *a)
{
	static const unsigned char prefix[12] =
		{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return memcmp(a->s6_addr, prefix, sizeof(prefix)) == 0;
}

bool login_addr_is_loopback(const struct sockaddr *sa, socklen_t len)
{
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
			return true;
		return ipv6_is_v4mapped(&sin6->sin6_addr) &&
			sin6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

int login_addr_to_str(const struct sockaddr *sa, socklen_t len,
		      char ip_r[LOGIN_IP_STR_MAX], unsigned int *port_r)
{
	char ip[LOGIN_IP_STR_MAX];
	unsigned int port;

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		if (inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)) == NULL)
			return -1;
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		const void *addr = &sin6->sin6_addr;
		int family = AF_INET6;
		if (ipv6_is_v4mapped(&sin6->sin6_addr)) {
			addr = &sin6->sin6_addr.s6_addr[12];
			family = AF_INET;
		}
		if (inet_ntop(family, addr, ip, sizeof(ip)) == NULL)
			return -1;
		port = ntohs(sin6->sin6_port);
	} else {
		return -1;
	}
	memcpy(ip_r, ip, sizeof(ip));
	*port_r = port;
	return 0;
}

static bool base64_char_is_valid(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '+' || c == '/';
}

bool login_base64_is_valid(const char *str, size_t max_size)
{
	size_t len = strlen(str), pad = 0;

	if (len % 4 != 0)
		return false;
	if (len > 0 && str[len - 1] == '=')
		pad++;
	if (len > 1 && str[len - 2] == '=')
		pad++;
	for (size_t i = 0; i < len - pad; i++) {
		if (!base64_char_is_valid(str[i]))
			return false;
	}
	return len / 4 * 3 - pad <= max_size;
}
