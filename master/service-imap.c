/* Per-user imap processes: one per user, serving all of the user's
   connections; spawned on the first login, gone after a linger time. */
#include "master-common.h"
#include "master-metrics.h"
#include "master-admin.h"
#include "strfuncs.h"

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
			 gid_t gid, const char *home, const char *mail,
			 const char *quota_storage, const char *quota_messages)
{
	char *env_user = i_strdup_printf("MOAT_USER=%s", user);
	char *env_home = i_strdup_printf("MOAT_HOME=%s", home);
	char *env_mail = i_strdup_printf("MOAT_MAIL=%s", mail);
	char *env_qs = i_strdup_printf("MOAT_QUOTA_STORAGE=%s", quota_storage);
	char *env_qm = i_strdup_printf("MOAT_QUOTA_MESSAGES=%s", quota_messages);
	const char *env[] = { env_user, env_home, env_mail, env_qs, env_qm, NULL };

	struct child *child = child_spawn(&master->services[SERVICE_IMAP], NULL, 0,
					  env, uid, gid, NULL, user);
	free(env_user);
	free(env_home);
	free(env_mail);
	free(env_qs);
	free(env_qm);
	return child;
}

static bool user_field_ok(const char *value)
{
	/* Values from auth become env vars and paths: bound and no controls. */
	size_t len = strlen(value);
	if (len == 0 || len > 1024)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)value[i] < 0x20)
			return false;
	}
	return true;
}

static const char *imap_check_user(struct master *master, const char *user,
				   const char *uid_str, const char *gid_str,
				   const char *home, const char *mail,
				   uid_t *uid_r, gid_t *gid_r)
{
	unsigned int uid, gid;

	if (!user_field_ok(user) || !user_field_ok(home) ||
	    !user_field_ok(mail) || str_to_uint(uid_str, &uid) < 0 ||
	    str_to_uint(gid_str, &gid) < 0)
		return "Internal error: invalid user data";
	if (!master->root) {
		*uid_r = (uid_t)-1;
		*gid_r = (gid_t)-1;
		return NULL;
	}
	/* auth checks this too; master does not spawn root mail processes
	   whatever auth says. */
	if (uid == 0 || gid == 0)
		return "Mail access as root is not allowed";
	if (uid < master->set->first_valid_uid ||
	    (master->set->last_valid_uid != 0 && uid > master->set->last_valid_uid))
		return "User's uid is not allowed";
	*uid_r = uid;
	*gid_r = gid;
	return NULL;
}

/* "" or decimal digits (a quota value auth wrote). */
static bool quota_field_ok(const char *value)
{
	return strlen(value) <= 20 && strspn(value, "0123456789") == strlen(value);
}

struct child *imap_get_user(struct master *master, const char *const *fields,
			    const char **error_r)
{
	const char *user = fields[0], *home = fields[3], *mail = fields[4];
	uid_t uid;
	gid_t gid;
	const char *error = imap_check_user(master, user, fields[1], fields[2],
					    home, mail, &uid, &gid);
	if (error == NULL &&
	    (!quota_field_ok(fields[5]) || !quota_field_ok(fields[6])))
		error = "Internal error: invalid user data";
	if (error != NULL) {
		*error_r = error;
		return NULL;
	}
	struct child *imap = imap_find_user(master, user);
	if (imap != NULL)
		return imap;
	struct service *service = &master->services[SERVICE_IMAP];
	if (service->process_count >= service->set->process_limit) {
		i_warning("service(imap): process_limit (%u) reached, refusing %s",
			  service->set->process_limit, user);
		*error_r = "Maximum number of users logged in";
		return NULL;
	}
	imap = imap_spawn(master, user, uid, gid, home, mail, fields[5],
			  fields[6]);
	if (imap == NULL)
		*error_r = "Internal error: mail process unavailable";
	return imap;
}

void imap_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		master_admin_imap_gone(child);
		handoff_imap_gone(child->master, child);
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
	} else if (strcmp(args[0], "CONN-DONE") == 0) {
		if (!handoff_conn_done(child, args)) {
			i_error("imap process %d sent a malformed CONN-DONE "
				"record, killing it", (int)child->pid);
			child_kill(child, SIGKILL);
		}
	} else if (strcmp(args[0], "CMD-STATS") == 0) {
		if (!master_metrics_imap_stats(child->master, args)) {
			i_error("imap process %d sent a malformed CMD-STATS "
				"record, killing it", (int)child->pid);
			child_kill(child, SIGKILL);
		}
	} else if (strcmp(args[0], "LOAD") == 0) {
		/* LOAD <sessions>: the connections gauge of the metrics */
		unsigned int clients;
		if (str_array_length(args) != 2 ||
		    str_to_uint(args[1], &clients) < 0) {
			i_error("imap process %d sent a malformed LOAD record, "
				"killing it", (int)child->pid);
			child_kill(child, SIGKILL);
		} else {
			child->clients = clients;
		}
	} else if (strcmp(args[0], "IO-STATS") == 0) {
		if (!master_metrics_imap_io(child->master, args)) {
			i_error("imap process %d sent a malformed IO-STATS "
				"record, killing it", (int)child->pid);
			child_kill(child, SIGKILL);
		}
	} else if (master_admin_imap_reply(child, args)) {
		/* WHO-REPLY, KICK-REPLY */
	} else {
		i_error("imap process %d sent an unknown record, killing it", (int)child->pid);
		child_kill(child, SIGKILL);
	}
}
