#ifndef IMAP_COMMON_H
#define IMAP_COMMON_H
/* Included first by every file of the post-login imap process. */

#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "buffer.h"
#include "strfuncs.h"
#include "ioloop.h"
#include "iostream.h"
#include "imap-parser.h"
#include "moat-settings.h"
#include "mailbox.h"
#include "mailbox-quota.h"

/* Only what works is advertised. IMAP4rev2 mode is per session, after
   ENABLE IMAP4rev2 (doc/imap4rev2.md). APPENDLIMIT=<n> follows (the
   setting's value): imap_capability_get(). */
/* LITERAL+ or LITERAL- (imap_literal_minus) is added by
   imap_capability_get(). */
#define IMAP_CAPABILITY "IMAP4rev1 IMAP4rev2 ID UNSELECT UIDPLUS" \
	" MOVE IDLE ENABLE CHILDREN NAMESPACE LIST-EXTENDED LIST-STATUS" \
	" SPECIAL-USE STATUS=SIZE ESEARCH SEARCHRES WITHIN BINARY MULTIAPPEND" \
	" SAVEDATE SORT SORT=DISPLAY ESORT THREAD=ORDEREDSUBJECT" \
	" THREAD=REFERENCES CONDSTORE QRESYNC QUOTA QUOTA=RES-STORAGE" \
	" QUOTA=RES-MESSAGE COMPRESS=DEFLATE PREVIEW UIDONLY PARTIAL" \
	" OBJECTID CONTEXT=SEARCH CONTEXT=SORT NOTIFY UTF8=ACCEPT"
/* IMAP_CAPABILITY plus " APPENDLIMIT=" and a 64-bit number */
#define IMAP_CAPABILITY_MAX (sizeof(IMAP_CAPABILITY) + 50)

struct client;
struct deliver_conn;
struct imap_deliver_seen;
struct deliver_req;
struct deliver_box;
struct imap_commit_batch;
struct fsync_thread;
struct imap_stats;
struct imap_commit_req;

/* The process: one user, all of the user's connections. Owned by main.c;
   clients get a pointer. */
/* Disconnected clients' sockets draining at once (lib/sock-linger.h);
   beyond this the oldest is closed at once. An fd and a few bytes each. */
#define IMAP_MAX_LINGERING 64

struct sock_linger_set;

struct imap_user {
	struct ioloop *ioloop;
	/* sockets of disconnected clients that still drain their input
	   (lib/sock-linger.h), so that a BYE is not lost to a reset */
	struct sock_linger_set *lingers;
	const struct moat_settings *set;
	const char *username;
	const char *mail_root;      /* the Maildir root (INBOX) */
	struct client *clients;     /* linked list */
	unsigned int client_count;
	/* open index handles for STATUS (imap-status.h), NULL until used */
	struct imap_status_cache *status_cache;
	/* the process's inotify fd, read while an IDLE listens (imap-notify.c) */
	struct io *io_watch;
	unsigned int watch_listeners;
	/* NOTIFY's watch of the folders (imap-notify.c), NULL unless used */
	struct imap_notify_user *notify;
	/* lmtp's delivery connections (imap-deliver.c) */
	struct deliver_conn *deliver_conns;
	unsigned int deliver_conn_count;
	struct imap_deliver_seen *deliver_seen;   /* NULL until a delivery */
	/* DELIVERs staged and queued for the group commit, not answered */
	struct deliver_req *deliver_pending;
	unsigned int deliver_pending_count;
	/* open folders of the pending DELIVERs (imap-deliver.c) */
	struct deliver_box *deliver_boxes;
	/* APPENDs and DELIVERs waiting for the next group commit
	   (imap-commit.h) */
	struct imap_commit_req *commit_queue, **commit_tail;
	unsigned int commit_count;
	struct timeout *to_commit;
	/* the group commit whose syncs run now, or NULL */
	struct imap_commit_batch *commit_batch;
	/* makes the batches durable off the loop (lib/fsync-thread.h);
	   NULL until the first batch, or when it could not be started */
	struct fsync_thread *commit_thread;
	bool commit_thread_failed;
	/* sessions waiting for this turn's STORE sync, and its deferred
	   run (imap-flag-sync.h) */
	struct client *flag_sync_clients;
	struct timeout *to_flag_sync;
	/* what the group commit's syncs cost lately (imap-commit.c): one
	   wave of per-file syncs (those the sync thread makes at once:
	   fsync_thread_parallel()) and one syncfs, in microseconds (0 = not measured
	   yet), and each step's choices since the other kind was last
	   tried */
	uint32_t commit_file_usecs, commit_syncfs_usecs;
	unsigned int commit_data_since_probe, commit_final_since_probe;
	/* imap_mailbox_autocreate() ran */
	bool specials_created;
	/* the user's quota limits (imap-quota.h); 0 = none */
	struct mailbox_quota_limits quota;
	/* command counters not yet sent to master (imap-stats.h) */
	struct imap_stats *stats;
	/* client bytes read and written, not yet sent (the streams add) */
	uint64_t stats_bytes_in, stats_bytes_out;
	/* client_count as master last heard it (LOAD, imap-stats.h) */
	unsigned int stats_clients_sent;
};

/* cmd-capability.c: the post-login capability list (RFC 7889
   APPENDLIMIT from imap_max_append_size). */
void imap_capability_get(const struct moat_settings *set,
			 char buf[IMAP_CAPABILITY_MAX]);

/* main.c: a client or a delivery connection was freed (linger /
   shutdown bookkeeping). */
void imap_user_client_gone(struct imap_user *user);

#endif
