#ifndef LOGIN_UTIL_H
#define LOGIN_UTIL_H
/* Small pure helpers of imap-login: socket addresses and base64 checks.
   No I/O; unit-tested. */

#include <sys/socket.h>
#include <netinet/in.h>

/* INET6_ADDRSTRLEN (46) includes the NUL. */
#define LOGIN_IP_STR_MAX 46

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. Dovecot treats such
   connections as secured: the traffic never leaves the host. */
bool login_addr_is_loopback(const struct sockaddr *sa, socklen_t len);

/* Text form of an AF_INET/AF_INET6 address (an IPv4-mapped IPv6 address
   is shown as IPv4, as admins grep for it) and its port. Returns 0, or -1
   for another family or a short length; outputs untouched then. */
int login_addr_to_str(const struct sockaddr *sa, socklen_t len,
		      char ip_r[LOGIN_IP_STR_MAX], unsigned int *port_r);

/* True if str is valid base64 (RFC 4648, padded) that decodes to at most
   max_size bytes. The empty string is valid (zero bytes). */
bool login_base64_is_valid(const char *str, size_t max_size);

#endif
