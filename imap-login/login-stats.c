/* imap-login's counters, batched to master (login-stats.h). */
#include "imap-login-common.h"
#include "login-stats.h"
#include "ipc.h"

/* By the start of the text login_client_destroy() logs; the first match
   wins, so "TLS handshake timed out" is a timeout, not a TLS failure. */
static const struct {
	const char *prefix;
	enum login_disconnect_reason reason;
} login_stats_prefixes[] = {
	{ "Logged out", LOGIN_DISCONNECT_LOGOUT },
	{ "Connection closed", LOGIN_DISCONNECT_CLOSED },
	{ "Login timeout", LOGIN_DISCONNECT_TIMEOUT },
	{ "TLS handshake timed out", LOGIN_DISCONNECT_TIMEOUT },
	{ "TLS ", LOGIN_DISCONNECT_TLS },
	{ "Too many connections from IP", LOGIN_DISCONNECT_LIMIT },
	{ "Too many invalid commands", LOGIN_DISCONNECT_BAD_COMMANDS },
	{ "Server shutting down", LOGIN_DISCONNECT_SHUTDOWN },
};

enum login_disconnect_reason login_stats_reason(const char *reason)
{
	if (reason == NULL)
		return LOGIN_DISCONNECT_OTHER;
	for (unsigned int i = 0; i < N_ELEMENTS(login_stats_prefixes); i++) {
		const char *prefix = login_stats_prefixes[i].prefix;
		if (strncmp(reason, prefix, strlen(prefix)) == 0)
			return login_stats_prefixes[i].reason;
	}
	return LOGIN_DISCONNECT_OTHER;
}

void login_stats_disconnect(struct login_process *lp, const char *reason)
{
	lp->stats.disconnects[login_stats_reason(reason)]++;
}

static bool login_stats_pending(const struct login_stats *st)
{
	if (st->connections + st->tls_ok + st->tls_failed + st->bytes_in +
	    st->bytes_out != 0)
		return true;
	for (unsigned int i = 0; i < LOGIN_DISCONNECT_COUNT; i++) {
		if (st->disconnects[i] != 0)
			return true;
	}
	return false;
}

/* LOGIN-STATS <connections> <tls_ok> <tls_failed> <bytes_in> <bytes_out>
   <disconnects by reason>... */
static void login_stats_flush(struct login_process *lp)
{
	struct login_stats *st = &lp->stats;
	const uint64_t fixed[] = { st->connections, st->tls_ok, st->tls_failed,
				   st->bytes_in, st->bytes_out };
	char nums[N_ELEMENTS(fixed) + LOGIN_DISCONNECT_COUNT][24];
	const char *args[1 + N_ELEMENTS(nums) + 1];
	unsigned int n = 0;

	if (lp->master == NULL || !login_stats_pending(st))
		return;
	args[n++] = "LOGIN-STATS";
	for (unsigned int i = 0; i < N_ELEMENTS(nums); i++) {
		uint64_t v = i < N_ELEMENTS(fixed) ? fixed[i] :
			st->disconnects[i - N_ELEMENTS(fixed)];
		snprintf(nums[i], sizeof(nums[i]), "%llu", (unsigned long long)v);
		args[n++] = nums[i];
	}
	args[n] = NULL;
	(void)ipc_send(lp->master, args, -1);
	st->connections = st->tls_ok = st->tls_failed = 0;
	st->bytes_in = st->bytes_out = 0;
	memset(st->disconnects, 0, sizeof(st->disconnects));
}

static void login_stats_timeout(void *context)
{
	struct login_process *lp = context;

	login_stats_flush(lp);
	lp->stats.to = timeout_add(lp->ioloop, LOGIN_STATS_FLUSH_MSECS,
				   login_stats_timeout, lp);
}

void login_stats_init(struct login_process *lp)
{
	lp->stats.to = timeout_add(lp->ioloop, LOGIN_STATS_FLUSH_MSECS,
				   login_stats_timeout, lp);
}

void login_stats_deinit(struct login_process *lp)
{
	login_stats_flush(lp);
	if (lp->stats.to != NULL)
		timeout_remove(&lp->stats.to);
}
