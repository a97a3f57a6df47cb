#ifndef AUTH_REQUEST_H
#define AUTH_REQUEST_H
/* One AUTH exchange from an imap-login process: waits for its turn in
   the per-address penalty queue (auth-penalty.h) before the mechanism
   sees any credentials, drives the SASL mechanism, checks the
   credentials, answers OK with a token or FAIL (a failure after the
   address's penalty delay). A request removes itself from its client
   with auth_client_request_done() once it has answered, so a caller
   must not touch it after auth_request_start/continue(). */

#include "sasl-mech.h"
#include "auth-penalty.h"

/* Longest request id imap-login may choose. */
#define AUTH_REQUEST_ID_MAX_LEN 32
/* Longest remote/local IP field accepted (an IPv6 address fits). */
#define AUTH_REQUEST_IP_MAX_LEN 64

struct auth_client;
struct auth_worker_job;

struct auth_request {
	struct auth_request *prev, *next;   /* in the client's list */
	struct auth_client *client;
	struct auth *auth;
	pool_t pool;

	const char *id;
	const char *mech_name;
	const char *rip, *lip;
	bool secured;
	struct sasl_exchange sasl;

	/* Its place in the penalty table (NONE for trusted addresses and
	   with auth_failure_delay = 0). */
	struct auth_penalty_slot penalty_slot;
	/* The initial response while the request waits for its turn
	   (wiped when it starts or is freed). */
	char *pending_b64;

	bool waiting_response;              /* CONT sent, waiting */
	struct timeout *to_idle;            /* the exchange's time limit */
	struct timeout *to_delay;           /* penalty before FAIL */
	const char *fail_code, *fail_text;  /* sent when to_delay fires */

	/* A lookup in auth-worker (pam/shadow passdb, passwd userdb) */
	struct auth_worker_job *worker_job;
	unsigned int worker_idx;            /* which worker passdb/userdb */
	const char *worker_user;            /* userdb step: the user */

	/* metrics: when the AUTH record came; counted once decided */
	uint64_t created_us;
	bool stats_counted;
};

struct auth_request *
auth_request_create(struct auth *auth, struct auth_client *client,
		    const char *id,
		    const struct sasl_mech *mech, const char *rip,
		    const char *lip, bool secured);
void auth_request_free(struct auth_request **request);

/* The connection's tls-exporter data (from AUTH's cbind= field), before
   auth_request_start(). plus_offered: a -PLUS mechanism is enabled, so
   imap-login offered it on this TLS connection. */
void auth_request_set_cbind(struct auth_request *request,
			    const unsigned char *data, size_t size,
			    bool plus_offered);
/* The user of the connection's verified TLS client certificate (from
   AUTH's cert_user= field), for EXTERNAL; before auth_request_start(). */
void auth_request_set_cert_user(struct auth_request *request,
				const char *user);
/* First step: b64 is the initial response ("" = none, "=" = empty). */
void auth_request_start(struct auth_request *request, const char *b64);
/* A CONT response (base64, or "*" to cancel: allowed in any state, so
   imap-login can drop a request whose client went away while it waits
   for its turn or its answer). */
void auth_request_continue(struct auth_request *request, const char *b64);

/* Stop the penalty queue's timer (auth's deinit, after every request
   was freed). */
void auth_request_penalty_deinit(struct auth *auth);

/* Answer FAIL now without a penalty (used for refusals that are not
   credential failures). */
void auth_request_fail_now(struct auth_request *request, const char *code,
			   const char *text);

#endif
