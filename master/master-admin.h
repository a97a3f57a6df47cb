#ifndef MASTER_ADMIN_H
#define MASTER_ADMIN_H
/* The admin socket (moat-admin protocol, doc/moatadm.8): a unix
   SOCK_SEQPACKET socket $base_dir/admin, mode 0660, owned by root and
   admin_group. moatadm connects, master checks the peer's credentials
   (SO_PEERCRED, SO_PEERGROUPS) and serves one request at a time:

     WHO | KICK <user> <reason> | RELOAD | STOP | LOG | STATS |
     USER <user> | AUTH-TEST <user> <b64:password> | MAIL <user> |
     MAILOP <user> <op> <arg> | USERS

   answered by ROW records (<key> <value> pairs), then DONE, or
   FAIL <code> <text> with code usage, notfound, refused or tempfail.
   MAIL answers MAIL-OK <user> +fd: a stream socket that the user's imap
   process serves as an already logged-in IMAP session. MAILOP has the
   user's imap process (spawned if needed) do what IMAP cannot:
   quota-recalc, index-check|index-rebuild <mailbox or "">. FAIL codes
   also "failed" (the operation found a problem: an inconsistent index,
   a rebuild that failed). */

#include "master-common.h"

/* Clients at once: moatadm runs are short, a script over many users may
   run a few in parallel. More are closed at once (logged). */
#define ADMIN_CONNS_MAX 16
/* Supplementary groups read of a peer; a peer with more is only checked
   by its primary group. */
#define ADMIN_PEER_GROUPS_MAX 256
/* A user name from moatadm: as auth's user field limit. */
#define ADMIN_USER_MAX 256
/* A kick reason: one short line in a BYE. */
#define ADMIN_REASON_MAX 200
/* Longest a request waits for auth or an imap process; then it
   answers what it has (WHO, STATS) or fails with tempfail. */
#define ADMIN_REQUEST_TIMEOUT_MSECS 10000
/* A MAILOP walks a user's whole Maildir (quota-recalc) or rebuilds
   every index of it (index-rebuild: a scan and one record per message,
   some seconds per 100k messages on a slow disk). */
#define ADMIN_MAILOP_TIMEOUT_MSECS 600000
/* Warnings and errors kept for LOG, each cut to ADMIN_LOG_LINE_MAX. */
#define ADMIN_LOG_RING_SIZE 100
#define ADMIN_LOG_LINE_MAX 1024
/* How long a refused client may stay to read its FAIL. */
#define ADMIN_REFUSED_LINGER_MSECS 5000

struct admin_stats {
	uint64_t started_ms;      /* wall clock of start-up */
	uint64_t logins_ok;       /* handoffs routed to an imap process */
	uint64_t logins_failed;   /* auth's "auth failed:" lines */
	uint64_t imap_sessions_total;  /* CONNs sent, admin sessions too */
	uint64_t lmtp_recipients_total;  /* RCPT-OK sent */
};

/* master-admin.c */
/* Create the socket (after prepare_dirs) and start accepting. Fatal on
   failure: a master an admin cannot reach is a broken install. */
void master_admin_init(struct master *master);
/* Settings changed: apply admin_group to the socket. */
void master_admin_reload(struct master *master);
void master_admin_deinit(struct master *master);

/* Hooks elsewhere in master. */
void master_admin_login_ok(struct master *master);
void master_admin_lmtp_rcpt_ok(struct master *master);
/* count recipients lmtp accepted over a delivery socket it kept
   (lmtp/lmtp-delivery.h): routed too, without a lookup here */
void master_admin_lmtp_rcpt_reused(struct master *master, uint64_t count);
/* A USERDB-* answer of auth whose id is an admin request's: handled,
   true. Otherwise false (someone else's). */
bool master_admin_auth_reply(struct master *master, const char *const *args);
/* WHO-REPLY, KICK-REPLY or ADMIN-OP-REPLY of an imap process: true if
   it was one. */
bool master_admin_imap_reply(struct child *imap, const char *const *args);
/* An imap process's channel closed: no answer will come from it. */
void master_admin_imap_gone(struct child *imap);

#endif
