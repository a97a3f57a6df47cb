/* master's copy of auth's penalty table (auth/auth-penalty-sync.h has
   the records): auth writes every change of a penalised address
   through (a failure before it is answered), so a crash of auth loses
   no failure it counted, and each
   new auth gets the table back before its first imap-login connection.

   Bounded: auth_penalty_max_ips entries (the oldest update is replaced
   when it is full), searched linearly; only penalised addresses reach
   it, so a normal login does not touch it. master does not interpret
   the counters beyond bounds checks: auth decays them when it loads
   them. */
#include "master-common.h"
#include "strfuncs.h"

#include <signal.h>

/* auth's key form (auth-penalty.h AUTH_PENALTY_MAX_IP_LEN): longer is
   a malformed record. */
#define PENALTY_KEY_MAX_LEN 64
/* auth counts at most 32 failures (AUTH_PENALTY_MAX_FAILURES). */
#define PENALTY_MAX_FAILURES 32
/* A wait longer than an hour is no penalty auth sets (its maximum is
   two delays of max(15 s, auth_failure_delay)); clamp, do not trust. */
#define PENALTY_MAX_WAIT_MSECS (60 * 60 * 1000ULL)
/* Entries per PENALTY-LOAD (auth's AUTH_PENALTY_SYNC_LOAD_ENTRIES):
   four fields each, within IPC_MAX_ARGS. */
#define PENALTY_LOAD_ENTRIES 15

struct penalty_kept {
	char key[PENALTY_KEY_MAX_LEN + 1];     /* "" = free */
	unsigned int failures;
	/* master's clock: the last failure (or decay step), the earliest
	   next check, the last update (for eviction) */
	uint64_t decay_at, next_at, updated_at;
};

struct auth_penalty_store {
	struct penalty_kept *entries;
	unsigned int max;
	/* the auth being loaded (PENALTY-LOAD sent, waiting for its ACK),
	   and the next entry to send it */
	struct child *loading;
	unsigned int load_pos;
};

void auth_penalty_store_init(struct master *master)
{
	struct auth_penalty_store *store = i_malloc(sizeof(*store));

	store->max = master->set->auth_penalty_max_ips;
	store->entries = i_malloc(i_mul_size(store->max, sizeof(*store->entries)));
	master->auth_penalties = store;
}

void auth_penalty_store_deinit(struct master *master)
{
	struct auth_penalty_store *store = master->auth_penalties;

	master->auth_penalties = NULL;
	free(store->entries);
	free(store);
}

/* The entry of key, else a free one, else the one updated longest ago
   (its address starts clean in the next auth, as in auth's own full
   table). */
static struct penalty_kept *
store_slot(struct auth_penalty_store *store, const char *key)
{
	struct penalty_kept *victim = NULL;

	for (unsigned int i = 0; i < store->max; i++) {
		struct penalty_kept *kept = &store->entries[i];

		if (kept->key[0] == '\0') {
			if (victim == NULL || victim->key[0] != '\0')
				victim = kept;
			continue;
		}
		if (strcmp(kept->key, key) == 0)
			return kept;
		if (victim == NULL ||
		    (victim->key[0] != '\0' &&
		     kept->updated_at < victim->updated_at))
			victim = kept;
	}
	i_assert(victim != NULL);   /* max >= 1 */
	memset(victim, 0, sizeof(*victim));
	snprintf(victim->key, sizeof(victim->key), "%s", key);
	return victim;
}

static int kept_cmp_newest_first(const void *p1, const void *p2)
{
	const struct penalty_kept *k1 = p1, *k2 = p2;

	if (k1->key[0] == '\0' || k2->key[0] == '\0')
		return (k1->key[0] == '\0') - (k2->key[0] == '\0');
	if (k1->updated_at != k2->updated_at)
		return k1->updated_at > k2->updated_at ? -1 : 1;
	return 0;
}

/* Reload: a new auth_penalty_max_ips keeps the most recent entries. */
void auth_penalty_store_resize(struct master *master)
{
	struct auth_penalty_store *store = master->auth_penalties;
	struct penalty_kept *old = store->entries;
	unsigned int old_max = store->max;

	if (master->set->auth_penalty_max_ips == old_max)
		return;
	qsort(old, old_max, sizeof(*old), kept_cmp_newest_first);
	store->max = master->set->auth_penalty_max_ips;
	store->entries = i_malloc(i_mul_size(store->max, sizeof(*store->entries)));
	memcpy(store->entries, old,
	       i_mul_size(MIN(old_max, store->max), sizeof(*old)));
	/* a load in progress resends from the start: auth merges */
	store->load_pos = 0;
	free(old);
}

/* PENALTY <key> <failures> <decay_age> <next_in> from auth (any auth:
   one shutting down after a reload still answers its last requests). */
static bool store_input(struct master *master, const char *const *args)
{
	uint64_t now = io_loop_time_ms(master->ioloop);
	uint64_t decay_age, next_in;
	unsigned int failures;
	struct penalty_kept *kept;

	if (str_array_length(args) != 5 || args[1][0] == '\0' ||
	    strlen(args[1]) > PENALTY_KEY_MAX_LEN ||
	    str_to_uint(args[2], &failures) < 0 || failures == 0 ||
	    failures > PENALTY_MAX_FAILURES ||
	    str_to_uint64(args[3], &decay_age) < 0 ||
	    str_to_uint64(args[4], &next_in) < 0)
		return false;
	decay_age = MIN(decay_age, now);
	next_in = MIN(next_in, PENALTY_MAX_WAIT_MSECS);
	kept = store_slot(master->auth_penalties, args[1]);
	kept->failures = failures;
	kept->decay_at = now - decay_age;
	kept->next_at = now + next_in;
	kept->updated_at = now;
	return true;
}

/* The next PENALTY-LOAD for the auth being loaded; false when every
   entry went (nothing was sent). */
static bool load_send_next(struct master *master)
{
	struct auth_penalty_store *store = master->auth_penalties;
	uint64_t now = io_loop_time_ms(master->ioloop);
	const char *args[1 + 4 * PENALTY_LOAD_ENTRIES + 1];
	char nums[PENALTY_LOAD_ENTRIES][3][24];
	unsigned int n = 0, count = 0;

	args[n++] = "PENALTY-LOAD";
	for (; store->load_pos < store->max && count < PENALTY_LOAD_ENTRIES;
	     store->load_pos++) {
		const struct penalty_kept *kept = &store->entries[store->load_pos];

		if (kept->key[0] == '\0')
			continue;
		snprintf(nums[count][0], sizeof(nums[count][0]), "%u",
			 kept->failures);
		snprintf(nums[count][1], sizeof(nums[count][1]), "%llu",
			 (unsigned long long)(now - MIN(kept->decay_at, now)));
		snprintf(nums[count][2], sizeof(nums[count][2]), "%llu",
			 (unsigned long long)(kept->next_at > now ?
					      kept->next_at - now : 0));
		args[n++] = kept->key;
		args[n++] = nums[count][0];
		args[n++] = nums[count][1];
		args[n++] = nums[count][2];
		count++;
	}
	args[n] = NULL;
	if (count == 0)
		return false;
	if (ipc_send(store->loading->conn, args, -1) < 0) {
		/* auth is gone: its exit starts the next one */
		return false;
	}
	return true;
}

static void load_finish(struct master *master)
{
	master->auth_penalties->loading = NULL;
	login_auth_available(master);
}

void auth_penalty_load_start(struct master *master, struct child *auth)
{
	struct auth_penalty_store *store = master->auth_penalties;

	store->loading = auth;
	store->load_pos = 0;
	if (!load_send_next(master))
		load_finish(master);
}

bool auth_penalty_loading(const struct master *master)
{
	return master->auth_penalties->loading != NULL;
}

void auth_penalty_child_gone(struct master *master, struct child *auth)
{
	if (master->auth_penalties->loading == auth)
		master->auth_penalties->loading = NULL;
}

bool auth_penalty_input(struct child *child, const char *const *args)
{
	struct master *master = child->master;
	struct auth_penalty_store *store = master->auth_penalties;

	if (strcmp(args[0], "PENALTY") == 0) {
		if (!store_input(master, args)) {
			i_error("auth sent a malformed PENALTY record, "
				"restarting it");
			child_kill(child, SIGKILL);
			return true;
		}
		/* An old auth's last failures reach the new one too (its
		   PENALTY-ACK only moves a load in progress on early). */
		if (master->auth != NULL && master->auth != child &&
		    master->auth->conn != NULL) {
			const char *load[] = { "PENALTY-LOAD", args[1], args[2],
					       args[3], args[4], NULL };
			(void)ipc_send(master->auth->conn, load, -1);
		}
		return true;
	}
	if (strcmp(args[0], "PENALTY-ACK") == 0) {
		/* from anyone but the auth being loaded: a stray, ignored */
		if (store->loading == child && !load_send_next(master))
			load_finish(master);
		return true;
	}
	return false;
}
