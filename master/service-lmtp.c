/* lmtp processes: spawning with their listeners, their channel
   (moat-lmtp-master), and routing a recipient to its user's imap process:
   master asks auth's userdb, finds or spawns the imap process, and hands
   lmtp one end of a fresh socketpair whose other end the imap process
   serves as a delivery connection (doc/architecture.md). */
#include "master-common.h"
#include "master-admin.h"
#include "master-metrics.h"

#include "strfuncs.h"

#include <signal.h>

/* Recipients waiting for auth at once; beyond this lmtp gets a temporary
   failure (auth is stuck or flooded). */
#define LMTP_RCPT_MAX_PENDING 10000
/* A userdb key from lmtp: as auth's user field limit. */
#define LMTP_RCPT_USER_MAX 256
/* lmtp's id of a recipient: a number it chose. */
#define LMTP_RCPT_ID_MAX 20
/* An answer from auth later than this is a temporary failure (a stuck
   userdb): the MTA retries, the session goes on. */
#define LMTP_RCPT_TIMEOUT_MSECS 30000

struct lmtp_rcpt {
	struct lmtp_rcpt *next;
	unsigned int id;          /* master's, sent to auth */
	struct child *lmtp;
	char *lmtp_id;            /* lmtp's, echoed in the answer */
	char *user;
	struct timeout *to;
};

bool master_lmtp_enabled(const struct master *master)
{
	return moat_settings_has_protocol(master->set, "lmtp");
}

struct child *lmtp_spawn(struct master *master)
{
	struct service *service = &master->services[SERVICE_LMTP];
	int fds[64];
	unsigned int count = 0;
	char listeners_env[1024] = "MOAT_LISTENERS=";
	size_t pos = strlen(listeners_env);

	for (unsigned int i = 0; i < master->listener_count && count < N_ELEMENTS(fds); i++) {
		if (master->listeners[i].kind != SERVICE_LMTP)
			continue;
		fds[count++] = master->listeners[i].fd;
		/* unix listeners are named by their index: paths may hold
		   any byte MOAT_LISTENERS uses */
		int ret = master->listeners[i].unix_path != NULL ?
			snprintf(listeners_env + pos, sizeof(listeners_env) - pos,
				 "%sunix%u:0", count == 1 ? "" : ",", count) :
			snprintf(listeners_env + pos, sizeof(listeners_env) - pos,
				 "%s%s:0", count == 1 ? "" : ",",
				 master->listeners[i].name);
		if (ret < 0 || (size_t)ret >= sizeof(listeners_env) - pos)
			i_fatal("too many listeners");
		pos += (size_t)ret;
	}
	if (count == 0) {
		i_error("service(lmtp): no listeners; not starting lmtp");
		return NULL;
	}
	const char *env[] = { listeners_env, NULL };
	struct child *child = child_spawn(service, fds, count, env,
					  master->lmtp_uid, master->lmtp_gid,
					  master->lmtp_chroot_dir, NULL);
	if (child == NULL)
		return NULL;
	child->listening = true;
	child->idle_since_ms = time_monotonic_ms();
	return child;
}

static unsigned int lmtp_count_listening(struct master *master)
{
	unsigned int count = 0;
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind == SERVICE_LMTP && child->listening &&
		    !child->shutting_down)
			count++;
	}
	return count;
}

void lmtp_ensure_available(struct master *master)
{
	struct service *service = &master->services[SERVICE_LMTP];

	if (!master_lmtp_enabled(master))
		return;
	while (!master->stopping &&
	       lmtp_count_listening(master) < MAX(service->set->process_min_avail, 1u) &&
	       service->process_count < service->set->process_limit) {
		if (lmtp_spawn(master) == NULL)
			break;
	}
}

void lmtp_shutdown_all(struct master *master)
{
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->service->kind != SERVICE_LMTP || child->shutting_down)
			continue;
		child->shutting_down = true;
		child->listening = false;
		(void)ipc_sendv(child->conn, -1, "SHUTDOWN", NULL);
	}
}

static void lmtp_kill(struct child *child, const char *why)
{
	i_error("lmtp %d %s, killing it", (int)child->pid, why);
	child_kill(child, SIGKILL);
}

/* LOAD <clients> <accepting:0|1>, as imap-login's */
static void lmtp_handle_load(struct child *child, const char *const *args)
{
	unsigned int clients;

	if (str_array_length(args) != 3 || str_to_uint(args[1], &clients) < 0 ||
	    (strcmp(args[2], "0") != 0 && strcmp(args[2], "1") != 0)) {
		lmtp_kill(child, "sent a malformed LOAD");
		return;
	}
	child->clients = clients;
	child->idle_since_ms = clients == 0 ? time_monotonic_ms() : 0;
	if (!child->shutting_down)
		child->listening = args[2][0] == '1';
	lmtp_ensure_available(child->master);
}

static void rcpt_reply(struct lmtp_rcpt *rcpt, int fd, const char *result,
		       const char *arg1, const char *arg2)
{
	if (rcpt->lmtp != NULL && rcpt->lmtp->conn != NULL)
		(void)ipc_sendv(rcpt->lmtp->conn, fd, result, rcpt->lmtp_id,
				arg1, arg2, NULL);
}

static void rcpt_free(struct lmtp_rcpt *rcpt)
{
	timeout_remove(&rcpt->to);
	free(rcpt->lmtp_id);
	free(rcpt->user);
	free(rcpt);
}

static bool rcpt_field_ok(const char *value, size_t max)
{
	size_t len = strlen(value);

	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)value[i] <= 0x20 || value[i] == 0x7f)
			return false;
	}
	return true;
}

static struct lmtp_rcpt *rcpt_unlink(struct master *master, unsigned int id);

static void rcpt_timeout(void *context)
{
	struct lmtp_rcpt *rcpt = context;
	struct master *master = rcpt->lmtp->master;

	rcpt->to = NULL;
	i_error("userdb lookup of %s timed out", rcpt->user);
	(void)rcpt_unlink(master, rcpt->id);
	rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail", "User database timeout");
	rcpt_free(rcpt);
}

/* RCPT <id> <user>: look the user up in the userdb. */
static void lmtp_handle_rcpt(struct child *lmtp, const char *const *args)
{
	struct master *master = lmtp->master;
	unsigned int pending = 0;

	if (str_array_length(args) != 3 ||
	    !rcpt_field_ok(args[1], LMTP_RCPT_ID_MAX) ||
	    !rcpt_field_ok(args[2], LMTP_RCPT_USER_MAX)) {
		lmtp_kill(lmtp, "sent a malformed RCPT");
		return;
	}
	for (struct lmtp_rcpt *r = master->lmtp_rcpts; r != NULL; r = r->next)
		pending++;
	if (master->auth == NULL || master->auth->conn == NULL ||
	    master->auth->shutting_down || pending >= LMTP_RCPT_MAX_PENDING) {
		(void)ipc_sendv(lmtp->conn, -1, "RCPT-FAIL", args[1], "tempfail",
				"User database unavailable", NULL);
		return;
	}
	struct lmtp_rcpt *rcpt = i_malloc(sizeof(*rcpt));
	rcpt->id = ++master->next_lmtp_rcpt_id;
	rcpt->lmtp = lmtp;
	rcpt->lmtp_id = i_strdup(args[1]);
	rcpt->user = i_strdup(args[2]);
	rcpt->next = master->lmtp_rcpts;
	master->lmtp_rcpts = rcpt;
	rcpt->to = timeout_add(master->ioloop, LMTP_RCPT_TIMEOUT_MSECS,
			       rcpt_timeout, rcpt);

	char id[32];
	snprintf(id, sizeof(id), "%u", rcpt->id);
	if (ipc_sendv(master->auth->conn, -1, "USERDB", id, rcpt->user, NULL) < 0)
		lmtp_rcpt_fail_all(master, "User database unavailable");
}

static struct lmtp_rcpt *rcpt_unlink(struct master *master, unsigned int id)
{
	for (struct lmtp_rcpt **p = &master->lmtp_rcpts; *p != NULL; p = &(*p)->next) {
		if ((*p)->id == id) {
			struct lmtp_rcpt *rcpt = *p;
			*p = rcpt->next;
			return rcpt;
		}
	}
	return NULL;
}

/* USERDB-USER <id> <user> <uid> <gid> <home> <mail> <quota storage>
   <quota messages>: a delivery connection to the user's imap process. */
static void rcpt_route(struct master *master, struct lmtp_rcpt *rcpt,
		       const char *const *args)
{
	const char *error = "Internal error: invalid user data";
	struct child *imap = str_array_length(args) != 9 ? NULL :
		imap_get_user(master, args + 2, &error);
	if (imap == NULL) {
		i_error("delivery to user %s refused: %s", rcpt->user, error);
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail", error);
		return;
	}
	int pair[2];
	if (ipc_socketpair(pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail", "Internal error");
		return;
	}
	if (ipc_sendv(imap->conn, pair[0], "DELIVER-CONN", NULL) < 0) {
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail",
			   "Internal error: mail process unavailable");
	} else {
		i_debug("lmtp: recipient %s is user %s (imap pid %d)",
			rcpt->user, args[2], (int)imap->pid);
		master_admin_lmtp_rcpt_ok(master);
		rcpt_reply(rcpt, pair[1], "RCPT-OK", args[2], NULL);
	}
	close(pair[0]);
	close(pair[1]);
}

void lmtp_rcpt_auth_reply(struct master *master, const char *const *args)
{
	unsigned int id;

	if (args[1] == NULL || str_to_uint(args[1], &id) < 0)
		return;
	struct lmtp_rcpt *rcpt = rcpt_unlink(master, id);
	if (rcpt == NULL)
		return;   /* its lmtp died meanwhile */
	if (strcmp(args[0], "USERDB-USER") == 0)
		rcpt_route(master, rcpt, args);
	else if (strcmp(args[0], "USERDB-NOTFOUND") == 0)
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "notfound", "No such user");
	else
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail",
			   "User database lookup failed");
	rcpt_free(rcpt);
}

void lmtp_rcpt_fail_all(struct master *master, const char *reason)
{
	while (master->lmtp_rcpts != NULL) {
		struct lmtp_rcpt *rcpt = master->lmtp_rcpts;
		master->lmtp_rcpts = rcpt->next;
		rcpt_reply(rcpt, -1, "RCPT-FAIL", "tempfail", reason);
		rcpt_free(rcpt);
	}
}

void lmtp_rcpt_lmtp_gone(struct master *master, struct child *lmtp)
{
	for (struct lmtp_rcpt **p = &master->lmtp_rcpts; *p != NULL;) {
		struct lmtp_rcpt *rcpt = *p;
		if (rcpt->lmtp == lmtp) {
			*p = rcpt->next;
			rcpt_free(rcpt);
		} else {
			p = &rcpt->next;
		}
	}
}

void lmtp_input(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		return;
	}
	if (fd >= 0) {
		close(fd);
		lmtp_kill(child, "sent an unexpected fd");
		return;
	}
	if (strcmp(args[0], "RCPT") == 0)
		lmtp_handle_rcpt(child, args);
	else if (strcmp(args[0], "LOAD") == 0)
		lmtp_handle_load(child, args);
	else if (strcmp(args[0], "LISTEN-DONE") == 0) {
		child->listening = false;
		lmtp_ensure_available(child->master);
	} else if (strcmp(args[0], "DELIVERY-STATS") == 0) {
		if (!master_metrics_lmtp_stats(child->master, args))
			lmtp_kill(child, "sent a malformed DELIVERY-STATS record");
	} else {
		/* lmtp parses the MTA's bytes: a protocol violation ends it. */
		lmtp_kill(child, "sent an unknown record");
	}
}
