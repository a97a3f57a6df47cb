#ifndef LATENCY_HISTOGRAM_H
#define LATENCY_HISTOGRAM_H
/* A fixed latency histogram for metrics (OpenMetrics "le" buckets), as
   the processes keep it and send it to master in their stats records
   (imap's commands: imap/imap-stats.h; auth's requests). One set of
   bounds, so every latency family of the exposition has the same
   buckets; master writes them as seconds. */

#include "lib.h"

#define LATENCY_BUCKETS 9
#define LATENCY_BUCKET_BOUNDS_US \
	{ 1000, 5000, 10000, 50000, 100000, 500000, 1000000, 5000000, 30000000 }

struct latency_histogram {
	uint64_t count, usecs;
	/* events that took at most bound[i] (cumulative, as "le") */
	uint64_t le[LATENCY_BUCKETS];
};

/* Microseconds of the monotonic clock. */
uint64_t time_monotonic_us(void);
/* One event that took usecs. */
void latency_histogram_add(struct latency_histogram *h, uint64_t usecs);

#endif
