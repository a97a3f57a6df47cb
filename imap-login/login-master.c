/* The moat-login-master channel on MASTER_CHANNEL_FD. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "login-keyd.h"

static bool master_parse_id(const char *str, unsigned int *id_r)
{
	return str_to_uint(str, id_r) == 0 && *id_r != 0;
}

/* Returns false if the record is malformed; fd is ours to close. */
static bool master_handle_record(struct login_process *lp,
				 const char *const *args, int *fd)
{
	unsigned int count = str_array_length(args), id;
	struct login_client *client;

	if (strcmp(args[0], "AUTH-CONN") == 0) {
		if (count != 1 || *fd < 0)
			return false;
		login_auth_connect(lp, *fd);
		*fd = -1;
		return true;
	}
	if (strcmp(args[0], "KEYD-CONN") == 0) {
		if (count != 1 || *fd < 0)
			return false;
		/* Without isolation (started before a reload turned it on)
		   the socket is of no use: the caller closes it. */
		if (lp->keyd != NULL) {
			login_keyd_set_fd(lp->keyd, *fd);
			*fd = -1;
		}
		return true;
	}
	if (*fd >= 0)
		return false;
	if (strcmp(args[0], "HANDOFF-OK") == 0 && count == 2 &&
	    master_parse_id(args[1], &id)) {
		client = login_client_find_handoff(lp, id);
		if (client != NULL)
			login_client_handoff_ok(client);
	} else if (strcmp(args[0], "HANDOFF-FAIL") == 0 && count == 3 &&
		   master_parse_id(args[1], &id)) {
		client = login_client_find_handoff(lp, id);
		if (client != NULL)
			login_client_handoff_fail(client, args[2]);
	} else if (strcmp(args[0], "HANDOFF-RETRY") == 0 && count == 3 &&
		   master_parse_id(args[1], &id)) {
		client = login_client_find_handoff(lp, id);
		if (client != NULL)
			login_client_handoff_retry(client, args[2]);
	} else if ((strcmp(args[0], "CONNECT-OK") == 0 ||
		    strcmp(args[0], "CONNECT-FAIL") == 0) && count == 2 &&
		   master_parse_id(args[1], &id)) {
		client = login_client_find_connecting(lp, id);
		if (client != NULL)
			login_client_connect_reply(client,
				strcmp(args[0], "CONNECT-OK") == 0);
	} else if (strcmp(args[0], "SHUTDOWN") == 0 && count == 1) {
		login_process_stop_listening(lp, true);
	} else {
		return false;
	}
	return true;
}

static void master_input(void *context, const char *const *args, int fd)
{
	struct login_process *lp = context;

	if (args == NULL) {
		/* Without master no login can complete: stop at once. */
		i_info("master connection closed, exiting");
		ipc_conn_destroy(&lp->master);
		lp->stopping = true;
		master_service_stop(lp->service);
		return;
	}
	if (!master_handle_record(lp, args, &fd)) {
		i_close_fd(&fd);
		/* master is trusted: a bad record is a bug there or here. */
		i_fatal("master sent a malformed %s record", args[0]);
	}
	/* A descriptor the record did not keep (KEYD-CONN without
	   isolation) would stay open for the process's life. */
	i_close_fd(&fd);
}

void login_master_connect(struct login_process *lp)
{
	lp->master = master_service_connect_master(lp->service,
						   IPC_PROTO_LOGIN_MASTER,
						   master_input, lp);
}

void login_master_deinit(struct login_process *lp)
{
	ipc_conn_destroy(&lp->master);
}

int login_master_handoff(struct login_process *lp, unsigned int id,
			 const char *token, const char *tag,
			 const char *remote_ip, unsigned int remote_port,
			 const char *local_ip, unsigned int local_port,
			 bool secured, const char *mech, const char *tls,
			 const void *bytes, size_t bytes_size, int client_fd)
{
	char id_str[16], rport[16], lport[16];
	int ret;

	if (lp->master == NULL)
		return -1;
	pool_t pool = pool_create("handoff", 1024);
	snprintf(id_str, sizeof(id_str), "%u", id);
	snprintf(rport, sizeof(rport), "%u", remote_port);
	snprintf(lport, sizeof(lport), "%u", local_port);
	ret = ipc_sendv(lp->master, client_fd, "HANDOFF", id_str, token, tag,
			remote_ip, rport, local_ip, lport, secured ? "1" : "0",
			mech, tls, p_base64_encode(pool, bytes, bytes_size), NULL);
	pool_unref(&pool);
	return ret;
}

int login_master_connect_check(struct login_process *lp, unsigned int id,
			       const char *remote_ip)
{
	char id_str[16];

	if (lp->master == NULL)
		return -1;
	snprintf(id_str, sizeof(id_str), "%u", id);
	return ipc_sendv(lp->master, -1, "CONNECT", id_str, remote_ip, NULL);
}

void login_master_disconnect(struct login_process *lp, unsigned int id)
{
	char id_str[16];

	if (lp->master == NULL)
		return;
	snprintf(id_str, sizeof(id_str), "%u", id);
	(void)ipc_sendv(lp->master, -1, "DISCONNECT", id_str, NULL);
}

void login_master_auth_reconnect(struct login_process *lp)
{
	if (lp->master != NULL)
		(void)ipc_sendv(lp->master, -1, "AUTH-RECONNECT", NULL);
}

void login_master_listen_done(struct login_process *lp)
{
	if (lp->master != NULL)
		(void)ipc_sendv(lp->master, -1, "LISTEN-DONE", NULL);
}

void login_master_load(struct login_process *lp, unsigned int clients,
		       bool accepting)
{
	char clients_str[16];

	if (lp->master == NULL)
		return;
	snprintf(clients_str, sizeof(clients_str), "%u", clients);
	(void)ipc_sendv(lp->master, -1, "LOAD", clients_str,
			accepting ? "1" : "0", NULL);
}
