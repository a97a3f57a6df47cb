/* A connection from one imap-login process: see auth-client.h. */
#include "auth-common.h"
#include "auth-request.h"
#include "auth-client.h"
#include "auth-client-protocol.h"

#include <strings.h>

/* The record parser's bounds are the request's. */
_Static_assert(AUTH_PROTO_ID_MAX_LEN == AUTH_REQUEST_ID_MAX_LEN, "id bound");
_Static_assert(AUTH_PROTO_IP_MAX_LEN == AUTH_REQUEST_IP_MAX_LEN, "IP bound");
_Static_assert(AUTH_PROTO_USER_MAX_LEN == SASL_MAX_USERNAME, "user bound");

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

/* A -PLUS mechanism is enabled: imap-login offers it on TLS connections. */
static bool plus_mech_enabled(const struct moat_settings *set)
{
	return mech_enabled(set, &sasl_mech_scram_sha1_plus) ||
		mech_enabled(set, &sasl_mech_scram_sha256_plus);
}

/* cbind=<b64:tls-exporter data>; -1 if malformed (imap-login's bug). */
static int auth_client_cbind(struct auth_client *client,
			     struct auth_request *request, const char *b64)
{
	unsigned char *data;
	size_t size;

	if (p_base64_decode(request->pool, b64, strlen(b64), &data, &size) < 0 ||
	    size == 0 || size > SASL_CBIND_MAX_SIZE)
		return -1;
	auth_request_set_cbind(request, data, size,
			       plus_mech_enabled(client->auth->set));
	return 0;
}

static void auth_client_cert_user(struct auth_client *client,
				  struct auth_request *request,
				  const char *user)
{
	/* imap-login sends it only after verifying a certificate; where
	   our settings say it cannot have (or an old process during a
	   reload), the claim is not believed: EXTERNAL then fails. */
	if (client->auth->set->ssl_verify_client_cert)
		auth_request_set_cert_user(request, user);
	else
		i_warning("%s: cert_user= ignored: ssl_verify_client_cert = no",
			  ipc_conn_get_name(client->conn));
}

/* AUTH, its fields checked by auth_proto_parse_request() */
static void auth_client_auth(struct auth_client *client,
			     const struct auth_proto_request *req)
{
	const struct sasl_mech *mech;
	struct auth_request *request;

	if (auth_client_find_request(client, req->id) != NULL) {
		auth_client_protocol_error(client,
			"AUTH with an id already in progress");
		return;
	}
	if (client->request_count >= AUTH_CLIENT_MAX_REQUESTS) {
		i_warning("%s: %u requests in progress, refusing more",
			  ipc_conn_get_name(client->conn), client->request_count);
		auth_client_refuse(client, req->id, "tempfail",
				   "Too many authentications in progress.");
		return;
	}
	mech = sasl_mech_find(req->mech);
	if (mech == NULL || !mech_enabled(client->auth->set, mech)) {
		auth_client_refuse(client, req->id, "authfailed",
				   "Unsupported authentication mechanism.");
		return;
	}
	request = auth_request_create(client->auth, client, req->id, mech,
				      req->remote_ip, req->local_ip,
				      req->secured);
	auth_client_link(client, request);
	if (req->cbind_b64 != NULL &&
	    auth_client_cbind(client, request, req->cbind_b64) < 0) {
		auth_client_protocol_error(client, "AUTH with a bad cbind=");
		return;
	}
	if (req->cert_user != NULL)
		auth_client_cert_user(client, request, req->cert_user);
	auth_request_start(request, req->initial_b64);
}

/* CONT, its fields checked by auth_proto_parse_request() */
static void auth_client_cont(struct auth_client *client,
			     const struct auth_proto_request *req)
{
	struct auth_request *request = auth_client_find_request(client, req->id);

	/* "*" cancels a request in any state (its client went away while
	   it waited for its turn or its answer), and may cross our answer:
	   for an id we no longer know it is no error. */
	if (strcmp(req->response, "*") == 0) {
		if (request != NULL)
			auth_request_continue(request, req->response);
		return;
	}
	if (request == NULL || !request->waiting_response) {
		auth_client_protocol_error(client,
			"CONT for a request that is not waiting for one");
		return;
	}
	auth_request_continue(request, req->response);
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
	struct auth_proto_request req;
	const char *error;

	if (auth_proto_parse_request(args, &req, &error) < 0)
		auth_client_protocol_error(client, error);
	else if (req.type == AUTH_PROTO_REQUEST_AUTH)
		auth_client_auth(client, &req);
	else
		auth_client_cont(client, &req);
}
