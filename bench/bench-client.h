#ifndef BENCH_CLIENT_H
#define BENCH_CLIENT_H
/* One IMAP connection of imapload and the workloads it runs. */

#include "imapload.h"

/* Items a FETCH response must carry; a workload lists up to this many. */
#define BENCH_MAX_FETCH_ITEMS 6
/* Lines of the recent transcript kept per client (workloads with
   .transcript: printed with an error), each cut at this many bytes. */
#define BENCH_TRANSCRIPT_LINES 40
#define BENCH_TRANSCRIPT_WIDTH 240

enum bench_client_state {
	BENCH_CLIENT_CONNECTING,
	BENCH_CLIENT_GREETING,
	BENCH_CLIENT_LOGIN,
	BENCH_CLIENT_SETUP,	/* CREATE / SELECT after login */
	BENCH_CLIENT_READY,	/* waiting for every client to be ready */
	BENCH_CLIENT_RUN,	/* an operation is in flight */
	BENCH_CLIENT_APPEND_CONT, /* waiting for "+" of an APPEND literal */
	BENCH_CLIENT_LOGOUT,
	BENCH_CLIENT_DONE,
};

/* What the untagged responses of the command in flight showed. */
struct bench_reply {
	unsigned int fetch_count, fetch_incomplete;
	char fetch_missing[48];
	unsigned int fetch_seq;		/* of the last FETCH response */
	unsigned int list_count;
	bool list_inbox;
	bool status_seen, status_complete;
	long status_messages;
	bool bye, search_seen, sort_seen, thread_seen;
	unsigned int sort_count;
	unsigned int literal_count;
	uint64_t literal_bytes;
};

/* One command of a pipelinable workload in flight: what its replies may
   name and must hold. Replies are matched to the oldest command they
   fit, so a server that runs pipelined commands in parallel (RFC 9051
   5.5) is judged right too. */
struct bench_op {
	char tag[16];
	uint64_t start_us;
	uint32_t first, last;	/* the sequence range its FETCHes may name */
	unsigned int items;	/* the workload's bits: what each must hold */
	unsigned int expect, got; /* responses it must have / has had */
	const char *why;	/* the first wrong response seen (static) */
};

struct bench_client;
struct bench_run;

struct bench_workload {
	const char *name;
	const char *description;
	bool reconnect;		/* one operation = connect, LOGIN, LOGOUT */
	bool select;		/* SELECT the mailbox before running */
	bool create;		/* CREATE the mailbox (unless INBOX) */
	bool once;		/* populate/steps: no time window */
	bool is_append;
	/* Up to --pipeline commands in flight, each a struct bench_op: the
	   workload fills c->next_op before bench_client_command(), its
	   .untagged reads c->ops, .op_check judges one at its tagged OK. */
	bool pipelinable;
	bool (*op_check)(struct bench_client *c, const struct bench_op *op,
			 const char **error_r);
	/* Sends the next operation; false when the client has nothing left. */
	bool (*send_op)(struct bench_client *c);
	/* An untagged response line (literals left out) of the operation. */
	void (*untagged)(struct bench_client *c, const char *line);
	/* At the tagged OK: is the reply complete and right? */
	bool (*check)(struct bench_client *c, const char **error_r);
	/* Steps only: called with each finished step (status "ok", "error"
	   or "unsupported"). */
	void (*step_done)(struct bench_client *c, uint64_t latency_us,
			  const char *status, const char *detail);
	const char *fetch_items[BENCH_MAX_FETCH_ITEMS];

	/* Checked workloads (stress) that model every response: */
	bool keep_literals;	/* responses come with their literals */
	bool transcript;	/* keep each client's recent lines */
	/* After the window, run on until every client logged out (the
	   workload's send_op is still asked: it finishes and checks). */
	bool drain;
	/* Every untagged response (EXISTS and BYE too) of a logged-in
	   client, with its literals when keep_literals: used instead of
	   .untagged. */
	void (*response)(struct bench_client *c, const char *data, size_t len);
	/* The tagged reply of an operation, used instead of .check and the
	   OK/NO handling: the workload counts it and calls
	   bench_client_go(). */
	void (*tagged)(struct bench_client *c, const char *status,
		       const char *text);
	/* The client is finished (logged out or failed). */
	void (*finished)(struct bench_client *c);
	void (*run_init)(struct bench_run *run);
	void (*run_report)(struct bench_run *run);
	void (*run_deinit)(struct bench_run *run);
};

struct bench_transcript_line {
	uint64_t us;
	char dir;		/* 'C' sent, 'S' received */
	char text[BENCH_TRANSCRIPT_WIDTH];
};

struct bench_run {
	const struct bench_settings *set;
	const struct bench_workload *wl;
	int epfd;
	struct bench_client *clients;
	struct bench_stats stats;
	struct bench_message *msgs;
	unsigned int msg_count;
	uint64_t start_us, end_us;
	bool measuring, stopping;
	unsigned int ready_count, done_count;
	unsigned int synth_seq;
	void *wl_data;		/* the workload's (run_init) */
};

struct bench_client {
	struct bench_run *run;
	unsigned int idx;
	int fd;
	/* bumped by every close: input of a closed connection is dropped */
	unsigned int conn_gen;
	enum bench_client_state state;
	unsigned int setup_step;
	char user[BENCH_MAX_NAME];
	char mailbox[BENCH_MAX_NAME];

	char *in;
	size_t in_used;
	char *resp;
	size_t resp_len;
	uint64_t literal_left;

	char *out;
	size_t out_used, out_pos, out_size;
	bool want_write;
	const struct bench_message *append_msg;

	unsigned int tag_seq;
	char tag[16];
	uint64_t cmd_start_us, cycle_start_us;
	struct bench_reply reply;
	uint32_t exists;
	bool exists_seen;
	unsigned int op_count;	/* operations sent by this client */
	/* pipelinable workloads: the commands in flight, oldest first */
	struct bench_op next_op;
	struct bench_op *ops;
	unsigned int ops_count;
	bool ops_stop;		/* unsupported: send no more, then LOGOUT */
	unsigned int step;	/* steps workload: the current step */
	void *wl_data;		/* the workload's per-client state */
	/* ring of the last lines (workloads with .transcript) */
	struct bench_transcript_line *transcript;
	unsigned int transcript_next, transcript_count;
};

/* bench-client.c */
void bench_client_init(struct bench_run *run, struct bench_client *c,
		       unsigned int idx);
void bench_client_start(struct bench_client *c);
void bench_client_event(struct bench_client *c, uint32_t events);
void bench_client_close(struct bench_client *c);
/* Send a tagged command: "TAG " + the formatted text + CRLF. */
void bench_client_command(struct bench_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Kick a READY client into running; also, for a workload whose send_op
   sent nothing (it waits for other clients), the next operation. */
void bench_client_go(struct bench_client *c);
/* Start an APPEND of msg: the literal follows the server's "+". fmt
   gives the command up to and without the literal size. */
void bench_client_append(struct bench_client *c,
			 const struct bench_message *msg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Note a line in the client's transcript (dir 'C', 'S' or '!'). */
void bench_client_note(struct bench_client *c, char dir, const char *data,
		       size_t len);
/* Print the client's transcript, oldest first, times relative to
   start_us, each line prefixed. */
void bench_client_dump_transcript(const struct bench_client *c, FILE *out,
				  uint64_t start_us, const char *prefix);

/* bench-workload.c */
const struct bench_workload *bench_workload_find(const char *name);
void bench_workload_list(FILE *out);
/* Steps workload: prints its RESULT lines. */
void bench_workload_steps_report(const struct bench_run *run);

#endif
