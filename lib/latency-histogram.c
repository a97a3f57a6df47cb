/* Latency histograms for metrics (latency-histogram.h). */
#include "latency-histogram.h"
#include "log.h"

#include <time.h>

static const uint64_t latency_bounds[LATENCY_BUCKETS] =
	LATENCY_BUCKET_BOUNDS_US;

uint64_t time_monotonic_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		i_fatal("clock_gettime(CLOCK_MONOTONIC) failed: %s",
			strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void latency_histogram_add(struct latency_histogram *h, uint64_t usecs)
{
	h->count++;
	h->usecs += usecs;
	for (unsigned int i = 0; i < LATENCY_BUCKETS; i++) {
		if (usecs <= latency_bounds[i])
			h->le[i]++;
	}
}
