/* Per-user imap processes: one per user, serving all of the user's
   connections; spawned on the first login, gone after a linger time. */
#include "master-common.h"

#include <signal.h>

struct child *imap_find_user(struct master *master, const char *user)
{
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind == SERVICE_IMAP && child->conn != NULL &&
		    !child->shutdown_requested && strcmp(child->user, user) == 0)
			return child;
	}
	return NULL;
}

struct child *imap_spawn(struct master *master, const char *user, uid_t uid,
			 gid_t gid, const char *home, const char *mail)
{
	char *env_user = i_strdup_printf("MOAT_USER=%s", user);
	char *env_home = i_strdup_printf("MOAT_HOME=%s", home);
	char *env_mail = i_strdup_printf("MOAT_MAIL=%s", mail);
	const char *env[] = { env_user, env_home, env_mail, NULL };

	struct child *child = child_spawn(&master->services[SERVICE_IMAP], NULL, 0,
					  env, uid, gid, NULL, user);
	free(env_user);
	free(env_home);
	free(env_mail);
	return child;
}

void imap_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		return;
	}
	if (fd >= 0) {
		i_error("imap process %d sent an unexpected fd", (int)child->pid);
		close(fd);
		child_kill(child, SIGKILL);
		return;
	}
	if (strcmp(args[0], "SHUTDOWN-REQUEST") == 0) {
		/* Records are ordered: every CONN sent before this reply
		   reaches the process before SHUTDOWN-OK does. */
		child->shutdown_requested = true;
		(void)ipc_sendv(child->conn, -1, "SHUTDOWN-OK", NULL);
	} else {
		i_error("imap process %d sent an unknown record, killing it", (int)child->pid);
		child_kill(child, SIGKILL);
	}
}
