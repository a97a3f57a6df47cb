/* Routing an authenticated client: imap-login hands over the fd and a
   token; master redeems the token with auth (imap-login cannot), then
   passes the fd to the user's imap process. Master keeps its copy of the
   fd until the process acknowledges the CONN (CONN-DONE, sent before it
   writes anything to the client): a process that dies with the CONN
   still unread in its socket (a crash, the OOM killer) took the fd along
   unanswered, and master routes the connection to a new process. */
#include "master-common.h"
#include "master-admin.h"
#include "strfuncs.h"

#include <signal.h>

/* Handoffs in master at once, waiting for auth or for an imap process's
   CONN-DONE (each holds a client fd); beyond this imap-login gets a
   temporary failure (auth or an imap process is stuck or flooded). */
#define HANDOFF_MAX_PENDING 10000

/* HANDOFF <id> <token> <tag> <rip> <rport> <lip> <lport> <secured> <mech>
   <tls> <b64> */
enum {
	HF_ID = 1, HF_TOKEN, HF_TAG, HF_RIP, HF_RPORT, HF_LIP, HF_LPORT,
	HF_SECURED, HF_MECH, HF_TLS, HF_DATA, HF_COUNT
};
/* The tls field is logged: "none" or a short protocol name. */
#define HF_TLS_MAX_LEN 32
/* auth's USER record: USER <id> <user> <uid> <gid> <home> <mail> <quota
   storage> <quota messages>; imap_get_user() takes the fields after the
   id. */
#define USER_RECORD_ARGS 9
#define USER_FIELD_COUNT (USER_RECORD_ARGS - 2)
/* Processes a connection is routed to before master gives up on it (each
   died before reading it). */
#define HANDOFF_MAX_ROUTES 3

struct handoff {
	struct handoff *next;
	unsigned int id;
	struct child *login;
	int fd;
	char *fields[HF_COUNT];
	/* once routed: the process that has not acknowledged it yet, the
	   user's fields to route it again, and how often it was routed */
	struct child *imap;
	char *user_fields[USER_FIELD_COUNT + 1];
	unsigned int routes;
};

static void handoff_free(struct handoff *handoff)
{
	i_close_fd(&handoff->fd);
	for (unsigned int i = 0; i < HF_COUNT; i++)
		free(handoff->fields[i]);
	for (unsigned int i = 0; i < USER_FIELD_COUNT; i++)
		free(handoff->user_fields[i]);
	free(handoff);
}

static void handoff_reply(struct handoff *handoff, const char *result,
			  const char *reason)
{
	if (handoff->login != NULL && handoff->login->conn != NULL)
		(void)ipc_sendv(handoff->login->conn, -1, result,
				handoff->fields[HF_ID], reason, NULL);
}

static struct handoff *handoff_unlink(struct master *master, unsigned int id)
{
	for (struct handoff **p = &master->handoffs; *p != NULL; p = &(*p)->next) {
		if ((*p)->id == id) {
			struct handoff *handoff = *p;
			*p = handoff->next;
			return handoff;
		}
	}
	return NULL;
}

static bool tls_field_ok(const char *value)
{
	size_t len = strlen(value);

	if (len == 0 || len > HF_TLS_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = value[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
	}
	return true;
}

void handoff_start(struct child *login, const char *const *args, int fd)
{
	struct master *master = login->master;
	unsigned int pending = 0;

	if (str_array_length(args) != HF_COUNT || !tls_field_ok(args[HF_TLS])) {
		i_error("imap-login %d sent a malformed HANDOFF, killing it", (int)login->pid);
		close(fd);
		child_kill(login, SIGKILL);
		return;
	}
	for (struct handoff *h = master->handoffs; h != NULL; h = h->next)
		pending++;
	for (struct handoff *h = master->handoffs_routed; h != NULL; h = h->next)
		pending++;
	if (master->auth == NULL || master->auth->conn == NULL ||
	    pending >= HANDOFF_MAX_PENDING) {
		close(fd);
		/* No auth: the one that issued the token is gone, and a new
		   authentication with the next one may succeed. */
		(void)ipc_sendv(login->conn, -1, pending >= HANDOFF_MAX_PENDING ?
				"HANDOFF-FAIL" : "HANDOFF-RETRY", args[HF_ID],
				"Authentication service unavailable", NULL);
		return;
	}
	struct handoff *handoff = i_malloc(sizeof(*handoff));
	handoff->id = ++master->next_handoff_id;
	handoff->login = login;
	handoff->fd = fd;
	for (unsigned int i = 1; i < HF_COUNT; i++)
		handoff->fields[i] = i_strdup(args[i]);
	handoff->next = master->handoffs;
	master->handoffs = handoff;

	char id[32], pid[32];
	snprintf(id, sizeof(id), "%u", handoff->id);
	snprintf(pid, sizeof(pid), "%d", (int)login->pid);
	if (ipc_sendv(master->auth->conn, -1, "REDEEM", id, args[HF_TOKEN], pid, NULL) < 0) {
		handoff_unlink(master, handoff->id);
		handoff_reply(handoff, "HANDOFF-RETRY", "Authentication service unavailable");
		handoff_free(handoff);
	}
}

static int handoff_send_conn(struct child *imap, struct handoff *handoff)
{
	char id[32];

	/* "h" + master's id: unique among the CONNs of admin sessions too */
	snprintf(id, sizeof(id), "h%u", handoff->id);
	return ipc_sendv(imap->conn, handoff->fd, "CONN", id,
			 handoff->fields[HF_TAG], handoff->fields[HF_RIP],
			 handoff->fields[HF_RPORT], handoff->fields[HF_LIP],
			 handoff->fields[HF_LPORT], handoff->fields[HF_SECURED],
			 handoff->fields[HF_MECH], handoff->fields[HF_DATA], NULL);
}

/* The connection to the user's imap process (a new one if the one found
   turns out dead); false if none took it. */
static bool handoff_send_user(struct master *master, struct handoff *handoff,
			      const char **error_r)
{
	const char *const *fields = (const char *const *)handoff->user_fields;
	struct child *imap = imap_get_user(master, fields, error_r);

	if (imap == NULL)
		return false;
	if (handoff_send_conn(imap, handoff) < 0) {
		/* the process died and master has not read its channel's
		   end yet (a SIGKILL just now): what the EOF would do, then
		   a new process for this login */
		i_warning("imap process %d of %s is gone; starting another",
			  (int)imap->pid, fields[0]);
		ipc_conn_destroy(&imap->conn);
		master_admin_imap_gone(imap);
		handoff_imap_gone(master, imap);
		imap = imap_get_user(master, fields, error_r);
		if (imap == NULL)
			return false;
		if (handoff_send_conn(imap, handoff) < 0) {
			*error_r = "Internal error: mail process unavailable";
			return false;
		}
	}
	handoff->imap = imap;
	handoff->routes++;
	return true;
}

/* Routed and waiting for CONN-DONE: true. */
static bool handoff_route(struct master *master, struct handoff *handoff,
			  const char *const *args)
{
	const char *error = "Internal error: invalid user data";

	if (str_array_length(args) != USER_RECORD_ARGS) {
		i_error("login of user %s refused: %s",
			args[1] != NULL && args[2] != NULL ? args[2] : "?",
			error);
		handoff_reply(handoff, "HANDOFF-FAIL", error);
		return false;
	}
	for (unsigned int i = 0; i < USER_FIELD_COUNT; i++)
		handoff->user_fields[i] = i_strdup(args[2 + i]);
	if (!handoff_send_user(master, handoff, &error)) {
		i_error("login of user %s refused: %s", args[2], error);
		handoff_reply(handoff, "HANDOFF-FAIL", error);
		return false;
	}
	i_info("login: user=<%s>, method=%s, rip=%s, lip=%s, tls=%s, pid=%d",
	       args[2], handoff->fields[HF_MECH], handoff->fields[HF_RIP],
	       handoff->fields[HF_LIP], handoff->fields[HF_TLS],
	       (int)handoff->imap->pid);
	master_admin_login_ok(master);
	handoff_reply(handoff, "HANDOFF-OK", NULL);
	/* imap-login is done with it; this copy waits for CONN-DONE */
	handoff->login = NULL;
	handoff->next = master->handoffs_routed;
	master->handoffs_routed = handoff;
	return true;
}

void handoff_auth_reply(struct master *master, const char *const *args)
{
	unsigned int id;

	if (args[1] == NULL || str_to_uint(args[1], &id) < 0)
		return;
	struct handoff *handoff = handoff_unlink(master, id);
	if (handoff == NULL)
		return;   /* its imap-login died meanwhile */
	if (strcmp(args[0], "FOREIGN") == 0) {
		/* Issued by the auth this one replaced; the client's login
		   can be authenticated again with this one. */
		handoff_reply(handoff, "HANDOFF-RETRY",
			      "Authentication service restarted");
	} else if (strcmp(args[0], "NOTFOUND") == 0) {
		i_warning("imap-login %d handed over an invalid or expired token",
			  handoff->login != NULL ? (int)handoff->login->pid : -1);
		handoff_reply(handoff, "HANDOFF-FAIL", "Login token is not valid");
	} else if (handoff_route(master, handoff, args)) {
		return;
	}
	handoff_free(handoff);
}

bool handoff_conn_done(struct child *imap, const char *const *args)
{
	struct master *master = imap->master;
	unsigned int id;

	if (str_array_length(args) != 2)
		return false;
	if (args[1][0] != 'h') {
		/* an admin session's CONN (master-admin-auth.c): nothing
		   waits for its acknowledgement */
		return true;
	}
	if (str_to_uint(args[1] + 1, &id) < 0)
		return false;
	for (struct handoff **p = &master->handoffs_routed; *p != NULL;
	     p = &(*p)->next) {
		if ((*p)->id == id && (*p)->imap == imap) {
			struct handoff *handoff = *p;
			*p = handoff->next;
			handoff_free(handoff);
			break;
		}
	}
	return true;
}

void handoff_imap_gone(struct master *master, struct child *imap)
{
	static const char bye[] =
		"* BYE [UNAVAILABLE] Mail process unavailable, try again\r\n";
	struct handoff *again = NULL;

	/* unlink first: routing again may find more dead processes */
	for (struct handoff **p = &master->handoffs_routed; *p != NULL;) {
		struct handoff *handoff = *p;
		if (handoff->imap == imap) {
			*p = handoff->next;
			handoff->imap = NULL;
			handoff->next = again;
			again = handoff;
		} else {
			p = &handoff->next;
		}
	}
	while (again != NULL) {
		struct handoff *handoff = again;
		const char *error = "Server shutting down";

		again = handoff->next;
		if (!master->stopping && handoff->routes < HANDOFF_MAX_ROUTES) {
			i_warning("imap process %d of %s died before taking a "
				  "connection; routing it again", (int)imap->pid,
				  handoff->user_fields[0]);
			if (handoff_send_user(master, handoff, &error)) {
				handoff->next = master->handoffs_routed;
				master->handoffs_routed = handoff;
				continue;
			}
		}
		if (!master->stopping)
			i_error("connection of user %s dropped: %s",
				handoff->user_fields[0], error);
		(void)write(handoff->fd, bye, sizeof(bye) - 1);
		handoff_free(handoff);
	}
}

void handoff_fail_all(struct master *master, const char *reason, bool retry)
{
	/* routed ones are the imap processes' now: waiting for CONN-DONE
	   needs no auth, and at shutdown their processes' exits close them */
	while (master->handoffs != NULL) {
		struct handoff *handoff = master->handoffs;
		master->handoffs = handoff->next;
		handoff_reply(handoff, retry ? "HANDOFF-RETRY" : "HANDOFF-FAIL",
			      reason);
		handoff_free(handoff);
	}
}

void handoff_login_gone(struct master *master, struct child *login)
{
	for (struct handoff **p = &master->handoffs; *p != NULL;) {
		struct handoff *handoff = *p;
		if (handoff->login == login) {
			*p = handoff->next;
			handoff_free(handoff);
		} else {
			p = &handoff->next;
		}
	}
}
