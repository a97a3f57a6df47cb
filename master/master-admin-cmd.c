/* The admin requests: parsed first, then run (master-admin.h). WHO,
   STATS and KICK ask every imap process of the user(s) and answer when
   all have replied or ADMIN_REQUEST_TIMEOUT_MSECS passed. */
#include "master-admin-private.h"
#include "master-metrics.h"
#include "strfuncs.h"

#include <fcntl.h>
#include <time.h>

/* /proc/PID/status is a few KiB. */
#define ADMIN_PROC_STATUS_MAX 8192

static bool admin_field_ok(const char *value, size_t max_len)
{
	size_t len = strlen(value);

	if (len == 0 || len > max_len)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f)
			return false;
	}
	return true;
}

/* VmRSS of a process in KiB, or "" when it cannot be read. */
static void admin_proc_rss(pid_t pid, char *buf, size_t size)
{
	char path[64], status[ADMIN_PROC_STATUS_MAX];

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t ret = read(fd, status, sizeof(status) - 1);
	close(fd);
	if (ret <= 0)
		return;
	status[ret] = '\0';
	const char *p = strstr(status, "\nVmRSS:");
	unsigned long kib;
	if (p != NULL && sscanf(p + 7, "%lu", &kib) == 1)
		snprintf(buf, size, "%lu", kib);
}

static bool admin_is_imap(const struct child *child)
{
	return child->service->kind == SERVICE_IMAP && child->conn != NULL;
}

static void admin_waiting_remove(struct admin_request *req, pid_t pid)
{
	for (unsigned int i = 0; i < req->waiting_count; i++) {
		if (req->waiting[i] == pid) {
			req->waiting[i] = req->waiting[--req->waiting_count];
			return;
		}
	}
}

static bool admin_is_waiting(const struct admin_request *req, pid_t pid)
{
	for (unsigned int i = 0; i < req->waiting_count; i++) {
		if (req->waiting[i] == pid)
			return true;
	}
	return false;
}

static void admin_stats_send(struct admin_request *req);

static void admin_imap_request_end(struct admin_request *req)
{
	char num[32];

	switch (req->kind) {
	case ADMIN_REQ_STATS:
		admin_stats_send(req);
		break;
	case ADMIN_REQ_KICK:
		snprintf(num, sizeof(num), "%u", req->sessions);
		admin_send_rowv(req->client, "user", req->user, "sessions", num,
				NULL);
		break;
	default:
		break;
	}
	admin_request_done(req);
}

/* Processes that did not answer in time: listed without sessions. */
static void admin_imap_timeout(void *context)
{
	struct admin_request *req = context;
	struct master *master = req->client->admin->master;

	req->to = NULL;
	for (unsigned int i = 0; i < req->waiting_count; i++) {
		struct child *child = child_find_pid(master, req->waiting[i]);
		char pid[32];
		snprintf(pid, sizeof(pid), "%d", (int)req->waiting[i]);
		if (req->kind == ADMIN_REQ_WHO && child != NULL)
			admin_send_rowv(req->client, "user", child->user,
					"pid", pid, "rss_kib", "", "sessions",
					"", "addresses", "", NULL);
	}
	req->waiting_count = 0;
	admin_imap_request_end(req);
}

/* Ask each imap process (of req->user, or all) with record name. */
static void admin_imap_ask(struct admin_request *req, const char *name)
{
	struct master *master = req->client->admin->master;
	unsigned int count = 0;

	for (struct child *c = master->children; c != NULL; c = c->next) {
		if (admin_is_imap(c))
			count++;
	}
	req->waiting = i_malloc(sizeof(pid_t) * (count + 1));
	for (struct child *c = master->children; c != NULL; c = c->next) {
		if (!admin_is_imap(c) ||
		    (req->user != NULL && strcmp(c->user, req->user) != 0))
			continue;
		int ret = req->reason != NULL ?
			ipc_sendv(c->conn, -1, name, req->id, req->reason, NULL) :
			ipc_sendv(c->conn, -1, name, req->id, NULL);
		if (ret == 0)
			req->waiting[req->waiting_count++] = c->pid;
	}
	req->processes = req->waiting_count;
	if (req->waiting_count == 0) {
		admin_imap_request_end(req);
		return;
	}
	req->to = timeout_add(master->ioloop, ADMIN_REQUEST_TIMEOUT_MSECS,
			      admin_imap_timeout, req);
}

struct admin_request *
admin_imap_request_of(struct master *master, pid_t pid, const char *id)
{
	if (master->admin == NULL || id == NULL)
		return NULL;
	struct admin_request *req = admin_request_find(master->admin, id);
	if (req == NULL || !admin_is_waiting(req, pid))
		return NULL;
	return req;
}

/* WHO-REPLY <id> <sessions> <address>... / KICK-REPLY <id> <sessions> */
/* ADMIN-OP-REPLY <id> ok|notfound|fail <text> [<key> <value>]... */
static void admin_mailop_reply(struct child *imap, const char *const *args)
{
	unsigned int count = str_array_length(args);
	struct admin_request *req = count < 4 || count % 2 != 0 ? NULL :
		admin_imap_request_of(imap->master, imap->pid, args[1]);

	if (req == NULL) {
		if (count < 4 || count % 2 != 0)
			i_error("imap process %d sent a malformed ADMIN-OP-REPLY",
				(int)imap->pid);
		return;
	}
	if (strcmp(args[2], "ok") == 0) {
		if (count > 4)
			admin_send_row(req->client, args + 4);
		admin_request_done(req);
	} else {
		admin_request_fail(req, strcmp(args[2], "notfound") == 0 ?
				   "notfound" : strcmp(args[2], "failed") == 0 ?
				   "failed" : "tempfail", args[3]);
	}
}

/* ADMIN-OP-ROW <id> <key> <value>...: one row of a MAILOP's answer. */
static void admin_mailop_row(struct child *imap, const char *const *args)
{
	unsigned int count = str_array_length(args);
	struct admin_request *req = count < 2 || count % 2 != 0 ? NULL :
		admin_imap_request_of(imap->master, imap->pid, args[1]);

	if (req != NULL)
		admin_send_row(req->client, args + 2);
}

bool master_admin_imap_reply(struct child *imap, const char *const *args)
{
	bool who = strcmp(args[0], "WHO-REPLY") == 0;
	unsigned int sessions;

	if (strcmp(args[0], "ADMIN-OP-REPLY") == 0) {
		admin_mailop_reply(imap, args);
		return true;
	}
	if (strcmp(args[0], "ADMIN-OP-ROW") == 0) {
		admin_mailop_row(imap, args);
		return true;
	}
	if (!who && strcmp(args[0], "KICK-REPLY") != 0)
		return false;
	unsigned int count = str_array_length(args);
	if (count < 3 || (!who && count != 3) ||
	    str_to_uint(args[2], &sessions) < 0) {
		i_error("imap process %d sent a malformed %s", (int)imap->pid,
			args[0]);
		return true;
	}
	struct admin_request *req =
		admin_imap_request_of(imap->master, imap->pid, args[1]);
	if (req == NULL)
		return true;   /* answered too late: the request is gone */
	admin_waiting_remove(req, imap->pid);
	req->sessions += sessions;
	if (req->kind == ADMIN_REQ_WHO) {
		char pid[32], rss[32], num[32];
		char addresses[ADMIN_LOG_LINE_MAX] = "";
		size_t pos = 0;
		for (unsigned int i = 3; i < count; i++) {
			int ret = snprintf(addresses + pos, sizeof(addresses) - pos,
					   "%s%s", i == 3 ? "" : ",", args[i]);
			if (ret < 0 || (size_t)ret >= sizeof(addresses) - pos)
				break;
			pos += (size_t)ret;
		}
		snprintf(pid, sizeof(pid), "%d", (int)imap->pid);
		snprintf(num, sizeof(num), "%u", sessions);
		admin_proc_rss(imap->pid, rss, sizeof(rss));
		admin_send_rowv(req->client, "user", imap->user, "pid", pid,
				"rss_kib", rss, "sessions", num,
				"addresses", addresses, NULL);
	}
	if (req->waiting_count == 0) {
		timeout_remove(&req->to);
		admin_imap_request_end(req);
	}
	return true;
}

void master_admin_imap_gone(struct child *imap)
{
	struct master_admin *admin = imap->master->admin;

	if (admin == NULL)
		return;
	for (struct admin_conn *c = admin->conns; c != NULL; c = c->next) {
		struct admin_request *req = c->req;
		if (req == NULL || !admin_is_waiting(req, imap->pid))
			continue;
		if (req->kind == ADMIN_REQ_MAILOP) {
			admin_request_fail(req, "tempfail",
					   "the mail process went away");
			continue;
		}
		admin_waiting_remove(req, imap->pid);
		if (req->waiting_count == 0) {
			timeout_remove(&req->to);
			admin_imap_request_end(req);
		}
	}
}

static void admin_count_service(struct master *master, enum service_kind kind,
				unsigned int *processes_r,
				unsigned int *clients_r)
{
	*processes_r = *clients_r = 0;
	for (struct child *c = master->children; c != NULL; c = c->next) {
		if (c->service->kind != kind)
			continue;
		(*processes_r)++;
		*clients_r += c->clients;
	}
}

/* One "key", "value" pair of a stats row; pair i's value text is v[i]. */
static void admin_stats_field(const char **fields, unsigned int *n,
			      char v[][32], const char *key, uint64_t value)
{
	unsigned int pair = *n / 2;

	snprintf(v[pair], sizeof(v[pair]), "%llu", (unsigned long long)value);
	fields[*n] = key;
	fields[*n + 1] = v[pair];
	*n += 2;
}

/* Keys of the pre-auth disconnects, as master_metrics_disconnect_reasons. */
static const char *const admin_stats_disconnect_keys[METRICS_DISCONNECT_REASONS] = {
	"preauth_disconnects_logout", "preauth_disconnects_closed",
	"preauth_disconnects_timeout", "preauth_disconnects_tls",
	"preauth_disconnects_limit", "preauth_disconnects_bad_commands",
	"preauth_disconnects_shutdown", "preauth_disconnects_other",
};

/* The same values as the OpenMetrics exposition's scalar families
   (master-metrics.c); per mechanism and per command are STATS AUTH and
   the exposition. 30 pairs: within IPC_MAX_ARGS. */
#define ADMIN_STATS_FIELDS 30
static void admin_stats_send(struct admin_request *req)
{
	struct master_admin *admin = req->client->admin;
	struct master *master = admin->master;
	const struct admin_stats *st = &admin->stats;
	const struct master_metrics_totals *t = master_metrics_get_totals(master);
	char v[ADMIN_STATS_FIELDS][32];
	const char *fields[ADMIN_STATS_FIELDS * 2 + 1];
	unsigned int n = 0;
	unsigned int login_procs, login_clients, imap_procs, unused;
	unsigned int lmtp_procs, lmtp_clients;

	admin_count_service(master, SERVICE_LOGIN, &login_procs, &login_clients);
	admin_count_service(master, SERVICE_IMAP, &imap_procs, &unused);
	admin_count_service(master, SERVICE_LMTP, &lmtp_procs, &lmtp_clients);
	uint64_t now = (uint64_t)time(NULL) * 1000;
	admin_stats_field(fields, &n, v, "uptime_secs",
			  (now - MIN(now, st->started_ms)) / 1000);
	admin_stats_field(fields, &n, v, "logins_ok", st->logins_ok);
	admin_stats_field(fields, &n, v, "logins_failed", st->logins_failed);
	admin_stats_field(fields, &n, v, "imap_login_processes", login_procs);
	admin_stats_field(fields, &n, v, "imap_login_clients", login_clients);
	admin_stats_field(fields, &n, v, "imap_processes", imap_procs);
	admin_stats_field(fields, &n, v, "imap_sessions", req->sessions);
	admin_stats_field(fields, &n, v, "imap_sessions_total",
			  st->imap_sessions_total);
	admin_stats_field(fields, &n, v, "lmtp_processes", lmtp_procs);
	admin_stats_field(fields, &n, v, "lmtp_recipients_total",
			  st->lmtp_recipients_total);
	admin_stats_field(fields, &n, v, "imap_login_rss_bytes",
			  master_metrics_rss_bytes(master, SERVICE_LOGIN));
	admin_stats_field(fields, &n, v, "imap_rss_bytes",
			  master_metrics_rss_bytes(master, SERVICE_IMAP));
	admin_stats_field(fields, &n, v, "imap_login_connections_total",
			  t->login_connections);
	admin_stats_field(fields, &n, v, "tls_handshakes_ok", t->tls_ok);
	admin_stats_field(fields, &n, v, "tls_handshakes_failed", t->tls_failed);
	admin_stats_field(fields, &n, v, "imap_login_received_bytes",
			  t->login_bytes_in);
	admin_stats_field(fields, &n, v, "imap_login_sent_bytes",
			  t->login_bytes_out);
	admin_stats_field(fields, &n, v, "imap_received_bytes", t->imap_bytes_in);
	admin_stats_field(fields, &n, v, "imap_sent_bytes", t->imap_bytes_out);
	for (unsigned int i = 0; i < METRICS_DISCONNECT_REASONS; i++)
		admin_stats_field(fields, &n, v, admin_stats_disconnect_keys[i],
				  t->disconnects[i]);
	admin_stats_field(fields, &n, v, "lmtp_delivered", t->deliveries[0]);
	admin_stats_field(fields, &n, v, "lmtp_tempfail", t->deliveries[1]);
	admin_stats_field(fields, &n, v, "lmtp_permfail", t->deliveries[2]);
	i_assert(n == ADMIN_STATS_FIELDS * 2);
	fields[n] = NULL;
	admin_send_row(req->client, fields);
}

static void admin_stats_auth_row(void *context, const char *mech,
				 uint64_t ok, uint64_t failed, uint64_t usecs)
{
	struct admin_request *req = context;
	char v[3][24], secs[32];

	snprintf(v[0], sizeof(v[0]), "%llu", (unsigned long long)ok);
	snprintf(v[1], sizeof(v[1]), "%llu", (unsigned long long)failed);
	snprintf(secs, sizeof(secs), "%llu.%06llu",
		 (unsigned long long)(usecs / 1000000),
		 (unsigned long long)(usecs % 1000000));
	admin_send_rowv(req->client, "mechanism", mech, "ok", v[0],
			"failed", v[1], "duration_seconds_sum", secs, NULL);
}

/* STATS-AUTH: one row per SASL mechanism used since master started. */
static void admin_cmd_stats_auth(struct admin_request *req)
{
	master_metrics_auth_foreach(req->client->admin->master,
				    admin_stats_auth_row, req);
	admin_request_done(req);
}

static void admin_cmd_reload(struct admin_request *req)
{
	const char *error;

	i_info("moatadm reload by uid %u: reloading %s",
	       (unsigned)req->client->uid, req->client->admin->master->config_path);
	if (master_reload(req->client->admin->master, &error) < 0)
		admin_request_fail(req, "tempfail", error);
	else
		admin_request_done(req);
}

static void admin_cmd_stop(struct admin_request *req)
{
	struct master *master = req->client->admin->master;

	i_info("stopping (moatadm stop by uid %u)", (unsigned)req->client->uid);
	admin_request_done(req);
	if (!master->stopping)
		services_stop(master);
}

/* NAME, its argument count, and what a request of it needs. */
struct admin_cmd_def {
	const char *name;
	unsigned int args;
	enum admin_request_kind kind;
	bool takes_user;
};

static const struct admin_cmd_def admin_cmds[] = {
	{ "WHO", 0, ADMIN_REQ_WHO, false },
	{ "STATS", 0, ADMIN_REQ_STATS, false },
	{ "STATS-AUTH", 0, ADMIN_REQ_STATS_AUTH, false },
	{ "KICK", 2, ADMIN_REQ_KICK, true },
	{ "USER", 1, ADMIN_REQ_USER, true },
	{ "MAIL", 1, ADMIN_REQ_MAIL, true },
	{ "AUTH-TEST", 2, ADMIN_REQ_AUTH_TEST, true },
	{ "MAILOP", 3, ADMIN_REQ_MAILOP, true },
};

static void admin_cmd_start(struct admin_conn *client,
			    const struct admin_cmd_def *def,
			    const char *const *args)
{
	struct master_admin *admin = client->admin;
	struct admin_request *req = i_malloc(sizeof(*req));

	req->client = client;
	req->kind = def->kind;
	snprintf(req->id, sizeof(req->id), "admin-%u", ++admin->next_id);
	client->req = req;
	if (def->takes_user) {
		if (!admin_field_ok(args[1], ADMIN_USER_MAX) ||
		    strchr(args[1], ' ') != NULL) {
			admin_request_fail(req, "usage", "Invalid user name");
			return;
		}
		req->user = i_strdup(args[1]);
	}
	switch (def->kind) {
	case ADMIN_REQ_WHO:
		admin_imap_ask(req, "WHO");
		break;
	case ADMIN_REQ_STATS:
		admin_imap_ask(req, "WHO");
		break;
	case ADMIN_REQ_STATS_AUTH:
		admin_cmd_stats_auth(req);
		break;
	case ADMIN_REQ_KICK:
		if (!admin_field_ok(args[2], ADMIN_REASON_MAX)) {
			admin_request_fail(req, "usage", "Invalid reason");
			return;
		}
		req->reason = i_strdup(args[2]);
		i_info("moatadm kick of user %s by uid %u: %s", req->user,
		       (unsigned)client->uid, req->reason);
		admin_imap_ask(req, "KICK");
		break;
	case ADMIN_REQ_MAILOP:
		if ((strcmp(args[2], "quota-recalc") != 0 &&
		     strcmp(args[2], "index-check") != 0 &&
		     strcmp(args[2], "index-rebuild") != 0) ||
		    (args[3][0] != '\0' && !admin_field_ok(args[3], ADMIN_USER_MAX))) {
			admin_request_fail(req, "usage", "Unknown mail operation");
			return;
		}
		req->op = i_strdup(args[2]);
		req->reason = i_strdup(args[3]);   /* the op's argument */
		admin_auth_userdb(req);
		break;
	case ADMIN_REQ_USER:
	case ADMIN_REQ_MAIL:
		admin_auth_userdb(req);
		break;
	case ADMIN_REQ_AUTH_TEST:
		req->password_b64 = i_strdup(args[2]);
		admin_auth_test(req);
		break;
	}
}

void admin_cmd_dispatch(struct admin_conn *client, const char *const *args)
{
	unsigned int count = str_array_length(args) - 1;
	struct admin_request *req;

	if (strcmp(args[0], "RELOAD") == 0 || strcmp(args[0], "STOP") == 0 ||
	    strcmp(args[0], "LOG") == 0 || strcmp(args[0], "USERS") == 0) {
		req = i_malloc(sizeof(*req));
		req->client = client;
		client->req = req;
		if (count != 0)
			admin_request_fail(req, "usage", "No arguments expected");
		else if (args[0][0] == 'R')
			admin_cmd_reload(req);
		else if (args[0][0] == 'S')
			admin_cmd_stop(req);
		else if (args[0][0] == 'U')
			admin_users_send(req);
		else {
			admin_log_send(client);
			admin_request_done(req);
		}
		return;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(admin_cmds); i++) {
		if (strcmp(args[0], admin_cmds[i].name) != 0)
			continue;
		if (count != admin_cmds[i].args) {
			(void)ipc_sendv(client->conn, -1, "FAIL", "usage",
					"Wrong number of arguments", NULL);
			return;
		}
		admin_cmd_start(client, &admin_cmds[i], args);
		return;
	}
	(void)ipc_sendv(client->conn, -1, "FAIL", "usage", "Unknown request",
			NULL);
}

void admin_request_cleanup(struct admin_request *req)
{
	timeout_remove(&req->to);
	free(req->waiting);
	req->waiting = NULL;
	req->waiting_count = 0;
	if (req->auth_conn != NULL)
		ipc_conn_destroy(&req->auth_conn);
	if (req->password_b64 != NULL) {
		safe_memset(req->password_b64, 0, strlen(req->password_b64));
		free(req->password_b64);
		req->password_b64 = NULL;
	}
}
