/* OpenMetrics text (Prometheus) of master's counters over a minimal
   HTTP/1.0 and 1.1 server: GET /metrics only, on metrics_listener (a unix
   socket, 0660 root:admin_group as the admin socket) and, with
   metrics_port, on 127.0.0.1. Master parses only the request line of a
   bounded request from a local peer; headers are skipped, every
   connection is answered once and closed. */
#include "master-admin-private.h"
#include "master-metrics.h"

#include "buffer.h"
#include "strfuncs.h"
#include "iostream.h"

#include <fcntl.h>
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

/* A scraper's GET with its headers: Prometheus sends about 300 bytes. */
#define METRICS_REQUEST_MAX 4096
/* Scrapers at once; more are closed at once (each holds one buffer). */
#define METRICS_CONNS_MAX 16
/* A request must arrive, and the answer be read, within this. */
#define METRICS_TIMEOUT_MSECS 10000
/* After the answer: how long the rest of a request is read and dropped. */
#define METRICS_LINGER_MSECS 2000
/* The answer: a fixed set of families plus, per IMAP command name (at
   most METRICS_IMAP_COMMANDS_MAX), 13 lines of at most 120 bytes. */
#define METRICS_RESPONSE_MAX (256 * 1024)
/* Distinct IMAP command names counted: moat's table has 38; names past
   this are not counted (an imap process only sends its table's). */
#define METRICS_IMAP_COMMANDS_MAX 64
/* A command's or mechanism's name: imap's longest is 12, auth's 18. */
#define METRICS_SERIES_NAME_MAX 32
#define METRICS_COMMAND_NAME_MAX METRICS_SERIES_NAME_MAX
/* The latency histogram of lib/latency-histogram.h (LATENCY_BUCKETS and
   LATENCY_BUCKET_BOUNDS_US), which imap and auth keep: the CMD-STATS and
   AUTH-STATS records have one count per bound, and the exposition writes
   the bounds as seconds. */
#define METRICS_BUCKETS 9
static const char *const metrics_bucket_le[METRICS_BUCKETS] = {
	"0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "30"
};
/* SASL mechanisms counted: auth's table has 10; names past this are
   not counted. */
#define METRICS_AUTH_MECHS_MAX 16
#define METRICS_MECH_NAME_MAX METRICS_SERIES_NAME_MAX
#define METRICS_LISTEN_BACKLOG 16
#define METRICS_CONTENT_TYPE \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"

struct metrics_conn {
	struct metrics_conn *next, *prev;
	struct master_metrics *metrics;
	int fd;
	struct io *io;
	struct timeout *to;
	struct ostream *output;
	size_t len;
	char buf[METRICS_REQUEST_MAX + 1];
};

struct metrics_listener {
	struct master_metrics *metrics;
	int fd;
	struct io *io;
};

/* The latency histogram of one IMAP command name (all counted as ok)
   or one SASL mechanism. */
struct metrics_series {
	char name[METRICS_SERIES_NAME_MAX + 1];
	uint64_t ok, failed, usecs;
	uint64_t le[METRICS_BUCKETS];   /* cumulative, as "le" */
};

/* The series of one kind, by name, at most max; names past it are not
   counted (logged once). */
struct metrics_series_table {
	const char *what;              /* for the log: "IMAP command" */
	const char *label;             /* the exposition's: "command" */
	struct metrics_series *items;
	unsigned int count, max;
	bool full_warned;
};

/* imap-login/login-stats.h's enum login_disconnect_reason, in order. */
const char *const master_metrics_disconnect_reasons[METRICS_DISCONNECT_REASONS] = {
	"logout", "closed", "timeout", "tls", "limit", "bad_commands",
	"shutdown", "other"
};

/* lmtp/lmtp-master.h's DELIVERY-STATS order. */
const char *const master_metrics_delivery_results[METRICS_DELIVERY_RESULTS] = {
	"delivered", "tempfail", "permfail"
};

struct master_metrics {
	struct master *master;
	struct metrics_series cmd_items[METRICS_IMAP_COMMANDS_MAX];
	struct metrics_series mech_items[METRICS_AUTH_MECHS_MAX];
	struct metrics_series_table cmds, mechs;
	struct master_metrics_totals totals;
	struct metrics_listener unix_l, inet_l;
	char *unix_path;
	struct metrics_conn *conns;
	unsigned int conn_count;
};

static void metrics_conn_destroy(struct metrics_conn *conn)
{
	struct master_metrics *metrics = conn->metrics;

	io_remove(&conn->io);
	timeout_remove(&conn->to);
	o_stream_destroy(&conn->output);
	i_close_fd(&conn->fd);
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		metrics->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	metrics->conn_count--;
	free(conn);
}

/* Resident memory of a process from /proc/PID/statm, bytes; 0 if gone. */
static uint64_t process_rss_bytes(pid_t pid)
{
	char path[64], text[128];
	unsigned long long size, resident;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	if (sscanf(text, "%llu %llu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t master_metrics_rss_bytes(struct master *master,
				  enum service_kind kind)
{
	uint64_t sum = 0;

	for (struct child *c = master->children; c != NULL; c = c->next) {
		if (c->service->kind == kind)
			sum += process_rss_bytes(c->pid);
	}
	return sum;
}

static int metrics_family(buffer_t *out, const char *name, const char *type,
			  const char *help)
{
	return buffer_printf(out, "# TYPE %s %s\n# HELP %s %s\n", name, type,
			     name, help);
}

/* A histogram's _bucket, _count and _sum lines for one label set
   (labels: 'name="value"'). */
static int metrics_histogram(buffer_t *out, const char *family,
			     const char *labels, const uint64_t *le,
			     uint64_t count, uint64_t usecs)
{
	int ret = 0;

	for (unsigned int b = 0; b < METRICS_BUCKETS; b++)
		ret |= buffer_printf(out, "%s_bucket{%s,le=\"%s\"} %llu\n",
				     family, labels, metrics_bucket_le[b],
				     (unsigned long long)le[b]);
	ret |= buffer_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n"
			     "%s_count{%s} %llu\n%s_sum{%s} %llu.%06llu\n",
			     family, labels, (unsigned long long)count,
			     family, labels, (unsigned long long)count,
			     family, labels,
			     (unsigned long long)(usecs / 1000000),
			     (unsigned long long)(usecs % 1000000));
	return ret;
}

/* family's histogram lines for every series of table. */
static int metrics_series_histograms(buffer_t *out, const char *family,
				     const struct metrics_series_table *table)
{
	/* label="name": a label of ours and METRICS_SERIES_NAME_MAX */
	char labels[METRICS_SERIES_NAME_MAX + 32];
	int ret = 0;

	for (unsigned int i = 0; i < table->count; i++) {
		const struct metrics_series *s = &table->items[i];
		snprintf(labels, sizeof(labels), "%s=\"%s\"", table->label,
			 s->name);
		ret |= metrics_histogram(out, family, labels, s->le,
					 s->ok + s->failed, s->usecs);
	}
	return ret;
}

static int metrics_imap_commands_text(const struct master_metrics *metrics,
				      buffer_t *out)
{
	const struct metrics_series_table *cmds = &metrics->cmds;
	int ret = 0;

	ret |= metrics_family(out, "moat_imap_commands", "counter",
		"IMAP commands the imap processes finished, by name.");
	for (unsigned int i = 0; i < cmds->count; i++)
		ret |= buffer_printf(out, "moat_imap_commands_total"
			"{command=\"%s\"} %llu\n", cmds->items[i].name,
			(unsigned long long)cmds->items[i].ok);
	ret |= metrics_family(out, "moat_imap_command_duration_seconds",
		"histogram", "Time from an IMAP command's line to its end.");
	ret |= metrics_series_histograms(out,
		"moat_imap_command_duration_seconds", cmds);
	return ret;
}

/* The METRICS_BUCKETS "at most" counts of a histogram record: numbers
   that never decrease and never exceed total. */
static bool metrics_buckets_parse(const char *const *args, uint64_t total,
				  uint64_t le_r[METRICS_BUCKETS])
{
	for (unsigned int b = 0; b < METRICS_BUCKETS; b++) {
		if (str_to_uint64(args[b], &le_r[b]) < 0 || le_r[b] > total ||
		    (b > 0 && le_r[b] < le_r[b - 1]))
			return false;
	}
	return true;
}

static bool command_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > METRICS_COMMAND_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] < 'A' || name[i] > 'Z')
			return false;
	}
	return true;
}

/* Add a record's counts to name's series (a new one if there is room). */
static void metrics_series_add(struct metrics_series_table *table,
			       const char *name, uint64_t ok, uint64_t failed,
			       uint64_t usecs, const uint64_t le[METRICS_BUCKETS])
{
	struct metrics_series *s = NULL;

	for (unsigned int i = 0; i < table->count && s == NULL; i++) {
		if (strcmp(table->items[i].name, name) == 0)
			s = &table->items[i];
	}
	if (s == NULL && table->count == table->max) {
		if (!table->full_warned)
			i_warning("metrics: more than %u %s names; not "
				  "counting the others", table->max,
				  table->what);
		table->full_warned = true;
		return;
	}
	if (s == NULL) {
		s = &table->items[table->count++];
		i_assert(strlen(name) <= METRICS_SERIES_NAME_MAX);
		memcpy(s->name, name, strlen(name) + 1);
	}
	s->ok += ok;
	s->failed += failed;
	s->usecs += usecs;
	for (unsigned int b = 0; b < METRICS_BUCKETS; b++)
		s->le[b] += le[b];
}

bool master_metrics_imap_stats(struct master *master,
			       const char *const *args)
{
	uint64_t count, usecs, le[METRICS_BUCKETS];

	/* CMD-STATS <name> <count> <usecs> <le>... */
	if (str_array_length(args) != 4 + METRICS_BUCKETS ||
	    !command_name_valid(args[1]) ||
	    str_to_uint64(args[2], &count) < 0 ||
	    str_to_uint64(args[3], &usecs) < 0 ||
	    !metrics_buckets_parse(args + 4, count, le))
		return false;
	metrics_series_add(&master->metrics->cmds, args[1], count, 0, usecs,
			   le);
	return true;
}

/* A SASL mechanism name as sasl-mech.c writes them: A-Z 0-9 - _. */
static bool mech_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > METRICS_MECH_NAME_MAX)
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == len;
}

bool master_metrics_auth_stats(struct master *master,
			       const char *const *args)
{
	uint64_t ok, failed, usecs, le[METRICS_BUCKETS];

	/* AUTH-STATS <mech> <ok> <failed> <usecs> <le>... */
	if (str_array_length(args) != 5 + METRICS_BUCKETS ||
	    !mech_name_valid(args[1]) || str_to_uint64(args[2], &ok) < 0 ||
	    str_to_uint64(args[3], &failed) < 0 ||
	    str_to_uint64(args[4], &usecs) < 0 || ok > UINT64_MAX - failed ||
	    !metrics_buckets_parse(args + 5, ok + failed, le))
		return false;
	metrics_series_add(&master->metrics->mechs, args[1], ok, failed, usecs,
			   le);
	return true;
}

bool master_metrics_login_stats(struct master *master,
				const char *const *args)
{
	struct master_metrics_totals *t = &master->metrics->totals;
	uint64_t *const fixed[] = {
		&t->login_connections, &t->tls_ok, &t->tls_failed,
		&t->login_bytes_in, &t->login_bytes_out
	};
	uint64_t v[N_ELEMENTS(fixed) + METRICS_DISCONNECT_REASONS];

	/* LOGIN-STATS <connections> <tls_ok> <tls_failed> <bytes_in>
	   <bytes_out> <disconnects by reason>...; all checked first */
	if (str_array_length(args) != 1 + N_ELEMENTS(v))
		return false;
	for (unsigned int i = 0; i < N_ELEMENTS(v); i++) {
		if (str_to_uint64(args[1 + i], &v[i]) < 0)
			return false;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(fixed); i++)
		*fixed[i] += v[i];
	for (unsigned int i = 0; i < METRICS_DISCONNECT_REASONS; i++)
		t->disconnects[i] += v[N_ELEMENTS(fixed) + i];
	return true;
}

bool master_metrics_imap_io(struct master *master, const char *const *args)
{
	struct master_metrics_totals *t = &master->metrics->totals;
	uint64_t in, out;

	/* IO-STATS <bytes_in> <bytes_out> */
	if (str_array_length(args) != 3 || str_to_uint64(args[1], &in) < 0 ||
	    str_to_uint64(args[2], &out) < 0)
		return false;
	t->imap_bytes_in += in;
	t->imap_bytes_out += out;
	return true;
}

bool master_metrics_lmtp_stats(struct master *master,
			       const char *const *args)
{
	struct master_metrics_totals *t = &master->metrics->totals;
	uint64_t v[METRICS_DELIVERY_RESULTS + 1];

	/* DELIVERY-STATS <delivered> <tempfail> <permfail> <reused>: the
	   last counts recipients routed over a kept delivery socket */
	if (str_array_length(args) != 2 + METRICS_DELIVERY_RESULTS)
		return false;
	for (unsigned int i = 0; i <= METRICS_DELIVERY_RESULTS; i++) {
		if (str_to_uint64(args[1 + i], &v[i]) < 0)
			return false;
	}
	for (unsigned int i = 0; i < METRICS_DELIVERY_RESULTS; i++)
		t->deliveries[i] += v[i];
	master_admin_lmtp_rcpt_reused(master, v[METRICS_DELIVERY_RESULTS]);
	return true;
}

const struct master_metrics_totals *
master_metrics_get_totals(struct master *master)
{
	return &master->metrics->totals;
}

void master_metrics_auth_foreach(struct master *master,
				 master_metrics_auth_cb_t *cb, void *context)
{
	const struct master_metrics *metrics = master->metrics;

	for (unsigned int i = 0; i < metrics->mechs.count; i++) {
		const struct metrics_series *m = &metrics->mechs.items[i];
		cb(context, m->name, m->ok, m->failed, m->usecs);
	}
}

static int metrics_auth_text(const struct master_metrics *metrics,
			     buffer_t *out)
{
	int ret = 0;

	ret |= metrics_family(out, "moat_auth_requests", "counter",
		"Authentications auth decided, by SASL mechanism and result.");
	for (unsigned int i = 0; i < metrics->mechs.count; i++) {
		const struct metrics_series *m = &metrics->mechs.items[i];
		ret |= buffer_printf(out, "moat_auth_requests_total"
			"{mechanism=\"%s\",result=\"ok\"} %llu\n"
			"moat_auth_requests_total"
			"{mechanism=\"%s\",result=\"failed\"} %llu\n",
			m->name, (unsigned long long)m->ok,
			m->name, (unsigned long long)m->failed);
	}
	ret |= metrics_family(out, "moat_auth_duration_seconds", "histogram",
		"Time from an AUTH request's arrival in auth to its decision.");
	ret |= metrics_series_histograms(out, "moat_auth_duration_seconds",
					 &metrics->mechs);
	return ret;
}

static int metrics_login_text(const struct master_metrics_totals *t,
			      buffer_t *out)
{
	int ret = 0;

	ret |= metrics_family(out, "moat_connections_accepted", "counter",
		"Connections accepted, per service.");
	ret |= buffer_printf(out, "moat_connections_accepted_total"
		"{service=\"imap-login\"} %llu\n",
		(unsigned long long)t->login_connections);
	ret |= metrics_family(out, "moat_tls_handshakes", "counter",
		"TLS handshakes of imap-login (implicit TLS and STARTTLS).");
	ret |= buffer_printf(out,
		"moat_tls_handshakes_total{result=\"ok\"} %llu\n"
		"moat_tls_handshakes_total{result=\"failed\"} %llu\n",
		(unsigned long long)t->tls_ok, (unsigned long long)t->tls_failed);
	ret |= metrics_family(out, "moat_preauth_disconnects", "counter",
		"Clients imap-login disconnected before they logged in, by "
		"reason.");
	for (unsigned int i = 0; i < METRICS_DISCONNECT_REASONS; i++)
		ret |= buffer_printf(out, "moat_preauth_disconnects_total"
			"{reason=\"%s\"} %llu\n",
			master_metrics_disconnect_reasons[i],
			(unsigned long long)t->disconnects[i]);
	ret |= metrics_family(out, "moat_received_bytes", "counter",
		"IMAP bytes read from clients (after TLS and COMPRESS), per "
		"service.");
	ret |= buffer_printf(out,
		"moat_received_bytes_total{service=\"imap-login\"} %llu\n"
		"moat_received_bytes_total{service=\"imap\"} %llu\n",
		(unsigned long long)t->login_bytes_in,
		(unsigned long long)t->imap_bytes_in);
	ret |= metrics_family(out, "moat_sent_bytes", "counter",
		"IMAP bytes written to clients (before TLS and COMPRESS), per "
		"service.");
	ret |= buffer_printf(out,
		"moat_sent_bytes_total{service=\"imap-login\"} %llu\n"
		"moat_sent_bytes_total{service=\"imap\"} %llu\n",
		(unsigned long long)t->login_bytes_out,
		(unsigned long long)t->imap_bytes_out);
	return ret;
}

/* The exposition; every family is written even when zero, so a scraper
   sees the same set each time. Returns -1 if out is too small. */
static int metrics_text(struct master *master, buffer_t *out)
{
	const struct admin_stats *st = &master->admin->stats;
	unsigned int procs[SERVICE_KIND_COUNT] = { 0 };
	unsigned int clients[SERVICE_KIND_COUNT] = { 0 };
	uint64_t rss[SERVICE_KIND_COUNT] = { 0 };
	int ret = 0;

	for (struct child *c = master->children; c != NULL; c = c->next) {
		procs[c->service->kind]++;
		clients[c->service->kind] += c->clients;
		rss[c->service->kind] += process_rss_bytes(c->pid);
	}
	uint64_t now = (uint64_t)time(NULL) * 1000;
	ret |= metrics_family(out, "moat_uptime_seconds", "gauge",
			      "Seconds since master started.");
	ret |= buffer_printf(out, "moat_uptime_seconds %llu\n",
		(unsigned long long)((now - MIN(now, st->started_ms)) / 1000));
	ret |= metrics_family(out, "moat_logins", "counter",
		"Logins: ok = routed to an imap process, failed = auth's "
		"failed authentications.");
	ret |= buffer_printf(out, "moat_logins_total{result=\"ok\"} %llu\n"
		"moat_logins_total{result=\"failed\"} %llu\n",
		(unsigned long long)st->logins_ok,
		(unsigned long long)st->logins_failed);
	ret |= metrics_family(out, "moat_imap_sessions", "counter",
		"IMAP sessions handed to imap processes.");
	ret |= buffer_printf(out, "moat_imap_sessions_total %llu\n",
			     (unsigned long long)st->imap_sessions_total);
	ret |= metrics_family(out, "moat_lmtp_recipients", "counter",
		"LMTP recipients accepted and routed to an imap process.");
	ret |= buffer_printf(out, "moat_lmtp_recipients_total %llu\n",
			     (unsigned long long)st->lmtp_recipients_total);
	ret |= metrics_family(out, "moat_lmtp_deliveries", "counter",
		"LMTP recipients' answers to DATA (2xx delivered, 4xx "
		"tempfail, 5xx permfail).");
	for (unsigned int i = 0; i < METRICS_DELIVERY_RESULTS; i++)
		ret |= buffer_printf(out, "moat_lmtp_deliveries_total"
			"{result=\"%s\"} %llu\n",
			master_metrics_delivery_results[i],
			(unsigned long long)master->metrics->totals.deliveries[i]);
	ret |= metrics_family(out, "moat_processes", "gauge",
			      "Running processes per service.");
	for (unsigned int k = 0; k < SERVICE_KIND_COUNT; k++)
		ret |= buffer_printf(out, "moat_processes{service=\"%s\"} %u\n",
				     master->services[k].name, procs[k]);
	ret |= metrics_family(out, "moat_connections", "gauge",
		"Connections now, as the processes last reported them "
		"(imap-login: pre-auth clients and relayed TLS sessions; "
		"imap: logged-in sessions, every 5 s at most).");
	ret |= buffer_printf(out, "moat_connections{service=\"imap-login\"} %u\n"
		"moat_connections{service=\"imap\"} %u\n"
		"moat_connections{service=\"lmtp\"} %u\n",
		clients[SERVICE_LOGIN], clients[SERVICE_IMAP],
		clients[SERVICE_LMTP]);
	ret |= metrics_family(out, "moat_resident_memory_bytes", "gauge",
		"Resident memory of each service's processes together "
		"(/proc/PID/statm).");
	for (unsigned int k = 0; k < SERVICE_KIND_COUNT; k++)
		ret |= buffer_printf(out, "moat_resident_memory_bytes"
				     "{service=\"%s\"} %llu\n",
				     master->services[k].name,
				     (unsigned long long)rss[k]);
	ret |= metrics_login_text(&master->metrics->totals, out);
	ret |= metrics_auth_text(master->metrics, out);
	ret |= metrics_imap_commands_text(master->metrics, out);
	ret |= buffer_append_str(out, "# EOF\n");
	return ret < 0 ? -1 : 0;
}

static void metrics_timeout(void *context);

static void metrics_drain_input(void *context)
{
	struct metrics_conn *conn = context;
	char buf[1024];

	ssize_t n = read(conn->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		metrics_conn_destroy(conn);
}

/* The answer is out: half-close and read what the client still sends
   until it closes (or the timer ends), since closing a socket with
   unread input resets it and the client could lose the answer. */
static void metrics_answered(struct metrics_conn *conn)
{
	struct ioloop *ioloop = conn->metrics->master->ioloop;

	o_stream_destroy(&conn->output);
	if (shutdown(conn->fd, SHUT_WR) < 0) {
		metrics_conn_destroy(conn);
		return;
	}
	timeout_remove(&conn->to);
	conn->to = timeout_add(ioloop, METRICS_LINGER_MSECS, metrics_timeout,
			       conn);
	conn->io = io_add(ioloop, conn->fd, IO_READ, metrics_drain_input, conn);
}

static void metrics_output_flushed(void *context)
{
	struct metrics_conn *conn = context;

	if (o_stream_is_failed(conn->output))
		metrics_conn_destroy(conn);
	else
		metrics_answered(conn);
}

static void metrics_respond(struct metrics_conn *conn, const char *status,
			    const char *type, const char *body)
{
	struct master *master = conn->metrics->master;
	size_t body_len = strlen(body);

	io_remove(&conn->io);
	conn->output = o_stream_create_fd(master->ioloop, conn->fd,
					  METRICS_RESPONSE_MAX + 512);
	o_stream_set_flush_callback(conn->output, metrics_output_flushed, conn);
	if (o_stream_printf(conn->output, "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			    status, type, body_len) < 0 ||
	    o_stream_send(conn->output, body, body_len) < 0) {
		metrics_conn_destroy(conn);
		return;
	}
	int ret = o_stream_flush(conn->output);
	if (ret < 0)
		metrics_conn_destroy(conn);
	else if (ret > 0)
		metrics_answered(conn);
}

static void metrics_error(struct metrics_conn *conn, const char *status)
{
	char body[128];

	snprintf(body, sizeof(body), "%s\n", status);
	metrics_respond(conn, status, "text/plain; charset=utf-8", body);
}

/* The request line: "GET /metrics HTTP/1.x" ("/metrics?..." too). */
static void metrics_request(struct metrics_conn *conn)
{
	char *line = conn->buf, *end = strpbrk(line, "\r\n");
	char *sp1, *sp2;

	*end = '\0';
	sp1 = strchr(line, ' ');
	sp2 = sp1 == NULL ? NULL : strchr(sp1 + 1, ' ');
	if (sp1 == NULL || sp2 == NULL || strchr(sp2 + 1, ' ') != NULL ||
	    (strcmp(sp2 + 1, "HTTP/1.0") != 0 && strcmp(sp2 + 1, "HTTP/1.1") != 0)) {
		metrics_error(conn, "400 Bad Request");
		return;
	}
	*sp1 = *sp2 = '\0';
	const char *target = sp1 + 1;
	size_t tlen = strcspn(target, "?");
	if (strcmp(line, "GET") != 0) {
		metrics_error(conn, "405 Method Not Allowed");
		return;
	}
	if (tlen != strlen("/metrics") || strncmp(target, "/metrics", tlen) != 0) {
		metrics_error(conn, "404 Not Found");
		return;
	}
	buffer_t body;
	buffer_init(&body, METRICS_RESPONSE_MAX);
	if (metrics_text(conn->metrics->master, &body) < 0) {
		i_error("metrics: the exposition exceeds %u bytes",
			METRICS_RESPONSE_MAX);
		metrics_error(conn, "500 Internal Server Error");
	} else {
		metrics_respond(conn, "200 OK", METRICS_CONTENT_TYPE,
				(const char *)body.data);
	}
	buffer_free(&body);
}

/* The head is complete at an empty line (CRLF CRLF, or LF LF). */
static bool metrics_head_complete(const struct metrics_conn *conn)
{
	return strstr(conn->buf, "\r\n\r\n") != NULL ||
		strstr(conn->buf, "\n\n") != NULL;
}

static void metrics_input(void *context)
{
	struct metrics_conn *conn = context;

	ssize_t n = read(conn->fd, conn->buf + conn->len,
			 METRICS_REQUEST_MAX - conn->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		metrics_conn_destroy(conn);
		return;
	}
	conn->len += (size_t)n;
	conn->buf[conn->len] = '\0';
	if (memchr(conn->buf, '\0', conn->len) != NULL) {
		metrics_error(conn, "400 Bad Request");
		return;
	}
	if (metrics_head_complete(conn))
		metrics_request(conn);
	else if (conn->len == METRICS_REQUEST_MAX)
		metrics_error(conn, "400 Bad Request");
}

static void metrics_timeout(void *context)
{
	struct metrics_conn *conn = context;

	conn->to = NULL;
	metrics_conn_destroy(conn);
}

static void metrics_accept(void *context)
{
	struct metrics_listener *l = context;
	struct master_metrics *metrics = l->metrics;

	int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			i_error("metrics: accept() failed: %s", strerror(errno));
		return;
	}
	if (metrics->conn_count >= METRICS_CONNS_MAX) {
		close(fd);
		return;
	}
	struct metrics_conn *conn = i_malloc(sizeof(*conn));
	conn->metrics = metrics;
	conn->fd = fd;
	conn->io = io_add(metrics->master->ioloop, fd, IO_READ, metrics_input,
			  conn);
	conn->to = timeout_add(metrics->master->ioloop, METRICS_TIMEOUT_MSECS,
			       metrics_timeout, conn);
	conn->next = metrics->conns;
	if (metrics->conns != NULL)
		metrics->conns->prev = conn;
	metrics->conns = conn;
	metrics->conn_count++;
}

static int metrics_open_unix(struct master_metrics *metrics, const char *name)
{
	struct master *master = metrics->master;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	metrics->unix_path = name[0] == '/' ? i_strdup(name) :
		i_strdup_printf("%s/%s", master->set->base_dir, name);
	if (strlen(metrics->unix_path) >= sizeof(sa.sun_path)) {
		i_error("metrics_listener %s: path too long", metrics->unix_path);
		return -1;
	}
	memcpy(sa.sun_path, metrics->unix_path, strlen(metrics->unix_path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	/* A stale socket of an earlier run (the pid file said none runs). */
	(void)unlink(metrics->unix_path);
	mode_t old_umask = umask(0117);
	int ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	gid_t gid = master->admin->gid;
	/* 0660 root:admin_group, as the admin socket */
	if (ret < 0 || chmod(metrics->unix_path, 0660) < 0 ||
	    (master->root && chown(metrics->unix_path, 0,
				   gid == (gid_t)-1 ? 0 : gid) < 0) ||
	    listen(fd, METRICS_LISTEN_BACKLOG) < 0) {
		i_error("metrics_listener %s: %s", metrics->unix_path,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int metrics_open_inet(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;

	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, METRICS_LISTEN_BACKLOG) < 0) {
		i_error("metrics_port: listen(127.0.0.1, %u) failed: %s", port,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void metrics_listen(struct master_metrics *metrics,
			   struct metrics_listener *l, int fd)
{
	l->metrics = metrics;
	l->fd = fd;
	if (fd >= 0)
		l->io = io_add(metrics->master->ioloop, fd, IO_READ,
			       metrics_accept, l);
}

void master_metrics_init(struct master *master)
{
	const struct moat_settings *set = master->set;
	struct master_metrics *metrics = i_malloc(sizeof(*metrics));

	metrics->master = master;
	metrics->cmds = (struct metrics_series_table){
		.what = "IMAP command", .label = "command",
		.items = metrics->cmd_items, .max = METRICS_IMAP_COMMANDS_MAX,
	};
	metrics->mechs = (struct metrics_series_table){
		.what = "SASL mechanism", .label = "mechanism",
		.items = metrics->mech_items, .max = METRICS_AUTH_MECHS_MAX,
	};
	metrics->unix_l.fd = metrics->inet_l.fd = -1;
	master->metrics = metrics;
	/* A scraper that cannot connect is logged, not fatal: mail goes on. */
	if (set->metrics_listener[0] != '\0')
		metrics_listen(metrics, &metrics->unix_l,
			       metrics_open_unix(metrics, set->metrics_listener));
	if (set->metrics_port != 0)
		metrics_listen(metrics, &metrics->inet_l,
			       metrics_open_inet(set->metrics_port));
}

static void metrics_listener_close(struct metrics_listener *l)
{
	io_remove(&l->io);
	i_close_fd(&l->fd);
}

void master_metrics_deinit(struct master *master)
{
	struct master_metrics *metrics = master->metrics;

	if (metrics == NULL)
		return;
	while (metrics->conns != NULL)
		metrics_conn_destroy(metrics->conns);
	metrics_listener_close(&metrics->unix_l);
	metrics_listener_close(&metrics->inet_l);
	if (metrics->unix_path != NULL)
		(void)unlink(metrics->unix_path);
	free(metrics->unix_path);
	free(metrics);
	master->metrics = NULL;
}
