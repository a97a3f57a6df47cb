/* The moat-auth-client connection: sending AUTH/CONT, dispatching
   auth's CONT/OK/FAIL to the client that asked, and surviving the loss
   of auth. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"

/* An id is a decimal unsigned int we issued (never 0). */
static bool auth_parse_id(const char *str, unsigned int *id_r)
{
	return str_to_uint(str, id_r) == 0 && *id_r != 0;
}

static bool auth_token_is_valid(const char *token)
{
	size_t len = strlen(token);

	if (len != AUTH_TOKEN_BYTES * 2)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = token[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* Fail every request auth held; their answers will never come. */
static void auth_fail_in_flight(struct login_process *lp)
{
	struct login_client *client, *next;

	for (client = lp->clients; client != NULL; client = next) {
		next = client->next;
		if (client->state == LOGIN_CLIENT_STATE_AUTH_WAIT ||
		    client->state == LOGIN_CLIENT_STATE_AUTH_CONT) {
			/* An AUTH_CONT client would cancel at auth on
			   destroy; there is no auth to tell any more. */
			client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
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
	unsigned int count = str_array_length(args), id;
	struct login_client *client;

	if (count < 2 || !auth_parse_id(args[1], &id))
		return false;
	client = login_client_find_auth(lp, id);
	if (strcmp(args[0], "CONT") == 0 && count == 3) {
		if (client != NULL)
			login_client_auth_cont(client, args[2]);
		else    /* the client is gone: let auth drop the request */
			(void)login_auth_continue(lp, id, "*");
	} else if (strcmp(args[0], "OK") == 0 && count == 4) {
		if (args[2][0] == '\0' || !auth_token_is_valid(args[3]))
			return false;
		if (client != NULL)
			login_client_auth_ok(client, args[2], args[3]);
	} else if (strcmp(args[0], "FAIL") == 0 && (count == 3 || count == 4)) {
		if (client != NULL)
			login_client_auth_fail(client, args[2],
					       count == 4 ? args[3] : NULL);
	} else {
		return false;
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
