/* auth-worker processes: root helpers for auth's blocking lookups (PAM,
   shadow, passwd). Each gets one end of a socketpair as MASTER_AUTH_FD;
   the other goes to the running auth in a WORKER-CONN record. A worker
   exits when its auth does, and is replaced for the new one. */
#include "master-common.h"

#include <signal.h>

static bool db_needs_worker(const struct moat_db_settings *dbs,
			    unsigned int count)
{
	for (unsigned int i = 0; i < count; i++) {
		if (strcmp(dbs[i].driver, "pam") == 0 ||
		    strcmp(dbs[i].driver, "shadow") == 0 ||
		    strcmp(dbs[i].driver, "passwd") == 0)
			return true;
	}
	return false;
}

static bool auth_worker_needed(const struct master *master)
{
	return db_needs_worker(master->set->passdbs, master->set->passdb_count) ||
		db_needs_worker(master->set->userdbs, master->set->userdb_count);
}

/* Root, not chrooted (uid -1: no MOAT_UID); the worker drops its
   capabilities itself. */
static struct child *auth_worker_spawn(struct master *master)
{
	struct service *service = &master->services[SERVICE_AUTH_WORKER];
	char pid_str[32];
	int pair[2];

	if (ipc_socketpair(pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		return NULL;
	}
	struct child *child = child_spawn(service, &pair[1], 1, NULL,
					  (uid_t)-1, (gid_t)-1, NULL, NULL);
	close(pair[1]);
	if (child == NULL) {
		close(pair[0]);
		return NULL;
	}
	snprintf(pid_str, sizeof(pid_str), "%d", (int)child->pid);
	if (ipc_sendv(master->auth->conn, pair[0], "WORKER-CONN", pid_str,
		      NULL) < 0) {
		/* auth is going; the worker sees EOF and is replaced. */
		i_error("could not pass auth-worker %d's socket to auth",
			(int)child->pid);
	}
	close(pair[0]);
	return child;
}

void auth_worker_ensure(struct master *master)
{
	struct service *service = &master->services[SERVICE_AUTH_WORKER];

	if (master->stopping || !auth_worker_needed(master) ||
	    master->auth == NULL || master->auth->conn == NULL ||
	    master->auth->shutting_down)
		return;
	while (service->process_count < service->set->process_limit) {
		if (auth_worker_spawn(master) == NULL)
			break;
	}
}

void auth_worker_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		return;
	}
	if (fd >= 0)
		close(fd);
	/* Workers have nothing to tell master: a record is a bug. */
	i_error("auth-worker %d sent an unknown record, killing it",
		(int)child->pid);
	child_kill(child, SIGKILL);
}
