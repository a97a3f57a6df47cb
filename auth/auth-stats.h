#ifndef AUTH_STATS_H
#define AUTH_STATS_H
/* Authentication counters of this auth process per SASL mechanism: ok,
   failed, and a latency histogram of the time from the AUTH record to
   the decision (the penalty queue's wait and a multi-step mechanism's
   client round trips included; the delay before a FAIL is sent not).
   Sent to master as deltas, one AUTH-STATS record per mechanism that
   was used since the last flush, every AUTH_STATS_FLUSH_MSECS: batched,
   never a record per login. Master sums them for OpenMetrics
   (master/master-metrics.c). */

#include "auth-common.h"

/* How often the counters go to master while logins happen. */
#define AUTH_STATS_FLUSH_MSECS 5000

/* Starts the flush timer; auth->master_conn must be set. */
void auth_stats_init(struct auth *auth);
/* Sends what is pending and frees the counters. */
void auth_stats_deinit(struct auth *auth);
/* A request of mechanism mech_name (a sasl_mech's name, static) was
   decided after usecs: ok, or failed. */
void auth_stats_done(struct auth *auth, const char *mech_name, bool ok,
		     uint64_t usecs);
/* Send the pending deltas to master now. */
void auth_stats_flush(struct auth *auth);

#endif
