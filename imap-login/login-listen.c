/* Accepting clients on the inherited listening sockets. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-listen.h"
#include "login-master.h"

#include <sys/socket.h>

/* A listener name ("imap", "imaps") as master's config allows. */
#define LOGIN_MAX_LISTENER_NAME 64
/* After EMFILE/ENFILE, wait before trying again instead of spinning on a
   socket that stays readable. */
#define LOGIN_ACCEPT_PAUSE_MSECS 1000

struct login_listener {
	struct login_process *lp;
	int fd;
	char name[LOGIN_MAX_LISTENER_NAME + 1];
	bool ssl;
	bool haproxy;                  /* a PROXY header comes first */
	struct io *io;
};

struct login_listeners {
	struct login_listener list[LOGIN_MAX_LISTENERS];
	unsigned int count;
	struct timeout *to_pause;
	bool ssl_warned;
};

/* "name:S:H": S is ssl, H haproxy, each 0 or 1. */
static void listener_parse_one(struct login_listener *l, const char *item,
			       size_t len)
{
	const char *colon = memchr(item, ':', len);
	size_t name_len = colon == NULL ? 0 : (size_t)(colon - item);

	if (colon == NULL || name_len == 0 || name_len > LOGIN_MAX_LISTENER_NAME ||
	    len - name_len != 4 || (colon[1] != '0' && colon[1] != '1') ||
	    colon[2] != ':' || (colon[3] != '0' && colon[3] != '1'))
		i_fatal("MOAT_LISTENERS: malformed entry");
	memcpy(l->name, item, name_len);
	l->name[name_len] = '\0';
	for (size_t i = 0; i < name_len; i++) {
		if (l->name[i] <= ' ' || l->name[i] >= 0x7f)
			i_fatal("MOAT_LISTENERS: malformed listener name");
	}
	l->ssl = colon[1] == '1';
	l->haproxy = colon[3] == '1';
}

void login_listen_init(struct login_process *lp)
{
	struct login_listeners *ls = p_malloc(lp->pool, sizeof(*ls));
	const char *env = master_service_getenv("MOAT_LISTENERS");
	const char *p = env;

	lp->listeners = ls;
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end == NULL ? strlen(p) : (size_t)(end - p);

		if (ls->count == LOGIN_MAX_LISTENERS)
			i_fatal("MOAT_LISTENERS: more than %u listeners",
				LOGIN_MAX_LISTENERS);
		struct login_listener *l = &ls->list[ls->count];
		listener_parse_one(l, p, len);
		l->lp = lp;
		l->fd = MASTER_LISTEN_FD_FIRST + (int)ls->count;
		if (fd_set_nonblock(l->fd, true) < 0)
			i_fatal("listener %s: fd %d is not usable: %s",
				l->name, l->fd, strerror(errno));
		ls->count++;
		p += len;
		if (*p == ',')
			p++;
	}
}

void login_listen_deinit(struct login_process *lp)
{
	struct login_listeners *ls = lp->listeners;

	if (ls == NULL)
		return;
	if (ls->to_pause != NULL)
		timeout_remove(&ls->to_pause);
	for (unsigned int i = 0; i < ls->count; i++) {
		io_remove(&ls->list[i].io);
		i_close_fd(&ls->list[i].fd);
	}
	ls->count = 0;
}

static void listen_pause_end(void *context)
{
	struct login_process *lp = context;

	lp->listeners->to_pause = NULL;
	login_listen_update(lp);
}

/* Returns true when the error is transient for this one connection. */
static bool accept_error_is_benign(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR ||
		err == ECONNABORTED || err == EPROTO || err == EPERM;
}

static void listener_accept(void *context)
{
	struct login_listener *l = context;
	struct login_process *lp = l->lp;
	struct sockaddr_storage addr;
	socklen_t addr_len = sizeof(addr);

	int fd = accept4(l->fd, (struct sockaddr *)&addr, &addr_len,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (accept_error_is_benign(errno))
			return;
		i_error("accept(%s) failed: %s", l->name, strerror(errno));
		/* EMFILE and friends: pause all listeners for a moment. */
		lp->listeners->to_pause = timeout_add(lp->ioloop,
			LOGIN_ACCEPT_PAUSE_MSECS, listen_pause_end, lp);
		login_listen_update(lp);
		return;
	}
	lp->accepted_count++;
	lp->stats.connections++;
	fd_set_tcp_nodelay(fd);
	(void)login_client_create(lp, fd, (struct sockaddr *)&addr, addr_len,
				  l->ssl, l->haproxy);
	/* After the client exists, so the process does not count as idle. */
	if (lp->service_count != 0 && lp->accepted_count >= lp->service_count)
		login_process_stop_listening(lp, false);
	login_listen_update(lp);
}

static bool listen_is_wanted(struct login_process *lp)
{
	return !lp->listen_done && !lp->shutting_down && !lp->stopping &&
		lp->listeners->to_pause == NULL &&
		lp->client_count + lp->proxy_count < lp->client_limit;
}

void login_listen_update(struct login_process *lp)
{
	struct login_listeners *ls = lp->listeners;
	bool want = listen_is_wanted(lp);

	for (unsigned int i = 0; i < ls->count; i++) {
		struct login_listener *l = &ls->list[i];

		if (l->ssl && lp->ssl_ctx == NULL) {
			/* Never answer in cleartext on a TLS port. */
			if (!ls->ssl_warned) {
				i_warning("listener %s is ssl, but TLS is not "
					  "configured (ssl = no or no ssl_cert): "
					  "not accepting on it", l->name);
				ls->ssl_warned = true;
			}
			continue;
		}
		if (want && l->io == NULL && l->fd >= 0)
			l->io = io_add(lp->ioloop, l->fd, IO_READ, listener_accept, l);
		else if (!want && l->io != NULL)
			io_remove(&l->io);
	}
	/* Tell master about changes only: records per transition, not per
	   client. listen_done/shutdown are reported by their own records. */
	unsigned int clients = lp->client_count + lp->proxy_count;
	int idle = clients == 0 ? 1 : 0;
	if (lp->master != NULL && !lp->listen_done && !lp->shutting_down &&
	    ((int)want != lp->reported_accepting || idle != lp->reported_idle)) {
		lp->reported_accepting = want ? 1 : 0;
		lp->reported_idle = idle;
		login_master_load(lp, clients, want);
	}
}
