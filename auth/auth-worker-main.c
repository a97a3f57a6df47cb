/* auth-worker: runs the blocking passdb/userdb lookups (PAM, shadow,
   passwd) for auth, one request at a time, so auth never blocks.

   SECURITY: one of the two root processes besides master, because PAM's
   pam_unix and getspnam() read /etc/shadow (root:shadow 0640: uid 0
   reads it as its owner, without any capability). It keeps uid 0 but
   drops every capability (effective, permitted, inheritable, ambient and
   bounding), sets no_new_privs, is not dumpable (it sees passwords) and
   runs under the auth-worker seccomp allowlist (no exec, no ptrace, no
   setuid: PAM modules still get sockets and files) and, with landlock =
   yes, a Landlock domain that lets it read only what PAM and NSS read
   (landlock_pam_ro_paths: /etc, the libraries, its own /proc entry) and
   change no file anywhere.
   It talks only to master (MASTER_CHANNEL_FD) and to auth (MASTER_AUTH_FD,
   moat-auth-worker); auth is trusted but its records are still bounded
   and checked, a malformed one ends the worker (master starts another).
   Passwords are never logged and are wiped after use. */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "strfuncs.h"
#include "ioloop.h"
#include "ipc.h"
#include "master-service.h"
#include "landlock.h"
#include "auth-worker-protocol.h"
#include "auth-worker-db.h"

#include <sys/prctl.h>

struct auth_worker {
	struct master_service *service;
	struct ipc_conn *master_conn;
	struct ipc_conn *auth_conn;
};

static void worker_reply(struct auth_worker *worker, const char *const *args)
{
	if (ipc_send(worker->auth_conn, args, -1) < 0)
		i_error("auth: reply could not be sent");
}

static void worker_passv(struct auth_worker *worker, pool_t pool,
			 const struct auth_worker_request *req)
{
	enum auth_worker_verdict verdict;
	const char *user = NULL, *id = p_strdup_printf(pool, "%u", req->id);
	unsigned char *password;
	size_t size;

	if (p_base64_decode(pool, req->password_b64, strlen(req->password_b64),
			    &password, &size) < 0 ||
	    memchr(password, '\0', size) != NULL) {
		const char *args[] = { "FAIL", id, "authfailed", NULL };
		worker_reply(worker, args);
		return;
	}
	verdict = auth_worker_db_passv(pool, req->driver, req->args, req->user,
				       (const char *)password, req->rip, &user);
	safe_memset(password, 0, size);
	if (verdict == AUTH_WORKER_VERDICT_OK) {
		const char *args[] = { "OK", id, user, NULL };
		worker_reply(worker, args);
	} else {
		const char *args[] = { "FAIL", id,
			auth_worker_verdict_code(verdict), NULL };
		worker_reply(worker, args);
	}
}

static void worker_user(struct auth_worker *worker, pool_t pool,
			const struct auth_worker_request *req)
{
	const char *id = p_strdup_printf(pool, "%u", req->id), *home = "";
	uid_t uid = 0;
	gid_t gid = 0;
	int ret = auth_worker_db_user(pool, req->driver, req->user,
				      &uid, &gid, &home);

	if (ret > 0) {
		const char *args[] = { "USER", id,
			p_strdup_printf(pool, "%lu", (unsigned long)uid),
			p_strdup_printf(pool, "%lu", (unsigned long)gid),
			home, NULL };
		worker_reply(worker, args);
	} else {
		const char *args[] = { ret == 0 ? "NOTFOUND" : "FAIL", id,
			ret == 0 ? NULL : "tempfail", NULL };
		worker_reply(worker, args);
	}
}

static void worker_auth_input(void *context, const char *const *args, int fd)
{
	struct auth_worker *worker = context;
	struct auth_worker_request req;
	pool_t pool;

	if (args == NULL) {
		/* auth went away (restart or reload): exit, master starts a
		   worker for the new auth process. */
		ipc_conn_destroy(&worker->auth_conn);
		master_service_stop(worker->service);
		return;
	}
	if (fd >= 0 || auth_worker_parse_request(args, &req) < 0) {
		i_close_fd(&fd);
		i_error("auth: malformed record, exiting");
		ipc_conn_destroy(&worker->auth_conn);
		master_service_stop(worker->service);
		return;
	}
	pool = pool_create("auth-worker request", 1024);
	if (req.type == AUTH_WORKER_PASSV)
		worker_passv(worker, pool, &req);
	else
		worker_user(worker, pool, &req);
	pool_unref(&pool);
}

static void worker_master_input(void *context, const char *const *args, int fd)
{
	struct auth_worker *worker = context;

	i_close_fd(&fd);
	if (args == NULL) {
		ipc_conn_destroy(&worker->master_conn);
		master_service_stop(worker->service);
		return;
	}
	/* Master sends nothing on this channel yet. */
	i_error("master: unknown record ignored");
}

int main(void)
{
	struct auth_worker worker;

	memset(&worker, 0, sizeof(worker));
	worker.service = master_service_init("auth-worker");
	/* Before the drop: its seccomp filter has no prctl(). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		i_fatal("prctl(PR_SET_DUMPABLE) failed: %s", strerror(errno));
	/* Stays uid 0 (no MOAT_UID): capabilities go, no_new_privs is set.
	   uid 0 without capabilities would still own every root file, so
	   it may change none; a PAM module that writes (pam_faillock's
	   /run/faillock) or reads elsewhere needs landlock = no. */
	master_service_set_landlock(worker.service, landlock_pam_ro_paths,
				    NULL);
	master_service_drop_privileges(worker.service,
				       MOAT_SECCOMP_PROFILE_AUTH_WORKER);
	worker.master_conn = master_service_connect_master(worker.service,
		IPC_PROTO_WORKER_MASTER, worker_master_input, &worker);
	worker.auth_conn = ipc_conn_create(
		master_service_get_ioloop(worker.service), MASTER_AUTH_FD,
		"auth", IPC_PROTO_AUTH_WORKER, IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
		worker_auth_input, &worker);
	master_service_run(worker.service);
	if (worker.auth_conn != NULL)
		ipc_conn_destroy(&worker.auth_conn);
	if (worker.master_conn != NULL)
		ipc_conn_destroy(&worker.master_conn);
	master_service_deinit(&worker.service);
	return 0;
}
