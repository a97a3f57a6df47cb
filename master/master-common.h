#ifndef MASTER_COMMON_H
#define MASTER_COMMON_H
/* Master: spawns, limits, restarts and routes; never parses client bytes. */

#include "lib.h"
#include "buffer.h"
#include "ioloop.h"
#include "ipc.h"
#include "log.h"
#include "master-service.h"
#include "moat-settings.h"

enum service_kind {
	SERVICE_LOGIN = 0,
	SERVICE_AUTH,
	SERVICE_IMAP,
	SERVICE_AUTH_WORKER,
	SERVICE_LMTP,
	SERVICE_KEY_SIGNER,
	SERVICE_KIND_COUNT
};

struct master;
struct child;
struct auth_penalty_store;

/* A role: the binary, who it runs as and how many of it run. */
struct service {
	struct master *master;
	enum service_kind kind;
	const char *name;         /* service block name and MOAT_SERVICE */
	const char *binary;       /* file name under pkglibexecdir */
	const struct moat_service_settings *set;  /* of master->set */
	unsigned int process_count;
	/* Crash back-off: doubles per crash within a minute, up to a cap. */
	unsigned int restart_delay_ms;
	uint64_t last_crash_ms;
	struct timeout *restart_timeout;
};

struct child {
	struct child *next, *prev;
	struct master *master;
	struct service *service;
	pid_t pid;
	unsigned int generation;  /* config generation it was started with */

	int log_fd;
	struct io *log_io;
	buffer_t log_buf;
	char *log_prefix;

	struct ipc_conn *conn;

	/* imap-login and lmtp */
	bool listening;           /* accepting new clients */
	bool shutting_down;       /* told to stop (reload/stop) */
	bool wants_auth;          /* asked for a new auth socket */
	unsigned int clients;     /* from its last LOAD record */
	uint64_t idle_since_ms;   /* 0 while it has clients */
	unsigned int client_limit;   /* of the settings it was started with */
	/* its clients counted for login_max_connections_per_ip */
	struct login_child_conns *ip_conns;

	/* imap: the user it serves */
	char *user;
	uid_t uid;
	gid_t gid;
	bool shutdown_requested;  /* sent SHUTDOWN-REQUEST; no new routing */
};

struct listener {
	enum service_kind kind;   /* SERVICE_LOGIN or SERVICE_LMTP */
	char *key;                /* "service name address port" */
	char *name;
	bool ssl;
	bool haproxy;             /* PROXY header first (imap-login) */
	char *unix_path;          /* a unix_listener's socket, else NULL */
	int fd;
	/* from the service manager (master-activation.h): its socket file
	   is the manager's, never unlinked by master */
	bool activated;
};

struct master {
	struct ioloop *ioloop;
	const char *config_path;
	struct moat_settings *set;
	unsigned int generation;
	int config_fd;            /* sealed memfd: the settings for children */
	/* the same plus ssl_key: only for the process that signs (the
	   key-signer, or imap-login with ssl_key_isolation = no) */
	int secret_config_fd;
	bool root;
	bool stopping;

	char *binary_dir;
	char *empty_dir;
	char *pid_path;

	uid_t login_uid, auth_uid, lmtp_uid;
	gid_t login_gid, auth_gid, lmtp_gid;
	char *lmtp_chroot_dir;    /* NULL: none (or lmtp not enabled) */

	struct listener *listeners;
	unsigned int listener_count;

	struct service services[SERVICE_KIND_COUNT];
	struct child *children;
	struct child *auth;       /* the running auth process, or NULL */
	struct child *keyd;       /* the running key-signer, or NULL */

	struct handoff *handoffs; /* waiting for auth to redeem a token */
	struct handoff *handoffs_routed; /* sent, waiting for CONN-DONE */
	/* pre-auth connections per remote address, all imap-logins */
	struct login_limits *login_limits;
	/* auth's penalty table, kept across its restarts */
	struct auth_penalty_store *auth_penalties;
	unsigned int next_handoff_id;
	struct lmtp_rcpt *lmtp_rcpts;  /* waiting for auth's userdb */
	unsigned int next_lmtp_rcpt_id;
	struct timeout *stop_timeout;
	struct timeout *idle_check_timeout;   /* idle_kill of imap-login */
	struct master_admin *admin;   /* the admin socket (master-admin.h) */
	struct master_metrics *metrics;  /* OpenMetrics (master-metrics.h) */
};

/* main.c: re-read the config (SIGHUP, moatadm reload). On failure the
   old settings stay and *error_r says why. */
int master_reload(struct master *master, const char **error_r);

/* master-settings.c */
int master_settings_load(struct master *master, const char *path,
			 const char **error_r);
/* with_secrets: also ssl_key (imap-login's copy only). */
int master_settings_create_fd(const struct moat_settings *set, bool with_secrets);
int master_settings_resolve_users(struct master *master, const char **error_r);

/* listener.c */
int master_listeners_open(struct master *master, const char **error_r);
void master_listeners_close(struct master *master);

/* service.c */
void services_init(struct master *master);
/* master-fdlimit.c: RLIMIT_NOFILE for the services' limits (start, reload) */
void master_fd_limit_adjust(struct master *master);
void services_start(struct master *master);
void services_reload(struct master *master);
void services_stop(struct master *master);
void services_child_exited(struct master *master, pid_t pid, int status);
/* Spawn a child of service. extra_fds are dup'ed to fd 5, 6, ... in the
   child. env: extra "KEY=VALUE" strings (NULL-terminated, may be NULL).
   Returns the child or NULL (logged). */
struct child *child_spawn(struct service *service, const int *extra_fds,
			  unsigned int extra_fd_count, const char *const *env,
			  uid_t uid, gid_t gid, const char *chroot_dir,
			  const char *log_user);
void child_kill(struct child *child, int signo);
struct child *child_find_pid(struct master *master, pid_t pid);
/* The channel of a service that sends master nothing (key-signer,
   auth-worker): EOF ends it; any record is a bug, and the child is
   killed. */
void child_input_none(void *context, const char *const *args, int fd);
/* Send fd to a child in the record "<record> <pid>" (LOGIN-CONN,
   WORKER-CONN: the pid of the process at the socket's other end).
   Returns 0, or -1 if it could not be sent. fd stays the caller's. */
int child_send_peer(struct child *to, const char *record, pid_t pid, int fd);

/* service-login.c */
struct child *login_spawn(struct master *master);
void login_input(void *context, const char *const *args, int fd);
void login_auth_available(struct master *master);
void login_shutdown_all(struct master *master);
unsigned int login_count_listening(struct master *master);
/* Start the periodic idle_kill check (no-op when idle_kill is 0). */
void login_idle_check_start(struct master *master);

/* login-limits.c: login_max_connections_per_ip over all processes */
void login_limits_init(struct master *master);
void login_limits_deinit(struct master *master);
/* CONNECT / DISCONNECT of an imap-login; false if args is neither. */
bool login_limits_input(struct child *child, const char *const *args);
/* The process exited: its connections are no longer counted. */
void login_limits_child_gone(struct child *child);

/* service-auth.c */
struct child *auth_spawn(struct master *master);
void auth_input(void *context, const char *const *args, int fd);
/* Give a new imap-login process (or one that lost it) a socket to auth.
   Returns the login's end, or -1 if auth is not running. */
int auth_connect_login(struct master *master, pid_t login_pid);

/* service-auth-penalty.c: master's copy of auth's penalty table
   (auth/auth-penalty-sync.h), written through by auth and loaded into
   each new auth before it gets imap-login connections. */
void auth_penalty_store_init(struct master *master);
void auth_penalty_store_deinit(struct master *master);
/* Reload: apply a changed auth_penalty_max_ips. */
void auth_penalty_store_resize(struct master *master);
/* Send the table to a new auth; login_auth_available() once it has it
   (at once when the table is empty). */
void auth_penalty_load_start(struct master *master, struct child *auth);
/* A new auth is still being loaded: no imap-login connection yet. */
bool auth_penalty_loading(const struct master *master);
/* auth's channel closed or it exited: a load into it is over. */
void auth_penalty_child_gone(struct master *master, struct child *auth);
/* PENALTY, PENALTY-ACK from auth; false if args is neither. A malformed
   record kills auth. */
bool auth_penalty_input(struct child *child, const char *const *args);

/* service-auth-worker.c */
/* Start auth-worker processes up to process_limit when a passdb/userdb
   needs them and auth is running (each hands auth its socket). */
void auth_worker_ensure(struct master *master);

/* service-keyd.c: the key-signer (ssl_key_isolation = yes) */
/* Whether a key-signer should run (isolation on and TLS offered). */
bool keyd_enabled(const struct master *master);
/* Start one if enabled and none runs (start, restart, reload). */
void keyd_ensure(struct master *master);
/* Reload: the running one stops; a new one reads the new key. */
void keyd_reload(struct master *master);
/* Hand login (a new imap-login, or every one when a key-signer starts)
   a socketpair to the running key-signer. No-op without one. */
void keyd_connect_login(struct master *master, struct child *login);

/* handoff.c */
void handoff_start(struct child *login, const char *const *args, int fd);
void handoff_auth_reply(struct master *master, const char *const *args);
/* Answer every handoff waiting for auth: HANDOFF-RETRY when auth went
   away (its tokens died with it; imap-login may authenticate the client
   again with the next auth), else HANDOFF-FAIL. */
void handoff_fail_all(struct master *master, const char *reason, bool retry);
void handoff_login_gone(struct master *master, struct child *login);
/* CONN-DONE <id> from an imap process: false if malformed. */
bool handoff_conn_done(struct child *imap, const char *const *args);
/* The imap process will not read its channel any more: route what it did
   not acknowledge to another one. */
void handoff_imap_gone(struct master *master, struct child *imap);

/* service-lmtp.c */
/* True if protocols names lmtp: only then do lmtp processes run. */
bool master_lmtp_enabled(const struct master *master);
struct child *lmtp_spawn(struct master *master);
void lmtp_input(void *context, const char *const *args, int fd);
void lmtp_shutdown_all(struct master *master);
/* Keep process_min_avail accepting lmtp processes (start, restart). */
void lmtp_ensure_available(struct master *master);
/* Answers of auth to USERDB (USERDB-USER / USERDB-NOTFOUND / -FAIL). */
void lmtp_rcpt_auth_reply(struct master *master, const char *const *args);
/* auth went away or an lmtp process did: fail what waits for it. */
void lmtp_rcpt_fail_all(struct master *master, const char *reason);
void lmtp_rcpt_lmtp_gone(struct master *master, struct child *lmtp);

/* service-imap.c */
struct child *imap_find_user(struct master *master, const char *user);
struct child *imap_spawn(struct master *master, const char *user, uid_t uid,
			 gid_t gid, const char *home, const char *mail,
			 const char *quota_storage, const char *quota_messages);
/* The running imap process of a user, spawned when there is none (within
   process_limit). fields: user, uid, gid, home, mail, quota storage,
   quota messages of auth's USER record (checked here, uid/gid as for
   logins). NULL with *error_r. */
struct child *imap_get_user(struct master *master, const char *const *fields,
			    const char **error_r);
void imap_input(void *context, const char *const *args, int fd);

#endif
