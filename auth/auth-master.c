/* Records from master: see auth-master.h. Master is trusted, but its
   records are still checked; a bad one is logged and ignored. */
#include "auth-common.h"
#include "auth-db.h"
#include "auth-token.h"
#include "auth-client.h"
#include "auth-master.h"
#include "auth-penalty-sync.h"
#include "auth-userdb.h"
#include "auth-worker-client.h"

static int parse_pid(const char *str, pid_t *pid_r)
{
	unsigned int num;

	if (str_to_uint(str, &num) < 0 || num == 0 || num > INT_MAX)
		return -1;
	*pid_r = (pid_t)num;
	return 0;
}

/* LOGIN-CONN <login_pid> +fd */
static void auth_master_login_conn(struct auth *auth, const char *const *args,
				   int fd)
{
	pid_t pid;

	if (str_array_length(args) != 2 || parse_pid(args[1], &pid) < 0 ||
	    fd < 0) {
		i_error("master: malformed LOGIN-CONN record ignored");
		i_close_fd(&fd);
		return;
	}
	if (auth->client_count >= AUTH_MAX_CLIENTS) {
		i_error("master: already serving %u imap-login processes, "
			"refusing pid %ld", auth->client_count, (long)pid);
		i_close_fd(&fd);
		return;
	}
	(void)auth_client_create(auth, fd, pid);
}

/* WORKER-CONN <worker_pid> +fd */
static void auth_master_worker_conn(struct auth *auth, const char *const *args,
				    int fd)
{
	pid_t pid;

	if (str_array_length(args) != 2 || parse_pid(args[1], &pid) < 0 ||
	    fd < 0) {
		i_error("master: malformed WORKER-CONN record ignored");
		i_close_fd(&fd);
		return;
	}
	auth_worker_conn_create(auth, fd, pid);
}

static void auth_master_send_user(struct auth *auth, const char *id,
				  const struct auth_user_info *user)
{
	char uid[32], gid[32], qs[32], qm[32];

	snprintf(uid, sizeof(uid), "%lu", (unsigned long)user->uid);
	snprintf(gid, sizeof(gid), "%lu", (unsigned long)user->gid);
	auth_user_info_quota_str(user, qs, qm);
	(void)ipc_sendv(auth->master_conn, -1, "USER", id, user->user, uid, gid,
			user->home, user->mail, qs, qm, NULL);
}

/* REDEEM <id> <token> <login_pid> */
static void auth_master_redeem(struct auth *auth, const char *const *args)
{
	struct auth_user_info user;
	pool_t pool;
	pid_t pid;

	if (str_array_length(args) != 4 || parse_pid(args[3], &pid) < 0) {
		i_error("master: malformed REDEEM record ignored");
		return;
	}
	pool = pool_create("redeem", 512);
	int ret = auth_token_redeem(auth->tokens, args[2], pid,
				    io_loop_time_ms(auth->ioloop), pool, &user);
	if (ret > 0) {
		i_debug("token redeemed: user=%s, login pid %ld", user.user,
			(long)pid);
		auth_master_send_user(auth, args[1], &user);
	} else if (ret < 0) {
		/* The auth before a reload answered the login and went away
		   before master asked it: imap-login may authenticate the
		   client again here. */
		i_debug("master: token from imap-login pid %ld was issued by "
			"another auth process", (long)pid);
		(void)ipc_sendv(auth->master_conn, -1, "FOREIGN", args[1], NULL);
	} else {
		i_warning("master: token from imap-login pid %ld is unknown, "
			  "expired, used or issued to another process",
			  (long)pid);
		(void)ipc_sendv(auth->master_conn, -1, "NOTFOUND", args[1], NULL);
	}
	pool_unref(&pool);
}

void auth_master_input(void *context, const char *const *args, int fd)
{
	struct auth *auth = context;

	if (args == NULL) {
		i_error("master: connection lost, exiting");
		ipc_conn_destroy(&auth->master_conn);
		master_service_stop(auth->service);
		return;
	}
	if (strcmp(args[0], "LOGIN-CONN") == 0) {
		auth_master_login_conn(auth, args, fd);
		return;
	}
	if (strcmp(args[0], "WORKER-CONN") == 0) {
		auth_master_worker_conn(auth, args, fd);
		return;
	}
	i_close_fd(&fd);
	if (strcmp(args[0], "REDEEM") == 0) {
		auth_master_redeem(auth, args);
	} else if (strcmp(args[0], "USERDB") == 0) {
		auth_userdb_lookup(auth, args);
	} else if (strcmp(args[0], "PENALTY-LOAD") == 0) {
		auth_penalty_sync_load(auth, args);
	} else {
		pool_t pool = pool_create("master record", 256);
		i_error("master: unknown record '%s' ignored",
			str_sanitize(pool, args[0], 32));
		pool_unref(&pool);
	}
}
