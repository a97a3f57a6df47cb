/* The admin socket: creation, who may connect, and the request framing
   (master-admin.h). Master parses only these short records from root or
   the admin group; nothing here reads a client's IMAP bytes. */
#include "master-admin-private.h"
#include "restrict.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#define IPC_PROTO_ADMIN "moat-admin"
#define ADMIN_SOCKET_NAME "admin"
/* Pending connections in the kernel queue. */
#define ADMIN_LISTEN_BACKLOG 16

static void admin_conn_destroy(struct admin_conn *client);

/* admin_group's gid, looked up when the settings are (re)loaded, not per
   connection: NSS may block. */
static gid_t admin_group_lookup(const struct moat_settings *set)
{
	if (set->admin_group[0] == '\0')
		return (gid_t)-1;
	struct group *gr = getgrnam(set->admin_group);
	if (gr == NULL) {
		i_error("admin_group %s does not exist: the admin socket is "
			"for root only", set->admin_group);
		return (gid_t)-1;
	}
	return gr->gr_gid;
}

static void admin_socket_set_owner(struct master_admin *admin)
{
	struct master *master = admin->master;

	admin->gid = admin_group_lookup(master->set);
	if (!master->root)
		return;
	/* 0660 root:admin_group: the file mode is the first lock, the
	   peer check below the second. */
	if (chown(admin->path, 0, admin->gid == (gid_t)-1 ? 0 : admin->gid) < 0)
		i_error("chown(%s) failed: %s", admin->path, strerror(errno));
}

static bool admin_peer_in_group(int fd, gid_t gid)
{
	gid_t groups[ADMIN_PEER_GROUPS_MAX];
	socklen_t len = sizeof(groups);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;   /* ERANGE: more groups than we read */
	for (size_t i = 0; i < len / sizeof(gid_t); i++) {
		if (groups[i] == gid)
			return true;
	}
	return false;
}

/* Root, master's own uid (a development master not run as root), or a
   member of admin_group. */
static bool admin_peer_allowed(struct master_admin *admin, int fd,
			       const struct ucred *cred)
{
	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	if (admin->gid == (gid_t)-1)
		return false;
	return cred->gid == admin->gid || admin_peer_in_group(fd, admin->gid);
}

static void admin_input(void *context, const char *const *args, int fd)
{
	struct admin_conn *client = context;

	if (args == NULL) {
		admin_conn_destroy(client);
		return;
	}
	if (client->refused) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd >= 0) {
		close(fd);
		i_warning("admin client pid %d sent an fd; closing it",
			  (int)client->pid);
		admin_conn_destroy(client);
		return;
	}
	if (client->req != NULL) {
		/* One at a time: the protocol has no ids to tell answers
		   apart. */
		(void)ipc_sendv(client->conn, -1, "FAIL", "usage",
				"A request is already in progress", NULL);
		admin_conn_destroy(client);
		return;
	}
	admin_cmd_dispatch(client, args);
}

static void admin_refused_timeout(void *context)
{
	struct admin_conn *client = context;

	client->to_refused = NULL;
	admin_conn_destroy(client);
}

static void admin_accept(void *context)
{
	struct master_admin *admin = context;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	int fd = accept4(admin->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			i_error("accept(%s) failed: %s", admin->path, strerror(errno));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		i_error("getsockopt(SO_PEERCRED) failed: %s", strerror(errno));
		close(fd);
		return;
	}
	if (admin->conn_count >= ADMIN_CONNS_MAX) {
		i_warning("admin: %u clients already, closing the one of pid %d",
			  admin->conn_count, (int)cred.pid);
		close(fd);
		return;
	}
	struct admin_conn *client = i_malloc(sizeof(*client));
	client->admin = admin;
	client->uid = cred.uid;
	client->pid = cred.pid;
	bool allowed = admin_peer_allowed(admin, fd, &cred);
	client->conn = ipc_conn_create(admin->master->ioloop, fd, "admin",
				       IPC_PROTO_ADMIN, IPC_PROTO_MAJOR,
				       IPC_PROTO_MINOR, admin_input, client);
	client->next = admin->conns;
	if (admin->conns != NULL)
		admin->conns->prev = client;
	admin->conns = client;
	admin->conn_count++;
	if (!allowed) {
		i_warning("admin: refused uid %u (pid %d): not root and not in "
			  "admin_group", (unsigned)cred.uid, (int)cred.pid);
		(void)ipc_sendv(client->conn, -1, "FAIL", "refused",
				"Permission denied: not root and not in admin_group",
				NULL);
		client->refused = true;
		client->to_refused = timeout_add(admin->master->ioloop,
			ADMIN_REFUSED_LINGER_MSECS, admin_refused_timeout, client);
	}
}

static void admin_request_free(struct admin_request **_req)
{
	struct admin_request *req = *_req;

	*_req = NULL;
	admin_request_cleanup(req);
	free(req->user);
	free(req->reason);
	free(req->op);
	free(req);
}

static void admin_conn_destroy(struct admin_conn *client)
{
	struct master_admin *admin = client->admin;

	if (client->req != NULL)
		admin_request_free(&client->req);
	timeout_remove(&client->to_refused);
	if (client->prev != NULL)
		client->prev->next = client->next;
	else
		admin->conns = client->next;
	if (client->next != NULL)
		client->next->prev = client->prev;
	admin->conn_count--;
	if (client->conn != NULL)
		ipc_conn_destroy(&client->conn);
	free(client);
}

void admin_send_row(struct admin_conn *client, const char *const *fields)
{
	const char *args[IPC_MAX_ARGS];
	unsigned int count = 0;

	args[count++] = "ROW";
	for (; *fields != NULL && count < IPC_MAX_ARGS - 1; fields++)
		args[count++] = *fields;
	args[count] = NULL;
	(void)ipc_send(client->conn, args, -1);
}

void admin_send_rowv(struct admin_conn *client, ...)
{
	const char *fields[IPC_MAX_ARGS];
	unsigned int count = 0;
	va_list va;
	const char *field;

	va_start(va, client);
	while ((field = va_arg(va, const char *)) != NULL &&
	       count < IPC_MAX_ARGS - 2)
		fields[count++] = field;
	va_end(va);
	fields[count] = NULL;
	admin_send_row(client, fields);
}

void admin_request_done(struct admin_request *req)
{
	struct admin_conn *client = req->client;

	(void)ipc_sendv(client->conn, -1, "DONE", NULL);
	admin_request_free(&client->req);
}

void admin_request_fail(struct admin_request *req, const char *code,
			const char *text)
{
	struct admin_conn *client = req->client;

	(void)ipc_sendv(client->conn, -1, "FAIL", code, text, NULL);
	admin_request_free(&client->req);
}

struct admin_request *admin_request_find(struct master_admin *admin,
					 const char *id)
{
	for (struct admin_conn *c = admin->conns; c != NULL; c = c->next) {
		if (c->req != NULL && strcmp(c->req->id, id) == 0)
			return c->req;
	}
	return NULL;
}

void master_admin_init(struct master *master)
{
	struct master_admin *admin = i_malloc(sizeof(*admin));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	admin->master = master;
	admin->gid = (gid_t)-1;
	admin->stats.started_ms = (uint64_t)time(NULL) * 1000;
	admin->path = i_strdup_printf("%s/" ADMIN_SOCKET_NAME,
				      master->set->base_dir);
	if (strlen(admin->path) >= sizeof(sa.sun_path))
		i_fatal("%s: path too long for a unix socket", admin->path);
	memcpy(sa.sun_path, admin->path, strlen(admin->path) + 1);
	admin->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (admin->fd < 0)
		i_fatal("socket(AF_UNIX) failed: %s", strerror(errno));
	/* A stale socket of an earlier run (the pid file said none runs). */
	(void)unlink(admin->path);
	mode_t old_umask = umask(0117);
	int ret = bind(admin->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (ret < 0)
		i_fatal("bind(%s) failed: %s", admin->path, strerror(errno));
	if (chmod(admin->path, 0660) < 0)
		i_fatal("chmod(%s) failed: %s", admin->path, strerror(errno));
	admin_socket_set_owner(admin);
	if (listen(admin->fd, ADMIN_LISTEN_BACKLOG) < 0)
		i_fatal("listen(%s) failed: %s", admin->path, strerror(errno));
	admin->io = io_add(master->ioloop, admin->fd, IO_READ, admin_accept, admin);
	master->admin = admin;
	admin_log_init(admin);
}

void master_admin_reload(struct master *master)
{
	if (master->admin != NULL)
		admin_socket_set_owner(master->admin);
}

void master_admin_deinit(struct master *master)
{
	struct master_admin *admin = master->admin;

	if (admin == NULL)
		return;
	admin_log_deinit(admin);
	while (admin->conns != NULL)
		admin_conn_destroy(admin->conns);
	io_remove(&admin->io);
	i_close_fd(&admin->fd);
	(void)unlink(admin->path);
	free(admin->path);
	free(admin);
	master->admin = NULL;
}

void master_admin_login_ok(struct master *master)
{
	if (master->admin != NULL) {
		master->admin->stats.logins_ok++;
		master->admin->stats.imap_sessions_total++;
	}
}

void master_admin_lmtp_rcpt_ok(struct master *master)
{
	if (master->admin != NULL)
		master->admin->stats.lmtp_recipients_total++;
}

void master_admin_lmtp_rcpt_reused(struct master *master, uint64_t count)
{
	if (master->admin != NULL)
		master->admin->stats.lmtp_recipients_total += count;
}
