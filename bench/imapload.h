#ifndef IMAPLOAD_H
#define IMAPLOAD_H
/* imapload: an imaptest-like IMAP load generator. Standalone C (no lib/):
   a benchmark must not change when the server's own library does.
   One epoll loop drives every connection; each connection is a small state
   machine that logs in, runs its workload's setup and then repeats one
   operation, checking every reply. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Longest logical response (a line plus the lines after its literals)
   that is kept for checking; literal contents are counted, not kept. A
   FETCH 1:* answer is many responses, each one short. */
#define BENCH_MAX_RESPONSE (1024 * 1024)
/* Read buffer; a response line longer than this is assembled in pieces. */
#define BENCH_READ_SIZE (64 * 1024)
/* Latency samples kept for percentiles; later operations are counted only. */
#define BENCH_MAX_SAMPLES (4 * 1024 * 1024)
#define BENCH_MAX_CLIENTS 1000
/* Longest user, password or mailbox name accepted from the command line. */
#define BENCH_MAX_NAME 128
/* Most commands one connection keeps in flight (--pipeline): imaptest's
   pipelining is a handful deep; more only measures socket buffers. */
#define BENCH_MAX_PIPELINE 64

struct bench_settings {
	const char *host;
	unsigned int port;
	unsigned int clients;
	unsigned int msecs;		/* measured window */
	const char *workload;
	const char *user_fmt;		/* "testuser%u", or a fixed name */
	unsigned int user_first;
	bool shared_user;		/* all clients log in as user_first */
	const char *password;
	const char *mailbox;		/* may hold one %u: the client number */
	const char *source;		/* .eml directory or mbox file */
	unsigned int count;		/* --populate: messages per client */
	unsigned int expect_messages;	/* 0 = do not check counts */
	const char *search_word;
	const char *text_word;
	const char *maildir;		/* big: the Maildir to touch */
	unsigned int seed;
	unsigned int pipeline;		/* commands in flight per connection */
	bool verbose;
	/* stress: clients spread over this many users, each with this
	   many mailboxes; RFC 2180 4.1.2, 4.1.3, 4.4.1 answers (NO
	   [EXPUNGEISSUED], NIL data for a message another session
	   expunged) counted apart instead of as errors; no COPY into the
	   selected mailbox */
	unsigned int users, mailboxes;
	bool rfc2180_lenient, no_self_copy;
};

/* ---- messages (bench-source.c) ---- */
struct bench_message {
	char *data;	/* CRLF line endings */
	size_t size;
};

/* Loads up to max messages (0 = all) from a directory of .eml files
   (recursively, sorted by path) or an mbox file. Returns the count, or -1
   with an error on stderr. */
int bench_source_load(const char *path, unsigned int max,
		      struct bench_message **msgs_r);
/* A synthetic message of about 3 KB, unique by n. Caller frees data. */
void bench_message_synth(unsigned int n, unsigned int seed,
			 struct bench_message *msg_r);

/* ---- statistics (bench-stats.c) ---- */
struct bench_stats {
	uint64_t ops, errors, unsupported;
	uint32_t *samples_us;
	size_t samples_count;
	char first_error[256];
	char first_unsupported[256];
};

void bench_stats_init(struct bench_stats *stats);
void bench_stats_free(struct bench_stats *stats);
void bench_stats_add(struct bench_stats *stats, uint64_t latency_us);
void bench_stats_error(struct bench_stats *stats, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void bench_stats_unsupported(struct bench_stats *stats, const char *text);
/* pct in 0..100; 0 when there are no samples. Sorts the samples. */
double bench_stats_percentile_ms(struct bench_stats *stats, double pct);

/* ---- small helpers (imapload.c) ---- */
uint64_t bench_now_us(void);
void *bench_malloc(size_t size);
void *bench_realloc(void *mem, size_t size);
char *bench_strdup(const char *str);
uint32_t bench_random(void);

#endif
