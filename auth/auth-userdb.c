/* Delivery userdb lookups for master (auth-userdb.h). */
#include "auth-common.h"
#include "auth-db.h"
#include "auth-userdb.h"
#include "auth-worker-client.h"

struct auth_userdb_lookup {
	struct auth_userdb_lookup *next, *prev;
	struct auth *auth;
	pool_t pool;
	char id[32];
	const char *user;
	unsigned int worker_idx;
	struct auth_worker_job *job;
};

static void lookup_free(struct auth_userdb_lookup *lookup)
{
	struct auth *auth = lookup->auth;

	if (lookup->prev != NULL)
		lookup->prev->next = lookup->next;
	else
		auth->userdb_lookups = lookup->next;
	if (lookup->next != NULL)
		lookup->next->prev = lookup->prev;
	auth->userdb_lookup_count--;
	if (lookup->job != NULL)
		auth_worker_job_abort(&lookup->job);
	pool_unref(&lookup->pool);
}

static void lookup_finish(struct auth_userdb_lookup *lookup,
			  enum auth_db_result result,
			  const struct auth_user_info *info)
{
	struct auth *auth = lookup->auth;
	char uid[32], gid[32], qs[32], qm[32];

	switch (result) {
	case AUTH_DB_OK:
		snprintf(uid, sizeof(uid), "%lu", (unsigned long)info->uid);
		snprintf(gid, sizeof(gid), "%lu", (unsigned long)info->gid);
		auth_user_info_quota_str(info, qs, qm);
		(void)ipc_sendv(auth->master_conn, -1, "USERDB-USER", lookup->id,
				info->user, uid, gid, info->home, info->mail,
				qs, qm, NULL);
		break;
	case AUTH_DB_UNKNOWN_USER:
		(void)ipc_sendv(auth->master_conn, -1, "USERDB-NOTFOUND",
				lookup->id, NULL);
		break;
	default:
		/* logged where it happened (uid range, files, worker) */
		(void)ipc_sendv(auth->master_conn, -1, "USERDB-FAIL",
				lookup->id, NULL);
		break;
	}
	lookup_free(lookup);
}

static void lookup_worker(struct auth_userdb_lookup *lookup);

static void lookup_worker_done(const struct auth_worker_reply *reply,
			       void *context)
{
	struct auth_userdb_lookup *lookup = context;
	struct auth_user_info info;

	lookup->job = NULL;
	memset(&info, 0, sizeof(info));
	if (reply == NULL || reply->type == AUTH_WORKER_REPLY_FAIL) {
		lookup_finish(lookup, AUTH_DB_TEMPFAIL, &info);
		return;
	}
	if (reply->type == AUTH_WORKER_REPLY_NOTFOUND) {
		lookup->worker_idx++;
		lookup_worker(lookup);
		return;
	}
	enum auth_db_result result =
		auth_db_worker_user(lookup->auth->db, lookup->pool,
				    lookup->user, lookup->worker_idx,
				    reply->uid, reply->gid, reply->home, &info);
	lookup_finish(lookup, result, &info);
}

/* The worker userdb worker_idx, and the next ones when it does not know
   the user; past the last the user is unknown. */
static void lookup_worker(struct auth_userdb_lookup *lookup)
{
	struct auth_user_info info;
	const struct auth_db_worker_db *wdb =
		auth_db_worker_userdb(lookup->auth->db, lookup->worker_idx);

	memset(&info, 0, sizeof(info));
	if (wdb == NULL) {
		lookup_finish(lookup, AUTH_DB_UNKNOWN_USER, &info);
		return;
	}
	lookup->job = auth_worker_user(lookup->auth, wdb->driver, wdb->args,
				       lookup->user, lookup_worker_done, lookup);
	if (lookup->job == NULL) {
		i_error("userdb lookup of %s: no auth-worker available "
			"(none running or queue full)", lookup->user);
		lookup_finish(lookup, AUTH_DB_TEMPFAIL, &info);
	}
}

void auth_userdb_lookup(struct auth *auth, const char *const *args)
{
	struct auth_user_info info;

	if (str_array_length(args) != 3 || strlen(args[1]) >= 32 ||
	    !auth_worker_field_valid(args[2], AUTH_WORKER_USER_MAX_LEN, false)) {
		i_error("master: malformed USERDB record ignored");
		return;
	}
	if (auth->userdb_lookup_count >= AUTH_USERDB_MAX_PENDING) {
		(void)ipc_sendv(auth->master_conn, -1, "USERDB-FAIL", args[1],
				NULL);
		return;
	}
	struct auth_userdb_lookup *lookup;
	pool_t pool = pool_create("userdb lookup", 1024);
	lookup = p_malloc(pool, sizeof(*lookup));
	lookup->pool = pool;
	lookup->auth = auth;
	snprintf(lookup->id, sizeof(lookup->id), "%s", args[1]);
	lookup->user = p_strdup(pool, args[2]);
	lookup->next = auth->userdb_lookups;
	if (auth->userdb_lookups != NULL)
		auth->userdb_lookups->prev = lookup;
	auth->userdb_lookups = lookup;
	auth->userdb_lookup_count++;

	memset(&info, 0, sizeof(info));
	enum auth_db_result result =
		auth_db_userdb_lookup(auth->db, pool, lookup->user, &info);
	if (result == AUTH_DB_WORKER_USERDB)
		lookup_worker(lookup);
	else
		lookup_finish(lookup, result, &info);
}

void auth_userdb_abort_all(struct auth *auth)
{
	while (auth->userdb_lookups != NULL)
		lookup_free(auth->userdb_lookups);
}
