/* A connection from one imap-login process: see auth-client.h. */
#include "auth-common.h"
#include "auth-request.h"
#include "auth-client.h"

#include <strings.h>

struct auth_client {
	struct auth_client *prev, *next;
	struct auth *auth;
	struct ipc_conn *conn;
	pid_t login_pid;
	struct auth_request *requests;
	unsigned int request_count;
};

static void auth_client_input(void *context, const char *const *args, int fd);

struct auth_client *auth_client_create(struct auth *auth, int fd,
				       pid_t login_pid)
{
	struct auth_client *client = i_malloc(sizeof(*client));
	char name[64];

	snprintf(name, sizeof(name), "imap-login[%ld]", (long)login_pid);
	client->auth = auth;
	client->login_pid = login_pid;
	client->conn = ipc_conn_create(auth->ioloop, fd, name,
				       IPC_PROTO_AUTH_CLIENT, IPC_PROTO_MAJOR,
				       IPC_PROTO_MINOR, auth_client_input, client);
	client->next = auth->clients;
	if (auth->clients != NULL)
		auth->clients->prev = client;
	auth->clients = client;
	auth->client_count++;
	return client;
}

void auth_client_destroy(struct auth_client **_client)
{
	struct auth_client *client = *_client;
	struct auth *auth = client->auth;

	*_client = NULL;
	while (client->requests != NULL) {
		struct auth_request *request = client->requests;

		client->requests = request->next;
		auth_request_free(&request);
	}
	ipc_conn_destroy(&client->conn);
	if (client->prev != NULL)
		client->prev->next = client->next;
	else
		auth->clients = client->next;
	if (client->next != NULL)
		client->next->prev = client->prev;
	auth->client_count--;
	free(client);
}

void auth_clients_destroy_all(struct auth *auth)
{
	while (auth->clients != NULL) {
		struct auth_client *client = auth->clients;
		auth_client_destroy(&client);
	}
}

pid_t auth_client_get_pid(const struct auth_client *client)
{
	return client->login_pid;
}

void auth_client_send(struct auth_client *client, const char *const *args)
{
	/* A failed send means the login process is gone: its EOF arrives
	   through the input callback, which cleans up. */
	(void)ipc_send(client->conn, args, -1);
}

void auth_client_request_done(struct auth_client *client,
			      struct auth_request *request)
{
	if (request->prev != NULL)
		request->prev->next = request->next;
	else
		client->requests = request->next;
	if (request->next != NULL)
		request->next->prev = request->prev;
	i_assert(client->request_count > 0);
	client->request_count--;
	auth_request_free(&request);
}

static struct auth_request *
auth_client_find_request(struct auth_client *client, const char *id)
{
	for (struct auth_request *r = client->requests; r != NULL; r = r->next) {
		if (strcmp(r->id, id) == 0)
			return r;
	}
	return NULL;
}

static void auth_client_protocol_error(struct auth_client *client,
				       const char *error)
{
	i_error("%s: protocol error: %s, closing",
		ipc_conn_get_name(client->conn), error);
	auth_client_destroy(&client);
}

static void auth_client_link(struct auth_client *client,
			     struct auth_request *request)
{
	request->next = client->requests;
	if (client->requests != NULL)
		client->requests->prev = request;
	client->requests = request;
	client->request_count++;
}

/* Send FAIL for a request id that never became a request. */
static void auth_client_refuse(struct auth_client *client, const char *id,
			       const char *code, const char *text)
{
	const char *args[] = { "FAIL", id, code, text, NULL };

	auth_client_send(client, args);
}

static bool mech_enabled(const struct moat_settings *set,
			 const struct sasl_mech *mech)
{
	const char *p = set->auth_mechanisms;
	size_t len = strlen(mech->name);

	/* PLAIN also carries IMAP's LOGIN command, which is always there. */
	if (mech == &sasl_mech_plain)
		return true;
	while ((p = strcasestr(p, mech->name)) != NULL) {
		bool start = p == set->auth_mechanisms || p[-1] == ' ' ||
			p[-1] == '\t';
		bool end = p[len] == '\0' || p[len] == ' ' || p[len] == '\t';
		if (start && end)
			return true;
		p += len;
	}
	return false;
}

/* AUTH's optional fields: cbind= and cert_user=, each at most once. */
#define AUTH_CLIENT_MAX_OPTIONAL 2

/* Checked fields of AUTH; returns an error for the log or NULL. */
static const char *auth_client_check_auth(const char *const *args)
{
	unsigned int count = str_array_length(args);

	if (count < 7 || count > 7 + AUTH_CLIENT_MAX_OPTIONAL)
		return "AUTH needs 6 arguments and optional fields";
	if (args[1][0] == '\0' || strlen(args[1]) > AUTH_REQUEST_ID_MAX_LEN)
		return "AUTH with an empty or too long id";
	if (strlen(args[3]) > AUTH_REQUEST_IP_MAX_LEN ||
	    strlen(args[4]) > AUTH_REQUEST_IP_MAX_LEN)
		return "AUTH with a too long IP address";
	if (strcmp(args[5], "0") != 0 && strcmp(args[5], "1") != 0)
		return "AUTH secured flag is not 0 or 1";
	return NULL;
}

/* A -PLUS mechanism is enabled: imap-login offers it on TLS connections. */
static bool plus_mech_enabled(const struct moat_settings *set)
{
	return mech_enabled(set, &sasl_mech_scram_sha1_plus) ||
		mech_enabled(set, &sasl_mech_scram_sha256_plus);
}

/* cbind=<b64:tls-exporter data>; -1 if malformed (imap-login's bug). */
static int auth_client_cbind(struct auth_client *client,
			     struct auth_request *request, const char *arg)
{
	unsigned char *data;
	size_t size;
	const char *b64 = arg + strlen("cbind=");

	if (p_base64_decode(request->pool, b64, strlen(b64), &data, &size) < 0 ||
	    size == 0 || size > SASL_CBIND_MAX_SIZE)
		return -1;
	auth_request_set_cbind(request, data, size,
			       plus_mech_enabled(client->auth->set));
	return 0;
}

/* cert_user=<user>: the user named by the connection's verified TLS
   client certificate; imap-login already refused control characters. */
static bool auth_client_cert_user_valid(const char *user)
{
	size_t len = strlen(user);

	if (len == 0 || len > SASL_MAX_USERNAME)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)user[i] < 0x20 || user[i] == 0x7f)
			return false;
	}
	return true;
}

/* The optional fields after the initial response; an error for the log
   (imap-login's bug) or NULL. */
static const char *
auth_client_optional(struct auth_client *client, struct auth_request *request,
		     const char *const *args)
{
	bool have_cbind = false, have_cert = false;
	const char *value;

	for (; *args != NULL; args++) {
		if (str_begins(*args, "cbind=", NULL) && !have_cbind) {
			have_cbind = true;
			if (auth_client_cbind(client, request, *args) < 0)
				return "AUTH with a bad cbind=";
		} else if (str_begins(*args, "cert_user=", &value) &&
			   !have_cert) {
			have_cert = true;
			if (!auth_client_cert_user_valid(value))
				return "AUTH with a bad cert_user=";
			/* imap-login sends it only after verifying a
			   certificate; where our settings say it cannot
			   have (or an old process during a reload), the
			   claim is not believed: EXTERNAL then fails. */
			if (client->auth->set->ssl_verify_client_cert)
				auth_request_set_cert_user(request, value);
			else
				i_warning("%s: cert_user= ignored: "
					  "ssl_verify_client_cert = no",
					  ipc_conn_get_name(client->conn));
		} else {
			return "AUTH with an unknown or repeated optional field";
		}
	}
	return NULL;
}

/* AUTH <id> <mech> <remote_ip> <local_ip> <secured> <b64:initial>
   [cbind=<b64:tls-exporter data>] [cert_user=<user>] */
static void auth_client_auth(struct auth_client *client, const char *const *args)
{
	const struct sasl_mech *mech;
	struct auth_request *request;
	const char *error = auth_client_check_auth(args);

	if (error == NULL && auth_client_find_request(client, args[1]) != NULL)
		error = "AUTH with an id already in progress";
	if (error != NULL) {
		auth_client_protocol_error(client, error);
		return;
	}
	if (client->request_count >= AUTH_CLIENT_MAX_REQUESTS) {
		i_warning("%s: %u requests in progress, refusing more",
			  ipc_conn_get_name(client->conn), client->request_count);
		auth_client_refuse(client, args[1], "tempfail",
				   "Too many authentications in progress.");
		return;
	}
	mech = sasl_mech_find(args[2]);
	if (mech == NULL || !mech_enabled(client->auth->set, mech)) {
		auth_client_refuse(client, args[1], "authfailed",
				   "Unsupported authentication mechanism.");
		return;
	}
	request = auth_request_create(client->auth, client, args[1], mech,
				      args[3], args[4], args[5][0] == '1');
	auth_client_link(client, request);
	error = auth_client_optional(client, request, args + 7);
	if (error != NULL) {
		auth_client_protocol_error(client, error);
		return;
	}
	auth_request_start(request, args[6]);
}

/* CONT <id> <b64:response or *> */
static void auth_client_cont(struct auth_client *client, const char *const *args)
{
	struct auth_request *request;

	if (str_array_length(args) != 3) {
		auth_client_protocol_error(client, "CONT needs 2 arguments");
		return;
	}
	request = auth_client_find_request(client, args[1]);
	/* "*" cancels a request in any state (its client went away while
	   it waited for its turn or its answer), and may cross our answer:
	   for an id we no longer know it is no error. */
	if (strcmp(args[2], "*") == 0) {
		if (request != NULL)
			auth_request_continue(request, args[2]);
		return;
	}
	if (request == NULL || !request->waiting_response) {
		auth_client_protocol_error(client,
			"CONT for a request that is not waiting for one");
		return;
	}
	auth_request_continue(request, args[2]);
}

static void auth_client_input(void *context, const char *const *args, int fd)
{
	struct auth_client *client = context;

	if (args == NULL) {
		i_debug("%s: connection closed", ipc_conn_get_name(client->conn));
		auth_client_destroy(&client);
		return;
	}
	if (fd >= 0) {
		i_close_fd(&fd);
		auth_client_protocol_error(client, "unexpected file descriptor");
		return;
	}
	if (strcmp(args[0], "AUTH") == 0)
		auth_client_auth(client, args);
	else if (strcmp(args[0], "CONT") == 0)
		auth_client_cont(client, args);
	else
		auth_client_protocol_error(client, "unknown record");
}
