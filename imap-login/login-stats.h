#ifndef LOGIN_STATS_H
#define LOGIN_STATS_H
/* Counters of this imap-login process for metrics: connections
   accepted, TLS handshakes ok/failed, pre-auth disconnects by reason and
   the IMAP bytes read from and written to clients (decrypted: pre-auth
   streams and relayed TLS sessions). Sent to master as deltas in one
   LOGIN-STATS record every LOGIN_STATS_FLUSH_MSECS when something
   changed, and at exit. Master sums them (master/master-metrics.c). */

#include "lib.h"
#include "ioloop.h"

struct login_process;

#define LOGIN_STATS_FLUSH_MSECS 5000

/* Pre-auth disconnect reasons, the "reason" label; in the record's
   order. Keep login_stats_reason_names in sync, and master's list. */
enum login_disconnect_reason {
	LOGIN_DISCONNECT_LOGOUT,        /* LOGOUT */
	LOGIN_DISCONNECT_CLOSED,        /* the client closed or reset */
	LOGIN_DISCONNECT_TIMEOUT,       /* login_timeout, TLS handshake */
	LOGIN_DISCONNECT_TLS,           /* TLS handshake or setup failed */
	LOGIN_DISCONNECT_LIMIT,         /* login_max_connections_per_ip */
	LOGIN_DISCONNECT_BAD_COMMANDS,  /* imap_max_bad_commands */
	LOGIN_DISCONNECT_SHUTDOWN,      /* the process stopped */
	LOGIN_DISCONNECT_OTHER,         /* write errors, PROXY header ... */

	LOGIN_DISCONNECT_COUNT
};

struct login_stats {
	/* not yet sent */
	uint64_t connections, tls_ok, tls_failed;
	uint64_t bytes_in, bytes_out;  /* added to by the streams */
	uint64_t disconnects[LOGIN_DISCONNECT_COUNT];
	struct timeout *to;
};

/* Starts the flush timer (lp->master set or not: nothing is sent
   without it). */
void login_stats_init(struct login_process *lp);
/* Sends what is pending; before lp->master goes. */
void login_stats_deinit(struct login_process *lp);
/* The reason of a disconnect text that login_client_destroy() logs. */
enum login_disconnect_reason login_stats_reason(const char *reason);
void login_stats_disconnect(struct login_process *lp, const char *reason);

#endif
