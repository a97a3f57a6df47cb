#ifndef MASTER_ADMIN_PRIVATE_H
#define MASTER_ADMIN_PRIVATE_H
/* Shared by master-admin*.c: the socket, its clients and their requests. */

#include "master-admin.h"

enum admin_request_kind {
	ADMIN_REQ_WHO,
	ADMIN_REQ_STATS,
	ADMIN_REQ_STATS_AUTH,
	ADMIN_REQ_KICK,
	ADMIN_REQ_USER,
	ADMIN_REQ_MAIL,
	ADMIN_REQ_AUTH_TEST,
	ADMIN_REQ_MAILOP,
};

struct admin_conn;

/* One request of a client; at most one per client at a time. */
struct admin_request {
	struct admin_conn *client;
	enum admin_request_kind kind;
	char id[32];              /* "admin-N": sent to auth and imap */
	char *user;
	char *reason;             /* KICK */
	char *op;                 /* MAILOP */
	/* imap processes asked (WHO, STATS, KICK) that have not answered */
	pid_t *waiting;
	unsigned int waiting_count;
	unsigned int sessions;    /* summed from their answers */
	unsigned int processes;
	struct timeout *to;
	struct ipc_conn *auth_conn;  /* AUTH-TEST: our client socket to auth */
	char *password_b64;          /* AUTH-TEST, wiped when freed */
};

struct admin_conn {
	struct admin_conn *next, *prev;
	struct master_admin *admin;
	struct ipc_conn *conn;
	uid_t uid;
	pid_t pid;
	struct admin_request *req;
	/* Refused (FAIL refused sent): kept open until the client closes
	   or ADMIN_REFUSED_LINGER_MSECS pass, so that it reads the answer
	   (closing with its request unread would reset the connection);
	   its records are ignored. */
	bool refused;
	struct timeout *to_refused;
};

struct admin_log_entry {
	time_t time;
	char line[ADMIN_LOG_LINE_MAX];
};

struct master_admin {
	struct master *master;
	char *path;
	int fd;
	struct io *io;
	gid_t gid;                /* admin_group's, (gid_t)-1 for none */
	struct admin_conn *conns;
	unsigned int conn_count;
	unsigned int next_id;
	struct admin_stats stats;
	struct admin_log_entry ring[ADMIN_LOG_RING_SIZE];
	unsigned int ring_next, ring_count;
};

/* master-admin.c */
/* ROW <key> <value> ...: fields key, value pairs, NULL-terminated. */
void admin_send_row(struct admin_conn *client, const char *const *fields);
void admin_send_rowv(struct admin_conn *client, ...) ATTR_NULL_TERMINATED;
/* End the client's request with DONE, or FAIL <code> <text>. */
void admin_request_done(struct admin_request *req);
void admin_request_fail(struct admin_request *req, const char *code,
			const char *text);
struct admin_request *admin_request_find(struct master_admin *admin,
					 const char *id);

/* master-admin-cmd.c: the requests */
/* The request with id that waits for the imap process pid, or NULL. */
struct admin_request *admin_imap_request_of(struct master *master, pid_t pid,
					    const char *id);
void admin_cmd_dispatch(struct admin_conn *client, const char *const *args);
/* A request's resources (not the struct): timers, sockets, lists. */
void admin_request_cleanup(struct admin_request *req);

/* master-admin-users.c: USERS (moatadm -A) */
void admin_users_send(struct admin_request *req);

/* master-admin-log.c: the ring of warnings and errors */
void admin_log_init(struct master_admin *admin);
void admin_log_deinit(struct master_admin *admin);
void admin_log_send(struct admin_conn *client);

/* master-admin-auth.c: USER, MAIL, AUTH-TEST through auth */
void admin_auth_userdb(struct admin_request *req);
void admin_auth_test(struct admin_request *req);

#endif
