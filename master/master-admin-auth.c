/* The admin requests that go through auth: USER and MAIL ask auth's
   userdb as lmtp routing does (USERDB <id> <user>); AUTH-TEST checks a
   password the way imap-login does, over a moat-auth-client socket of
   its own (SASL PLAIN, from 127.0.0.1, secured), so the passdbs, the
   penalty and the "auth failed:" log line are exactly a login's. */
#include "master-admin-private.h"
#include "strfuncs.h"

#include <sys/socket.h>

/* A password from moatadm: auth's SASL limit. */
#define ADMIN_PASSWORD_MAX 8192
/* The address an admin's test authenticates from (penalty, logs). */
#define ADMIN_AUTH_RIP "127.0.0.1"

static void admin_auth_timeout(void *context)
{
	struct admin_request *req = context;

	req->to = NULL;
	admin_request_fail(req, "tempfail", "auth did not answer in time");
}

void admin_auth_userdb(struct admin_request *req)
{
	struct master *master = req->client->admin->master;

	if (master->auth == NULL || master->auth->conn == NULL ||
	    master->auth->shutting_down ||
	    ipc_sendv(master->auth->conn, -1, "USERDB", req->id, req->user,
		      NULL) < 0) {
		admin_request_fail(req, "tempfail", "auth is not running");
		return;
	}
	req->to = timeout_add(master->ioloop, ADMIN_REQUEST_TIMEOUT_MSECS,
			      admin_auth_timeout, req);
}

/* The user's imap process (spawned if needed) serves one end of a new
   stream socket as a logged-in session; moatadm gets the other. fields:
   USERDB-USER's after the id. */
static void admin_mail_session(struct admin_request *req,
			       const char *const *fields)
{
	struct master *master = req->client->admin->master;
	const char *error;
	int pair[2];

	struct child *imap = imap_get_user(master, fields, &error);
	if (imap == NULL) {
		admin_request_fail(req, "tempfail", error);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		admin_request_fail(req, "tempfail", "socketpair() failed");
		return;
	}
	/* The tag makes the process answer "a0 OK" (or NO [LIMIT]), which
	   moatadm waits for before its first command. */
	if (ipc_sendv(imap->conn, pair[0], "CONN", req->id, "a0", "moatadm",
		      "0", "local", "0", "1", "ADMIN", "", NULL) < 0) {
		admin_request_fail(req, "tempfail", "mail process unavailable");
	} else {
		master->admin->stats.imap_sessions_total++;
		i_info("moatadm: session of user %s for uid %u (imap pid %d)",
		       fields[0], (unsigned)req->client->uid, (int)imap->pid);
		(void)ipc_sendv(req->client->conn, pair[1], "MAIL-OK",
				fields[0], NULL);
		admin_request_done(req);
	}
	close(pair[0]);
	close(pair[1]);
}

static void admin_mailop_timeout(void *context)
{
	struct admin_request *req = context;

	req->to = NULL;
	admin_request_fail(req, "tempfail", "the mail process did not answer "
			   "in time (it may still finish)");
}

/* The user's imap process, the one writer of the user's files, does it:
   ADMIN-OP <id> <op>. */
static void admin_mailop_send(struct admin_request *req,
			      const char *const *fields)
{
	struct master *master = req->client->admin->master;
	const char *error;

	struct child *imap = imap_get_user(master, fields, &error);
	if (imap == NULL) {
		admin_request_fail(req, "tempfail", error);
		return;
	}
	if (ipc_sendv(imap->conn, -1, "ADMIN-OP", req->id, req->op,
		      req->reason, NULL) < 0) {
		admin_request_fail(req, "tempfail", "mail process unavailable");
		return;
	}
	i_info("moatadm: %s of user %s by uid %u", req->op, fields[0],
	       (unsigned)req->client->uid);
	req->waiting = i_malloc(sizeof(pid_t));
	req->waiting[0] = imap->pid;
	req->waiting_count = 1;
	req->to = timeout_add(master->ioloop, ADMIN_MAILOP_TIMEOUT_MSECS,
			      admin_mailop_timeout, req);
}

static void admin_user_send(struct admin_request *req,
			    const char *const *fields)
{
	struct master *master = req->client->admin->master;
	struct child *imap = imap_find_user(master, fields[0]);
	char pid[32] = "";

	if (imap != NULL)
		snprintf(pid, sizeof(pid), "%d", (int)imap->pid);
	admin_send_rowv(req->client, "user", fields[0], "uid", fields[1],
			"gid", fields[2], "home", fields[3], "mail", fields[4],
			"quota_storage", fields[5], "quota_messages", fields[6],
			"imap_pid", pid, NULL);
	admin_request_done(req);
}

bool master_admin_auth_reply(struct master *master, const char *const *args)
{
	if (master->admin == NULL || args[1] == NULL ||
	    strncmp(args[1], "admin-", 6) != 0)
		return false;
	struct admin_request *req = admin_request_find(master->admin, args[1]);
	if (req == NULL ||
	    (req->kind != ADMIN_REQ_USER && req->kind != ADMIN_REQ_MAIL &&
	     req->kind != ADMIN_REQ_MAILOP))
		return true;   /* its client went away meanwhile */
	if (strcmp(args[0], "USERDB-NOTFOUND") == 0) {
		admin_request_fail(req, "notfound", "No such user");
		return true;
	}
	if (strcmp(args[0], "USERDB-USER") != 0 || str_array_length(args) != 9) {
		admin_request_fail(req, "tempfail", "User database lookup failed");
		return true;
	}
	timeout_remove(&req->to);
	if (req->kind == ADMIN_REQ_USER)
		admin_user_send(req, args + 2);
	else if (req->kind == ADMIN_REQ_MAIL)
		admin_mail_session(req, args + 2);
	else
		admin_mailop_send(req, args + 2);
	return true;
}

/* OK <id> <user> <token> | FAIL <id> <code> <text> | CONT <id> ... */
static void admin_auth_test_input(void *context, const char *const *args,
				  int fd)
{
	struct admin_request *req = context;

	if (fd >= 0)
		close(fd);
	if (args == NULL) {
		admin_request_fail(req, "tempfail", "auth closed the connection");
		return;
	}
	unsigned int count = str_array_length(args);
	if (strcmp(args[0], "OK") == 0 && count == 4) {
		/* The token is never redeemed: it expires in auth. */
		admin_send_rowv(req->client, "user", args[2], "result", "ok",
				NULL);
		admin_request_done(req);
	} else if (strcmp(args[0], "FAIL") == 0 && count == 4) {
		admin_send_rowv(req->client, "user", req->user, "result",
				args[2], "text", args[3], NULL);
		admin_request_fail(req, strcmp(args[2], "tempfail") == 0 ?
				   "tempfail" : "refused", args[3]);
	} else {
		admin_request_fail(req, "tempfail", "unexpected answer of auth");
	}
}

/* SASL PLAIN's message: authzid NUL authcid NUL password, base64. */
static char *admin_plain_b64(pool_t pool, const char *user,
			     const unsigned char *password, size_t size)
{
	size_t user_len = strlen(user);
	size_t total = 1 + user_len + 1 + size;
	unsigned char *msg = p_malloc(pool, total);

	msg[0] = '\0';
	memcpy(msg + 1, user, user_len);
	msg[1 + user_len] = '\0';
	memcpy(msg + 2 + user_len, password, size);
	char *b64 = p_base64_encode(pool, msg, total);
	safe_memset(msg, 0, total);
	return b64;
}

void admin_auth_test(struct admin_request *req)
{
	struct master *master = req->client->admin->master;
	pool_t pool = pool_create("admin auth test", 1024);
	unsigned char *password;
	size_t size;

	if (strlen(req->password_b64) > ADMIN_PASSWORD_MAX * 4 / 3 + 4 ||
	    p_base64_decode(pool, req->password_b64, strlen(req->password_b64),
			    &password, &size) < 0 ||
	    memchr(password, '\0', size) != NULL) {
		pool_unref(&pool);
		admin_request_fail(req, "usage", "Invalid password field");
		return;
	}
	char *b64 = admin_plain_b64(pool, req->user, password, size);
	safe_memset(password, 0, size);
	int fd = auth_connect_login(master, getpid());
	if (fd < 0) {
		safe_memset(b64, 0, strlen(b64));
		pool_unref(&pool);
		admin_request_fail(req, "tempfail", "auth is not running");
		return;
	}
	req->auth_conn = ipc_conn_create(master->ioloop, fd, "admin-auth-test",
					 IPC_PROTO_AUTH_CLIENT, IPC_PROTO_MAJOR,
					 IPC_PROTO_MINOR, admin_auth_test_input,
					 req);
	int ret = ipc_sendv(req->auth_conn, -1, "AUTH", "1", "PLAIN",
			    ADMIN_AUTH_RIP, ADMIN_AUTH_RIP, "1", b64, NULL);
	safe_memset(b64, 0, strlen(b64));
	pool_unref(&pool);
	if (ret < 0) {
		admin_request_fail(req, "tempfail", "auth is not running");
		return;
	}
	req->to = timeout_add(master->ioloop, ADMIN_REQUEST_TIMEOUT_MSECS,
			      admin_auth_timeout, req);
}
