/* The open-file limit every process needs for its service's limits.
   Service managers and shells start daemons with a soft RLIMIT_NOFILE of
   1024, below what the defaults need (imap-login: client_limit 1000 TLS
   clients, each a socket and a relay socket; master: a channel and a log
   pipe per process, up to 1024 imap processes). Master raises its soft
   limit, which every child inherits through fork and exec, to the largest
   need, never above the hard limit (raising that is the admin's call:
   LimitNOFILE= in the unit), and says so when the hard limit is short. */
#include "master-common.h"

#include <sys/resource.h>

/* Descriptors per client a process of each kind may hold: imap-login a
   TLS client's socket, the relay socket and one in a handoff; imap the
   socket plus the index, log, cache and uidlist files of the mailbox the
   client has selected (shared between clients of one mailbox, so this is
   the worst case); lmtp the socket, the DELIVER-CONN socket to an imap
   process and the spooled message. */
static const unsigned int fds_per_client[SERVICE_KIND_COUNT] = {
	[SERVICE_LOGIN] = 3, [SERVICE_AUTH] = 1, [SERVICE_IMAP] = 5,
	[SERVICE_AUTH_WORKER] = 2, [SERVICE_LMTP] = 3, [SERVICE_KEY_SIGNER] = 1,
};
/* master per child: the channel, the log pipe, a handoff's fd */
#define MASTER_FDS_PER_CHILD 3
/* the process's own files, sockets to master and auth, listeners */
#define FDS_RESERVE 128

static rlim_t service_need(const struct service *service)
{
	return (rlim_t)service->set->client_limit *
		fds_per_client[service->kind] + FDS_RESERVE;
}

void master_fd_limit_adjust(struct master *master)
{
	rlim_t need = FDS_RESERVE + master->listener_count, master_need = need;
	const char *need_by = "master";
	struct rlimit rl;

	for (unsigned int i = 0; i < SERVICE_KIND_COUNT; i++) {
		const struct service *service = &master->services[i];
		rlim_t n = service_need(service);

		master_need += (rlim_t)service->set->process_limit *
			MASTER_FDS_PER_CHILD;
		if (n > need) {
			need = n;
			need_by = service->name;
		}
	}
	if (master_need > need) {
		need = master_need;
		need_by = "master";
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		i_error("getrlimit(RLIMIT_NOFILE) failed: %m");
		return;
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rlim_t target = rl.rlim_max == RLIM_INFINITY ||
			rl.rlim_max >= need ? need : rl.rlim_max;
		if (target > rl.rlim_cur) {
			struct rlimit raised = { .rlim_cur = target,
						 .rlim_max = rl.rlim_max };
			if (setrlimit(RLIMIT_NOFILE, &raised) < 0)
				i_error("setrlimit(RLIMIT_NOFILE, %llu) failed: %m",
					(unsigned long long)target);
			else
				i_debug("RLIMIT_NOFILE raised from %llu to %llu "
					"(%s needs %llu)",
					(unsigned long long)rl.rlim_cur,
					(unsigned long long)target, need_by,
					(unsigned long long)need);
		}
	}
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		i_warning("the open-file hard limit (%llu) is below what %s may "
			  "need (%llu, from its client_limit and process_limit):"
			  " at its limits a process fails with \"Too many open "
			  "files\"; raise it (LimitNOFILE= in the systemd unit, "
			  "ulimit -Hn) or lower the limits",
			  (unsigned long long)rl.rlim_max, need_by,
			  (unsigned long long)need);
}
