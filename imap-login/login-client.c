/* A pre-auth client connection: streams, parser, timeouts, output and
   the input loop. Commands are in login-cmds.c, the authentication
   exchange and handoff in login-client-auth.c. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "login-ssl.h"
#include "sock-linger.h"

#include <sys/socket.h>

#define LOGIN_GREETING_TEXT "moat ready."

static void client_input(void *context);
static void client_pending_input(void *context);
static void client_output_flushed(void *context);

void login_client_ref(struct login_client *client)
{
	i_assert(client->refcount > 0);
	client->refcount++;
}

static void client_free(struct login_client *client)
{
	i_assert(client->destroyed);
	imap_parser_destroy(&client->parser);
	i_stream_destroy(&client->input);
	o_stream_destroy(&client->output);
	login_client_tls_free(client);
	login_client_haproxy_free(client);
	i_close_fd(&client->proxy_fd);
	if (client->handoff_token != NULL) {
		safe_memset(client->handoff_token, 0, strlen(client->handoff_token));
		i_free(client->handoff_token);
	}
	login_client_auth_forget_replay(client);
	i_free(client->cmd_tag);
	i_free(client->auth_mech);
	i_free(client->log_user);
	pool_unref(&client->pool);
}

void login_client_unref(struct login_client **_client)
{
	struct login_client *client = *_client;

	*_client = NULL;
	i_assert(client->refcount > 0);
	if (--client->refcount == 0)
		client_free(client);
}

static void client_set_addresses(struct login_client *client,
				 const struct sockaddr *remote,
				 socklen_t remote_len)
{
	struct sockaddr_storage local;
	socklen_t local_len = sizeof(local);

	if (login_addr_to_str(remote, remote_len, client->remote_ip,
			      &client->remote_port) < 0)
		memcpy(client->remote_ip, "unknown", sizeof("unknown"));
	if (getsockname(client->fd, (struct sockaddr *)&local, &local_len) < 0 ||
	    login_addr_to_str((struct sockaddr *)&local, local_len,
			      client->local_ip, &client->local_port) < 0)
		memcpy(client->local_ip, "unknown", sizeof("unknown"));
}

static void client_link(struct login_client *client)
{
	struct login_process *lp = client->lp;

	client->next = lp->clients;
	if (lp->clients != NULL)
		lp->clients->prev = client;
	lp->clients = client;
	lp->client_count++;
}

static void client_unlink(struct login_client *client)
{
	struct login_process *lp = client->lp;

	if (client->prev != NULL)
		client->prev->next = client->next;
	else
		lp->clients = client->next;
	if (client->next != NULL)
		client->next->prev = client->prev;
	client->prev = client->next = NULL;
	i_assert(lp->client_count > 0);
	lp->client_count--;
}

static struct imap_parser *client_parser_create(const struct moat_settings *set)
{
	struct imap_parser_settings pset;

	memset(&pset, 0, sizeof(pset));
	/* The whole command (line and literals) is bounded before login:
	   what a client that has not authenticated can make us hold. */
	pset.max_command_size = set->login_max_command_size;
	pset.max_line_length = MIN(set->imap_max_line_length,
				   set->login_max_command_size);
	pset.max_literal_size = LOGIN_MAX_LITERAL_SIZE;
	pset.max_list_depth = LOGIN_MAX_LIST_DEPTH;
	pset.max_args = LOGIN_MAX_ARGS;
	/* LITERAL+ or LITERAL- as advertised; the literal cap applies to
	   {n+} either way. */
	pset.literal_minus = set->imap_literal_minus;
	return imap_parser_create(&pset);
}

void login_client_update_auth_flags(struct login_client *client)
{
	const struct moat_settings *set = client->lp->set;
	bool secured = client->secured || client->local || client->trusted ||
		client->haproxy_ssl;
	unsigned int flags = 0;

	client->auth_allowed = secured || set->ssl != MOAT_SSL_REQUIRED;
	client->plaintext_allowed = client->auth_allowed &&
		(secured || !set->disable_plaintext_auth);
	if (client->auth_allowed)
		flags |= LOGIN_CAP_AUTH;
	if (client->plaintext_allowed)
		flags |= LOGIN_CAP_PLAINTEXT_AUTH;
	if (client->lp->ssl_ctx != NULL && client->ssl == NULL)
		flags |= LOGIN_CAP_STARTTLS;
	if (client->cbind_b64 != NULL)
		flags |= LOGIN_CAP_CHANNEL_BINDING;
	if (client->cert_user != NULL)
		flags |= LOGIN_CAP_CLIENT_CERT;
	client->capability = client->lp->capabilities[flags];
}

void login_client_send_greeting(struct login_client *client)
{
	login_client_send_tagline(client, "*", "OK [CAPABILITY %s] %s",
				  client->capability, LOGIN_GREETING_TEXT);
}

/* Plaintext streams on the socket, or TLS streams once the handshake is
   done. */
void login_client_streams_create(struct login_client *client)
{
	struct login_process *lp = client->lp;
	struct stream_transport t;

	if (client->ssl == NULL) {
		client->input = i_stream_create_fd(client->fd, LOGIN_MAX_INBUF_SIZE);
		client->output = o_stream_create_fd(lp->ioloop, client->fd,
						    LOGIN_MAX_OUTBUF_SIZE);
	} else {
		login_ssl_get_transport(client->ssl, &t);
		client->input = i_stream_create_transport(&t, LOGIN_MAX_INBUF_SIZE);
		client->output = o_stream_create_transport(lp->ioloop, &t,
							   LOGIN_MAX_OUTBUF_SIZE);
		o_stream_set_io_fd(client->output, client->fd);
	}
	o_stream_set_flush_callback(client->output, client_output_flushed, client);
	i_stream_set_bytes_counter(client->input, &lp->stats.bytes_in);
	o_stream_set_bytes_counter(client->output, &lp->stats.bytes_out);
}

/* login_max_connections_per_ip: pre-auth connections of one remote IP
   over all imap-login processes, counted by master (login-limits.c in
   master). Trusted networks (a webmail proxy is many users) and the
   same host are exempt; we decide that, master only counts. */
static bool client_ip_limit_applies(const struct login_client *client)
{
	/* "unknown": not an AF_INET/AF_INET6 peer, which our TCP listeners
	   never accept; there is no address to count. */
	return client->lp->set->login_max_connections_per_ip != 0 &&
		!client->trusted && !client->local &&
		strcmp(client->remote_ip, "unknown") != 0;
}

#define CLIENT_IP_LIMIT_REASON \
	"Too many connections from IP (login_max_connections_per_ip)"

/* Allowed to be served: the greeting, or first the TLS handshake. */
static void client_start(struct login_client *client)
{
	if (client->implicit_tls) {
		/* The greeting follows the handshake (RFC 8314 3.2). */
		client->state = LOGIN_CLIENT_STATE_TLS;
		login_client_tls_start(client);
		return;
	}
	client->state = LOGIN_CLIENT_STATE_CMD;
	login_client_streams_create(client);
	login_client_send_greeting(client);
	if (!client->destroyed)
		client->io = io_add(client->lp->ioloop, client->fd, IO_READ,
				    client_input, client);
}

void login_client_connect_reply(struct login_client *client, bool allowed)
{
	i_assert(client->state == LOGIN_CLIENT_STATE_CONNECTING);
	login_client_ref(client);
	if (allowed) {
		client_start(client);
	} else {
		/* master did not count it: nothing to DISCONNECT */
		client->limit_id = 0;
		/* Said in plaintext only: a TLS port gets no answer. */
		if (!client->implicit_tls) {
			login_client_streams_create(client);
			login_client_send_line(client, "* BYE [UNAVAILABLE] "
				"Too many connections from your IP address.");
		}
		login_client_destroy(client, CLIENT_IP_LIMIT_REASON);
	}
	login_client_unref(&client);
}

struct login_client *login_client_find_connecting(struct login_process *lp,
						  unsigned int id)
{
	for (struct login_client *c = lp->clients; c != NULL; c = c->next) {
		if (c->limit_id == id &&
		    c->state == LOGIN_CLIENT_STATE_CONNECTING)
			return c;
	}
	return NULL;
}

/* Same host and login_trusted_networks, from the client's addresses. */
static void client_classify(struct login_client *client)
{
	const struct moat_settings *set = client->lp->set;

	client->local = strcmp(client->remote_ip, "unknown") != 0 &&
		strcmp(client->remote_ip, client->local_ip) == 0;
	client->trusted = set->login_trusted_networks[0] != '\0' &&
		moat_settings_net_match(set->login_trusted_networks,
					client->remote_ip);
	login_client_update_auth_flags(client);
}

void login_client_admit(struct login_client *client)
{
	struct login_process *lp = client->lp;

	client_classify(client);
	if (!client_ip_limit_applies(client)) {
		client_start(client);
		return;
	}
	/* Nothing is read or sent until master answers; the login timeout
	   covers a master that does not. */
	client->state = LOGIN_CLIENT_STATE_CONNECTING;
	client->limit_id = login_process_next_id(lp);
	if (login_master_connect_check(lp, client->limit_id,
				       client->remote_ip) < 0) {
		client->limit_id = 0;
		login_client_destroy(client, "Master unavailable");
	}
}

struct login_client *
login_client_create(struct login_process *lp, int fd,
		    const struct sockaddr *remote, socklen_t remote_len,
		    bool implicit_tls, bool haproxy)
{
	pool_t pool = pool_create("login client", 1024);
	struct login_client *client = p_malloc(pool, sizeof(*client));

	client->pool = pool;
	client->lp = lp;
	client->refcount = 1;
	client->fd = fd;
	client->proxy_fd = -1;
	client->implicit_tls = implicit_tls;
	client_set_addresses(client, remote, remote_len);
	client_classify(client);
	client->parser = client_parser_create(lp->set);
	client->created_ms = io_loop_time_ms(lp->ioloop);
	client->deadline_ms = client->created_ms +
		(uint64_t)lp->set->login_timeout * 1000;
	client_link(client);
	login_client_timeout_arm(client);

	struct login_client *ref = client;
	login_client_ref(ref);
	if (haproxy)
		login_client_haproxy_start(client);
	else
		login_client_admit(client);
	bool failed = client->destroyed;
	login_client_unref(&ref);
	return failed ? NULL : client;
}

static const char *client_auth_summary(struct login_client *client, pool_t pool)
{
	uint64_t secs = (io_loop_time_ms(client->lp->ioloop) -
			 client->created_ms) / 1000;

	if (client->auth_attempts == 0)
		return p_strdup_printf(pool, "no auth attempts in %llu secs",
				       (unsigned long long)secs);
	if (client->auth_failures > 0)
		return p_strdup_printf(pool, "auth failed, %u attempts in %llu secs",
				       client->auth_attempts,
				       (unsigned long long)secs);
	return p_strdup_printf(pool, "%u auth attempts in %llu secs",
			       client->auth_attempts, (unsigned long long)secs);
}

static void client_log_disconnect(struct login_client *client, const char *reason)
{
	pool_t pool = pool_create("disconnect log", 512);

	/* reason is ours (never client text); the user name is sanitized. */
	i_info("Disconnected: %s (%s): %s%s%srip=%s, lip=%s", reason,
	       client_auth_summary(client, pool),
	       client->log_user == NULL ? "" : "user=<",
	       client->log_user == NULL ? "" : client->log_user,
	       client->log_user == NULL ? "" : ">, ",
	       client->remote_ip, client->local_ip);
	pool_unref(&pool);
}

void login_client_destroy(struct login_client *client, const char *reason)
{
	struct login_process *lp = client->lp;

	if (client->destroyed)
		return;
	client->destroyed = true;
	if (!client->handed_off) {
		client_log_disconnect(client, reason);
		login_stats_disconnect(lp, reason);
	}
	client_unlink(client);
	/* Logged in or gone: no longer a pre-auth connection of its IP. */
	if (client->limit_id != 0) {
		login_master_disconnect(lp, client->limit_id);
		client->limit_id = 0;
	}
	/* auth is waiting for our response line, or the request waits
	   there for its turn or its answer: let auth drop it, so it does
	   not hold a place in its address's penalty queue. */
	if (client->auth_parked)
		login_client_auth_unpark(client);   /* auth never saw it */
	else if (client->state == LOGIN_CLIENT_STATE_AUTH_CONT ||
		 (client->state == LOGIN_CLIENT_STATE_AUTH_WAIT &&
		  client->auth_cancel_reason == NULL))
		(void)login_auth_continue(lp, client->auth_id, "*");
	io_remove(&client->io);
	login_client_timeout_stop(client);
	login_client_haproxy_free(client);
	if (client->to_pending != NULL)
		timeout_remove(&client->to_pending);
	/* Best effort, without blocking: a BYE we queued may still go out. */
	int flushed = 0;
	if (!client->handed_off && client->output != NULL &&
	    !o_stream_is_failed(client->output))
		flushed = o_stream_flush(client->output);
	/* Drops its write io before the fd number can be reused. */
	o_stream_destroy(&client->output);
	login_client_tls_free(client);
	/* All we said is in the kernel and the client may still be sending:
	   a plain close() would reset the connection and could lose that
	   last line (lib/sock-linger.h). After its EOF nothing more can come. */
	if (flushed > 0 && !client->input_eof && client->fd >= 0 &&
	    lp->lingers != NULL)
		sock_linger_close(lp->lingers, &client->fd);
	else
		i_close_fd(&client->fd);
	login_client_unref(&client);
	login_process_client_gone(lp);
}

void login_clients_destroy_all(struct login_process *lp)
{
	while (lp->clients != NULL)
		login_client_destroy(lp->clients, "Server shutting down");
}

void login_client_send_line(struct login_client *client, const char *line)
{
	size_t len = strlen(line);

	/* No stream while a TLS handshake runs: nothing can be said. */
	if (client->destroyed || client->output == NULL)
		return;
	/* Line and CRLF go in one call so a full buffer cuts no line. */
	char *full = i_malloc(len + 3);
	memcpy(full, line, len);
	memcpy(full + len, "\r\n", 2);
	int ret = o_stream_send(client->output, full, len + 2);
	i_free(full);
	if (ret < 0) {
		login_client_destroy(client, o_stream_is_failed(client->output) ?
				     "Write failed" : "Output buffer full");
	}
}

void login_client_send_tagline(struct login_client *client, const char *tag,
			       const char *fmt, ...)
{
	va_list args;
	char *text, *line;

	va_start(args, fmt);
	text = i_strdup_vprintf(fmt, args);
	va_end(args);
	line = i_strdup_printf("%s %s", tag, text);
	login_client_send_line(client, line);
	i_free(line);
	i_free(text);
}

void login_client_send_bad(struct login_client *client, const char *tag,
			   const char *text)
{
	unsigned int max_bad = client->lp->set->imap_max_bad_commands;

	login_client_send_tagline(client, tag == NULL ? "*" : tag, "BAD %s", text);
	/* 0 = unlimited */
	if (max_bad != 0 && ++client->bad_count >= max_bad) {
		login_client_bye(client, "Too many invalid commands.",
				 "Too many invalid commands");
	}
}

void login_client_bye(struct login_client *client, const char *text,
		      const char *reason)
{
	login_client_send_tagline(client, "*", "BYE %s", text);
	login_client_destroy(client, reason);
}

static void client_timeout(void *context)
{
	struct login_client *client = context;

	client->to_login = NULL;
	/* Disarmed during a handoff: the client no longer talks to us. */
	i_assert(client->state != LOGIN_CLIENT_STATE_HANDOFF);
	login_client_ref(client);
	if (client->state == LOGIN_CLIENT_STATE_CONNECTING)
		login_client_destroy(client, "Login timeout waiting for master");
	else if (client->state == LOGIN_CLIENT_STATE_PROXY)
		login_client_destroy(client, "Login timeout waiting for the "
				     "PROXY header");
	else if (client->output == NULL)
		login_client_destroy(client, "Login timeout during TLS handshake");
	else
		login_client_bye(client, "Login timeout", "Login timeout");
	login_client_unref(&client);
}

void login_client_timeout_arm(struct login_client *client)
{
	uint64_t now = io_loop_time_ms(client->lp->ioloop);
	/* After a failed handoff near the deadline, give one more second. */
	uint64_t left = client->deadline_ms > now + 1000 ?
		client->deadline_ms - now : 1000;

	login_client_timeout_stop(client);
	if (left > UINT_MAX)
		left = UINT_MAX;
	client->to_login = timeout_add(client->lp->ioloop, (unsigned int)left,
				       client_timeout, client);
}

void login_client_timeout_stop(struct login_client *client)
{
	if (client->to_login != NULL)
		timeout_remove(&client->to_login);
}

/* Feed buffered bytes to the parser once. Returns 1 to continue, 0 when
   more input is needed. */
static int client_parse_one(struct login_client *client)
{
	const struct imap_arg *args = NULL;
	const unsigned char *data;
	const char *error, *tag;
	size_t size, consumed = 0;
	bool fatal;

	data = i_stream_get_data(client->input, &size);
	if (size == 0)
		return 0;
	enum imap_parse_result res =
		imap_parser_feed(client->parser, IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL,
				 data, size, &consumed, &args);
	i_stream_skip(client->input, consumed);
	switch (res) {
	case IMAP_PARSE_MORE:
		return 0;
	case IMAP_PARSE_NEED_CONTINUATION:
		login_client_send_line(client, "+ OK");
		return 1;
	case IMAP_PARSE_DONE:
		if (args != NULL) {
			login_cmd_run(client, imap_parser_get_tag(client->parser),
				      args);
		}
		imap_parser_reset(client->parser);
		return 1;
	case IMAP_PARSE_ERROR:
		error = imap_parser_get_error(client->parser, &fatal);
		if (fatal) {
			/* error is the parser's static text, never client
			   data, so it may go into the log line */
			pool_t pool = pool_create("parse error", 256);
			login_client_bye(client, error, p_strdup_printf(pool,
				"Protocol error: %s", error));
			pool_unref(&pool);
			return 0;
		}
		tag = imap_parser_get_tag(client->parser);
		login_client_send_bad(client, tag, error);
		return 1;
	case IMAP_PARSE_LITERAL_SIZE:
		break;
	}
	i_unreached();
}

static bool client_output_is_throttled(struct login_client *client)
{
	if (client->output == NULL ||
	    o_stream_get_buffer_used(client->output) <= LOGIN_OUTBUF_THROTTLE)
		return false;
	/* client_output_flushed() resumes once the client read it all. */
	client->output_throttled = true;
	return true;
}

static bool client_input_full(struct login_client *client)
{
	size_t size;

	(void)i_stream_get_data(client->input, &size);
	return size >= LOGIN_MAX_INBUF_SIZE;
}

static void client_update_io(struct login_client *client)
{
	/* While auth has our request, input is read into the bounded
	   buffer (not parsed: that waits for the answer) only so that a
	   client that hangs up is noticed and its request, which may be
	   waiting for its address's penalty, is dropped at auth. */
	bool watch = client->state == LOGIN_CLIENT_STATE_AUTH_WAIT &&
		client->input != NULL && !client_input_full(client);
	bool want = !client->destroyed && !client->output_throttled &&
		!client->input_eof &&
		(client->state == LOGIN_CLIENT_STATE_CMD ||
		 client->state == LOGIN_CLIENT_STATE_AUTH_CONT || watch);

	if (want && client->io == NULL) {
		client->io = io_add(client->lp->ioloop, client->fd, IO_READ,
				    client_input, client);
	} else if (!want && client->io != NULL) {
		io_remove(&client->io);
	}
	/* Bytes OpenSSL already decrypted wake no io: read them soon. */
	if (want && client->ssl != NULL && client->to_pending == NULL &&
	    login_ssl_has_pending(client->ssl)) {
		client->to_pending = io_loop_defer(client->lp->ioloop,
						   client_pending_input, client);
	}
}

static void client_pending_input(void *context)
{
	struct login_client *client = context;

	client->to_pending = NULL;
	client_input(client);
}

static void client_input_process(struct login_client *client)
{
	int ret = 1;

	while (ret > 0 && !client->destroyed &&
	       !client_output_is_throttled(client)) {
		switch (client->state) {
		case LOGIN_CLIENT_STATE_CMD:
			ret = client_parse_one(client);
			break;
		case LOGIN_CLIENT_STATE_AUTH_CONT:
			ret = login_client_auth_input(client);
			break;
		default:
			ret = 0;
			break;
		}
	}
	/* EOF while still reading: what was buffered has been handled. */
	if (client->input_eof && !client->destroyed &&
	    !client->output_throttled &&
	    (client->state == LOGIN_CLIENT_STATE_CMD ||
	     client->state == LOGIN_CLIENT_STATE_AUTH_CONT))
		login_client_destroy(client, "Connection closed");
	/* Gone while auth works on its request: nobody reads the answer. */
	if (client->input_eof && !client->destroyed &&
	    client->state == LOGIN_CLIENT_STATE_AUTH_WAIT)
		login_client_destroy(client, "Connection closed during authentication");
	client_update_io(client);
}

static void client_input(void *context)
{
	struct login_client *client = context;
	ssize_t ret = i_stream_read(client->input);

	login_client_ref(client);
	if (ret == -1) {
		const char *error = i_stream_get_error(client->input);

		client->input_eof = true;
		/* A reset drops what the client sent; a clean EOF lets the
		   buffered commands run first (client_input_process). */
		if (strcmp(error, "EOF") != 0) {
			pool_t pool = pool_create("read error", 256);
			login_client_destroy(client, p_strdup_printf(pool,
				"Connection closed: %s", error));
			pool_unref(&pool);
		}
	}
	/* -2 (buffer full) is handled by the state: the parser consumes
	   everything, a SASL line that does not fit is an error. */
	if (!client->destroyed)
		client_input_process(client);
	login_client_unref(&client);
}

void login_client_input_resume(struct login_client *client)
{
	if (client->destroyed)
		return;
	login_client_ref(client);
	client_input_process(client);
	login_client_unref(&client);
}

static void client_output_flushed(void *context)
{
	struct login_client *client = context;

	login_client_ref(client);
	if (o_stream_is_failed(client->output)) {
		client->input_eof = true;
		login_client_destroy(client, "Write failed");
	} else if (client->state == LOGIN_CLIENT_STATE_HANDOFF) {
		login_client_handoff_flushed(client);
	} else if (client->state == LOGIN_CLIENT_STATE_TLS &&
		   client->ssl == NULL) {
		/* "OK Begin TLS negotiation now" is out. */
		login_client_tls_start(client);
	} else if (client->output_throttled) {
		client->output_throttled = false;
		client_input_process(client);
	}
	login_client_unref(&client);
}

struct login_client *login_client_find_auth(struct login_process *lp,
					    unsigned int id)
{
	for (struct login_client *c = lp->clients; c != NULL; c = c->next) {
		if (c->auth_id == id &&
		    (c->state == LOGIN_CLIENT_STATE_AUTH_WAIT ||
		     c->state == LOGIN_CLIENT_STATE_AUTH_CONT))
			return c;
	}
	return NULL;
}

struct login_client *login_client_find_handoff(struct login_process *lp,
					       unsigned int id)
{
	for (struct login_client *c = lp->clients; c != NULL; c = c->next) {
		if (c->handoff_id == id && c->handoff_sent &&
		    c->state == LOGIN_CLIENT_STATE_HANDOFF)
			return c;
	}
	return NULL;
}
