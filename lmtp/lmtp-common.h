#ifndef LMTP_COMMON_H
#define LMTP_COMMON_H
/* lmtp: the LMTP service (RFC 2033). Every file of this directory
   includes this header first. It holds the process-wide state (one
   struct lmtp_process, owned by main()) and the named bounds. */

#include "lib.h"
#include "mempool.h"
#include "buffer.h"
#include "strfuncs.h"
#include "log.h"
#include "ioloop.h"
#include "iostream.h"
#include "ipc.h"
#include "moat-settings.h"
#include "master-service.h"

/* Input buffered per connection: a command line (LMTP_LINE_MAX) or a
   piece of the message on its way to the memfd. */
#define LMTP_MAX_INBUF_SIZE (64 * 1024)
/* Replies are short, but a pipelined burst of RCPTs (and one reply per
   recipient after DATA) adds up: 1000 recipients' replies fit. */
#define LMTP_MAX_OUTBUF_SIZE (256 * 1024)
/* Stop reading commands while this much output is unsent. */
#define LMTP_OUTBUF_THROTTLE (64 * 1024)
/* An MTA that sends nothing for this long is disconnected (RFC 5321
   4.5.3.2.7 suggests 5 minutes for the server). */
#define LMTP_CLIENT_IDLE_MSECS (5 * 60 * 1000)
/* Errors (unknown commands, bad syntax) before the session ends. */
#define LMTP_MAX_BAD_COMMANDS 20
/* Listening sockets master may hand one process. */
#define LMTP_MAX_LISTENERS 16
/* Ended sessions whose sockets drain at once (lib/sock-linger.h); the
   oldest beyond this is closed at once. An fd and a few bytes each. */
#define LMTP_MAX_LINGERING 64
/* The greeting's host name. */
#define LMTP_HOSTNAME_MAX 255

struct lmtp_client;
struct lmtp_rcpt_wait;
struct lmtp_delivery;

struct lmtp_listener {
	struct lmtp_process *proc;
	int fd;
	struct io *io;
};

struct sock_linger_set;

/* A recipient's answer to DATA: delivered (2xx), tempfail (4xx),
   permfail (5xx). */
#define LMTP_DELIVERY_RESULTS 3

struct lmtp_process {
	struct master_service *service;
	struct ioloop *ioloop;
	const struct moat_settings *set;

	unsigned int client_limit;
	char hostname[LMTP_HOSTNAME_MAX + 1];

	struct lmtp_listener listeners[LMTP_MAX_LISTENERS];
	unsigned int listener_count;
	struct timeout *to_accept_pause;

	struct ipc_conn *master;        /* moat-lmtp-master on fd 3 */
	/* recipients waiting for master's RCPT-OK / RCPT-FAIL */
	struct lmtp_rcpt_wait *rcpt_waits;
	unsigned int last_rcpt_id;

	struct lmtp_client *clients;    /* doubly linked */
	unsigned int client_count;
	/* sockets of ended sessions that still drain the MTA's input
	   (lib/sock-linger.h): a 421 must not be lost to a reset */
	struct sock_linger_set *lingers;
	int reported_accepting, reported_idle;
	bool shutting_down;             /* master's SHUTDOWN: no new clients */
	/* metrics: recipients' DATA answers by class (2xx 4xx 5xx), not yet
	   sent to master (lmtp-master.h) */
	uint64_t deliveries[LMTP_DELIVERY_RESULTS];
	/* recipients accepted over a kept delivery socket, not yet sent */
	uint64_t rcpts_reused;
	struct timeout *to_stats;
	/* idle delivery sockets for the next recipient of their user
	   (lmtp-delivery.h), doubly linked */
	struct lmtp_delivery *delivery_pool;
	unsigned int delivery_pool_count;
};

/* main.c: a client went away (listen, load and shutdown bookkeeping). */
void lmtp_process_client_gone(struct lmtp_process *proc);
/* main.c: start or stop accepting to match client_limit and shutdown;
   reports changes to master (LOAD). */
void lmtp_listen_update(struct lmtp_process *proc);

#endif
