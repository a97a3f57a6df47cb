/* The auth process: spawning it and its channel (moat-auth-master). */
#include "master-common.h"
#include "master-admin.h"
#include "master-metrics.h"

#include <signal.h>

struct child *auth_spawn(struct master *master)
{
	struct child *child = child_spawn(&master->services[SERVICE_AUTH], NULL, 0,
					  NULL, master->auth_uid, master->auth_gid,
					  NULL, NULL);
	if (child == NULL)
		return NULL;
	master->auth = child;
	/* imap-login connections follow the table: none is checked
	   without its address's penalty. */
	auth_penalty_load_start(master, child);
	auth_worker_ensure(master);
	return child;
}

int auth_connect_login(struct master *master, pid_t login_pid)
{
	int pair[2];

	if (master->auth == NULL || master->auth->conn == NULL ||
	    master->auth->shutting_down || auth_penalty_loading(master))
		return -1;
	if (ipc_socketpair(pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		return -1;
	}
	if (child_send_peer(master->auth, "LOGIN-CONN", login_pid, pair[0]) < 0) {
		close(pair[0]);
		close(pair[1]);
		return -1;
	}
	close(pair[0]);
	return pair[1];
}

void auth_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;
	struct master *master = child->master;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		auth_penalty_child_gone(master, child);
		if (master->auth == child) {
			/* Dying or broken: stop routing through it now; its
			   exit restarts it. */
			handoff_fail_all(master, "Authentication process is gone",
					 true);
			lmtp_rcpt_fail_all(master, "User database process is gone");
		}
		return;
	}
	if (fd >= 0) {
		i_error("auth sent an unexpected fd");
		close(fd);
		child_kill(child, SIGKILL);
		return;
	}
	if (strcmp(args[0], "USER") == 0 || strcmp(args[0], "NOTFOUND") == 0 ||
	    strcmp(args[0], "FOREIGN") == 0)
		handoff_auth_reply(master, args);
	else if (auth_penalty_input(child, args)) {
		/* PENALTY, PENALTY-ACK */
	}
	else if (strncmp(args[0], "USERDB-", 7) == 0) {
		if (!master_admin_auth_reply(master, args))
			lmtp_rcpt_auth_reply(master, args);
	} else if (strcmp(args[0], "AUTH-STATS") == 0) {
		if (!master_metrics_auth_stats(master, args)) {
			i_error("auth sent a malformed AUTH-STATS record, "
				"restarting it");
			child_kill(child, SIGKILL);
		}
	} else {
		i_error("auth sent an unknown record %s, restarting it", args[0]);
		child_kill(child, SIGKILL);
	}
}
