/* Micro-benchmark of the index files: creates N records through
   transactions, syncs, checkpoints, reopens, looks up, updates flags,
   caches a field per message, and prints timings, file sizes and RSS.
   Usage: bench-mail-index [N [dir]]   (default N = 100000, a temp dir)
   Figures go to doc/performance.md. */
#include "lib.h"
#include "mail-index.h"
#include "mail-cache.h"

#include <sys/stat.h>
#include <time.h>

/* Appends per transaction, as a big import would batch them. */
#define BENCH_BATCH 1000
/* A typical ENVELOPE is 200-400 bytes. */
#define BENCH_ENVELOPE_SIZE 250

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	return kb;
}

static long long file_size(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void die(const char *what, const char *error) ATTR_NORETURN;
static void die(const char *what, const char *error)
{
	fprintf(stderr, "bench: %s: %s\n", what, error);
	exit(1);
}

static void commit(struct mail_index_transaction **t)
{
	const char *error;

	if (mail_index_transaction_commit(t, MAIL_INDEX_FSYNC_NEVER, NULL, &error) < 0)
		die("commit", error);
}

static void bench_create(const char *dir, uint32_t n)
{
	struct mail_index *index;
	const char *error;
	double t0 = now_ms();

	if (mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) != 1)
		die("open", error);
	for (uint32_t done = 0; done < n; ) {
		struct mail_index_transaction *t = mail_index_transaction_begin(index);
		for (uint32_t i = 0; i < BENCH_BATCH && done < n; i++, done++)
			mail_index_append(t, 0, done % 3 == 0 ? MAIL_SEEN : 0, 0,
					  4000 + done % 5000, 1700000000 + done);
		commit(&t);
	}
	double t1 = now_ms();
	struct mail_index_view *view = mail_index_view_open(index);
	if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
		die("sync", error);
	double t2 = now_ms();
	if (mail_index_checkpoint(index, &error) < 0)
		die("checkpoint", error);
	double t3 = now_ms();
	printf("append %u in transactions of %u: %.1f ms\n", n, BENCH_BATCH, t1 - t0);
	printf("first sync (apply the log): %.1f ms\n", t2 - t1);
	printf("checkpoint (write moat.index): %.1f ms\n", t3 - t2);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static void bench_reopen(const char *dir, uint32_t n)
{
	struct mail_index *index;
	const char *error;
	long rss_before = rss_kb();
	double t0 = now_ms();

	if (mail_index_open(dir, 0, &index, &error) != 1)
		die("reopen", error);
	struct mail_index_view *view = mail_index_view_open(index);
	double t1 = now_ms();
	long rss_open = rss_kb();
	for (unsigned int i = 0; i < 1000; i++) {
		if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
			die("sync", error);
	}
	double t2 = now_ms();
	unsigned int seed = 1;
	uint32_t found = 0;
	for (unsigned int i = 0; i < 1000000; i++)
		found += mail_index_view_uid_to_seq(view, 1 + (uint32_t)rand_r(&seed) % n) != 0;
	double t3 = now_ms();
	printf("reopen with no changes: %.3f ms (count %u, RSS %ld -> %ld kB)\n",
	       t1 - t0, mail_index_view_count(view), rss_before, rss_open);
	printf("sync with no changes: %.2f us each\n", (t2 - t1));
	printf("uid->seq lookups: %.1f ns each (%u found, RSS %ld kB: mapped pages)\n",
	       (t3 - t2), found, rss_kb());

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_update_flags(t, 1, n, MAIL_FLAGGED, 0, 0, 0);
	commit(&t);
	if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
		die("sync", error);
	double t4 = now_ms();
	printf("flag all %u + sync: %.1f ms\n", n, t4 - t3);

	char env[BENCH_ENVELOPE_SIZE];
	memset(env, 'e', sizeof(env));
	for (uint32_t seq = 1; seq <= n; ) {
		t = mail_index_transaction_begin(index);
		for (uint32_t i = 0; i < BENCH_BATCH && seq <= n; i++, seq++) {
			uint32_t uid = mail_index_view_lookup(view, seq)->uid;
			if (mail_cache_add(t, uid, "envelope", env, sizeof(env)) < 0)
				die("cache add", "refused");
		}
		commit(&t);
	}
	if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
		die("sync", error);
	double t5 = now_ms();
	uint32_t hits = 0;
	for (uint32_t seq = 1; seq <= n; seq++) {
		const void *data;
		size_t size;
		hits += mail_cache_lookup(view, seq, "envelope", &data, &size) == 1;
	}
	double t6 = now_ms();
	printf("cache add %u envelopes (%d bytes) + sync: %.1f ms\n", n,
	       BENCH_ENVELOPE_SIZE, t5 - t4);
	printf("cache lookup all: %.1f ms (%u hits, RSS %ld kB)\n", t6 - t5, hits, rss_kb());
	mail_index_view_close(&view);
	mail_index_close(&index);
}

int main(int argc, char *argv[])
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
	char tmpl[] = "/tmp/moat-bench-index-XXXXXX";
	const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);

	if (dir == NULL || n == 0)
		die("usage", "bench-mail-index [N [dir]]");
	printf("bench-mail-index: N=%u in %s\n", n, dir);
	bench_create(dir, n);
	bench_reopen(dir, n);
	long long isz = file_size(dir, MAIL_INDEX_FILE_NAME);
	long long lsz = file_size(dir, MAIL_INDEX_LOG_FILE_NAME) +
		file_size(dir, MAIL_INDEX_LOG2_FILE_NAME);
	long long csz = file_size(dir, MAIL_INDEX_CACHE_FILE_NAME);
	printf("files: index %lld, logs %lld, cache %lld bytes\n", isz, lsz, csz);
	printf("per message: index %.1f, index+cache %.1f, all %.1f bytes\n",
	       (double)isz / n, (double)(isz + csz) / n, (double)(isz + csz + lsz) / n);
	if (argc <= 2) {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return 0;
}
