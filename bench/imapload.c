/* imapload: an imaptest-like IMAP load generator (see imapload.h).
   Prints a human summary and one machine-readable line:
   RESULT workload=W clients=N secs=T ops=O ops_per_sec=R p50_ms=A
          p99_ms=B errors=E unsupported=U status=ok|errors|unsupported */
#include "bench-client.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define IMAPLOAD_MAX_EVENTS 256
/* After the window closes, in-flight operations are abandoned. */
#define IMAPLOAD_SETUP_TIMEOUT_US (60ULL * 1000000)
/* Synthetic messages cycled through by append without --source. */
#define IMAPLOAD_SYNTH_MESSAGES 64
/* A draining workload (stress) must finish this soon after the window. */
#define IMAPLOAD_DRAIN_TIMEOUT_US (120ULL * 1000000)

static uint64_t random_state = 88172645463325252ULL;

uint64_t bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void *bench_malloc(size_t size)
{
	void *mem = calloc(1, size == 0 ? 1 : size);

	if (mem == NULL) {
		fprintf(stderr, "out of memory\n");
		abort();
	}
	return mem;
}

void *bench_realloc(void *mem, size_t size)
{
	mem = realloc(mem, size == 0 ? 1 : size);
	if (mem == NULL) {
		fprintf(stderr, "out of memory\n");
		abort();
	}
	return mem;
}

char *bench_strdup(const char *str)
{
	size_t len = strlen(str) + 1;

	return memcpy(bench_malloc(len), str, len);
}

/* xorshift64: reproducible with --seed, fast, good enough for picking. */
uint32_t bench_random(void)
{
	random_state ^= random_state << 13;
	random_state ^= random_state >> 7;
	random_state ^= random_state << 17;
	return (uint32_t)(random_state >> 32);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr,
"usage: imapload [options] WORKLOAD\n"
"  -h HOST       server address (127.0.0.1)\n"
"  -p PORT       server port (143)\n"
"  -c CLIENTS    concurrent connections (1)\n"
"  -t SECS       measured seconds, fractions allowed (10)\n"
"  -u USERFMT    user name, %%u = number (testuser%%u)\n"
"  -f FIRST      number of the first client's user (1)\n"
"  -S            every client logs in as the first user\n"
"  -P PASS       password (pass)\n"
"  -m MAILBOX    mailbox, %%u = client number (INBOX)\n"
"  -s SOURCE     messages to APPEND: .eml directory or mbox file\n"
"  -n COUNT      populate: messages per client (100)\n"
"  -e COUNT      expected messages (checked by status, fetch-all, big)\n"
"  -w WORD       big: SEARCH BODY string (\"xfs_bmapi\")\n"
"  -W WORD       big: SEARCH TEXT string (\"the\")\n"
"  -M MAILDIR    big: the Maildir whose cur/ to rename in\n"
"  -r SEED       random seed (0)\n"
"  --populate    same as the workload \"populate\"\n"
"  --users N     stress: clients spread over N users (1)\n"
"  --mailboxes N stress: mailboxes per user (3)\n"
"  --rfc2180-lenient\n"
"                stress: accept RFC 2180 4.1.2, 4.1.3 and 4.4.1 answers for\n"
"                a message another session expunged (NO [EXPUNGEISSUED],\n"
"                NIL data), counted apart; without it they are errors\n"
"  --no-self-copy\n"
"                stress: no COPY into the selected mailbox\n"
"  --pipeline N  keep N commands in flight per connection (1; at most %d):\n"
"                the next goes out before the previous reply is in\n"
"                (list, status, fetch-range, store-range, fetch2)\n"
"workloads:\n", BENCH_MAX_PIPELINE);
	bench_workload_list(stderr);
	exit(2);
}

static unsigned int parse_uint(const char *arg, unsigned int max)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno != 0 || *end != '\0' || end == arg || n > max) {
		fprintf(stderr, "invalid number: %s\n", arg);
		exit(2);
	}
	return (unsigned int)n;
}

static unsigned int parse_secs_ms(const char *arg)
{
	char *end;
	double secs;

	errno = 0;
	secs = strtod(arg, &end);
	if (errno != 0 || *end != '\0' || end == arg || !(secs > 0) ||
	    secs > 86400) {
		fprintf(stderr, "invalid seconds: %s\n", arg);
		exit(2);
	}
	return (unsigned int)(secs * 1000 + 0.5);
}

static bool fmt_is_safe(const char *fmt)
{
	const char *p = strchr(fmt, '%');

	/* at most one conversion, and only %u */
	return strlen(fmt) < BENCH_MAX_NAME &&
		(p == NULL || (p[1] == 'u' && strchr(p + 2, '%') == NULL));
}

static void parse_args(int argc, char **argv, struct bench_settings *set)
{
	static const struct option longopts[] = {
		{ "populate", no_argument, NULL, 'X' },
		{ "users", required_argument, NULL, 'U' },
		{ "mailboxes", required_argument, NULL, 'B' },
		{ "rfc2180-lenient", no_argument, NULL, 'A' },
		{ "no-self-copy", no_argument, NULL, 'N' },
		{ "pipeline", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	set->host = "127.0.0.1";
	set->port = 143;
	set->clients = 1;
	set->msecs = 10000;
	set->user_fmt = "testuser%u";
	set->user_first = 1;
	set->password = "pass";
	set->mailbox = "INBOX";
	set->count = 100;
	set->search_word = "xfs_bmapi";
	set->text_word = "the";
	set->users = 1;
	set->mailboxes = 3;
	set->pipeline = 1;
	while ((ch = getopt_long(argc, argv, "h:p:c:t:u:f:SP:m:s:n:e:w:W:M:r:v",
				 longopts, NULL)) != -1) {
		switch (ch) {
		case 'h': set->host = optarg; break;
		case 'p': set->port = parse_uint(optarg, 65535); break;
		case 'c': set->clients = parse_uint(optarg, BENCH_MAX_CLIENTS);
			break;
		case 't': set->msecs = parse_secs_ms(optarg); break;
		case 'u': set->user_fmt = optarg; break;
		case 'f': set->user_first = parse_uint(optarg, 1000000); break;
		case 'S': set->shared_user = true; break;
		case 'P': set->password = optarg; break;
		case 'm': set->mailbox = optarg; break;
		case 's': set->source = optarg; break;
		case 'n': set->count = parse_uint(optarg, 100000000); break;
		case 'e': set->expect_messages = parse_uint(optarg, 100000000);
			break;
		case 'w': set->search_word = optarg; break;
		case 'W': set->text_word = optarg; break;
		case 'M': set->maildir = optarg; break;
		case 'r': set->seed = parse_uint(optarg, UINT32_MAX); break;
		case 'v': set->verbose = true; break;
		case 'X': set->workload = "populate"; break;
		case 'U': set->users = parse_uint(optarg, BENCH_MAX_CLIENTS);
			break;
		case 'B': set->mailboxes = parse_uint(optarg, 26); break;
		case 'A': set->rfc2180_lenient = true; break;
		case 'N': set->no_self_copy = true; break;
		case 'L': set->pipeline = parse_uint(optarg, BENCH_MAX_PIPELINE);
			break;
		default: usage();
		}
	}
	if (optind < argc && set->workload == NULL)
		set->workload = argv[optind++];
	if (set->workload == NULL || optind != argc || set->clients == 0 ||
	    set->users == 0 || set->mailboxes == 0 || set->pipeline == 0)
		usage();
	if (!fmt_is_safe(set->user_fmt) || !fmt_is_safe(set->mailbox) ||
	    strchr(set->password, '"') != NULL ||
	    strchr(set->search_word, '"') != NULL ||
	    strchr(set->text_word, '"') != NULL) {
		fprintf(stderr, "-u and -m allow one %%u; no quotes in "
			"passwords or search words\n");
		exit(2);
	}
}

static void load_messages(struct bench_run *run)
{
	const struct bench_settings *set = run->set;
	unsigned int i;
	int count;

	if (set->source != NULL) {
		unsigned int max = strcmp(run->wl->name, "populate") == 0 ?
			set->count : 0;
		count = bench_source_load(set->source, max, &run->msgs);
		if (count < 0)
			exit(2);
		run->msg_count = (unsigned int)count;
		return;
	}
	run->msgs = bench_malloc(sizeof(*run->msgs) * IMAPLOAD_SYNTH_MESSAGES);
	for (i = 0; i < IMAPLOAD_SYNTH_MESSAGES; i++)
		bench_message_synth(i, set->seed, &run->msgs[i]);
	run->msg_count = IMAPLOAD_SYNTH_MESSAGES;
}

/* Every client logged in and set up (or failed): open the window. */
static void run_maybe_start(struct bench_run *run)
{
	unsigned int i;

	if (run->measuring ||
	    run->ready_count + run->done_count < run->set->clients)
		return;
	run->measuring = true;
	run->start_us = bench_now_us();
	run->end_us = run->wl->once ? UINT64_MAX :
		run->start_us + (uint64_t)run->set->msecs * 1000;
	for (i = 0; i < run->set->clients; i++) {
		if (run->clients[i].state == BENCH_CLIENT_READY)
			bench_client_go(&run->clients[i]);
	}
}

static void run_loop(struct bench_run *run)
{
	struct epoll_event events[IMAPLOAD_MAX_EVENTS];
	uint64_t setup_deadline = bench_now_us() + IMAPLOAD_SETUP_TIMEOUT_US;
	uint64_t drain_deadline = 0;

	if (run->wl->reconnect) {
		/* no setup: the window opens with the first connect */
		run->measuring = true;
		run->start_us = bench_now_us();
		run->end_us = run->start_us + (uint64_t)run->set->msecs * 1000;
	}
	while (run->done_count < run->set->clients) {
		uint64_t now = bench_now_us();
		int timeout_ms = 100, n, i;

		if (!run->measuring && now > setup_deadline) {
			bench_stats_error(&run->stats, "setup timed out");
			break;
		}
		if (run->measuring && now >= run->end_us && !run->wl->drain)
			break;
		if (run->measuring && now >= run->end_us && !run->stopping) {
			/* the clients finish, check and log out */
			run->stopping = true;
			drain_deadline = now + IMAPLOAD_DRAIN_TIMEOUT_US;
		}
		if (run->stopping && now >= drain_deadline) {
			bench_stats_error(&run->stats, "clients did not finish "
					  "within %llu s after the window",
					  IMAPLOAD_DRAIN_TIMEOUT_US / 1000000);
			break;
		}
		if (run->measuring && !run->stopping &&
		    run->end_us - now < 100000)
			timeout_ms = (int)((run->end_us - now) / 1000) + 1;
		n = epoll_wait(run->epfd, events, IMAPLOAD_MAX_EVENTS,
			       timeout_ms);
		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			exit(2);
		}
		for (i = 0; i < n; i++)
			bench_client_event(events[i].data.ptr, events[i].events);
		run_maybe_start(run);
	}
	if (!run->measuring)
		run->start_us = bench_now_us();
	if ((!run->wl->once && !run->wl->drain) || run->end_us == UINT64_MAX)
		run->end_us = bench_now_us();
	run->stopping = true;
}

static void report(struct bench_run *run)
{
	const struct bench_settings *set = run->set;
	struct bench_stats *st = &run->stats;
	double secs = (double)(run->end_us - run->start_us) / 1e6;
	double rate = secs > 0 ? (double)st->ops / secs : 0;
	double p50 = bench_stats_percentile_ms(st, 50);
	double p99 = bench_stats_percentile_ms(st, 99);
	const char *status = st->errors > 0 ? "errors" :
		(st->unsupported > 0 && st->ops == 0) ? "unsupported" : "ok";

	if (run->wl->step_done != NULL)
		bench_workload_steps_report(run);
	if (run->wl->run_report != NULL)
		run->wl->run_report(run);
	printf("%s: %u clients, %.2f s: %llu ops, %.1f ops/s, p50 %.3f ms, "
	       "p99 %.3f ms, %llu errors, %llu unsupported\n",
	       set->workload, set->clients, secs,
	       (unsigned long long)st->ops, rate, p50, p99,
	       (unsigned long long)st->errors,
	       (unsigned long long)st->unsupported);
	if (st->first_error[0] != '\0')
		printf("first error: %s\n", st->first_error);
	if (st->first_unsupported[0] != '\0')
		printf("first unsupported: %s\n", st->first_unsupported);
	printf("RESULT workload=%s clients=%u secs=%.3f ops=%llu "
	       "ops_per_sec=%.1f p50_ms=%.3f p99_ms=%.3f errors=%llu "
	       "unsupported=%llu status=%s\n", set->workload, set->clients,
	       secs, (unsigned long long)st->ops, rate, p50, p99,
	       (unsigned long long)st->errors,
	       (unsigned long long)st->unsupported, status);
	fflush(stdout);
}

static void run_free(struct bench_run *run)
{
	unsigned int i;

	for (i = 0; i < run->set->clients; i++) {
		struct bench_client *c = &run->clients[i];

		bench_client_close(c);
		free(c->in);
		free(c->resp);
		free(c->out);
		free(c->transcript);
		free(c->ops);
	}
	if (run->wl->run_deinit != NULL)
		run->wl->run_deinit(run);
	free(run->clients);
	for (i = 0; i < run->msg_count; i++)
		free(run->msgs[i].data);
	free(run->msgs);
	bench_stats_free(&run->stats);
	close(run->epfd);
}

int main(int argc, char **argv)
{
	struct bench_settings set;
	struct bench_run run;
	unsigned int i;
	int ret;

	memset(&set, 0, sizeof(set));
	parse_args(argc, argv, &set);
	signal(SIGPIPE, SIG_IGN);
	random_state ^= (uint64_t)set.seed * 0x9E3779B97F4A7C15ULL;
	memset(&run, 0, sizeof(run));
	run.set = &set;
	run.wl = bench_workload_find(set.workload);
	if (run.wl == NULL) {
		fprintf(stderr, "unknown workload: %s\n", set.workload);
		usage();
	}
	if (run.wl->step_done != NULL)
		set.clients = 1;
	if (set.pipeline > 1 && !run.wl->pipelinable) {
		fprintf(stderr, "workload %s does not pipeline\n", set.workload);
		return 2;
	}
	if (run.wl->is_append)
		load_messages(&run);
	bench_stats_init(&run.stats);
	run.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (run.epfd < 0) {
		perror("epoll_create1");
		return 2;
	}
	run.clients = bench_malloc(sizeof(*run.clients) * set.clients);
	for (i = 0; i < set.clients; i++)
		bench_client_init(&run, &run.clients[i], i);
	if (run.wl->run_init != NULL)
		run.wl->run_init(&run);
	for (i = 0; i < set.clients; i++)
		bench_client_start(&run.clients[i]);
	run_loop(&run);
	report(&run);
	ret = run.stats.errors > 0 ? 1 : 0;
	run_free(&run);
	return ret;
}
