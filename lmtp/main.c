/* lmtp: the LMTP service (RFC 2033) an MTA delivers mail to.

   SECURITY: this process parses bytes from the MTA (or anyone who may
   connect to its sockets: the unix_listener's mode and any inet_listener
   decide who that is; LMTP does not authenticate). It talks to master over
   an inherited socket (fd 3, moat-lmtp-master) and, for each accepted
   recipient, to that user's imap process over a socket master hands it
   (moat-deliver), on which it can only add a message. It accepts on the
   listening sockets master opened (fd 5..). It runs as its own user
   (service lmtp's user, moat-lmtp: not imap-login's or auth's), chrooted
   to an empty root-owned directory, with no capabilities, no_new_privs and
   the lmtp seccomp allowlist (no open, no exec, no socket creation),
   dropped to in master_service_drop_privileges() before it accepts a
   single connection. It opens no file: a message lives in a sealed memfd
   that goes to each recipient's imap process, which writes it. A
   compromise yields: delivering mail to any user, learning which users
   exist, and the messages passing through it; no mail can be read. */
#include "lmtp-common.h"
#include "lmtp-client.h"
#include "lmtp-master.h"
#include "lmtp-delivery.h"
#include "sock-linger.h"

#include <sys/socket.h>

/* After EMFILE/ENFILE, wait before accepting again. */
#define LMTP_ACCEPT_PAUSE_MSECS 1000
#define LMTP_DEFAULT_CLIENT_LIMIT 100

static void listeners_init(struct lmtp_process *proc)
{
	const char *p = master_service_getenv("MOAT_LISTENERS");

	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		if (len == 0 || proc->listener_count == LMTP_MAX_LISTENERS)
			i_fatal("MOAT_LISTENERS: malformed or too many entries");
		struct lmtp_listener *l = &proc->listeners[proc->listener_count];
		l->proc = proc;
		l->fd = MASTER_LMTP_LISTEN_FD_FIRST + (int)proc->listener_count;
		if (fd_set_nonblock(l->fd, true) < 0)
			i_fatal("listener fd %d is not usable: %m", l->fd);
		proc->listener_count++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (proc->listener_count == 0)
		i_fatal("MOAT_LISTENERS: no listeners");
}

static void accept_pause_end(void *context)
{
	struct lmtp_process *proc = context;

	proc->to_accept_pause = NULL;
	lmtp_listen_update(proc);
}

static void listener_accept(void *context)
{
	struct lmtp_listener *l = context;
	struct lmtp_process *proc = l->proc;

	int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNABORTED || errno == EPROTO || errno == EPERM)
			return;
		i_error("accept() failed: %m");
		proc->to_accept_pause = timeout_add(proc->ioloop,
			LMTP_ACCEPT_PAUSE_MSECS, accept_pause_end, proc);
		lmtp_listen_update(proc);
		return;
	}
	/* replies are small and answer pipelined commands: no Nagle wait */
	fd_set_tcp_nodelay(fd);
	(void)lmtp_client_create(proc, fd);
	lmtp_listen_update(proc);
}

void lmtp_listen_update(struct lmtp_process *proc)
{
	bool want = !proc->shutting_down && proc->to_accept_pause == NULL &&
		proc->client_count < proc->client_limit;

	for (unsigned int i = 0; i < proc->listener_count; i++) {
		struct lmtp_listener *l = &proc->listeners[i];
		if (want && l->io == NULL)
			l->io = io_add(proc->ioloop, l->fd, IO_READ,
				       listener_accept, l);
		else if (!want)
			io_remove(&l->io);
	}
	int idle = proc->client_count == 0 ? 1 : 0;
	if (!proc->shutting_down &&
	    ((int)want != proc->reported_accepting ||
	     idle != proc->reported_idle)) {
		proc->reported_accepting = want ? 1 : 0;
		proc->reported_idle = idle;
		lmtp_master_load(proc, proc->client_count, want);
	}
}

void lmtp_process_client_gone(struct lmtp_process *proc)
{
	if (proc->shutting_down && proc->client_count == 0)
		master_service_stop(proc->service);
	else
		lmtp_listen_update(proc);
}

static void hostname_init(struct lmtp_process *proc)
{
	const char *name = proc->set->lmtp_hostname;

	if (name[0] != '\0') {
		snprintf(proc->hostname, sizeof(proc->hostname), "%s", name);
	} else if (gethostname(proc->hostname, sizeof(proc->hostname)) < 0 ||
		   proc->hostname[0] == '\0') {
		snprintf(proc->hostname, sizeof(proc->hostname), "localhost");
	}
	proc->hostname[sizeof(proc->hostname) - 1] = '\0';
	/* it goes into every reply line: no control bytes or spaces */
	for (char *p = proc->hostname; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			*p = '_';
	}
}

int main(void)
{
	struct lmtp_process proc;

	memset(&proc, 0, sizeof(proc));
	proc.service = master_service_init("lmtp");
	proc.ioloop = master_service_get_ioloop(proc.service);
	proc.set = master_service_get_settings(proc.service);
	const struct moat_service_settings *sset =
		master_service_get_service_settings(proc.service);
	proc.client_limit = sset != NULL && sset->client_limit != 0 ?
		sset->client_limit : LMTP_DEFAULT_CLIENT_LIMIT;
	proc.reported_accepting = proc.reported_idle = -1;
	/* the name is the system's, read before the chroot hides /etc */
	hostname_init(&proc);
	listeners_init(&proc);

	master_service_drop_privileges(proc.service, MOAT_SECCOMP_PROFILE_LMTP);
	lmtp_master_connect(&proc);
	proc.lingers = sock_linger_set_create(proc.ioloop, LMTP_MAX_LINGERING,
					      NULL, NULL);
	lmtp_listen_update(&proc);

	master_service_run(proc.service);

	lmtp_client_destroy_all(&proc, "Server shutting down");
	lmtp_delivery_pool_deinit(&proc);
	sock_linger_set_destroy(&proc.lingers);
	for (unsigned int i = 0; i < proc.listener_count; i++) {
		io_remove(&proc.listeners[i].io);
		i_close_fd(&proc.listeners[i].fd);
	}
	timeout_remove(&proc.to_accept_pause);
	lmtp_master_deinit(&proc);
	master_service_deinit(&proc.service);
	return 0;
}
