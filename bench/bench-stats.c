/* Operation counts and latency percentiles for imapload. */
#include "imapload.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void bench_stats_init(struct bench_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	stats->samples_us = bench_malloc(sizeof(uint32_t) * BENCH_MAX_SAMPLES);
}

void bench_stats_free(struct bench_stats *stats)
{
	free(stats->samples_us);
	stats->samples_us = NULL;
}

void bench_stats_add(struct bench_stats *stats, uint64_t latency_us)
{
	stats->ops++;
	if (stats->samples_count < BENCH_MAX_SAMPLES) {
		stats->samples_us[stats->samples_count++] =
			latency_us > UINT32_MAX ? UINT32_MAX : (uint32_t)latency_us;
	}
}

void bench_stats_error(struct bench_stats *stats, const char *fmt, ...)
{
	va_list args;

	stats->errors++;
	if (stats->first_error[0] != '\0')
		return;
	va_start(args, fmt);
	vsnprintf(stats->first_error, sizeof(stats->first_error), fmt, args);
	va_end(args);
}

void bench_stats_unsupported(struct bench_stats *stats, const char *text)
{
	stats->unsupported++;
	if (stats->first_unsupported[0] == '\0') {
		snprintf(stats->first_unsupported,
			 sizeof(stats->first_unsupported), "%s", text);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

double bench_stats_percentile_ms(struct bench_stats *stats, double pct)
{
	size_t idx;

	if (stats->samples_count == 0)
		return 0;
	qsort(stats->samples_us, stats->samples_count, sizeof(uint32_t),
	      cmp_u32);
	idx = (size_t)(pct / 100.0 * (double)(stats->samples_count - 1) + 0.5);
	if (idx >= stats->samples_count)
		idx = stats->samples_count - 1;
	return stats->samples_us[idx] / 1000.0;
}
