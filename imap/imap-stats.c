/* Per-command counters, batched to master (imap-stats.h). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-stats.h"
#include "ipc.h"
#include "iostream.h"

struct imap_stats {
	/* not yet sent, indexed like the command table */
	struct latency_histogram pending[IMAP_COMMANDS_MAX];
	bool pending_any;
};

void imap_stats_command_done(struct imap_user *user, const struct command *def,
			     uint64_t usecs)
{
	if (user->stats == NULL)
		user->stats = i_malloc(sizeof(*user->stats));
	latency_histogram_add(&user->stats->pending[command_index(def)], usecs);
	user->stats->pending_any = true;
}

static void stats_send_one(struct ipc_conn *master, const char *name,
			   const struct latency_histogram *st)
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

void imap_stats_count_bytes(struct imap_user *user, struct istream *input,
			    struct ostream *output)
{
	i_stream_set_bytes_counter(input, &user->stats_bytes_in);
	o_stream_set_bytes_counter(output, &user->stats_bytes_out);
}

static void stats_send_bytes(struct imap_user *user, struct ipc_conn *master)
{
	char in[24], out[24];

	if (user->stats_bytes_in + user->stats_bytes_out == 0)
		return;
	snprintf(in, sizeof(in), "%llu",
		 (unsigned long long)user->stats_bytes_in);
	snprintf(out, sizeof(out), "%llu",
		 (unsigned long long)user->stats_bytes_out);
	(void)ipc_sendv(master, -1, "IO-STATS", in, out, NULL);
	user->stats_bytes_in = user->stats_bytes_out = 0;
}

/* The sessions now, for master's connections gauge, when it changed. */
static void stats_send_load(struct imap_user *user, struct ipc_conn *master)
{
	char clients[16];

	if (user->client_count == user->stats_clients_sent)
		return;
	snprintf(clients, sizeof(clients), "%u", user->client_count);
	(void)ipc_sendv(master, -1, "LOAD", clients, NULL);
	user->stats_clients_sent = user->client_count;
}

void imap_stats_flush(struct imap_user *user, struct ipc_conn *master)
{
	struct imap_stats *stats = user->stats;

	if (master == NULL)
		return;
	stats_send_load(user, master);
	stats_send_bytes(user, master);
	if (stats == NULL || !stats->pending_any)
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
