#ifndef MASTER_METRICS_H
#define MASTER_METRICS_H
/* OpenMetrics for scrapers (Prometheus): master's counters as text on
   metrics_listener (a unix socket) and metrics_port (127.0.0.1), over a
   minimal HTTP server (GET /metrics). See doc/configuration.md. */

#include "master-common.h"

/* Open the listeners the settings name (after master_admin_init: the
   socket takes admin_group). A listener that cannot be opened is logged
   and left out. Listeners keep their start-up settings across reloads,
   as the admin socket does. */
void master_metrics_init(struct master *master);
void master_metrics_deinit(struct master *master);
/* A CMD-STATS record of an imap process (imap/imap-stats.h): add its
   counts. Returns false if it is malformed (the caller kills the
   process). */
bool master_metrics_imap_stats(struct master *master,
			       const char *const *args);
/* An AUTH-STATS record of auth (auth/auth-stats.h), a LOGIN-STATS record
   of an imap-login process (imap-login/login-stats.h), an IO-STATS
   record of an imap process: add its counts. false if malformed (the
   caller kills the process). */
bool master_metrics_auth_stats(struct master *master,
			       const char *const *args);
bool master_metrics_login_stats(struct master *master,
				const char *const *args);
bool master_metrics_imap_io(struct master *master, const char *const *args);
/* A DELIVERY-STATS record of an lmtp process (lmtp/lmtp-master.h). */
bool master_metrics_lmtp_stats(struct master *master,
			       const char *const *args);

/* Pre-auth disconnect reasons of LOGIN-STATS, in its order (the
   "reason" label). */
#define METRICS_DISCONNECT_REASONS 8
extern const char *const master_metrics_disconnect_reasons[];
#define METRICS_DELIVERY_RESULTS 3
extern const char *const master_metrics_delivery_results[];

/* Totals since master started, for moatadm stats. */
struct master_metrics_totals {
	uint64_t login_connections, tls_ok, tls_failed;
	uint64_t login_bytes_in, login_bytes_out;
	uint64_t imap_bytes_in, imap_bytes_out;
	uint64_t disconnects[METRICS_DISCONNECT_REASONS];
	/* LMTP recipients' DATA answers: delivered, tempfail, permfail */
	uint64_t deliveries[METRICS_DELIVERY_RESULTS];
};
const struct master_metrics_totals *
master_metrics_get_totals(struct master *master);

/* Per SASL mechanism, for moatadm stats auth: calls cb for each one
   used since master started. */
typedef void master_metrics_auth_cb_t(void *context, const char *mech,
				      uint64_t ok, uint64_t failed,
				      uint64_t usecs);
void master_metrics_auth_foreach(struct master *master,
				 master_metrics_auth_cb_t *cb, void *context);

/* Resident memory of a service's processes together (/proc/PID/statm),
   bytes: for moatadm stats. */
uint64_t master_metrics_rss_bytes(struct master *master,
				  enum service_kind kind);

#endif
