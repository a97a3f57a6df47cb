/* imapload's workloads: what each sends and what its reply must hold.
   They follow imaptest's (../shared/seeds/dovecot-vs-zimbra-imaptest.txt)
   and the big-mailbox steps of dovecot-vs-courier-maildir-367k.txt. */
#include "bench-client.h"
#include "stress.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Flags and keywords STORE picks from (imaptest sets keywords too). */
static const char *const store_flags[] = {
	"\\Seen", "\\Answered", "\\Flagged", "\\Draft",
	"$Label1", "$Label2", "$Label3", "bench-kw",
};
/* Files renamed in cur/ before the "select after rename" step: 1 in N. */
#define STEPS_RENAME_RATIO 100

static bool parse_fetch_seq(const char *line, unsigned int *seq_r)
{
	char *end;
	unsigned long n = strtoul(line + 2, &end, 10);

	if (end == line + 2 || strncasecmp(end, " FETCH ", 7) != 0)
		return false;
	*seq_r = (unsigned int)n;
	return true;
}

/* A FETCH response must hold every item the workload asked for. */
static void untagged_fetch(struct bench_client *c, const char *line)
{
	const struct bench_workload *wl = c->run->wl;
	unsigned int seq, i;

	if (!parse_fetch_seq(line, &seq))
		return;
	c->reply.fetch_count++;
	c->reply.fetch_seq = seq;
	for (i = 0; i < BENCH_MAX_FETCH_ITEMS && wl->fetch_items[i] != NULL;
	     i++) {
		if (strstr(line, wl->fetch_items[i]) == NULL) {
			c->reply.fetch_incomplete++;
			snprintf(c->reply.fetch_missing,
				 sizeof(c->reply.fetch_missing), "%s",
				 wl->fetch_items[i]);
			return;
		}
	}
}

static bool check_fetch_all(struct bench_client *c, const char **error_r)
{
	static char error[128];
	unsigned int expect = c->run->set->expect_messages;

	if (expect != 0 && c->exists != expect) {
		snprintf(error, sizeof(error), "EXISTS %u, expected %u",
			 c->exists, expect);
	} else if (c->reply.fetch_count != c->exists) {
		snprintf(error, sizeof(error), "%u FETCH responses for %u "
			 "messages", c->reply.fetch_count, c->exists);
	} else if (c->reply.fetch_incomplete > 0) {
		snprintf(error, sizeof(error), "%u FETCH responses lack %s",
			 c->reply.fetch_incomplete, c->reply.fetch_missing);
	} else {
		return true;
	}
	*error_r = error;
	return false;
}

static bool need_messages(struct bench_client *c)
{
	if (c->exists > 0)
		return true;
	bench_stats_error(&c->run->stats, "%s: the mailbox is empty",
			  c->run->wl->name);
	return false;
}

/* ---- LIST, STATUS ---- */

static bool send_list(struct bench_client *c)
{
	bench_client_command(c, "LIST \"\" *");
	return true;
}

static void untagged_list(struct bench_client *c, const char *line)
{
	const char *name;

	if (strncasecmp(line, "* LIST ", 7) != 0)
		return;
	c->reply.list_count++;
	name = strrchr(line, ' ');
	if (name != NULL && (strcasecmp(name, " INBOX") == 0 ||
			     strcasecmp(name, " \"INBOX\"") == 0))
		c->reply.list_inbox = true;
}

static bool check_list(struct bench_client *c, const char **error_r)
{
	if (!c->reply.list_inbox) {
		*error_r = "no LIST response for INBOX";
		return false;
	}
	return true;
}

static bool send_status(struct bench_client *c)
{
	bench_client_command(c, "STATUS INBOX (MESSAGES UNSEEN RECENT)");
	return true;
}

static void untagged_status(struct bench_client *c, const char *line)
{
	const char *p;

	if (strncasecmp(line, "* STATUS ", 9) != 0)
		return;
	c->reply.status_seen = true;
	p = strstr(line, "MESSAGES ");
	c->reply.status_complete = p != NULL &&
		strstr(line, "UNSEEN ") != NULL &&
		strstr(line, "RECENT ") != NULL;
	c->reply.status_messages = p == NULL ? -1 : strtol(p + 9, NULL, 10);
}

static bool check_status(struct bench_client *c, const char **error_r)
{
	static char error[128];
	unsigned int expect = c->run->set->expect_messages;

	if (!c->reply.status_seen) {
		*error_r = "no STATUS response";
		return false;
	}
	if (!c->reply.status_complete) {
		*error_r = "STATUS response lacks MESSAGES, UNSEEN or RECENT";
		return false;
	}
	if (expect != 0 && c->reply.status_messages != (long)expect) {
		snprintf(error, sizeof(error), "MESSAGES %ld, expected %u",
			 c->reply.status_messages, expect);
		*error_r = error;
		return false;
	}
	return true;
}

/* ---- FETCH, STORE ---- */

static bool send_fetch_all(struct bench_client *c)
{
	if (!need_messages(c))
		return false;
	bench_client_command(c, "FETCH 1:* (UID FLAGS ENVELOPE INTERNALDATE "
			     "BODYSTRUCTURE)");
	return true;
}

static bool send_fetch_body(struct bench_client *c)
{
	if (!need_messages(c))
		return false;
	c->step = 1 + bench_random() % c->exists;
	bench_client_command(c, "FETCH %u BODY[]", c->step);
	return true;
}

static bool check_fetch_body(struct bench_client *c, const char **error_r)
{
	if (c->reply.fetch_count != 1 || c->reply.fetch_seq != c->step) {
		*error_r = "no FETCH response for the message";
		return false;
	}
	if (c->reply.fetch_incomplete > 0 || c->reply.literal_count == 0) {
		*error_r = "FETCH response lacks the BODY[] literal";
		return false;
	}
	return true;
}

static bool send_store(struct bench_client *c)
{
	char flags[256];
	size_t len = 0, i;
	uint32_t pick;

	if (!need_messages(c))
		return false;
	pick = bench_random();
	flags[0] = '\0';
	for (i = 0; i < sizeof(store_flags) / sizeof(store_flags[0]); i++) {
		if ((pick & (1U << i)) == 0)
			continue;
		len += (size_t)snprintf(flags + len, sizeof(flags) - len,
					"%s%s", len > 0 ? " " : "",
					store_flags[i]);
	}
	bench_client_command(c, "STORE %u FLAGS.SILENT (%s)",
			     1 + bench_random() % c->exists, flags);
	return true;
}

/* ---- APPEND, populate ---- */

static void append_message(struct bench_client *c,
			   const struct bench_message *msg)
{
	c->append_msg = msg;
	/* before sending: a failed write finishes the client */
	c->state = BENCH_CLIENT_APPEND_CONT;
	bench_client_command(c, "APPEND \"%s\" {%zu}", c->mailbox, msg->size);
}

static bool send_append(struct bench_client *c)
{
	struct bench_run *run = c->run;

	append_message(c, &run->msgs[run->synth_seq++ % run->msg_count]);
	return true;
}

static bool send_populate(struct bench_client *c)
{
	struct bench_run *run = c->run;

	if (c->op_count >= run->set->count)
		return false;
	append_message(c, &run->msgs[c->op_count++ % run->msg_count]);
	return true;
}

/* ---- login ---- */

static bool send_nothing(struct bench_client *c)
{
	(void)c;
	return false;
}

/* ---- big-mailbox steps ---- */

enum step_kind { STEP_SELECT, STEP_THREAD, STEP_SORT, STEP_SEARCH,
		 STEP_FETCH };

struct step {
	const char *name;
	enum step_kind kind;
	bool rename_before;
};

static const struct step steps[] = {
	{ "select_first", STEP_SELECT, false },
	{ "select_second", STEP_SELECT, false },
	{ "select_after_rename", STEP_SELECT, true },
	{ "thread_first", STEP_THREAD, false },
	{ "thread_second", STEP_THREAD, false },
	{ "sort_date", STEP_SORT, false },
	{ "sort_subject", STEP_SORT, false },
	{ "search_body", STEP_SEARCH, false },
	{ "search_text", STEP_SEARCH, false },
	{ "fetch_flags_envelope", STEP_FETCH, false },
};
#define STEPS_COUNT (sizeof(steps) / sizeof(steps[0]))

struct step_result {
	const char *status;
	double secs;
	char detail[160];
};
static struct step_result step_results[STEPS_COUNT];

/* Another client's work: flip \Seen on one file in STEPS_RENAME_RATIO. */
static void steps_rename_cur(const char *maildir)
{
	char dir[BENCH_MAX_NAME * 4], from[BENCH_MAX_NAME * 8];
	char to[sizeof(from) + 2];
	struct dirent *d;
	unsigned int n = 0;
	DIR *dirp;

	snprintf(dir, sizeof(dir), "%s/cur", maildir);
	if ((dirp = opendir(dir)) == NULL) {
		perror(dir);
		return;
	}
	while ((d = readdir(dirp)) != NULL) {
		size_t len = strlen(d->d_name);

		if (d->d_name[0] == '.' || n++ % STEPS_RENAME_RATIO != 0)
			continue;
		if ((size_t)snprintf(from, sizeof(from), "%s/%s", dir,
				     d->d_name) >= sizeof(from))
			continue;
		if (len > 3 && strcmp(d->d_name + len - 3, ":2,") == 0)
			snprintf(to, sizeof(to), "%sS", from);
		else if (len > 4 && strcmp(d->d_name + len - 4, ":2,S") == 0)
			snprintf(to, sizeof(to), "%.*s", (int)strlen(from) - 1,
				 from);
		else
			continue;
		if (rename(from, to) < 0)
			perror(from);
	}
	closedir(dirp);
}

static bool send_step(struct bench_client *c)
{
	const struct bench_settings *set = c->run->set;
	const struct step *s;

	if (c->step >= STEPS_COUNT)
		return false;
	s = &steps[c->step];
	if (s->rename_before && set->maildir != NULL)
		steps_rename_cur(set->maildir);
	switch (s->kind) {
	case STEP_SELECT:
		c->exists_seen = false;
		bench_client_command(c, "SELECT \"%s\"", c->mailbox);
		break;
	case STEP_THREAD:
		bench_client_command(c, "UID THREAD REFERENCES US-ASCII ALL");
		break;
	case STEP_SORT:
		bench_client_command(c, "UID SORT (%s) US-ASCII ALL",
				     strcmp(s->name, "sort_date") == 0 ?
				     "DATE" : "SUBJECT");
		break;
	case STEP_SEARCH:
		if (strcmp(s->name, "search_body") == 0)
			bench_client_command(c, "SEARCH BODY \"%s\"",
					     set->search_word);
		else
			bench_client_command(c, "SEARCH TEXT \"%s\"",
					     set->text_word);
		break;
	case STEP_FETCH:
		bench_client_command(c, "FETCH 1:* (FLAGS ENVELOPE)");
		break;
	}
	return true;
}

static void untagged_step(struct bench_client *c, const char *line)
{
	if (strncasecmp(line, "* THREAD", 8) == 0)
		c->reply.thread_seen = true;
	else if (strncasecmp(line, "* SEARCH", 8) == 0)
		c->reply.search_seen = true;
	else if (strncasecmp(line, "* SORT", 6) == 0) {
		const char *p;

		c->reply.sort_seen = true;
		for (p = line + 6; *p != '\0'; p++) {
			if (*p == ' ' && p[1] >= '0' && p[1] <= '9')
				c->reply.sort_count++;
		}
	} else {
		untagged_fetch(c, line);
	}
}

static bool check_step(struct bench_client *c, const char **error_r)
{
	static char error[128];
	unsigned int expect = c->run->set->expect_messages;

	switch (steps[c->step].kind) {
	case STEP_SELECT:
		if (!c->exists_seen) {
			*error_r = "no EXISTS";
			return false;
		}
		if (expect != 0 && c->exists != expect) {
			snprintf(error, sizeof(error), "EXISTS %u, expected %u",
				 c->exists, expect);
			*error_r = error;
			return false;
		}
		return true;
	case STEP_THREAD:
		*error_r = "no THREAD response";
		return c->reply.thread_seen;
	case STEP_SORT:
		if (!c->reply.sort_seen || c->reply.sort_count != c->exists) {
			snprintf(error, sizeof(error), "SORT returned %u of %u",
				 c->reply.sort_count, c->exists);
			*error_r = error;
			return false;
		}
		return true;
	case STEP_SEARCH:
		*error_r = "no SEARCH response";
		return c->reply.search_seen;
	case STEP_FETCH:
		return check_fetch_all(c, error_r);
	}
	return false;
}

static void step_done(struct bench_client *c, uint64_t latency_us,
		      const char *status, const char *detail)
{
	struct step_result *r = &step_results[c->step];

	r->status = status;
	r->secs = (double)latency_us / 1e6;
	snprintf(r->detail, sizeof(r->detail), "%s", detail);
	if (strcmp(status, "error") == 0)
		bench_stats_error(&c->run->stats, "%s: %s", steps[c->step].name,
				  detail);
	else if (strcmp(status, "unsupported") == 0)
		bench_stats_unsupported(&c->run->stats, detail);
	else
		bench_stats_add(&c->run->stats, latency_us);
	c->step++;
}

void bench_workload_steps_report(const struct bench_run *run)
{
	unsigned int i;

	for (i = 0; i < STEPS_COUNT; i++) {
		const struct step_result *r = &step_results[i];

		if (r->status == NULL)
			continue;
		printf("%-22s %-11s %9.4f s  %s\n", steps[i].name, r->status,
		       r->secs, r->detail);
		printf("RESULT workload=big step=%s messages=%u status=%s "
		       "secs=%.6f\n", steps[i].name, run->clients[0].exists,
		       r->status, r->secs);
	}
}

/* ---- the table ---- */

static const struct bench_workload workloads[] = {
	{ .name = "login", .description = "connect, LOGIN, LOGOUT",
	  .reconnect = true, .send_op = send_nothing },
	{ .name = "list", .description = "LIST \"\" *",
	  .send_op = send_list, .untagged = untagged_list,
	  .check = check_list },
	{ .name = "status",
	  .description = "STATUS INBOX (MESSAGES UNSEEN RECENT)",
	  .send_op = send_status, .untagged = untagged_status,
	  .check = check_status },
	{ .name = "fetch-all",
	  .description = "FETCH 1:* (UID FLAGS ENVELOPE INTERNALDATE "
	  "BODYSTRUCTURE)", .select = true,
	  .send_op = send_fetch_all, .untagged = untagged_fetch,
	  .check = check_fetch_all,
	  .fetch_items = { "UID ", "FLAGS (", "ENVELOPE (", "INTERNALDATE \"",
			   "BODYSTRUCTURE (" } },
	{ .name = "fetch-body", .description = "FETCH <random> BODY[]",
	  .select = true, .send_op = send_fetch_body,
	  .untagged = untagged_fetch, .check = check_fetch_body,
	  .fetch_items = { "BODY[] {" } },
	{ .name = "store",
	  .description = "STORE <random> FLAGS.SILENT (flags, keywords)",
	  .select = true, .send_op = send_store },
	{ .name = "append", .description = "APPEND to --mailbox "
	  "(%u in it = the client number; created unless INBOX)",
	  .create = true, .is_append = true, .send_op = send_append },
	{ .name = "populate", .description = "APPEND --count messages of "
	  "--source per client, then stop", .create = true, .once = true,
	  .is_append = true, .send_op = send_populate },
	{ .name = "stress", .description = "checked random mix of SELECT, "
	  "EXAMINE, FETCH, STORE, EXPUNGE, APPEND, COPY, MOVE, STATUS, NOOP "
	  "(--users, --mailboxes; a model checks every reply)",
	  .keep_literals = true, .transcript = true, .drain = true,
	  .send_op = stress_send_op, .response = stress_session_response,
	  .tagged = stress_tagged, .finished = stress_finished,
	  .run_init = stress_run_init, .run_report = stress_run_report,
	  .run_deinit = stress_run_deinit },
	{ .name = "big", .description = "big-mailbox steps, one client: "
	  "SELECT x3, THREAD x2, SORT, SEARCH, FETCH", .once = true,
	  .send_op = send_step, .untagged = untagged_step,
	  .check = check_step, .step_done = step_done,
	  .fetch_items = { "FLAGS (", "ENVELOPE (" } },
};

const struct bench_workload *bench_workload_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	}
	return NULL;
}

void bench_workload_list(FILE *out)
{
	size_t i;

	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		fprintf(out, "  %-11s %s\n", workloads[i].name,
			workloads[i].description);
}
