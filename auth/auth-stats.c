/* Per-mechanism authentication counters, batched to master
   (auth-stats.h). */
#include "auth-common.h"
#include "auth-stats.h"
#include "latency-histogram.h"

/* Distinct mechanism names: sasl-mech.c's table has 10. A name past
   this is not counted (the table is ours, so that is a bug). */
#define AUTH_STATS_MECHS_MAX 16

struct auth_stats_mech {
	const char *name;            /* the sasl_mech's static name */
	uint64_t ok, failed;         /* not yet sent */
	struct latency_histogram latency;
};

struct auth_stats {
	struct auth_stats_mech mechs[AUTH_STATS_MECHS_MAX];
	unsigned int count;
	struct timeout *to;
};

static void auth_stats_timeout(void *context)
{
	struct auth *auth = context;

	auth_stats_flush(auth);
	auth->stats->to = timeout_add(auth->ioloop, AUTH_STATS_FLUSH_MSECS,
				      auth_stats_timeout, auth);
}

void auth_stats_init(struct auth *auth)
{
	auth->stats = i_malloc(sizeof(*auth->stats));
	auth->stats->to = timeout_add(auth->ioloop, AUTH_STATS_FLUSH_MSECS,
				      auth_stats_timeout, auth);
}

void auth_stats_deinit(struct auth *auth)
{
	if (auth->stats == NULL)
		return;
	auth_stats_flush(auth);
	timeout_remove(&auth->stats->to);
	i_free(auth->stats);
}

void auth_stats_done(struct auth *auth, const char *mech_name, bool ok,
		     uint64_t usecs)
{
	struct auth_stats *stats = auth->stats;
	struct auth_stats_mech *m = NULL;

	if (stats == NULL)
		return;
	for (unsigned int i = 0; i < stats->count && m == NULL; i++) {
		if (strcmp(stats->mechs[i].name, mech_name) == 0)
			m = &stats->mechs[i];
	}
	if (m == NULL) {
		if (stats->count == AUTH_STATS_MECHS_MAX)
			return;
		m = &stats->mechs[stats->count++];
		m->name = mech_name;
	}
	if (ok)
		m->ok++;
	else
		m->failed++;
	latency_histogram_add(&m->latency, usecs);
}

/* AUTH-STATS <mech> <ok> <failed> <usecs> <le>... */
static void auth_stats_send_one(struct ipc_conn *conn,
				const struct auth_stats_mech *m)
{
	char nums[3 + LATENCY_BUCKETS][24];
	const char *args[5 + LATENCY_BUCKETS + 1];
	unsigned int n = 0;

	args[n++] = "AUTH-STATS";
	args[n++] = m->name;
	snprintf(nums[0], sizeof(nums[0]), "%llu", (unsigned long long)m->ok);
	snprintf(nums[1], sizeof(nums[1]), "%llu", (unsigned long long)m->failed);
	snprintf(nums[2], sizeof(nums[2]), "%llu",
		 (unsigned long long)m->latency.usecs);
	for (unsigned int i = 0; i < 3; i++)
		args[n++] = nums[i];
	for (unsigned int b = 0; b < LATENCY_BUCKETS; b++) {
		snprintf(nums[3 + b], sizeof(nums[3 + b]), "%llu",
			 (unsigned long long)m->latency.le[b]);
		args[n++] = nums[3 + b];
	}
	args[n] = NULL;
	(void)ipc_send(conn, args, -1);
}

void auth_stats_flush(struct auth *auth)
{
	struct auth_stats *stats = auth->stats;

	if (stats == NULL || auth->master_conn == NULL)
		return;
	for (unsigned int i = 0; i < stats->count; i++) {
		struct auth_stats_mech *m = &stats->mechs[i];
		if (m->ok + m->failed == 0)
			continue;
		auth_stats_send_one(auth->master_conn, m);
		m->ok = m->failed = 0;
		memset(&m->latency, 0, sizeof(m->latency));
	}
}
