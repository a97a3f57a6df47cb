#ifndef AUTH_COMMON_H
#define AUTH_COMMON_H
/* Included first by every file of the auth process. */

#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "strfuncs.h"
#include "ioloop.h"
#include "ipc.h"
#include "master-service.h"
#include "moat-settings.h"

struct auth_client;
struct auth_workers;
struct auth_userdb_lookup;
struct auth_stats;

/* The process's state: created in main() and handed to every module, so
   nothing else in the process is global. */
struct auth {
	struct master_service *service;
	struct ioloop *ioloop;
	const struct moat_settings *set;
	struct auth_db *db;
	struct auth_token_table *tokens;
	/* NULL with auth_failure_delay = 0 (no penalty) */
	struct auth_penalty *penalty;
	/* runs the penalty queue: deferred after a change, or a timer for
	   the next address whose delay ends (auth-request.c) */
	struct timeout *to_penalty;
	struct ipc_conn *master_conn;     /* moat-auth-master */
	struct auth_client *clients;      /* one per imap-login process */
	unsigned int client_count;
	struct auth_workers *workers;     /* auth-worker-client.c */
	/* delivery lookups for master (auth-userdb.c) */
	struct auth_userdb_lookup *userdb_lookups;
	unsigned int userdb_lookup_count;
	struct auth_stats *stats;         /* metrics (auth-stats.h) */
};

#endif
