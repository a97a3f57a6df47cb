/* imap-login processes: spawning with the listeners and an auth socket,
   and their channel (moat-login-master). */
#include "master-common.h"
#include "master-metrics.h"

#include "strfuncs.h"

#include <signal.h>

struct child *login_spawn(struct master *master)
{
	struct service *service = &master->services[SERVICE_LOGIN];
	int fds[1 + 64];
	unsigned int count = 0;
	char listeners_env[1024] = "MOAT_LISTENERS=";
	size_t pos = strlen(listeners_env);

	/* Its auth socket: a fresh pair, the other end goes to auth once we
	   know the pid. Without auth running the end is closed at once and
	   imap-login asks again with AUTH-RECONNECT. */
	int pair[2];
	if (ipc_socketpair(pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		return NULL;
	}
	fds[count++] = pair[1];
	for (unsigned int i = 0; i < master->listener_count && count < N_ELEMENTS(fds); i++) {
		if (master->listeners[i].kind != SERVICE_LOGIN)
			continue;
		fds[count++] = master->listeners[i].fd;
		int ret = snprintf(listeners_env + pos, sizeof(listeners_env) - pos,
				   "%s%s:%d:%d", count == 2 ? "" : ",",   /* fds[0]: auth */
				   master->listeners[i].name,
				   master->listeners[i].ssl ? 1 : 0,
				   master->listeners[i].haproxy ? 1 : 0);
		if (ret < 0 || (size_t)ret >= sizeof(listeners_env) - pos)
			i_fatal("too many listeners");
		pos += (size_t)ret;
	}
	const char *env[] = { listeners_env, NULL };
	struct child *child = child_spawn(service, fds, count, env, master->login_uid,
					  master->login_gid, master->empty_dir, NULL);
	close(pair[1]);
	if (child == NULL) {
		close(pair[0]);
		return NULL;
	}
	child->listening = true;
	child->idle_since_ms = time_monotonic_ms();
	child->client_limit = service->set->client_limit;
	if (master->auth != NULL && !master->auth->shutting_down &&
	    child_send_peer(master->auth, "LOGIN-CONN", child->pid,
			    pair[0]) < 0)
		i_error("could not pass imap-login %d's socket to auth",
			(int)child->pid);
	close(pair[0]);
	keyd_connect_login(master, child);
	return child;
}

unsigned int login_count_listening(struct master *master)
{
	unsigned int count = 0;
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind == SERVICE_LOGIN && child->listening &&
		    !child->shutting_down)
			count++;
	}
	return count;
}

static void login_give_auth(struct child *login)
{
	/* Its channel may have closed before the process was reaped (it
	   exits after a reload once its clients are gone): nobody to tell. */
	if (login->conn == NULL) {
		login->wants_auth = false;
		return;
	}
	int fd = auth_connect_login(login->master, login->pid);
	if (fd < 0) {
		login->wants_auth = true;   /* when auth is back */
		return;
	}
	login->wants_auth = false;
	(void)ipc_sendv(login->conn, fd, "AUTH-CONN", NULL);
	close(fd);
}

void login_auth_available(struct master *master)
{
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind == SERVICE_LOGIN && child->wants_auth)
			login_give_auth(child);
	}
}

void login_shutdown_all(struct master *master)
{
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind != SERVICE_LOGIN || child->shutting_down)
			continue;
		child->shutting_down = true;
		child->listening = false;
		(void)ipc_sendv(child->conn, -1, "SHUTDOWN", NULL);
	}
}

static void login_ensure_available(struct master *master)
{
	struct service *service = &master->services[SERVICE_LOGIN];
	if (!master->stopping &&
	    login_count_listening(master) < MAX(service->set->process_min_avail, 1u) &&
	    service->process_count < service->set->process_limit)
		(void)login_spawn(master);
}

static void login_handle_load(struct child *child, const char *const *args)
{
	unsigned int clients;

	if (str_array_length(args) != 3 || str_to_uint(args[1], &clients) < 0 ||
	    (strcmp(args[2], "0") != 0 && strcmp(args[2], "1") != 0)) {
		i_error("imap-login %d sent a malformed LOAD, killing it", (int)child->pid);
		child_kill(child, SIGKILL);
		return;
	}
	child->clients = clients;
	child->idle_since_ms = clients == 0 ? time_monotonic_ms() : 0;
	if (!child->shutting_down)
		child->listening = args[2][0] == '1';
	/* A full process (client_limit) gets company, up to process_limit. */
	login_ensure_available(child->master);
}

static void login_idle_check_timeout(void *context);

static void login_idle_check(void *context)
{
	struct master *master = context;
	const struct moat_service_settings *set = master->services[SERVICE_LOGIN].set;
	uint64_t now = time_monotonic_ms();

	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (login_count_listening(master) <= MAX(set->process_min_avail, 1u))
			break;
		if (child->service->kind != SERVICE_LOGIN || !child->listening ||
		    child->shutting_down || child->clients > 0 ||
		    now - child->idle_since_ms < (uint64_t)set->idle_kill * 1000)
			continue;
		i_debug("service(imap-login): stopping idle process %d", (int)child->pid);
		child->shutting_down = true;
		child->listening = false;
		(void)ipc_sendv(child->conn, -1, "SHUTDOWN", NULL);
	}
}

static void login_idle_check_timeout(void *context)
{
	struct master *master = context;
	master->idle_check_timeout = NULL;   /* freed by the loop */
	login_idle_check(master);
	login_idle_check_start(master);
}

void login_idle_check_start(struct master *master)
{
	unsigned int idle_kill = master->services[SERVICE_LOGIN].set->idle_kill;

	timeout_remove(&master->idle_check_timeout);
	if (idle_kill == 0)
		return;
	/* Checked at a tenth of the period: stops within 10% of idle_kill. */
	master->idle_check_timeout =
		timeout_add(master->ioloop, MAX(idle_kill * 100, 100u),
			    login_idle_check_timeout, master);
}

void login_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		/* The process is exiting (or broke its channel): its exit is
		   handled by SIGCHLD; stop talking to it. */
		ipc_conn_destroy(&child->conn);
		return;
	}
	if (strcmp(args[0], "HANDOFF") == 0 && fd >= 0) {
		handoff_start(child, args, fd);
		return;
	}
	if (fd >= 0) {
		i_error("imap-login %d sent an fd with %s", (int)child->pid, args[0]);
		close(fd);
		child_kill(child, SIGKILL);
		return;
	}
	if (strcmp(args[0], "AUTH-RECONNECT") == 0)
		login_give_auth(child);
	else if (strcmp(args[0], "LISTEN-DONE") == 0) {
		child->listening = false;
		login_ensure_available(child->master);
	} else if (strcmp(args[0], "LOAD") == 0) {
		login_handle_load(child, args);
	} else if (strcmp(args[0], "LOGIN-STATS") == 0) {
		if (!master_metrics_login_stats(child->master, args)) {
			i_error("imap-login %d sent a malformed LOGIN-STATS "
				"record, killing it", (int)child->pid);
			child_kill(child, SIGKILL);
		}
	} else if (login_limits_input(child, args)) {
		/* CONNECT, DISCONNECT */
	} else {
		/* imap-login is untrusted: a protocol violation ends it. */
		i_error("imap-login %d sent an unknown record, killing it", (int)child->pid);
		child_kill(child, SIGKILL);
	}
}
