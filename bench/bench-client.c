/* One IMAP connection of imapload: non-blocking socket, response assembly
   (lines with their literals) and the login/setup/operation state machine.
   Every reply is checked; anything unexpected is an error, a BAD (or a NO
   saying so) to a command the server does not know is "unsupported". */
#include "bench-client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Longest command line we format (the APPEND header is the longest). */
#define CLIENT_MAX_COMMAND 1024

static void client_arm(struct bench_client *c, bool want_write)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0);
	ev.data.ptr = c;
	if (epoll_ctl(c->run->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		perror("epoll_ctl");
		exit(2);
	}
	c->want_write = want_write;
}

void bench_client_init(struct bench_run *run, struct bench_client *c,
		       unsigned int idx)
{
	const struct bench_settings *set = run->set;
	unsigned int user_no = set->shared_user ? set->user_first :
		set->user_first + idx;

	memset(c, 0, sizeof(*c));
	c->run = run;
	c->idx = idx;
	c->fd = -1;
	c->in = bench_malloc(BENCH_READ_SIZE);
	c->resp = bench_malloc(BENCH_MAX_RESPONSE + 1);
	if (run->wl->pipelinable)
		c->ops = bench_malloc(sizeof(*c->ops) * set->pipeline);
	if (run->wl->transcript) {
		c->transcript = bench_malloc(sizeof(*c->transcript) *
					     BENCH_TRANSCRIPT_LINES);
	}
	/* the formats are the user's own command-line arguments */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(c->user, sizeof(c->user), set->user_fmt, user_no);
	snprintf(c->mailbox, sizeof(c->mailbox), set->mailbox, idx + 1);
#pragma GCC diagnostic pop
}

void bench_client_close(struct bench_client *c)
{
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	c->conn_gen++;
	c->in_used = 0;
	c->resp_len = 0;
	c->literal_left = 0;
	c->out_used = c->out_pos = 0;
	c->want_write = false;
	c->ops_count = 0;
}

static void client_finish(struct bench_client *c)
{
	if (c->state == BENCH_CLIENT_DONE)
		return;
	bench_client_close(c);
	c->state = BENCH_CLIENT_DONE;
	c->run->done_count++;
	if (c->run->wl->finished != NULL)
		c->run->wl->finished(c);
}

void bench_client_note(struct bench_client *c, char dir, const char *data,
		       size_t len)
{
	struct bench_transcript_line *l;
	size_t i, n = 0;

	if (c->transcript == NULL)
		return;
	l = &c->transcript[c->transcript_next];
	c->transcript_next = (c->transcript_next + 1) % BENCH_TRANSCRIPT_LINES;
	if (c->transcript_count < BENCH_TRANSCRIPT_LINES)
		c->transcript_count++;
	l->us = bench_now_us();
	l->dir = dir;
	/* control bytes (the CRLFs around literals) shown as '.' */
	for (i = 0; i < len && n + 4 < sizeof(l->text); i++) {
		unsigned char ch = (unsigned char)data[i];
		l->text[n++] = ch < 0x20 || ch >= 0x7f ? '.' : (char)ch;
	}
	if (i < len) {
		memcpy(l->text + n, "...", 3);
		n += 3;
	}
	l->text[n] = '\0';
}

void bench_client_dump_transcript(const struct bench_client *c, FILE *out,
				  uint64_t start_us, const char *prefix)
{
	unsigned int first = (c->transcript_next + BENCH_TRANSCRIPT_LINES -
			      c->transcript_count) % BENCH_TRANSCRIPT_LINES;

	for (unsigned int i = 0; i < c->transcript_count; i++) {
		const struct bench_transcript_line *l =
			&c->transcript[(first + i) % BENCH_TRANSCRIPT_LINES];
		double ms = l->us >= start_us ?
			(double)(l->us - start_us) / 1000.0 :
			-(double)(start_us - l->us) / 1000.0;
		fprintf(out, "%s%10.3f %c: %s\n", prefix, ms, l->dir, l->text);
	}
}

/* Non-blocking connect; completion shows as writability. */
void bench_client_start(struct bench_client *c)
{
	const struct bench_settings *set = c->run->set;
	struct sockaddr_in sin;
	struct epoll_event ev;
	int one = 1;

	c->cycle_start_us = bench_now_us();
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		perror("socket");
		exit(2);
	}
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->run->wl->reconnect) {
		/* reset on close: tens of thousands of connections would
		   otherwise exhaust the ports in TIME_WAIT */
		struct linger lg = { 1, 0 };
		(void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)set->port);
	if (inet_pton(AF_INET, set->host, &sin.sin_addr) != 1) {
		fprintf(stderr, "invalid IPv4 address: %s\n", set->host);
		exit(2);
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLOUT;
	ev.data.ptr = c;
	if (epoll_ctl(c->run->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		perror("epoll_ctl");
		exit(2);
	}
	c->want_write = true;
	c->state = BENCH_CLIENT_CONNECTING;
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
	    errno != EINPROGRESS) {
		bench_stats_error(&c->run->stats, "connect: %s", strerror(errno));
		client_finish(c);
	}
}

static void client_flush(struct bench_client *c)
{
	while (c->out_pos < c->out_used) {
		ssize_t ret = write(c->fd, c->out + c->out_pos,
				    c->out_used - c->out_pos);
		if (ret < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			bench_stats_error(&c->run->stats, "write: %s",
					  strerror(errno));
			client_finish(c);
			return;
		}
		c->out_pos += (size_t)ret;
	}
	if (c->out_pos == c->out_used)
		c->out_pos = c->out_used = 0;
	bool want = c->out_used > 0;
	if (want != c->want_write)
		client_arm(c, want);
}

static void client_send(struct bench_client *c, const void *data, size_t size)
{
	if (c->out_used + size > c->out_size) {
		c->out_size = (c->out_used + size) * 2;
		c->out = bench_realloc(c->out, c->out_size);
	}
	memcpy(c->out + c->out_used, data, size);
	c->out_used += size;
	client_flush(c);
}

static void client_send_untagged(struct bench_client *c, const char *line)
{
	client_send(c, line, strlen(line));
}

void bench_client_command(struct bench_client *c, const char *fmt, ...)
{
	char line[CLIENT_MAX_COMMAND];
	va_list args;
	int len, len2;

	memset(&c->reply, 0, sizeof(c->reply));
	snprintf(c->tag, sizeof(c->tag), "b%u", ++c->tag_seq);
	len = snprintf(line, sizeof(line), "%s ", c->tag);
	va_start(args, fmt);
	len2 = vsnprintf(line + len, sizeof(line) - (size_t)len - 2, fmt, args);
	va_end(args);
	if (len2 < 0 || (size_t)(len + len2) >= sizeof(line) - 2) {
		fprintf(stderr, "command too long\n");
		exit(2);
	}
	len += len2;
	bench_client_note(c, 'C', line, (size_t)len);
	line[len++] = '\r';
	line[len++] = '\n';
	c->cmd_start_us = bench_now_us();
	if (c->run->wl->pipelinable && c->state == BENCH_CLIENT_RUN) {
		if (c->ops_count >= c->run->set->pipeline) {
			fprintf(stderr, "imapload: pipeline overrun\n");
			abort();
		}
		struct bench_op *op = &c->ops[c->ops_count++];

		*op = c->next_op;
		memcpy(op->tag, c->tag, sizeof(op->tag));
		op->start_us = c->cmd_start_us;
		op->got = 0;
		op->why = NULL;
		memset(&c->next_op, 0, sizeof(c->next_op));
	}
	client_send(c, line, (size_t)len);
}

void bench_client_append(struct bench_client *c,
			 const struct bench_message *msg, const char *fmt, ...)
{
	char head[CLIENT_MAX_COMMAND];
	va_list args;

	va_start(args, fmt);
	int len = vsnprintf(head, sizeof(head), fmt, args);
	va_end(args);
	if (len < 0 || (size_t)len >= sizeof(head) - 32) {
		fprintf(stderr, "command too long\n");
		exit(2);
	}
	c->append_msg = msg;
	/* before sending: a failed write finishes the client */
	c->state = BENCH_CLIENT_APPEND_CONT;
	bench_client_command(c, "%s {%zu}", head, msg->size);
}

static void client_setup_next(struct bench_client *c);

static void client_login(struct bench_client *c)
{
	c->state = BENCH_CLIENT_LOGIN;
	bench_client_command(c, "LOGIN \"%s\" \"%s\"", c->user,
			     c->run->set->password);
}

/* Pipelinable workloads: keep --pipeline commands in flight; LOGOUT
   once the workload has nothing more and every reply is in. */
static void client_pipe_fill(struct bench_client *c)
{
	struct bench_run *run = c->run;
	unsigned int gen = c->conn_gen;

	c->state = BENCH_CLIENT_RUN;
	while (c->ops_count < run->set->pipeline && !c->ops_stop &&
	       !run->stopping && c->conn_gen == gen) {
		if (!run->wl->send_op(c)) {
			c->ops_stop = true;
			break;
		}
	}
	if (c->ops_count == 0 && c->conn_gen == gen &&
	    (c->ops_stop || run->stopping)) {
		c->state = BENCH_CLIENT_LOGOUT;
		bench_client_command(c, "LOGOUT");
	}
}

void bench_client_go(struct bench_client *c)
{
	if (c->run->wl->pipelinable) {
		client_pipe_fill(c);
		return;
	}
	c->state = BENCH_CLIENT_RUN;
	if ((c->run->stopping && !c->run->wl->drain) ||
	    !c->run->wl->send_op(c)) {
		c->state = BENCH_CLIENT_LOGOUT;
		bench_client_command(c, "LOGOUT");
	}
}

static void client_ready(struct bench_client *c)
{
	struct bench_run *run = c->run;

	c->state = BENCH_CLIENT_READY;
	run->ready_count++;
	/* the ready barrier is released by the main loop */
}

static void client_setup_next(struct bench_client *c)
{
	const struct bench_workload *wl = c->run->wl;
	bool inbox = strcasecmp(c->mailbox, "INBOX") == 0;

	c->state = BENCH_CLIENT_SETUP;
	if (c->setup_step == 0) {
		c->setup_step++;
		if (wl->create && !inbox) {
			bench_client_command(c, "CREATE \"%s\"", c->mailbox);
			return;
		}
	}
	if (c->setup_step == 1) {
		c->setup_step++;
		if (wl->select) {
			bench_client_command(c, "SELECT \"%s\"", c->mailbox);
			return;
		}
	}
	client_ready(c);
}

/* "unknown command" and friends: the server lacks the feature. */
static bool text_says_unsupported(const char *text)
{
	static const char *const words[] = {
		"unknown", "unsupported", "not supported", "not implemented",
		"invalid fetch item", "unknown command",
	};
	char lower[256];
	size_t i;

	for (i = 0; i < sizeof(lower) - 1 && text[i] != '\0'; i++)
		lower[i] = (char)tolower((unsigned char)text[i]);
	lower[i] = '\0';
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strstr(lower, words[i]) != NULL)
			return true;
	}
	return false;
}

static void client_op_failed(struct bench_client *c, const char *status,
			     const char *text, bool unsupported)
{
	struct bench_run *run = c->run;
	uint64_t latency = bench_now_us() - c->cmd_start_us;

	if (run->wl->step_done != NULL) {
		run->wl->step_done(c, latency, unsupported ? "unsupported" :
				   "error", text);
		bench_client_go(c);
		return;
	}
	if (unsupported) {
		bench_stats_unsupported(&run->stats, text);
		/* no point in asking again: this client is finished */
		c->state = BENCH_CLIENT_LOGOUT;
		bench_client_command(c, "LOGOUT");
		return;
	}
	bench_stats_error(&run->stats, "%s %s: %s", run->wl->name, status, text);
	bench_client_go(c);
}

static void client_op_ok(struct bench_client *c)
{
	struct bench_run *run = c->run;
	const char *error = NULL;
	uint64_t now = bench_now_us();
	bool ok = run->wl->check == NULL || run->wl->check(c, &error);

	if (run->wl->step_done != NULL) {
		run->wl->step_done(c, now - c->cmd_start_us,
				   ok ? "ok" : "error", ok ? "" : error);
	} else if (!ok) {
		bench_stats_error(&run->stats, "%s: %s", run->wl->name, error);
	} else if (run->wl->once ||
		   (run->measuring && c->cmd_start_us >= run->start_us &&
		    now <= run->end_us)) {
		bench_stats_add(&run->stats, now - c->cmd_start_us);
	}
	bench_client_go(c);
}

static void client_cycle_done(struct bench_client *c, bool ok,
			      const char *error)
{
	struct bench_run *run = c->run;
	uint64_t now = bench_now_us();

	if (!ok)
		bench_stats_error(&run->stats, "login: %s", error);
	else if (run->measuring && now <= run->end_us)
		bench_stats_add(&run->stats, now - c->cycle_start_us);
	bench_client_close(c);
	if (run->stopping)
		client_finish(c);
	else
		bench_client_start(c);
}

static void client_login_reply(struct bench_client *c, bool ok,
			       const char *status, const char *text)
{
	if (c->run->wl->reconnect) {
		if (!ok) {
			client_cycle_done(c, false, text);
			return;
		}
		c->state = BENCH_CLIENT_LOGOUT;
		bench_client_command(c, "LOGOUT");
	} else if (!ok) {
		bench_stats_error(&c->run->stats, "LOGIN %s: %s", status, text);
		client_finish(c);
	} else {
		client_setup_next(c);
	}
}

static void client_setup_reply(struct bench_client *c, bool ok,
			       bool unsupported, const char *status,
			       const char *text)
{
	/* CREATE (setup_step 1) may fail with NO [ALREADYEXISTS]: fine */
	if (!ok && !(c->setup_step == 1 && !unsupported)) {
		if (unsupported)
			bench_stats_unsupported(&c->run->stats, text);
		else
			bench_stats_error(&c->run->stats, "setup %s: %s",
					  status, text);
		c->state = BENCH_CLIENT_LOGOUT;
		bench_client_command(c, "LOGOUT");
		return;
	}
	client_setup_next(c);
}

/* The tagged completion of ops[idx] of a pipelinable workload. */
static void client_pipe_tagged(struct bench_client *c, unsigned int idx,
			       const char *status, const char *text)
{
	struct bench_run *run = c->run;
	struct bench_op op = c->ops[idx];
	const char *error = "";
	uint64_t now = bench_now_us();

	memmove(&c->ops[idx], &c->ops[idx + 1],
		(c->ops_count - idx - 1) * sizeof(c->ops[0]));
	c->ops_count--;
	if (strcasecmp(status, "OK") != 0) {
		if (strcasecmp(status, "BAD") == 0 ||
		    text_says_unsupported(text)) {
			bench_stats_unsupported(&run->stats, text);
			c->ops_stop = true;
		} else {
			bench_stats_error(&run->stats, "%s %s: %s",
					  run->wl->name, status, text);
		}
	} else if (!run->wl->op_check(c, &op, &error)) {
		bench_stats_error(&run->stats, "%s: %s", run->wl->name, error);
	} else if (run->measuring &&
		   op.start_us >= run->start_us && now <= run->end_us) {
		bench_stats_add(&run->stats, now - op.start_us);
	}
	client_pipe_fill(c);
}

/* The tagged completion of the command in flight. */
static void client_tagged(struct bench_client *c, const char *status,
			  const char *text)
{
	bool ok = strcasecmp(status, "OK") == 0;
	bool bad = strcasecmp(status, "BAD") == 0;
	bool unsupported = bad || text_says_unsupported(text);

	switch (c->state) {
	case BENCH_CLIENT_LOGIN:
		client_login_reply(c, ok, status, text);
		return;
	case BENCH_CLIENT_SETUP:
		client_setup_reply(c, ok, unsupported, status, text);
		return;
	case BENCH_CLIENT_RUN:
	case BENCH_CLIENT_APPEND_CONT:
		c->state = BENCH_CLIENT_RUN;
		if (c->run->wl->tagged != NULL)
			c->run->wl->tagged(c, status, text);
		else if (ok)
			client_op_ok(c);
		else
			client_op_failed(c, status, text, unsupported);
		return;
	case BENCH_CLIENT_LOGOUT:
		if (c->run->wl->reconnect) {
			client_cycle_done(c, ok && c->reply.bye,
					  ok ? "no BYE before LOGOUT OK" : text);
		} else {
			client_finish(c);
		}
		return;
	default:
		bench_stats_error(&c->run->stats, "unexpected tagged reply");
		client_finish(c);
	}
}

static void client_untagged(struct bench_client *c, const char *line)
{
	const char *p = line + 2;
	char *end;
	unsigned long n;

	if (strncasecmp(p, "BYE", 3) == 0) {
		c->reply.bye = true;
		return;
	}
	n = strtoul(p, &end, 10);
	if (end != p && strncasecmp(end, " EXISTS", 7) == 0) {
		c->exists = (uint32_t)n;
		c->exists_seen = true;
		return;
	}
	if (c->state == BENCH_CLIENT_RUN && c->run->wl->untagged != NULL)
		c->run->wl->untagged(c, line);
}

static void client_greeting(struct bench_client *c, const char *line)
{
	if (strncasecmp(line, "* OK", 4) != 0) {
		if (c->run->wl->reconnect) {
			client_cycle_done(c, false, "bad greeting");
			return;
		}
		bench_stats_error(&c->run->stats, "greeting: %.100s", line);
		client_finish(c);
		return;
	}
	client_login(c);
}

/* A complete response: a line with any literals' contents left out
   (kept for workloads with keep_literals: then len covers them). */
static void client_response(struct bench_client *c, char *line, size_t len)
{
	size_t tag_len = strlen(c->tag);
	const struct bench_workload *wl = c->run->wl;

	bench_client_note(c, 'S', line, len);
	if (c->state == BENCH_CLIENT_GREETING) {
		client_greeting(c, line);
		return;
	}
	if (line[0] == '*' && line[1] == ' ') {
		if (strncasecmp(line + 2, "BYE", 3) == 0)
			c->reply.bye = true;
		if (wl->response != NULL && c->state != BENCH_CLIENT_LOGIN)
			wl->response(c, line, len);
		else
			client_untagged(c, line);
		return;
	}
	if (line[0] == '+') {
		if (c->state != BENCH_CLIENT_APPEND_CONT) {
			bench_stats_error(&c->run->stats,
					  "unexpected continuation");
			return;
		}
		c->state = BENCH_CLIENT_RUN;
		client_send(c, c->append_msg->data, c->append_msg->size);
		client_send_untagged(c, "\r\n");
		return;
	}
	if (wl->pipelinable && c->state == BENCH_CLIENT_RUN) {
		for (unsigned int i = 0; i < c->ops_count; i++) {
			size_t len_i = strlen(c->ops[i].tag);

			if (strncmp(line, c->ops[i].tag, len_i) != 0 ||
			    line[len_i] != ' ')
				continue;
			char *status = line + len_i + 1;
			char *text = strchr(status, ' ');

			if (text != NULL)
				*text++ = '\0';
			else
				text = status + strlen(status);
			client_pipe_tagged(c, i, status, text);
			return;
		}
	}
	if (strncmp(line, c->tag, tag_len) == 0 && line[tag_len] == ' ') {
		char *status = line + tag_len + 1;
		char *text = strchr(status, ' ');

		if (text != NULL)
			*text++ = '\0';
		else
			text = status + strlen(status);
		client_tagged(c, status, text);
		return;
	}
	bench_stats_error(&c->run->stats, "unexpected line: %.100s", line);
}

/* If the line ends with {N} or {N+}, N; else -1. */
static int64_t line_literal_size(const char *line, size_t len)
{
	size_t i;
	int64_t n = 0, mul = 1;

	if (len < 3 || line[len - 1] != '}')
		return -1;
	i = len - 2;
	if (line[i] == '+')
		i--;
	for (; i > 0 && isdigit((unsigned char)line[i]); i--) {
		n += (line[i] - '0') * mul;
		mul *= 10;
		if (mul > 1000000000000LL)
			return -1;
	}
	return line[i] == '{' && mul > 1 ? n : -1;
}

static void resp_append(struct bench_client *c, const char *data, size_t len)
{
	size_t room = BENCH_MAX_RESPONSE - c->resp_len;

	if (len > room)
		len = room;	/* the tail is lost; the checks will notice */
	memcpy(c->resp + c->resp_len, data, len);
	c->resp_len += len;
	c->resp[c->resp_len] = '\0';
}

/* Consumes buffered input: returns bytes used. */
static size_t client_parse(struct bench_client *c, char *data, size_t size)
{
	unsigned int gen = c->conn_gen;
	size_t pos = 0;

	while (pos < size && c->conn_gen == gen) {
		if (c->literal_left > 0) {
			size_t n = size - pos;

			if (n > c->literal_left)
				n = (size_t)c->literal_left;
			if (c->run->wl->keep_literals)
				resp_append(c, data + pos, n);
			c->literal_left -= n;
			pos += n;
			continue;
		}
		char *nl = memchr(data + pos, '\n', size - pos);
		if (nl == NULL)
			break;
		size_t len = (size_t)(nl - (data + pos));
		if (len > 0 && data[pos + len - 1] == '\r')
			len--;
		resp_append(c, data + pos, len);
		pos = (size_t)(nl - data) + 1;
		int64_t lit = line_literal_size(c->resp, c->resp_len);
		if (lit >= 0) {
			c->literal_left = (uint64_t)lit;
			c->reply.literal_count++;
			c->reply.literal_bytes += (uint64_t)lit;
			if (c->run->wl->keep_literals)
				resp_append(c, "\r\n", 2);
			continue;
		}
		size_t resp_len = c->resp_len;
		c->resp_len = 0;
		client_response(c, c->resp, resp_len);
	}
	return pos;
}

static void client_input(struct bench_client *c)
{
	unsigned int gen = c->conn_gen;

	for (;;) {
		ssize_t ret = read(c->fd, c->in + c->in_used,
				   BENCH_READ_SIZE - c->in_used);
		if (ret < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (ret <= 0) {
			const char *why = ret == 0 ? "server closed the "
				"connection" : strerror(errno);
			if (c->state == BENCH_CLIENT_LOGOUT && c->reply.bye &&
			    !c->run->wl->reconnect) {
				client_finish(c);
			} else if (c->run->wl->reconnect) {
				client_cycle_done(c, false, why);
			} else {
				bench_stats_error(&c->run->stats, "%s", why);
				client_finish(c);
			}
			return;
		}
		c->in_used += (size_t)ret;
		size_t used = client_parse(c, c->in, c->in_used);
		if (c->conn_gen != gen)
			return;
		if (used == 0 && c->in_used == BENCH_READ_SIZE) {
			/* a line longer than the buffer: keep its start */
			resp_append(c, c->in, c->in_used);
			used = c->in_used;
		}
		memmove(c->in, c->in + used, c->in_used - used);
		c->in_used -= used;
	}
}

static void client_connected(struct bench_client *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err != 0) {
		if (c->run->wl->reconnect) {
			client_cycle_done(c, false, strerror(err));
			return;
		}
		bench_stats_error(&c->run->stats, "connect: %s", strerror(err));
		client_finish(c);
		return;
	}
	c->state = BENCH_CLIENT_GREETING;
	c->tag[0] = '\0';
	client_arm(c, false);
}

void bench_client_event(struct bench_client *c, uint32_t events)
{
	if (c->state == BENCH_CLIENT_CONNECTING) {
		client_connected(c);
		return;
	}
	if ((events & EPOLLOUT) != 0) {
		client_flush(c);
		if (c->fd < 0)
			return;
	}
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0)
		client_input(c);
}
