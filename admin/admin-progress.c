/* Progress bar and lines (admin-progress.h). */
#include "admin-progress.h"

#include <time.h>

struct admin_progress {
	const char *what;
	uint64_t total, done;
	bool tty;
	int64_t start_ms, last_ms;
	bool drawn;
};

static int64_t admin_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct admin_progress *admin_progress_begin(struct admin_ctx *ctx,
					    const char *what, uint64_t total)
{
	if (ctx->quiet)
		return NULL;
	struct admin_progress *p = p_malloc(ctx->pool, sizeof(*p));
	p->what = what;
	p->total = total;
	p->tty = isatty(STDERR_FILENO) == 1;
	p->start_ms = p->last_ms = admin_now_ms();
	return p;
}

/* "1:05" for 65 seconds, "2:01:05" past an hour. */
static void admin_progress_duration(char *buf, size_t size, uint64_t secs)
{
	if (secs >= 3600)
		snprintf(buf, size, "%llu:%02llu:%02llu",
			 (unsigned long long)(secs / 3600),
			 (unsigned long long)(secs / 60 % 60),
			 (unsigned long long)(secs % 60));
	else
		snprintf(buf, size, "%llu:%02llu", (unsigned long long)(secs / 60),
			 (unsigned long long)(secs % 60));
}

static void admin_progress_print(struct admin_progress *p, int64_t now)
{
	double elapsed = (double)(now - p->start_ms) / 1000.0;
	double rate = elapsed > 0 ? (double)p->done / elapsed : 0;
	char eta[32] = "?";

	if (rate > 0 && p->total >= p->done)
		admin_progress_duration(eta, sizeof(eta), (uint64_t)
					((double)(p->total - p->done) / rate));
	unsigned int pct = p->total == 0 ? 0 :
		(unsigned int)(p->done * 100 / p->total);
	if (!p->tty) {
		fprintf(stderr, "moatadm: progress: %s %llu/%llu (%u%%), "
			"%.1f/s, ETA %s\n", p->what, (unsigned long long)p->done,
			(unsigned long long)p->total, pct, rate, eta);
		return;
	}
	char bar[ADMIN_PROGRESS_BAR_WIDTH + 1];
	unsigned int filled = p->total == 0 ? 0 :
		(unsigned int)(p->done * ADMIN_PROGRESS_BAR_WIDTH /
			       MAX(p->total, p->done));
	for (unsigned int i = 0; i < ADMIN_PROGRESS_BAR_WIDTH; i++)
		bar[i] = i < filled ? '#' : '-';
	bar[ADMIN_PROGRESS_BAR_WIDTH] = '\0';
	fprintf(stderr, "\r%s [%s] %llu/%llu %3u%% %.1f/s ETA %s\033[K",
		p->what, bar, (unsigned long long)p->done,
		(unsigned long long)p->total, pct, rate, eta);
	p->drawn = true;
}

void admin_progress_add(struct admin_progress *p, uint64_t count)
{
	if (p == NULL)
		return;
	p->done += count;
	int64_t now = admin_now_ms();
	if (now - p->last_ms < (p->tty ? ADMIN_PROGRESS_BAR_MSECS :
				ADMIN_PROGRESS_PLAIN_MSECS))
		return;
	p->last_ms = now;
	admin_progress_print(p, now);
}

void admin_progress_end(struct admin_progress **_p)
{
	struct admin_progress *p = *_p;
	char took[32];

	*_p = NULL;
	if (p == NULL)
		return;
	int64_t now = admin_now_ms();
	if (p->tty) {
		admin_progress_print(p, now);
		fputc('\n', stderr);
		return;
	}
	admin_progress_duration(took, sizeof(took),
				(uint64_t)((now - p->start_ms) / 1000));
	fprintf(stderr, "moatadm: progress: %s %llu/%llu done in %s\n",
		p->what, (unsigned long long)p->done,
		(unsigned long long)p->total, took);
}
