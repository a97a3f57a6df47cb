/* The moat-auth-client connection: sending AUTH/CONT, dispatching
   auth's CONT/OK/FAIL to the client that asked, and surviving the loss
   of auth. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "auth-client-protocol.h"

/* Fail every request auth held; their answers will never come. */
static void auth_fail_in_flight(struct login_process *lp)
{
	struct login_client *client, *next;

	for (client = lp->clients; client != NULL; client = next) {
		next = client->next;
		if ((client->state == LOGIN_CLIENT_STATE_AUTH_WAIT &&
		     !client->auth_parked) ||
		    client->state == LOGIN_CLIENT_STATE_AUTH_CONT) {
			/* An AUTH_CONT client would cancel at auth on
			   destroy; there is no auth to tell any more. */
			client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
			/* Unanswered, only the AUTH sent: the new auth
			   gets it (login-client-park.c). */
			if (!login_client_auth_repark(client))
				login_client_auth_fail(client, "tempfail", NULL);
		}
	}
}

static void auth_lost(struct login_process *lp)
{
	ipc_conn_destroy(&lp->auth);
	if (!lp->auth_reconnect_sent) {
		lp->auth_reconnect_sent = true;
		login_master_auth_reconnect(lp);
	}
	auth_fail_in_flight(lp);
}

/* Returns false if the record is malformed. */
static bool auth_handle_record(struct login_process *lp,
			       const char *const *args)
{
	struct auth_proto_reply reply;
	struct login_client *client;

	if (auth_proto_parse_reply(args, &reply) < 0)
		return false;
	client = login_client_find_auth(lp, reply.id);
	switch (reply.type) {
	case AUTH_PROTO_REPLY_CONT:
		if (client != NULL)
			login_client_auth_cont(client, reply.challenge);
		else    /* the client is gone: let auth drop the request */
			(void)login_auth_continue(lp, reply.id, "*");
		break;
	case AUTH_PROTO_REPLY_OK:
		if (client != NULL)
			login_client_auth_ok(client, reply.user, reply.token);
		break;
	case AUTH_PROTO_REPLY_FAIL:
		if (client != NULL)
			login_client_auth_fail(client, reply.code, reply.text);
		break;
	}
	return true;
}

static void auth_input(void *context, const char *const *args, int fd)
{
	struct login_process *lp = context;

	if (args == NULL) {
		i_warning("auth connection lost; asking master for a new one");
		auth_lost(lp);
		return;
	}
	if (fd != -1) {
		i_close_fd(&fd);
		i_error("auth sent a descriptor with %s; dropping the connection",
			args[0]);
		auth_lost(lp);
		return;
	}
	if (!auth_handle_record(lp, args)) {
		i_error("auth sent a malformed %s record; dropping the connection",
			args[0]);
		auth_lost(lp);
	}
}

void login_auth_connect(struct login_process *lp, int fd)
{
	if (lp->auth != NULL) {
		ipc_conn_destroy(&lp->auth);
		auth_fail_in_flight(lp);
	}
	lp->auth = ipc_conn_create(lp->ioloop, fd, "auth", IPC_PROTO_AUTH_CLIENT,
				   IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
				   auth_input, lp);
	lp->auth_reconnect_sent = false;
	lp->auth_generation++;
	login_clients_auth_send_parked(lp);
}

void login_auth_deinit(struct login_process *lp)
{
	ipc_conn_destroy(&lp->auth);
}

bool login_auth_is_connected(struct login_process *lp)
{
	return lp->auth != NULL;
}

static int auth_send(struct login_process *lp, const char *const *args)
{
	if (lp->auth == NULL)
		return -1;
	if (ipc_send(lp->auth, args, -1) < 0) {
		i_error("sending to auth failed; asking master for a new connection");
		auth_lost(lp);
		return -1;
	}
	return 0;
}

int login_auth_request(struct login_process *lp, unsigned int id,
		       const char *mech, const char *remote_ip,
		       const char *local_ip, bool secured, const char *ir_b64,
		       const char *cbind_b64, const char *cert_user)
{
	char id_str[16];
	char *cbind_field = cbind_b64 == NULL ? NULL :
		i_strdup_printf("cbind=%s", cbind_b64);
	char *cert_field = cert_user == NULL ? NULL :
		i_strdup_printf("cert_user=%s", cert_user);
	unsigned int n = 7;

	snprintf(id_str, sizeof(id_str), "%u", id);
	const char *args[] = {
		"AUTH", id_str, mech, remote_ip, local_ip, secured ? "1" : "0",
		ir_b64, NULL, NULL, NULL
	};
	/* The optional fields follow in any order; absent ones leave no
	   gap. */
	if (cbind_field != NULL)
		args[n++] = cbind_field;
	if (cert_field != NULL)
		args[n++] = cert_field;
	int ret = auth_send(lp, args);
	free(cbind_field);
	free(cert_field);
	return ret;
}

int login_auth_continue(struct login_process *lp, unsigned int id,
			const char *response)
{
	char id_str[16];

	snprintf(id_str, sizeof(id_str), "%u", id);
	const char *args[] = { "CONT", id_str, response, NULL };
	return auth_send(lp, args);
}
