#ifndef IMAP_STATS_H
#define IMAP_STATS_H
/* Per-command counters of this imap process (count, time, a latency
   histogram), kept in a fixed table indexed like the command table and
   sent to master as deltas in one CMD-STATS record per command that ran
   since the last flush: batched, never a record per command. Master sums
   them for OpenMetrics (master/master-metrics.c). */

#include "imap-common.h"

struct command;
struct ipc_conn;
struct istream;
struct ostream;

#include "latency-histogram.h"

/* The histogram is lib/latency-histogram.h's (OpenMetrics "le" bounds in
   microseconds); master writes the same bounds as seconds. */
#define IMAP_STATS_BUCKETS LATENCY_BUCKETS
/* How often the counters go to master while commands run. */
#define IMAP_STATS_FLUSH_MSECS 5000

/* Microseconds of the monotonic clock, for timing a command. */
#define imap_stats_now_us() time_monotonic_us()
/* A command of def ended after usecs. */
void imap_stats_command_done(struct imap_user *user, const struct command *def,
			     uint64_t usecs);
/* Send what changed since the last flush to master (NULL: nothing is
   sent and the changes are kept); also LOAD <sessions> when the number
   of sessions changed. */
void imap_stats_flush(struct imap_user *user, struct ipc_conn *master);
void imap_stats_deinit(struct imap_user *user);
/* A client's streams count their bytes into user's (sent to master as
   IO-STATS <in> <out> with the commands' records). */
void imap_stats_count_bytes(struct imap_user *user, struct istream *input,
			    struct ostream *output);

#endif
