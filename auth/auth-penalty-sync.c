/* Writing the penalty table through to master and loading it back: see
   auth-penalty-sync.h. */
#include "auth-common.h"
#include "auth-penalty.h"
#include "auth-penalty-sync.h"

static void penalty_changed(const struct auth_penalty_state *state,
			    void *context)
{
	struct auth *auth = context;
	char failures[16], age[32], next[32];

	snprintf(failures, sizeof(failures), "%u", state->failures);
	snprintf(age, sizeof(age), "%llu",
		 (unsigned long long)state->decay_age_msecs);
	snprintf(next, sizeof(next), "%llu",
		 (unsigned long long)state->next_in_msecs);
	/* Lost only if master is gone, and then auth exits too. */
	(void)ipc_sendv(auth->master_conn, -1, "PENALTY", state->key, failures,
			age, next, NULL);
}

void auth_penalty_sync_init(struct auth *auth)
{
	if (auth->penalty != NULL)
		auth_penalty_set_change_callback(auth->penalty, penalty_changed,
						 auth);
}

static int parse_entry(const char *const *fields,
		       struct auth_penalty_state *state_r)
{
	if (fields[0][0] == '\0' || strlen(fields[0]) > AUTH_PENALTY_MAX_IP_LEN ||
	    str_to_uint(fields[1], &state_r->failures) < 0 ||
	    state_r->failures == 0 ||
	    state_r->failures > AUTH_PENALTY_MAX_FAILURES ||
	    str_to_uint64(fields[2], &state_r->decay_age_msecs) < 0 ||
	    str_to_uint64(fields[3], &state_r->next_in_msecs) < 0)
		return -1;
	state_r->key = fields[0];
	return 0;
}

void auth_penalty_sync_load(struct auth *auth, const char *const *args)
{
	unsigned int count = str_array_length(args) - 1, restored = 0;
	uint64_t now = io_loop_time_ms(auth->ioloop);
	struct auth_penalty_state state;

	if (count % 4 != 0 || count / 4 > AUTH_PENALTY_SYNC_LOAD_ENTRIES) {
		i_error("master: malformed PENALTY-LOAD record ignored");
		count = 0;
	}
	for (unsigned int i = 0; i < count; i += 4) {
		if (parse_entry(args + 1 + i, &state) < 0) {
			i_error("master: malformed PENALTY-LOAD entry ignored");
			continue;
		}
		/* auth_failure_delay = 0: nothing to restore into. */
		if (auth->penalty != NULL) {
			auth_penalty_restore(auth->penalty, &state, now);
			restored++;
		}
	}
	i_debug("penalty table: %u addresses from master", restored);
	(void)ipc_sendv(auth->master_conn, -1, "PENALTY-ACK", NULL);
}
