#ifndef AUTH_PENALTY_H
#define AUTH_PENALTY_H
/* Online guessing defence: every authentication from a remote address
   (an IPv4 address, or the /64 of an IPv6 one) goes through this table
   before its credentials are checked. auth is one process, so the count
   covers every connection and every imap-login process.

   The model (doc/security.md has the reasoning):
   - failures: failed authentications of the address, at most
     AUTH_PENALTY_MAX_FAILURES. One is forgotten per
     AUTH_PENALTY_DECAY_MSECS without a new failure; a success forgets
     nothing (else a guesser with one valid account could clear it).
   - delay(f) = base * 2^(f-1), at most MAX(AUTH_PENALTY_MAX_DELAY_MSECS,
     base); delay(0) = 0.
   - An address with failures > 0 is checked one authentication at a
     time, and each check starts no earlier than delay(failures) after
     the previous authentication of the address was answered, whatever
     its password: a right password waits like a wrong one.
   - A failure is answered delay(failures) after its check (the next
     check then waits one more delay; a client that hangs up before the
     answer does not shorten that).
   - An address without failures may have AUTH_PENALTY_CLEAN_ACTIVE
     checks at once (several clients behind one NAT logging in).
   - Authentications that may not start yet wait in a FIFO per address,
     at most AUTH_PENALTY_MAX_WAITING; more are refused.

   Pure: no I/O, no clock; the caller passes the time and starts what
   auth_penalty_next_ready() admits. */

#include "lib.h"

#define AUTH_PENALTY_MAX_DELAY_MSECS (15 * 1000)
/* A typo or two is forgotten within minutes; a guesser that keeps
   going stays at the maximum delay. */
#define AUTH_PENALTY_DECAY_MSECS (60 * 1000)
/* Failures counted: past 4 or 5 the delay is at its maximum anyway; the
   cap bounds how long an address stays penalised after an attack. */
#define AUTH_PENALTY_MAX_FAILURES 32
/* Concurrent checks of an address without failures: the free guesses a
   parallel guesser gets before the penalty starts. */
#define AUTH_PENALTY_CLEAN_ACTIVE 4
/* Waiting authentications per address: at the maximum delay they are a
   few minutes of guesses, longer than any client waits. */
#define AUTH_PENALTY_MAX_WAITING 16
/* Longest address key: an IPv6 address with a zone fits in 64. */
#define AUTH_PENALTY_MAX_IP_LEN 64

struct auth_penalty;
struct auth_penalty_entry;

/* An address's counters as they travel to master and back (so that a
   restarted auth starts with them: auth-penalty-sync.c). Times are
   relative to the sender's now, so the two processes' clocks need not
   agree. */
struct auth_penalty_state {
	const char *key;            /* auth_penalty_key() form */
	unsigned int failures;      /* 1..AUTH_PENALTY_MAX_FAILURES */
	/* since the last failure (or the last decay step) */
	uint64_t decay_age_msecs;
	/* until the next check of the address may start (0: now) */
	uint64_t next_in_msecs;
};

/* Called whenever a penalised address's counters change (a failure, or
   the end of a check that moved its next start): what must survive a
   restart. The state's key lives only during the call. */
typedef void auth_penalty_change_callback_t(const struct auth_penalty_state *state,
					    void *context);

enum auth_penalty_slot_state {
	AUTH_PENALTY_SLOT_NONE = 0,
	AUTH_PENALTY_SLOT_WAITING,
	AUTH_PENALTY_SLOT_ACTIVE,
};

/* One authentication's place in the table, embedded in the caller's
   request (zero-filled = NONE). The fields are the table's. */
struct auth_penalty_slot {
	enum auth_penalty_slot_state state;
	struct auth_penalty_entry *entry;
	struct auth_penalty_slot *next;     /* in the address's queue */
	void *context;                      /* the caller's */
};

/* base_delay_msecs > 0 (0 means no penalty: do not create a table).
   max_ips: addresses tracked (auth_penalty_max_ips, ~150 bytes each). */
struct auth_penalty *auth_penalty_create(unsigned int base_delay_msecs,
					 unsigned int max_ips);
void auth_penalty_destroy(struct auth_penalty **penalty);
/* callback NULL: none (the default). */
void auth_penalty_set_change_callback(struct auth_penalty *penalty,
				      auth_penalty_change_callback_t *callback,
				      void *context);
/* Take an address's counters kept across a restart: the larger failure
   count and the later next start win over what the table has. Counters
   that have decayed to nothing are dropped, as is the state when every
   tracked address is busy. Does not call the change callback. */
void auth_penalty_restore(struct auth_penalty *penalty,
			  const struct auth_penalty_state *state,
			  uint64_t now_msecs);

/* An authentication from ip wants to check its credentials. Returns 1
   if it may start now (slot ACTIVE), 0 if it waits (slot WAITING: it is
   returned by auth_penalty_next_ready() in turn), -1 if it is refused
   (too many waiting for the address, or every tracked address is busy)
   and the slot stays NONE. */
int auth_penalty_begin(struct auth_penalty *penalty,
		       struct auth_penalty_slot *slot, const char *ip,
		       void *context, uint64_t now_msecs);
/* The ACTIVE slot's credentials were wrong. Returns how long to wait
   before answering the failure (end the slot when it is answered). */
unsigned int auth_penalty_failure(struct auth_penalty *penalty,
				  struct auth_penalty_slot *slot,
				  uint64_t now_msecs);
/* The authentication is over (answered, cancelled or freed): an ACTIVE
   slot frees its place (and, for a penalised address, sets when the next
   check may start), a WAITING one leaves the queue. NONE: no-op.
   Others may now be ready: call auth_penalty_next_ready(). */
void auth_penalty_end(struct auth_penalty *penalty,
		      struct auth_penalty_slot *slot, uint64_t now_msecs);
/* A waiting slot that may start now (made ACTIVE), or NULL. Call until
   NULL. */
struct auth_penalty_slot *
auth_penalty_next_ready(struct auth_penalty *penalty, uint64_t now_msecs);
/* When a waiting slot becomes ready with no other event (an end), or
   UINT64_MAX if none will. */
uint64_t auth_penalty_next_wakeup(struct auth_penalty *penalty);

/* Failures counted for ip now (tests, logs). */
unsigned int auth_penalty_get_failures(struct auth_penalty *penalty,
				       const char *ip, uint64_t now_msecs);
/* The table key of ip: IPv4 as text (IPv4-mapped IPv6 too), IPv6 as its
   /64, anything else as given, cut to AUTH_PENALTY_MAX_IP_LEN. */
void auth_penalty_key(const char *ip, char key_r[AUTH_PENALTY_MAX_IP_LEN + 1]);

#endif
