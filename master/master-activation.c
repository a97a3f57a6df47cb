/* Socket activation (master-activation.h), without libsystemd: the
   protocol is two environment variables and a range of fds. */
#include "master-common.h"
#include "master-activation.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

/* sd_listen_fds(3): the first passed fd. */
#define ACTIVATION_FD_FIRST 3

struct activation_fd {
	int fd;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

/* Process-wide: there is one manager and one set of sockets per master. */
static struct activation_fd activation_fds[MASTER_ACTIVATION_MAX_FDS];
static unsigned int activation_count, activation_taken;

static bool parse_uint(const char *s, unsigned long *r)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*r = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0';
}

/* A listening stream socket, with its bound address; false otherwise. */
static bool activation_fd_check(int fd, struct activation_fd *a_r)
{
	int type = 0, listening = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_STREAM)
		return false;
	len = sizeof(listening);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 ||
	    listening == 0)
		return false;
	a_r->fd = fd;
	a_r->addr_len = sizeof(a_r->addr);
	if (getsockname(fd, (struct sockaddr *)&a_r->addr, &a_r->addr_len) < 0)
		return false;
	return true;
}

void master_activation_init(void)
{
	unsigned long pid, count;
	bool ours = parse_uint(getenv("LISTEN_PID"), &pid) &&
		pid == (unsigned long)getpid() &&
		parse_uint(getenv("LISTEN_FDS"), &count);

	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
	if (!ours || count == 0)
		return;
	if (count > MASTER_ACTIVATION_MAX_FDS)
		i_fatal("LISTEN_FDS=%lu: at most %u sockets can be passed",
			count, MASTER_ACTIVATION_MAX_FDS);
	for (unsigned int i = 0; i < count; i++) {
		int fd = ACTIVATION_FD_FIRST + (int)i;
		struct activation_fd *a = &activation_fds[activation_count];
		if (!activation_fd_check(fd, a)) {
			i_warning("socket activation: fd %d is not a listening "
				  "stream socket; ignored", fd);
			(void)close(fd);
			continue;
		}
		/* children accept non-blocking, like on master's own sockets */
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
		    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			i_fatal("socket activation: fcntl(%d) failed: %s", fd,
				strerror(errno));
		activation_count++;
	}
}

static int activation_take(unsigned int i)
{
	int fd = activation_fds[i].fd;

	activation_fds[i].fd = -1;
	activation_taken++;
	return fd;
}

static bool inet_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port &&
			x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port == y->sin6_port &&
			memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

int master_activation_take_inet(const char *address, unsigned int port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char port_str[16];

	if (activation_taken == activation_count)
		return -1;
	if (strcmp(address, "*") == 0)
		address = "0.0.0.0";
	snprintf(port_str, sizeof(port_str), "%u", port);
	if (getaddrinfo(address, port_str, &hints, &ai) != 0)
		return -1;   /* listener_open() reports the bad address */
	int fd = -1;
	for (unsigned int i = 0; i < activation_count && fd < 0; i++) {
		if (activation_fds[i].fd >= 0 &&
		    inet_equal((const struct sockaddr *)&activation_fds[i].addr,
			       ai->ai_addr))
			fd = activation_take(i);
	}
	freeaddrinfo(ai);
	return fd;
}

int master_activation_take_unix(const char *path)
{
	for (unsigned int i = 0; i < activation_count; i++) {
		const struct sockaddr_un *sun = (const void *)&activation_fds[i].addr;
		if (activation_fds[i].fd < 0 || sun->sun_family != AF_UNIX ||
		    activation_fds[i].addr_len <= offsetof(struct sockaddr_un, sun_path))
			continue;
		size_t len = activation_fds[i].addr_len -
			offsetof(struct sockaddr_un, sun_path);
		if (strnlen(sun->sun_path, len) == strlen(path) &&
		    strncmp(sun->sun_path, path, len) == 0)
			return activation_take(i);
	}
	return -1;
}

void master_activation_close_unused(void)
{
	for (unsigned int i = 0; i < activation_count; i++) {
		if (activation_fds[i].fd < 0)
			continue;
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "";
		const struct sockaddr *sa = (const void *)&activation_fds[i].addr;
		if (sa->sa_family == AF_UNIX) {
			const struct sockaddr_un *sun = (const void *)sa;
			snprintf(host, sizeof(host), "%.*s",
				 (int)sizeof(sun->sun_path), sun->sun_path);
		} else {
			(void)getnameinfo(sa, activation_fds[i].addr_len,
					  host, sizeof(host), serv, sizeof(serv),
					  NI_NUMERICHOST | NI_NUMERICSERV);
		}
		i_warning("socket activation: no listener is configured for "
			  "%s%s%s; closing it", host, serv[0] != '\0' ? ":" : "",
			  serv);
		(void)close(activation_fds[i].fd);
		activation_fds[i].fd = -1;
	}
}

unsigned int master_activation_count(void)
{
	return activation_taken;
}
