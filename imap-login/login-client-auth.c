/* The authentication exchange of one client with auth (AUTH, CONT,
   OK/FAIL) and the handoff of a logged-in client to master. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "login-proxy.h"
#include "login-ssl.h"

#include <sys/socket.h>

#define TEMPFAIL_TEXT "NO [UNAVAILABLE] Temporary authentication failure."
#define AUTHFAILED_TEXT "NO [AUTHENTICATIONFAILED] Authentication failed."
#define NOLOGIN_DEFAULT_TEXT "Login not allowed."
#define LIMIT_DEFAULT_TEXT "Too many authentications in progress."
/* Text from auth or master shown to the client: one short printable line. */
#define LOGIN_MAX_REASON_LEN 200

static void client_set_request(struct login_client *client, const char *tag,
			       const char *mech)
{
	i_free(client->cmd_tag);
	i_free(client->auth_mech);
	client->cmd_tag = i_strdup(tag);
	client->auth_mech = i_strdup(mech);
	client->auth_cancel_reason = NULL;
}

void login_client_auth_begin(struct login_client *client, const char *tag,
			     const char *mech, const char *ir_b64)
{
	struct login_process *lp = client->lp;

	client_set_request(client, tag, mech);
	client->auth_attempts++;
	client->auth_replayed = false;
	if (!login_auth_is_connected(lp)) {
		/* auth restarts (reload, crash): wait for it, bounded */
		if (!login_client_auth_park(client, ir_b64))
			login_client_send_tagline(client, tag, TEMPFAIL_TEXT);
		return;
	}
	login_client_auth_send(client, ir_b64);
}

void login_client_auth_send(struct login_client *client, const char *ir_b64)
{
	struct login_process *lp = client->lp;

	client->auth_id = login_process_next_id(lp);
	client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
	login_client_auth_keep_replay(client, ir_b64);
	/* Input is not parsed until auth answers (client_update_io). */
	login_client_ref(client);
	/* A trusted proxy, or a balancer that took the client's TLS (its
	   PROXY header's SSL TLV), is as safe as TLS for plaintext (auth
	   spares trusted addresses the penalty by itself). */
	if (login_auth_request(lp, client->auth_id, client->auth_mech,
			       client->remote_ip, client->local_ip,
			       client->secured || client->trusted ||
			       client->haproxy_ssl, ir_b64,
			       client->cbind_b64, client->cert_user) < 0 &&
	    client->state == LOGIN_CLIENT_STATE_AUTH_WAIT &&
	    !client->auth_parked) {
		/* Lost auth had no record of us yet (and it was not parked
		   for the next one): answer here. */
		login_client_auth_fail(client, "tempfail", NULL);
	}
	login_client_unref(&client);
}

/* Cancel the exchange at auth; its FAIL answer is reported with reason. */
static void client_auth_cancel(struct login_client *client, const char *reason)
{
	client->auth_cancel_reason = reason;
	client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
	if (login_auth_continue(client->lp, client->auth_id, "*") < 0 &&
	    client->state == LOGIN_CLIENT_STATE_AUTH_WAIT)
		login_client_auth_fail(client, "aborted", NULL);
}

int login_client_auth_input(struct login_client *client)
{
	size_t size;
	char *line;

	i_assert(client->state == LOGIN_CLIENT_STATE_AUTH_CONT);
	line = i_stream_next_line(client->input);
	if (line == NULL) {
		(void)i_stream_get_data(client->input, &size);
		if (size < LOGIN_MAX_INBUF_SIZE)
			return 0;
		login_client_bye(client, "Authentication response too long.",
				 "Authentication response too long");
		return -1;
	}
	if (strcmp(line, "*") == 0) {
		client_auth_cancel(client, "Authentication aborted");
		return client->destroyed ? -1 : 1;
	}
	/* The input buffer bounds the line; auth takes at most this much. */
	if (!login_base64_is_valid(line, LOGIN_MAX_SASL_DATA)) {
		client_auth_cancel(client, "Invalid base64 data in continued response");
		return client->destroyed ? -1 : 1;
	}
	client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
	int ret = login_auth_continue(client->lp, client->auth_id, line);
	/* It may carry a password: do not leave it in the buffer. */
	safe_memset(line, 0, strlen(line));
	if (ret < 0 && client->state == LOGIN_CLIENT_STATE_AUTH_WAIT)
		login_client_auth_fail(client, "tempfail", NULL);
	return client->destroyed ? -1 : 1;
}

void login_client_auth_cont(struct login_client *client, const char *challenge)
{
	if (client->state != LOGIN_CLIENT_STATE_AUTH_WAIT) {
		i_error("auth sent CONT for request %u that is not waiting",
			client->auth_id);
		return;
	}
	/* The exchange has begun: a new auth could not pick it up. */
	login_client_auth_forget_replay(client);
	login_client_ref(client);
	if (client->auth_cancel_reason != NULL) {
		/* Crossed our cancel; auth's FAIL follows. */
	} else {
		login_client_send_tagline(client, "+", "%s", challenge);
		client->state = LOGIN_CLIENT_STATE_AUTH_CONT;
		login_client_input_resume(client);
	}
	login_client_unref(&client);
}

/* Printable, single-line, bounded version of a peer's text. */
static char *reason_sanitize(const char *text, const char *fallback)
{
	if (text == NULL || text[0] == '\0')
		return i_strdup(fallback);
	pool_t pool = pool_create("reason", 512);
	char *ret = i_strdup(str_sanitize(pool, text, LOGIN_MAX_REASON_LEN));
	pool_unref(&pool);
	return ret;
}

static void client_auth_failed(struct login_client *client, const char *code,
			       const char *text)
{
	const char *tag = client->cmd_tag;

	if (client->auth_cancel_reason != NULL) {
		/* The client's own doing; not a failed login. */
		login_client_send_bad(client, tag, client->auth_cancel_reason);
	} else if (strcmp(code, "authfailed") == 0) {
		client->auth_failures++;
		login_client_send_tagline(client, tag, AUTHFAILED_TEXT);
	} else if (strcmp(code, "nologin") == 0) {
		char *reason = reason_sanitize(text, NOLOGIN_DEFAULT_TEXT);
		client->auth_failures++;
		login_client_send_tagline(client, tag, "NO [CONTACTADMIN] %s", reason);
		i_free(reason);
	} else if (strcmp(code, "aborted") == 0) {
		login_client_send_bad(client, tag, "Authentication aborted");
	} else if (strcmp(code, "limit") == 0) {
		/* Too many authentications of this address at auth: nothing
		   was checked, so it is no failure. */
		char *reason = reason_sanitize(text, LIMIT_DEFAULT_TEXT);
		login_client_send_tagline(client, tag, "NO [LIMIT] %s", reason);
		i_free(reason);
	} else {
		if (strcmp(code, "tempfail") != 0)
			i_error("auth sent unknown failure code, treating as tempfail");
		login_client_send_tagline(client, tag, TEMPFAIL_TEXT);
	}
	if (client->auth_failures >= client->lp->set->imap_max_auth_attempts) {
		login_client_bye(client, "Too many authentication failures.",
				 "Too many authentication failures");
	}
}

void login_client_auth_fail(struct login_client *client, const char *code,
			    const char *text)
{
	login_client_auth_forget_replay(client);
	login_client_ref(client);
	client->state = LOGIN_CLIENT_STATE_CMD;
	client_auth_failed(client, code, text);
	client->auth_cancel_reason = NULL;
	login_client_input_resume(client);
	login_client_unref(&client);
}

/* The fd the imap process gets: the client socket itself (plaintext, or
   TLS whose record layer the kernel took over), or for TLS one end of a
   socketpair whose other end we keep (login-proxy.h). */
static int client_handoff_fd(struct login_client *client)
{
	const char *reason;
	int pair[2];

	client->ktls_handoff = false;
	if (client->ssl == NULL)
		return client->fd;
	if (client->lp->set->ssl_ktls) {
		if (login_ssl_ktls_ready(client->ssl, &reason)) {
			client->ktls_handoff = true;
			return client->fd;
		}
		i_debug("kTLS handoff not possible, relaying: %s", reason);
	}
	i_close_fd(&client->proxy_fd);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		return -1;
	}
	if (fd_set_nonblock(pair[0], true) < 0) {
		i_error("fcntl(socketpair) failed: %s", strerror(errno));
		close(pair[0]);
		close(pair[1]);
		return -1;
	}
	client->proxy_fd = pair[0];
	return pair[1];
}

static void client_handoff_send(struct login_client *client)
{
	struct login_process *lp = client->lp;
	const unsigned char *data;
	size_t size;
	int ret = -1;

	data = i_stream_get_data(client->input, &size);
	client->handoff_id = login_process_next_id(lp);
	client->handoff_sent = true;
	int fd = client_handoff_fd(client);
	if (fd >= 0) {
		ret = login_master_handoff(lp, client->handoff_id,
			client->handoff_token, client->cmd_tag, client->remote_ip,
			client->remote_port, client->local_ip, client->local_port,
			client->secured, client->auth_mech,
			client->ssl == NULL ? "none" :
			login_ssl_get_version(client->ssl), data, size, fd);
	}
	/* The pair's other end lives on in master's message (or is gone). */
	if (fd >= 0 && fd != client->fd)
		close(fd);
	safe_memset(client->handoff_token, 0, strlen(client->handoff_token));
	i_free(client->handoff_token);
	if (ret < 0)
		login_client_handoff_fail(client, "Login service unavailable.");
}

void login_client_auth_ok(struct login_client *client, const char *user,
			  const char *token)
{
	pool_t pool = pool_create("auth ok", 256);

	/* The replay copy stays until master redeemed the token: if this
	   auth dies first, the token dies with it (HANDOFF-RETRY). */
	client->auth_generation = client->lp->auth_generation;
	login_client_ref(client);
	i_free(client->log_user);
	client->log_user = i_strdup(str_sanitize(pool, user, LOGIN_MAX_LOG_USER));
	pool_unref(&pool);

	client->state = LOGIN_CLIENT_STATE_HANDOFF;
	/* From here the connection belongs to the login, not to us: no
	   timeout may write a BYE into it. */
	login_client_timeout_stop(client);
	io_remove(&client->io);
	client->handoff_token = i_strdup(token);
	client->handoff_sent = false;
	/* Our last responses must reach the client before the imap
	   process writes its tagged OK. */
	if (o_stream_get_buffer_used(client->output) == 0)
		client_handoff_send(client);
	login_client_unref(&client);
}

void login_client_handoff_flushed(struct login_client *client)
{
	if (!client->handoff_sent && client->handoff_token != NULL)
		client_handoff_send(client);
}

void login_client_handoff_ok(struct login_client *client)
{
	i_info("Login: user=<%s>, method=%s, rip=%s, lip=%s%s%s%s",
	       client->log_user == NULL ? "" : client->log_user,
	       client->auth_mech, client->remote_ip, client->local_ip,
	       client->ssl == NULL ? "" : ", ",
	       client->ssl == NULL ? "" : login_ssl_get_version(client->ssl),
	       client->ktls_handoff ? ", kTLS" : "");
	client->handed_off = true;
	login_client_auth_forget_replay(client);
	if (client->ssl != NULL && !client->ktls_handoff) {
		/* The TLS session stays here for the rest of the connection.
		   The client's streams go first: the proxy takes the fd's ios. */
		struct login_ssl *ssl = client->ssl;
		int fd = client->fd, plain_fd = client->proxy_fd;

		o_stream_destroy(&client->output);
		client->ssl = NULL;
		client->fd = client->proxy_fd = -1;
		login_proxy_create(client->lp, ssl, fd, plain_fd);
	}
	login_client_destroy(client, NULL);
}

static void client_handoff_reset(struct login_client *client)
{
	client->handoff_sent = false;
	client->handoff_id = 0;
	client->ktls_handoff = false;
	i_close_fd(&client->proxy_fd);
	login_client_timeout_arm(client);
}

void login_client_handoff_retry(struct login_client *client, const char *text)
{
	struct login_process *lp = client->lp;

	client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
	if (!login_client_auth_repark(client)) {
		login_client_handoff_fail(client, text);
		return;
	}
	login_client_ref(client);
	client_handoff_reset(client);
	/* Sent when the next auth is connected; if it already is, now. */
	if (lp->auth_generation != client->auth_generation)
		login_clients_auth_send_parked(lp);
	login_client_input_resume(client);
	login_client_unref(&client);
}

void login_client_handoff_fail(struct login_client *client, const char *text)
{
	char *reason = reason_sanitize(text, "Login service unavailable.");

	login_client_auth_forget_replay(client);
	login_client_ref(client);
	client->state = LOGIN_CLIENT_STATE_CMD;
	client_handoff_reset(client);
	login_client_send_tagline(client, client->cmd_tag,
				  "NO [UNAVAILABLE] %s", reason);
	i_free(reason);
	login_client_input_resume(client);
	login_client_unref(&client);
}
