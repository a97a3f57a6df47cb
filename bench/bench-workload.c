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

/* ---- pipelinable workloads: replies matched to the commands in flight */

/* The oldest command in flight that still waits for a response naming
   seq (0: any), or NULL. */
static struct bench_op *op_waiting(struct bench_client *c, uint32_t seq)
{
	for (unsigned int i = 0; i < c->ops_count; i++) {
		struct bench_op *op = &c->ops[i];

		if (op->got < op->expect &&
		    (seq == 0 || (seq >= op->first && seq <= op->last)))
			return op;
	}
	return NULL;
}

/* Every response the command waited for came, and each was right. */
static bool op_check_count(struct bench_client *c, const struct bench_op *op,
			   const char **error_r)
{
	static char error[128];

	(void)c;
	if (op->why != NULL) {
		*error_r = op->why;
		return false;
	}
	if (op->got != op->expect) {
		snprintf(error, sizeof(error), "%u of %u responses (range "
			 "%u:%u)", op->got, op->expect, op->first, op->last);
		*error_r = error;
		return false;
	}
	return true;
}

/* A response nobody waits for: charged to the oldest command. */
static void op_unexpected(struct bench_client *c, const char *why)
{
	if (c->ops_count > 0 && c->ops[0].why == NULL)
		c->ops[0].why = why;
}

/* ---- LIST, STATUS ---- */

static bool send_list(struct bench_client *c)
{
	c->next_op.expect = 1;	/* the INBOX line */
	bench_client_command(c, "LIST \"\" *");
	return true;
}

static void untagged_list(struct bench_client *c, const char *line)
{
	const char *name;
	struct bench_op *op;

	if (strncasecmp(line, "* LIST ", 7) != 0)
		return;
	name = strrchr(line, ' ');
	if (name == NULL || (strcasecmp(name, " INBOX") != 0 &&
			     strcasecmp(name, " \"INBOX\"") != 0))
		return;
	if ((op = op_waiting(c, 0)) != NULL)
		op->got++;
	else
		op_unexpected(c, "a LIST response for INBOX nobody asked for");
}

static bool send_status(struct bench_client *c)
{
	c->next_op.expect = 1;
	bench_client_command(c, "STATUS INBOX (MESSAGES UNSEEN RECENT)");
	return true;
}

static void untagged_status(struct bench_client *c, const char *line)
{
	unsigned int expect = c->run->set->expect_messages;
	struct bench_op *op;
	const char *p;

	if (strncasecmp(line, "* STATUS ", 9) != 0)
		return;
	if ((op = op_waiting(c, 0)) == NULL) {
		op_unexpected(c, "a STATUS response nobody asked for");
		return;
	}
	op->got++;
	p = strstr(line, "MESSAGES ");
	if (p == NULL || strstr(line, "UNSEEN ") == NULL ||
	    strstr(line, "RECENT ") == NULL)
		op->why = "STATUS response lacks MESSAGES, UNSEEN or RECENT";
	else if (expect != 0 && strtol(p + 9, NULL, 10) != (long)expect)
		op->why = "STATUS MESSAGES is not the expected count";
}

/* ---- the shapes (imaptest's, see the top of this file) ---- */

/* FETCH items a fetch-range picks 1-4 of, and what the response holds. */
static const struct {
	const char *cmd, *resp;
} range_items[] = {
	{ "UID", "UID " }, { "FLAGS", "FLAGS (" },
	{ "ENVELOPE", "ENVELOPE (" }, { "INTERNALDATE", "INTERNALDATE \"" },
	{ "BODY", "BODY (" }, { "BODYSTRUCTURE", "BODYSTRUCTURE (" },
	{ "RFC822.SIZE", "RFC822.SIZE " },
};
#define RANGE_ITEMS_COUNT (sizeof(range_items) / sizeof(range_items[0]))
/* bit of BODY.PEEK[HEADER.FIELDS (...)], asked in a quarter of picks */
#define RANGE_ITEM_HEADER_FIELDS (1U << RANGE_ITEMS_COUNT)
static const char *const header_names[] = {
	"From", "To", "Cc", "Subject", "References", "In-Reply-To",
	"Message-ID",
};
#define HEADER_NAMES_COUNT (sizeof(header_names) / sizeof(header_names[0]))
/* Longest range a fetch-range / store-range asks for. */
#define RANGE_FETCH_MAX 100
#define RANGE_STORE_MAX 50

/* FETCH2: one message, one of these; bits above the range items. */
static const struct {
	const char *cmd, *resp;
} fetch2_sections[] = {
	{ "BODY.PEEK[HEADER]", "BODY[HEADER] " },
	{ "RFC822.HEADER", "RFC822.HEADER " },
	{ "BODY.PEEK[]", "BODY[] " },
	{ "BODY.PEEK[1]", "BODY[1] " },
	{ "BODY.PEEK[TEXT]", "BODY[TEXT] " },
};
#define FETCH2_COUNT (sizeof(fetch2_sections) / sizeof(fetch2_sections[0]))
#define FETCH2_SHIFT (RANGE_ITEMS_COUNT + 1)

/* n distinct picks of 0..max-1 as bits (n <= max <= 32). */
static unsigned int pick_bits(unsigned int n, unsigned int max)
{
	unsigned int bits = 0, count = 0;

	while (count < n) {
		unsigned int b = 1U << (bench_random() % max);

		if ((bits & b) == 0) {
			bits |= b;
			count++;
		}
	}
	return bits;
}

/* A random range of 1..min(exists, max) messages into next_op. */
static void pick_range(struct bench_client *c, unsigned int max)
{
	unsigned int len, first;

	if (max > c->exists)
		max = c->exists;
	if (max == 0)
		max = 1;
	len = 1 + bench_random() % max;
	first = 1 + bench_random() % (c->exists - len + 1);
	c->next_op.first = first;
	c->next_op.last = first + len - 1;
}

static bool send_fetch_range(struct bench_client *c)
{
	char items[512];
	size_t len = 0;
	unsigned int bits, i;

	if (!need_messages(c))
		return false;
	pick_range(c, RANGE_FETCH_MAX);
	bits = pick_bits(1 + bench_random() % 4, RANGE_ITEMS_COUNT);
	for (i = 0; i < RANGE_ITEMS_COUNT; i++) {
		if ((bits & (1U << i)) != 0)
			len += (size_t)snprintf(items + len, sizeof(items) - len,
						"%s%s", len > 0 ? " " : "",
						range_items[i].cmd);
	}
	if (bench_random() % 4 == 0) {
		unsigned int names = pick_bits(1 + bench_random() % 4,
					       HEADER_NAMES_COUNT);
		bool first = true;

		bits |= RANGE_ITEM_HEADER_FIELDS;
		len += (size_t)snprintf(items + len, sizeof(items) - len,
					" BODY.PEEK[HEADER.FIELDS (");
		for (i = 0; i < HEADER_NAMES_COUNT; i++) {
			if ((names & (1U << i)) == 0)
				continue;
			len += (size_t)snprintf(items + len, sizeof(items) - len,
						"%s%s", first ? "" : " ",
						header_names[i]);
			first = false;
		}
		len += (size_t)snprintf(items + len, sizeof(items) - len,
					")]");
	}
	c->next_op.items = bits;
	c->next_op.expect = c->next_op.last - c->next_op.first + 1;
	bench_client_command(c, "FETCH %u:%u (%s)", c->next_op.first,
			     c->next_op.last, items);
	return true;
}

static bool fetch_line_has(const char *line, unsigned int bits)
{
	for (unsigned int i = 0; i < RANGE_ITEMS_COUNT; i++) {
		if ((bits & (1U << i)) != 0 &&
		    strstr(line, range_items[i].resp) == NULL)
			return false;
	}
	if ((bits & RANGE_ITEM_HEADER_FIELDS) != 0 &&
	    strstr(line, "BODY[HEADER.FIELDS (") == NULL)
		return false;
	for (unsigned int i = 0; i < FETCH2_COUNT; i++) {
		if ((bits & (1U << (FETCH2_SHIFT + i))) != 0 &&
		    strstr(line, fetch2_sections[i].resp) == NULL)
			return false;
	}
	return true;
}

/* A FETCH response belongs to the oldest command in flight whose range
   holds it and whose items it carries (two pipelined FETCHes may be
   answered interleaved). */
static void untagged_fetch_range(struct bench_client *c, const char *line)
{
	unsigned int seq;

	if (!parse_fetch_seq(line, &seq))
		return;
	for (unsigned int i = 0; i < c->ops_count; i++) {
		struct bench_op *op = &c->ops[i];

		if (op->got < op->expect && seq >= op->first &&
		    seq <= op->last && fetch_line_has(line, op->items)) {
			op->got++;
			return;
		}
	}
	if (op_waiting(c, seq) != NULL)
		op_waiting(c, seq)->why = "a FETCH response lacks an item";
	else
		op_unexpected(c, "a FETCH response nobody asked for");
}

static bool send_fetch2(struct bench_client *c)
{
	unsigned int section = bench_random() % FETCH2_COUNT;

	if (!need_messages(c))
		return false;
	c->next_op.first = c->next_op.last = 1 + bench_random() % c->exists;
	c->next_op.items = 1U << (FETCH2_SHIFT + section);
	c->next_op.expect = 1;
	bench_client_command(c, "FETCH %u %s", c->next_op.first,
			     fetch2_sections[section].cmd);
	return true;
}

static bool send_store_range(struct bench_client *c)
{
	static const char *const modes[] = { "FLAGS", "+FLAGS", "-FLAGS" };
	char flags[256];
	size_t len = 0, i;
	uint32_t pick;

	if (!need_messages(c))
		return false;
	pick_range(c, c->exists / 5 < RANGE_STORE_MAX ? c->exists / 5 :
		   RANGE_STORE_MAX);
	pick = bench_random();
	flags[0] = '\0';
	for (i = 0; i < sizeof(store_flags) / sizeof(store_flags[0]); i++) {
		if ((pick & (1U << i)) == 0)
			continue;
		len += (size_t)snprintf(flags + len, sizeof(flags) - len,
					"%s%s", len > 0 ? " " : "",
					store_flags[i]);
	}
	/* replies: FLAGS of the range (Dovecot leaves out unchanged ones,
	   and other sessions' changes may come): not counted, but each
	   FETCH must show FLAGS */
	bench_client_command(c, "STORE %u:%u %s%s (%s)", c->next_op.first,
			     c->next_op.last, modes[bench_random() % 3],
			     bench_random() % 2 == 0 ? ".SILENT" : "", flags);
	return true;
}

static void untagged_store_range(struct bench_client *c, const char *line)
{
	unsigned int seq;

	if (parse_fetch_seq(line, &seq) && strstr(line, "FLAGS (") == NULL)
		op_unexpected(c, "a FETCH response to STORE without FLAGS");
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

/* A FETCH without a body section is the flag change of another session
   of the same user (its BODY[] set \Seen; RFC 9051 7.5.2 lets the server
   send it at any time): not this command's answer. */
static void untagged_fetch_body(struct bench_client *c, const char *line)
{
	if (strstr(line, "BODY[") == NULL)
		return;
	untagged_fetch(c, line);
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
	  .pipelinable = true, .op_check = op_check_count,
	  .send_op = send_list, .untagged = untagged_list },
	{ .name = "status",
	  .description = "STATUS INBOX (MESSAGES UNSEEN RECENT), nothing "
	  "selected", .pipelinable = true, .op_check = op_check_count,
	  .send_op = send_status, .untagged = untagged_status },
	{ .name = "fetch-range",
	  .description = "FETCH <random range of up to 100> (1-4 random "
	  "items; HEADER.FIELDS in a quarter)", .select = true,
	  .pipelinable = true, .op_check = op_check_count,
	  .send_op = send_fetch_range, .untagged = untagged_fetch_range },
	{ .name = "fetch2",
	  .description = "FETCH <random> one of BODY.PEEK[HEADER], "
	  "RFC822.HEADER, BODY.PEEK[], BODY.PEEK[1], BODY.PEEK[TEXT]",
	  .select = true, .pipelinable = true, .op_check = op_check_count,
	  .send_op = send_fetch2, .untagged = untagged_fetch_range },
	{ .name = "store-range",
	  .description = "STORE <random range of up to min(n/5, 50)> "
	  "FLAGS/+FLAGS/-FLAGS[.SILENT] (random flags, keywords)",
	  .select = true, .pipelinable = true, .op_check = op_check_count,
	  .send_op = send_store_range, .untagged = untagged_store_range },
	{ .name = "fetch-all",
	  .description = "FETCH 1:* (UID FLAGS ENVELOPE INTERNALDATE "
	  "BODYSTRUCTURE)", .select = true,
	  .send_op = send_fetch_all, .untagged = untagged_fetch,
	  .check = check_fetch_all,
	  .fetch_items = { "UID ", "FLAGS (", "ENVELOPE (", "INTERNALDATE \"",
			   "BODYSTRUCTURE (" } },
	{ .name = "fetch-body", .description = "FETCH <random> BODY[]",
	  .select = true, .send_op = send_fetch_body,
	  .untagged = untagged_fetch_body, .check = check_fetch_body,
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
