/* TCP listeners: opened by master (so ports < 1024 work), inherited by
   every imap-login process, which accepts on them. */
#include "master-common.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Pending connections the kernel queues per listener. */
#define LISTEN_BACKLOG 511

static int listener_open(const char *address, unsigned int port,
			 const char **error_r)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char port_str[16];
	static char error[256];

	if (strcmp(address, "*") == 0)
		address = "0.0.0.0";
	snprintf(port_str, sizeof(port_str), "%u", port);
	int ret = getaddrinfo(address, port_str, &hints, &ai);
	if (ret != 0) {
		snprintf(error, sizeof(error), "listen address %s: %s",
			 address, gai_strerror(ret));
		*error_r = error;
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0) {
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	}
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		snprintf(error, sizeof(error), "listen(%s, %u) failed: %s",
			 address, port, strerror(errno));
		*error_r = error;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static struct listener *listener_find(struct listener *list, unsigned int count,
				      const char *key)
{
	for (unsigned int i = 0; i < count; i++) {
		if (list[i].key != NULL && strcmp(list[i].key, key) == 0)
			return &list[i];
	}
	return NULL;
}

/* Opens the listeners the settings name, keeping already open sockets for
   unchanged ones (a reload must not drop the listen queue). */
int master_listeners_open(struct master *master, const char **error_r)
{
	const struct moat_service_settings *set =
		moat_settings_get_service(master->set, "imap-login");
	struct listener *old = master->listeners;
	unsigned int old_count = master->listener_count;
	struct listener *list = i_malloc(sizeof(*list) * (set->listener_count + 1));
	unsigned int count = 0;

	for (unsigned int i = 0; i < set->listener_count; i++) {
		const struct moat_listener_settings *ls = &set->listeners[i];
		if (ls->port == 0)
			continue;
		char *key = i_strdup_printf("%s %s %u", ls->name, ls->address, ls->port);
		struct listener *prev = listener_find(old, old_count, key);
		list[count].key = key;
		list[count].name = i_strdup(ls->name);
		list[count].ssl = ls->ssl;
		if (prev != NULL) {
			list[count].fd = prev->fd;
			prev->fd = -1;
		} else {
			list[count].fd = listener_open(ls->address, ls->port, error_r);
			if (list[count].fd < 0) {
				free(key);
				free(list[count].name);
				/* Put back what we took from the old set. */
				for (unsigned int j = 0; j < count; j++) {
					struct listener *o = listener_find(old, old_count, list[j].key);
					if (o != NULL && o->fd < 0)
						o->fd = list[j].fd;
					else
						i_close_fd(&list[j].fd);
					free(list[j].key);
					free(list[j].name);
				}
				free(list);
				return -1;
			}
		}
		count++;
	}
	master->listeners = list;
	master->listener_count = count;
	for (unsigned int i = 0; i < old_count; i++) {
		i_close_fd(&old[i].fd);
		free(old[i].key);
		free(old[i].name);
	}
	free(old);
	return 0;
}

void master_listeners_close(struct master *master)
{
	for (unsigned int i = 0; i < master->listener_count; i++) {
		i_close_fd(&master->listeners[i].fd);
		free(master->listeners[i].key);
		free(master->listeners[i].name);
	}
	i_free(master->listeners);
	master->listener_count = 0;
}
