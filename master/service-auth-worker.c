/* auth-worker processes: root helpers for auth's blocking lookups (PAM,
   shadow, passwd). Each gets one end of a socketpair as MASTER_AUTH_FD;
   the other goes to the running auth in a WORKER-CONN record. A worker
   exits when its auth does, and is replaced for the new one. */
#include "master-common.h"

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
	if (child_send_peer(master->auth, "WORKER-CONN", child->pid,
			    pair[0]) < 0) {
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
