/* Per-command counters, batched to master (imap-stats.h). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-stats.h"
#include "ipc.h"

#include <time.h>

struct imap_stats_cmd {
	uint64_t count, usecs;
	/* commands that took at most bound[i] (cumulative, as "le") */
	uint64_t le[IMAP_STATS_BUCKETS];
};

struct imap_stats {
	/* not yet sent, indexed like the command table */
	struct imap_stats_cmd pending[IMAP_COMMANDS_MAX];
	bool pending_any;
};

static const uint64_t bucket_bounds[IMAP_STATS_BUCKETS] =
	IMAP_STATS_BUCKET_BOUNDS_US;

uint64_t imap_stats_now_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		i_fatal("clock_gettime(CLOCK_MONOTONIC) failed: %s",
			strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void imap_stats_command_done(struct imap_user *user, const struct command *def,
			     uint64_t usecs)
{
	if (user->stats == NULL)
		user->stats = i_malloc(sizeof(*user->stats));
	struct imap_stats_cmd *st = &user->stats->pending[command_index(def)];

	st->count++;
	st->usecs += usecs;
	for (unsigned int i = 0; i < IMAP_STATS_BUCKETS; i++) {
		if (usecs <= bucket_bounds[i])
			st->le[i]++;
	}
	user->stats->pending_any = true;
}

static void stats_send_one(struct ipc_conn *master, const char *name,
			   const struct imap_stats_cmd *st)
{
	char nums[2 + IMAP_STATS_BUCKETS][24];
	const char *args[4 + IMAP_STATS_BUCKETS + 1];  /* and the NULL */
	unsigned int n = 0;

	args[n++] = "CMD-STATS";
	args[n++] = name;
	snprintf(nums[0], sizeof(nums[0]), "%llu", (unsigned long long)st->count);
	snprintf(nums[1], sizeof(nums[1]), "%llu", (unsigned long long)st->usecs);
	args[n++] = nums[0];
	args[n++] = nums[1];
	for (unsigned int i = 0; i < IMAP_STATS_BUCKETS; i++) {
		snprintf(nums[2 + i], sizeof(nums[2 + i]), "%llu",
			 (unsigned long long)st->le[i]);
		args[n++] = nums[2 + i];
	}
	args[n] = NULL;
	(void)ipc_send(master, args, -1);
}

void imap_stats_flush(struct imap_user *user, struct ipc_conn *master)
{
	struct imap_stats *stats = user->stats;

	if (stats == NULL || !stats->pending_any || master == NULL)
		return;
	for (unsigned int i = 0; i < command_count(); i++) {
		if (stats->pending[i].count == 0)
			continue;
		stats_send_one(master, command_by_index(i)->name,
			       &stats->pending[i]);
	}
	memset(stats->pending, 0, sizeof(stats->pending));
	stats->pending_any = false;
}

void imap_stats_deinit(struct imap_user *user)
{
	i_free(user->stats);
}
