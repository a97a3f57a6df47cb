#ifndef LOGIN_CLIENT_H
#define LOGIN_CLIENT_H
/* One pre-auth IMAP connection.

   Ownership: the process's client list holds one reference; every entry
   point from the event loop (input, timeout, flush, an auth or master
   record about this client) holds another while it runs, so a client
   destroyed in the middle of a command stays valid memory until that
   entry point returns. After login_client_destroy() the client is
   "destroyed": sends are no-ops, no callback of it runs again.

   States:
     PROXY      a haproxy = yes listener: reading the PROXY protocol
                header (login-client-haproxy.c); nothing is written and
                no other byte is read until it is complete
     CONNECTING asked master whether login_max_connections_per_ip
                allows this client (CONNECT); nothing is read or written
                until it answers
     CMD        reading and running commands
     AUTH_WAIT  an AUTH or CONT record is at auth, or the AUTH is parked
                (auth_parked) until the process has auth again; client
                input is not parsed, only read into our bounded input
                buffer (then the kernel buffers it) so that a hangup is
                noticed: the request is then cancelled at auth
     AUTH_CONT  "+ challenge" was sent; reading the client's response line
     HANDOFF    auth said OK; waiting for our output to drain and then for
                master's HANDOFF-OK/-FAIL. Nothing is read or written.
     TLS        STARTTLS was answered (waiting for that line to drain) or
                the TLS handshake runs (STARTTLS or an ssl listener);
                input/output are NULL while the handshake runs. */

#include "login-util.h"

enum login_client_state {
	LOGIN_CLIENT_STATE_CMD = 0,
	LOGIN_CLIENT_STATE_AUTH_WAIT,
	LOGIN_CLIENT_STATE_AUTH_CONT,
	LOGIN_CLIENT_STATE_HANDOFF,
	LOGIN_CLIENT_STATE_TLS,
	LOGIN_CLIENT_STATE_CONNECTING,
	LOGIN_CLIENT_STATE_PROXY,
};

struct login_ssl;

struct login_client {
	struct login_client *prev, *next;
	struct login_process *lp;
	pool_t pool;                   /* the client and its fixed strings */
	int refcount;
	int fd;

	struct io *io;                 /* read io, only while reading */
	struct istream *input;
	struct ostream *output;
	struct imap_parser *parser;
	struct timeout *to_login;
	uint64_t created_ms;
	uint64_t deadline_ms;          /* login_timeout */

	char remote_ip[LOGIN_IP_STR_MAX];
	char local_ip[LOGIN_IP_STR_MAX];
	unsigned int remote_port, local_port;
	bool secured;                  /* TLS is active */
	/* remote IP == local IP: the same host, as trusted as TLS for
	   disable_plaintext_auth and ssl = required */
	bool local;
	/* remote IP in login_trusted_networks: secured for plaintext auth,
	   no auth penalty, may set the client address with ID
	   x-originating-ip (then remote_ip/remote_port are the client's
	   and penalties apply to it again) */
	bool trusted;
	bool ip_overridden;            /* x-originating-ip was accepted */
	/* PROXY header (haproxy = yes listener): the bytes read so far
	   (i_malloc'd, HAPROXY_HEADER_MAX_SIZE, freed once it is parsed)
	   and its timer. remote_ip/local_ip are then the header's. */
	unsigned char *haproxy_buf;
	size_t haproxy_size;
	struct timeout *to_haproxy;
	/* The header's SSL TLV: the client's leg to the load balancer was
	   TLS (terminated there), so it counts as secured like TLS. */
	bool haproxy_ssl;
	bool plaintext_allowed;        /* LOGIN, PLAIN */
	bool auth_allowed;             /* any mechanism (ssl = required) */
	const char *capability;        /* lp->capabilities[] entry */

	/* TLS: the session, the handshake's io and timer */
	struct login_ssl *ssl;
	/* base64 tls-exporter channel binding (RFC 9266) after the TLS
	   handshake, or NULL (no TLS, or TLS 1.2 without extended master
	   secret) */
	const char *cbind_b64;
	/* The user named by a client certificate that verified against
	   ssl_ca (ssl_cert_username_field), or NULL: sent to auth as
	   cert_user= and enables EXTERNAL. */
	const char *cert_user;
	struct io *io_tls;
	struct timeout *to_handshake;
	struct timeout *to_pending;    /* decrypted bytes await reading */
	bool implicit_tls;             /* ssl listener: greet after handshake */
	/* Our end of the socketpair whose other end went to master in a
	   TLS client's HANDOFF (-1 = none). */
	int proxy_fd;

	enum login_client_state state;
	/* The id of our CONNECT to master while master counts this client
	   (0 = not counted: exempt, refused, or DISCONNECT sent). */
	unsigned int limit_id;
	unsigned int bad_count;
	unsigned int auth_attempts;
	unsigned int auth_failures;

	/* The running LOGIN/AUTHENTICATE (i_strdup'd, replaced per command). */
	unsigned int auth_id;
	char *cmd_tag;
	char *auth_mech;
	char *log_user;                /* sanitized, for log lines */
	/* The client cancelled ("*") or sent bad base64: auth's FAIL that
	   answers our "CONT id *" is reported with this BAD text. */
	const char *auth_cancel_reason;
	/* Parked AUTH (login-client-park.c): its initial response (base64,
	   i_strdup'd, wiped when freed) and the login_auth_park_timeout. */
	bool auth_parked;
	char *park_ir;
	struct timeout *to_park;
	/* The AUTH at auth has had no answer yet: its initial response
	   (i_strdup'd, at most LOGIN_MAX_REPLAY_IR, wiped when freed) to
	   park it again if auth goes away, once per command
	   (auth_replayed). */
	char *replay_ir;
	bool auth_replayed;
	/* lp->auth_generation of the auth that said OK */
	unsigned int auth_generation;

	/* Handoff: the token is wiped as soon as it was sent. */
	unsigned int handoff_id;
	char *handoff_token;
	bool handoff_sent;

	bool input_eof;
	bool output_throttled;
	bool handed_off;               /* fd now belongs to an imap process */
	/* The HANDOFF carries the client socket itself, its TLS record layer
	   in the kernel (ssl_ktls): nothing of the TLS state stays here. */
	bool ktls_handoff;
	bool destroyed;
};

/* Takes ownership of fd (already non-blocking); remote is what accept()
   returned. Sends the greeting (after the PROXY header with haproxy).
   Returns NULL if the client failed at once (it was destroyed and
   logged). */
struct login_client *
login_client_create(struct login_process *lp, int fd,
		    const struct sockaddr *remote, socklen_t remote_len,
		    bool implicit_tls, bool haproxy);
/* The addresses are known (at creation, or from the PROXY header):
   decide local and trusted, then the per-IP limit, the greeting or the
   TLS handshake. The client may be destroyed. */
void login_client_admit(struct login_client *client);
/* Recompute plaintext_allowed, auth_allowed and capability (after TLS
   became active). */
void login_client_update_auth_flags(struct login_client *client);
/* Create input/output on the socket, over TLS if client->ssl is set. */
void login_client_streams_create(struct login_client *client);
/* Send the untagged greeting with the capability list. */
void login_client_send_greeting(struct login_client *client);
/* Log "Disconnected: reason" (unless handed off), flush what we can,
   close the fd and drop the list's reference. Idempotent. */
void login_client_destroy(struct login_client *client, const char *reason);
/* Destroy all clients (process exit). */
void login_clients_destroy_all(struct login_process *lp);

void login_client_ref(struct login_client *client);
void login_client_unref(struct login_client **client);

/* Queue line + CRLF. On a full output buffer or a write error the client
   is destroyed. */
void login_client_send_line(struct login_client *client, const char *line);
void login_client_send_tagline(struct login_client *client, const char *tag,
			       const char *fmt, ...) ATTR_FORMAT(3, 4);
/* "tag BAD text" (or "* BAD" with tag NULL); counts toward
   imap_max_bad_commands and closes the connection at the limit. */
void login_client_send_bad(struct login_client *client, const char *tag,
			   const char *text);
/* "* BYE text", then destroy with reason. */
void login_client_bye(struct login_client *client, const char *text,
		      const char *reason);

/* Back to the CMD state (or AUTH_CONT): rearm the reader and process
   input already buffered. */
void login_client_input_resume(struct login_client *client);
/* Rearm the login timeout for the time left (after a failed handoff). */
void login_client_timeout_arm(struct login_client *client);
void login_client_timeout_stop(struct login_client *client);

/* CONNECT-OK (allowed) or CONNECT-FAIL from master: greet the client
   (or start its TLS handshake), or refuse it. */
void login_client_connect_reply(struct login_client *client, bool allowed);

/* Clients of this process waiting for an answer with this id. */
struct login_client *login_client_find_connecting(struct login_process *lp,
						  unsigned int id);
struct login_client *login_client_find_auth(struct login_process *lp,
					    unsigned int id);
struct login_client *login_client_find_handoff(struct login_process *lp,
					       unsigned int id);

/* login-client-auth.c: the authentication exchange and the handoff. */
/* Start authenticating with mech (upper case) and the base64 initial
   response ir_b64 ("" for none). tag is the command's. */
void login_client_auth_begin(struct login_client *client, const char *tag,
			     const char *mech, const char *ir_b64);
/* Send the AUTH record of the request set up by login_client_auth_begin()
   (a parked one, too). The client may be answered, or destroyed. */
void login_client_auth_send(struct login_client *client, const char *ir_b64);
/* AUTH_CONT: handle the client's response line if one is buffered.
   Returns 1 if a line was handled, 0 if more input is needed, -1 if the
   client was destroyed. */
int login_client_auth_input(struct login_client *client);
/* Records from auth about this client. */
void login_client_auth_cont(struct login_client *client, const char *challenge);
void login_client_auth_ok(struct login_client *client, const char *user,
			  const char *token);
void login_client_auth_fail(struct login_client *client, const char *code,
			    const char *text);
/* Output drained: send a HANDOFF that was waiting for it. */
void login_client_handoff_flushed(struct login_client *client);
/* Records from master about this client. */
void login_client_handoff_ok(struct login_client *client);
void login_client_handoff_fail(struct login_client *client, const char *text);
/* HANDOFF-RETRY: the auth that issued the token is gone. Authenticate
   again with the next auth if the request can be replayed, else as
   HANDOFF-FAIL. */
void login_client_handoff_retry(struct login_client *client, const char *text);

/* login-client-park.c: requests that wait while auth is not connected. */
/* Park the request (AUTH_WAIT, auth_id 0) unless login_auth_park_limit
   requests of the process wait already. Returns false if not parked: the
   caller answers it. */
bool login_client_auth_park(struct login_client *client, const char *ir_b64);
/* Forget a parked request without answering it (client destroyed, or
   its timeout). No-op if the client has none. */
void login_client_auth_unpark(struct login_client *client);
/* auth is connected: send every parked request. */
void login_clients_auth_send_parked(struct login_process *lp);
/* Keep ir_b64 for a replay of the AUTH just sent (if it is short enough
   and the command was not replayed yet). */
void login_client_auth_keep_replay(struct login_client *client,
				   const char *ir_b64);
/* auth answered (or the request ended): nothing to replay any more. */
void login_client_auth_forget_replay(struct login_client *client);
/* auth went away with the request unanswered: park it again if it can
   be replayed. Returns false if not: the caller answers it. */
bool login_client_auth_repark(struct login_client *client);

/* login-client-haproxy.c */
/* Refuse a connection from outside haproxy_trusted_networks, else start
   reading its PROXY header; login_client_admit() follows it. The client
   may be destroyed. */
void login_client_haproxy_start(struct login_client *client);
/* Free the header's buffer and timer (done, or client destroyed). */
void login_client_haproxy_free(struct login_client *client);

/* login-client-tls.c */
/* STARTTLS was answered OK: discard pipelined input (RFC 2595 3.1 / the
   CVE-2011-0411 injection class) and start TLS once the OK is out. */
void login_client_starttls(struct login_client *client);
/* Start the server handshake on the socket (implicit TLS, or STARTTLS
   after the OK drained). The client may be destroyed. */
void login_client_tls_start(struct login_client *client);
/* Release the TLS session (client destroyed): close_notify if it was
   established and not handed on. */
void login_client_tls_free(struct login_client *client);

/* login-cmds.c: run one parsed command line. args is the whole line
   (tag, command name, arguments); tag is the parser's validated tag or
   NULL. */
void login_cmd_run(struct login_client *client, const char *tag,
		   const struct imap_arg *args);

#endif
