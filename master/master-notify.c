/* sd_notify(3) written out: the protocol is one datagram per state change
   on an AF_UNIX socket, so libsystemd is not needed for it. The address is
   parsed once at start-up and the variable unset, so that no exec'd child
   inherits the right to speak for master. */
#include "master-common.h"
#include "master-notify.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

/* The longest message we send: a status line and two fixed fields. */
#define NOTIFY_MSG_MAX 512
/* What STATUS= carries; longer text is cut. */
#define NOTIFY_STATUS_MAX 200

/* Process-wide like log.c's fd: there is one manager per master. */
static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_addr_len;
static bool notify_failed_logged;

/* name is an absolute path or, starting with '@', an abstract socket
   name (sd_notify(3)); 0 on success. */
static int notify_addr_set(const char *name)
{
	size_t len = strlen(name);

	if ((name[0] != '/' && name[0] != '@') || len < 2 ||
	    len >= sizeof(notify_addr.sun_path))
		return -1;
	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, name, len);
	if (name[0] == '@') {
		/* Abstract: a leading NUL and no terminating one. */
		notify_addr.sun_path[0] = '\0';
		notify_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	} else {
		notify_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}
	return 0;
}

void master_notify_init(void)
{
	const char *name = getenv("NOTIFY_SOCKET");

	if (name == NULL)
		return;
	if (notify_addr_set(name) < 0) {
		i_warning("NOTIFY_SOCKET=%s is not a socket name; "
			  "not notifying the service manager", name);
	} else {
		notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (notify_fd < 0)
			i_error("socket(AF_UNIX) for NOTIFY_SOCKET failed: %s",
				strerror(errno));
	}
	(void)unsetenv("NOTIFY_SOCKET");
}

void master_notify_deinit(void)
{
	i_close_fd(&notify_fd);
}

static void notify_send(const char *fmt, ...) ATTR_FORMAT(1, 2);
static void notify_send(const char *fmt, ...)
{
	char msg[NOTIFY_MSG_MAX];
	va_list args;

	if (notify_fd < 0)
		return;
	va_start(args, fmt);
	int len = vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	i_assert(len > 0 && (size_t)len < sizeof(msg));
	if (sendto(notify_fd, msg, (size_t)len, MSG_NOSIGNAL,
		   (const struct sockaddr *)&notify_addr, notify_addr_len) < 0 &&
	    !notify_failed_logged) {
		notify_failed_logged = true;
		i_error("notifying the service manager failed: %s", strerror(errno));
	}
}

void master_notify_ready(const char *status)
{
	notify_send("READY=1\nSTATUS=%.*s\nMAINPID=%ld", NOTIFY_STATUS_MAX,
		    status, (long)getpid());
}

void master_notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	notify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the configuration",
		    (unsigned long long)ts.tv_sec * 1000000ULL +
		    (unsigned long long)ts.tv_nsec / 1000ULL);
}

void master_notify_stopping(void)
{
	notify_send("STOPPING=1\nSTATUS=stopping");
}
