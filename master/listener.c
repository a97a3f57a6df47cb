/* Listeners: opened by master (so ports < 1024 work and unix sockets get
   their owner), inherited by every imap-login or lmtp process of their
   service, which accepts on them. */
#include "master-common.h"
#include "master-activation.h"

#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

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

/* A unix_listener's socket at path, with its mode and owner. A socket
   left by an earlier run is replaced; any other file there is an error. */
static int listener_open_unix(const struct moat_listener_settings *ls,
			      const char *path, const char **error_r)
{
	static char error[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	struct stat st;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(error, sizeof(error), "unix_listener %s: path too long", path);
		*error_r = error;
		return -1;
	}
	if (ls->user[0] != '\0') {
		struct passwd *pw = getpwnam(ls->user);
		if (pw == NULL) {
			snprintf(error, sizeof(error), "unix_listener %s: "
				 "unknown user %s", path, ls->user);
			*error_r = error;
			return -1;
		}
		uid = pw->pw_uid;
	}
	if (ls->group[0] != '\0') {
		struct group *gr = getgrnam(ls->group);
		if (gr == NULL) {
			snprintf(error, sizeof(error), "unix_listener %s: "
				 "unknown group %s", path, ls->group);
			*error_r = error;
			return -1;
		}
		gid = gr->gr_gid;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(error, sizeof(error), "unix_listener %s: "
				 "exists and is not a socket", path);
			*error_r = error;
			return -1;
		}
		(void)unlink(path);
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* umask must not widen the window before chmod: bind with 0600 */
	mode_t old_umask = umask(0177);
	int ret = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (ret < 0 ||
	    ((uid != (uid_t)-1 || gid != (gid_t)-1) && chown(path, uid, gid) < 0) ||
	    chmod(path, moat_listener_mode(ls)) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		snprintf(error, sizeof(error), "unix_listener %s: %s", path,
			 strerror(errno));
		*error_r = error;
		if (ret == 0)
			(void)unlink(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
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

static void listener_free(struct listener *l)
{
	if (l->fd >= 0 && l->unix_path != NULL && !l->activated)
		(void)unlink(l->unix_path);
	i_close_fd(&l->fd);
	free(l->key);
	free(l->name);
	free(l->unix_path);
}

/* The listeners of one service into list (count grows). */
static int listeners_open_service(struct master *master, enum service_kind kind,
				  struct listener *old, unsigned int old_count,
				  struct listener *list, unsigned int *count,
				  const char **error_r)
{
	const struct moat_service_settings *set = master->services[kind].set;

	for (unsigned int i = 0; i < set->listener_count; i++) {
		const struct moat_listener_settings *ls = &set->listeners[i];
		if (!ls->unix_socket && ls->port == 0)
			continue;
		char *path = !ls->unix_socket ? NULL : ls->name[0] == '/' ?
			i_strdup(ls->name) :
			i_strdup_printf("%s/%s", master->set->base_dir, ls->name);
		char *key = ls->unix_socket ?
			i_strdup_printf("%d unix %s %s %s %s", kind, path,
					ls->mode, ls->user, ls->group) :
			i_strdup_printf("%d %s %s %u", kind, ls->name,
					ls->address, ls->port);
		struct listener *prev = listener_find(old, old_count, key);
		struct listener *l = &list[*count];
		*l = (struct listener){ .kind = kind, .key = key,
			.name = i_strdup(ls->name), .ssl = ls->ssl,
			.haproxy = ls->haproxy,
			.unix_path = path, .fd = -1 };
		if (prev != NULL) {
			l->fd = prev->fd;
			l->activated = prev->activated;
			prev->fd = -1;
		} else if ((l->fd = ls->unix_socket ?
			    master_activation_take_unix(path) :
			    master_activation_take_inet(ls->address,
							ls->port)) >= 0) {
			/* bound by the service manager: its mode and owner */
			l->activated = true;
		} else {
			l->fd = ls->unix_socket ?
				listener_open_unix(ls, path, error_r) :
				listener_open(ls->address, ls->port, error_r);
			if (l->fd < 0) {
				listener_free(l);
				return -1;
			}
		}
		(*count)++;
	}
	return 0;
}

/* Opens the listeners the settings name, keeping already open sockets for
   unchanged ones (a reload must not drop the listen queue). */
int master_listeners_open(struct master *master, const char **error_r)
{
	struct listener *old = master->listeners;
	unsigned int old_count = master->listener_count, max = 0, count = 0;

	max += master->services[SERVICE_LOGIN].set->listener_count;
	max += master->services[SERVICE_LMTP].set->listener_count;
	struct listener *list = i_malloc(sizeof(*list) * (max + 1));
	int ret = listeners_open_service(master, SERVICE_LOGIN, old, old_count,
					 list, &count, error_r);
	if (ret == 0 && master_lmtp_enabled(master))
		ret = listeners_open_service(master, SERVICE_LMTP, old,
					     old_count, list, &count, error_r);
	if (ret < 0) {
		/* Put back what we took from the old set. */
		for (unsigned int j = 0; j < count; j++) {
			struct listener *o = listener_find(old, old_count, list[j].key);
			if (o != NULL && o->fd < 0) {
				o->fd = list[j].fd;
				list[j].fd = -1;
			}
			listener_free(&list[j]);
		}
		free(list);
		return -1;
	}
	master->listeners = list;
	master->listener_count = count;
	for (unsigned int i = 0; i < old_count; i++) {
		/* a socket re-created at the same path (new mode) stays */
		for (unsigned int j = 0; j < count && old[i].unix_path != NULL; j++) {
			if (list[j].unix_path != NULL &&
			    strcmp(list[j].unix_path, old[i].unix_path) == 0)
				i_free(old[i].unix_path);
		}
		listener_free(&old[i]);
	}
	free(old);
	return 0;
}

void master_listeners_close(struct master *master)
{
	for (unsigned int i = 0; i < master->listener_count; i++)
		listener_free(&master->listeners[i]);
	i_free(master->listeners);
	master->listener_count = 0;
}
