#ifndef IMAP_LOGIN_COMMON_H
#define IMAP_LOGIN_COMMON_H
/* imap-login: the pre-auth IMAP process. Every file of this directory
   includes this header first. It holds the process-wide state (one
   struct login_process, owned by main()) and the named bounds. */

#include "lib.h"
#include "mempool.h"
#include "buffer.h"
#include "strfuncs.h"
#include "log.h"
#include "ioloop.h"
#include "iostream.h"
#include "ipc.h"
#include "imap-parser.h"
#include "moat-settings.h"
#include "master-service.h"

#include "login-capability.h"
#include "login-stats.h"

/* Client input buffered per connection. The parser consumes command
   lines incrementally, so this bounds only a SASL continuation line (the
   base64 of LOGIN_MAX_SASL_DATA: 10924 bytes and CRLF) and the pipelined
   bytes handed to the imap process (their base64 must fit in one IPC
   record). */
#define LOGIN_MAX_INBUF_SIZE (12 * 1024)
/* Every pre-auth response is short; 16 KiB leaves room for a burst of
   pipelined replies. A client that does not read is throttled first. */
#define LOGIN_MAX_OUTBUF_SIZE 16384
/* Stop reading commands while this much output is still unsent. */
#define LOGIN_OUTBUF_THROTTLE 4096
/* Pre-auth needs no big data: a literal carries at most a user name or a
   password, so literals are capped far below imap_max_literal_size. All
   literals of a command together, and its line, are bounded by
   login_max_command_size. */
#define LOGIN_MAX_LITERAL_SIZE 8192
/* ID is the only command with a list, one level deep. */
#define LOGIN_MAX_LIST_DEPTH 4
/* Arguments of a pre-auth command: ID's 30 field-value pairs
   (LOGIN_ID_MAX_PAIRS), its list, the tag and the command name fit; a
   list of thousands of atoms would only cost memory. */
#define LOGIN_MAX_ARGS 80
/* Decoded size of a SASL initial response, a continuation response or
   LOGIN credentials: auth's limit (SASL_MAX_RESPONSE_SIZE), which long
   OAUTHBEARER tokens need. */
#define LOGIN_MAX_SASL_DATA 8192
/* An AUTH whose initial response (base64) is at most this long is kept
   until auth's first answer, so that it can be sent again when auth goes
   away before answering (login-client-park.c): LOGIN's and PLAIN's
   credentials fit; a big OAUTHBEARER token is not kept (it gets NO
   [UNAVAILABLE] as before). At most this much more per client. */
#define LOGIN_MAX_REPLAY_IR 1024
/* Listening sockets master may hand one process. */
#define LOGIN_MAX_LISTENERS 16
/* User names are logged (sanitized) up to this length. */
#define LOGIN_MAX_LOG_USER 64
/* A TLS handshake must finish within this (or login_timeout if that is
   shorter): a peer that stalls it holds a client slot. */
#define LOGIN_TLS_HANDSHAKE_SECS 30
/* Disconnected clients whose sockets linger (lib/sock-linger.h) at once per
   process; beyond that the oldest is closed at once. Each holds an fd
   and a few dozen bytes. */
#define LOGIN_MAX_LINGERING 256
/* Defaults if the service block does not say (master normally does). */
#define LOGIN_DEFAULT_CLIENT_LIMIT 1000

struct login_client;
struct login_listeners;
struct login_proxy;
struct login_ssl_ctx;
struct login_keyd;
struct sock_linger_set;

struct login_process {
	struct master_service *service;
	struct ioloop *ioloop;
	const struct moat_settings *set;
	pool_t pool;                   /* process lifetime */

	unsigned int client_limit;     /* concurrent clients */
	unsigned int service_count;    /* accepted clients in total; 0 = no limit */

	struct login_mechs mechs;      /* from auth_mechanisms */
	/* indexed by enum login_cap_flags */
	const char *capabilities[LOGIN_CAP_VARIANTS];
	struct login_ssl_ctx *ssl_ctx; /* NULL: TLS is not offered */
	/* the key-signer's socket (ssl_key_isolation = yes), else NULL */
	struct login_keyd *keyd;

	struct login_listeners *listeners;
	struct ipc_conn *master;       /* moat-login-master on fd 3 */
	struct ipc_conn *auth;         /* moat-auth-client; NULL while lost */
	bool auth_reconnect_sent;
	/* Clients whose AUTH waits for auth (login-client-park.c). */
	unsigned int auth_parked_count;
	/* One more for each auth connection (login_auth_connect()). */
	unsigned int auth_generation;

	struct login_client *clients;  /* doubly linked */
	/* Sockets of disconnected clients that still drain their input
	   (lib/sock-linger.h); not clients any more, not in client_count. */
	struct sock_linger_set *lingers;
	unsigned int client_count;
	/* Logged-in TLS sessions relayed to imap (login-proxy.h); they
	   count toward client_limit too. */
	struct login_proxy *proxies;
	unsigned int proxy_count;
	unsigned int accepted_count;
	/* ids of AUTH and HANDOFF records; never 0, never reused soon */
	unsigned int last_request_id;

	bool listen_done;              /* service_count reached */
	/* What master last heard in a LOAD record (-1 = nothing yet). */
	int reported_accepting, reported_idle;
	bool shutting_down;            /* SHUTDOWN from master */
	bool stopping;                 /* ioloop stop requested */
	struct login_stats stats;      /* metrics (login-stats.h) */
};

/* login-process.c: life cycle decisions shared by several modules. */
unsigned int login_process_next_id(struct login_process *lp);
/* A client went away: maybe accept again, maybe exit. */
void login_process_client_gone(struct login_process *lp);
/* SHUTDOWN from master, or service_count reached (listen_done). */
void login_process_stop_listening(struct login_process *lp, bool shutdown);

#endif
