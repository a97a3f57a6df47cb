/* The moat-lmtp-master channel (lmtp-master.h). Master is trusted: a
   record we do not understand is a bug there or here and ends the
   process. */
#include "lmtp-common.h"
#include "lmtp-master.h"
#include "lmtp-delivery.h"

struct lmtp_rcpt_wait {
	struct lmtp_rcpt_wait *next, *prev;
	struct lmtp_process *proc;
	unsigned int id;
	lmtp_rcpt_callback_t *callback;
	void *context;
	/* an immediate failure is answered from the loop, not the call */
	struct timeout *to_fail;
};

static void wait_unlink(struct lmtp_rcpt_wait *wait)
{
	struct lmtp_process *proc = wait->proc;

	if (wait->prev != NULL)
		wait->prev->next = wait->next;
	else
		proc->rcpt_waits = wait->next;
	if (wait->next != NULL)
		wait->next->prev = wait->prev;
	timeout_remove(&wait->to_fail);
}

static struct lmtp_rcpt_wait *wait_find(struct lmtp_process *proc,
					const char *id_str)
{
	unsigned int id;

	if (str_to_uint(id_str, &id) < 0)
		return NULL;
	for (struct lmtp_rcpt_wait *w = proc->rcpt_waits; w != NULL; w = w->next) {
		if (w->id == id)
			return w;
	}
	return NULL;
}

static void wait_finish(struct lmtp_rcpt_wait *wait,
			enum lmtp_rcpt_result result, const char *user, int fd)
{
	lmtp_rcpt_callback_t *callback = wait->callback;
	void *context = wait->context;

	wait_unlink(wait);
	i_free(wait);
	callback(result, user, fd, context);
}

static void master_input(void *context, const char *const *args, int fd)
{
	struct lmtp_process *proc = context;
	unsigned int count;

	if (args == NULL) {
		/* Without master no recipient resolves: stop at once. */
		i_info("master connection closed, exiting");
		ipc_conn_destroy(&proc->master);
		while (proc->rcpt_waits != NULL)
			wait_finish(proc->rcpt_waits, LMTP_RCPT_TEMPFAIL, NULL, -1);
		master_service_stop(proc->service);
		return;
	}
	count = str_array_length(args);
	if (strcmp(args[0], "RCPT-OK") == 0 && count == 3 && fd >= 0) {
		struct lmtp_rcpt_wait *wait = wait_find(proc, args[1]);
		if (wait == NULL)
			close(fd);   /* its client went away */
		else
			wait_finish(wait, LMTP_RCPT_OK, args[2], fd);
		return;
	}
	if (strcmp(args[0], "RCPT-FAIL") == 0 && count == 4 && fd < 0 &&
	    (strcmp(args[2], "notfound") == 0 ||
	     strcmp(args[2], "tempfail") == 0)) {
		struct lmtp_rcpt_wait *wait = wait_find(proc, args[1]);
		if (wait != NULL) {
			if (strcmp(args[2], "tempfail") == 0)
				i_warning("recipient lookup failed: %s", args[3]);
			wait_finish(wait, strcmp(args[2], "notfound") == 0 ?
				    LMTP_RCPT_NOTFOUND : LMTP_RCPT_TEMPFAIL,
				    NULL, -1);
		}
		return;
	}
	if (strcmp(args[0], "SHUTDOWN") == 0 && count == 1 && fd < 0) {
		proc->shutting_down = true;
		/* idle sockets would keep the users' processes */
		lmtp_delivery_pool_deinit(proc);
		lmtp_listen_update(proc);
		if (proc->client_count == 0)
			master_service_stop(proc->service);
		return;
	}
	i_close_fd(&fd);
	i_fatal("master sent a malformed %s record", args[0]);
}

static void stats_flush(struct lmtp_process *proc)
{
	char nums[LMTP_DELIVERY_RESULTS + 1][24];
	uint64_t sum = proc->rcpts_reused;

	for (unsigned int i = 0; i < LMTP_DELIVERY_RESULTS; i++) {
		sum += proc->deliveries[i];
		snprintf(nums[i], sizeof(nums[i]), "%llu",
			 (unsigned long long)proc->deliveries[i]);
	}
	snprintf(nums[LMTP_DELIVERY_RESULTS], sizeof(nums[0]), "%llu",
		 (unsigned long long)proc->rcpts_reused);
	if (sum == 0 || proc->master == NULL)
		return;
	(void)ipc_sendv(proc->master, -1, "DELIVERY-STATS", nums[0], nums[1],
			nums[2], nums[3], NULL);
	memset(proc->deliveries, 0, sizeof(proc->deliveries));
	proc->rcpts_reused = 0;
}

static void stats_timeout(void *context)
{
	struct lmtp_process *proc = context;

	stats_flush(proc);
	proc->to_stats = timeout_add(proc->ioloop, LMTP_STATS_FLUSH_MSECS,
				     stats_timeout, proc);
}

void lmtp_master_count_delivery(struct lmtp_process *proc, const char *code)
{
	unsigned int idx = code[0] == '2' ? 0 : code[0] == '4' ? 1 : 2;

	proc->deliveries[idx]++;
}

void lmtp_master_connect(struct lmtp_process *proc)
{
	proc->master = master_service_connect_master(proc->service,
						     IPC_PROTO_LMTP_MASTER,
						     master_input, proc);
	proc->to_stats = timeout_add(proc->ioloop, LMTP_STATS_FLUSH_MSECS,
				     stats_timeout, proc);
}

void lmtp_master_deinit(struct lmtp_process *proc)
{
	/* the last deliveries' counts, before the channel closes */
	stats_flush(proc);
	if (proc->to_stats != NULL)
		timeout_remove(&proc->to_stats);
	while (proc->rcpt_waits != NULL) {
		struct lmtp_rcpt_wait *wait = proc->rcpt_waits;
		wait_unlink(wait);
		i_free(wait);
	}
	ipc_conn_destroy(&proc->master);
}

static void wait_fail_timeout(void *context)
{
	struct lmtp_rcpt_wait *wait = context;

	wait->to_fail = NULL;
	wait_finish(wait, LMTP_RCPT_TEMPFAIL, NULL, -1);
}

struct lmtp_rcpt_wait *
lmtp_master_rcpt(struct lmtp_process *proc, const char *key,
		 lmtp_rcpt_callback_t *callback, void *context)
{
	struct lmtp_rcpt_wait *wait = i_malloc(sizeof(*wait));
	char id[16];

	wait->proc = proc;
	wait->id = ++proc->last_rcpt_id;
	if (wait->id == 0)
		wait->id = ++proc->last_rcpt_id;
	wait->callback = callback;
	wait->context = context;
	wait->next = proc->rcpt_waits;
	if (proc->rcpt_waits != NULL)
		proc->rcpt_waits->prev = wait;
	proc->rcpt_waits = wait;
	snprintf(id, sizeof(id), "%u", wait->id);
	if (proc->master == NULL ||
	    ipc_sendv(proc->master, -1, "RCPT", id, key, NULL) < 0)
		wait->to_fail = timeout_add(proc->ioloop, 0, wait_fail_timeout,
					    wait);
	return wait;
}

void lmtp_master_rcpt_abort(struct lmtp_rcpt_wait **_wait)
{
	struct lmtp_rcpt_wait *wait = *_wait;

	if (wait == NULL)
		return;
	*_wait = NULL;
	wait_unlink(wait);
	i_free(wait);
}

void lmtp_master_load(struct lmtp_process *proc, unsigned int clients,
		      bool accepting)
{
	char clients_str[16];

	if (proc->master == NULL)
		return;
	snprintf(clients_str, sizeof(clients_str), "%u", clients);
	(void)ipc_sendv(proc->master, -1, "LOAD", clients_str,
			accepting ? "1" : "0", NULL);
}
