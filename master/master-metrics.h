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
/* Resident memory of a service's processes together (/proc/PID/statm),
   bytes: for moatadm stats. */
uint64_t master_metrics_rss_bytes(struct master *master,
				  enum service_kind kind);

#endif
