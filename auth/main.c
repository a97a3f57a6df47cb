/* auth: checks login credentials for imap-login and tells master who
   logged in.

   SECURITY: talks only to master (MASTER_CHANNEL_FD) and to the
   imap-login processes whose sockets master hands it (LOGIN-CONN); it
   has no listening socket and no network access of its own. It runs as
   default_internal_user (moat-auth), not chrooted, with no capabilities,
   no_new_privs, the auth seccomp allowlist (files read-only, AF_UNIX
   sockets only, no exec) and, with landlock = yes, a Landlock domain
   (read the system directories and those of its own files, change
   nothing), and drops privileges before reading any file or record. It reads the passwd-files named by passdb/userdb and the
   oauth2-file token file (which must be readable by that user and not by
   imap-login's). Hash checks (crypt, argon2, PBKDF2, SCRAM) run in
   this process, their cost bounded by limits on the stored parameters.
   Credentials from imap-login are untrusted: sizes are bounded, a
   malformed record closes that login connection only, every
   authentication from an address with recent failures waits for the
   address's penalty before its credentials are checked (without
   blocking the event loop), and
   passwords are never logged and are wiped after use. Only master can
   redeem a login token, over a socket imap-login cannot reach. */
#include "auth-common.h"
#include "auth-db.h"
#include "auth-penalty.h"
#include "auth-penalty-sync.h"
#include "auth-token.h"
#include "auth-client.h"
#include "auth-master.h"
#include "auth-userdb.h"
#include "auth-request.h"
#include "auth-stats.h"
#include "auth-worker-client.h"

static void ATTR_NORETURN ATTR_FORMAT(1, 2)
auth_config_fatal(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	log_vwrite(LOG_FATAL, fmt, args);
	va_end(args);
	exit(FATAL_CONFIG_EXIT_CODE);
}

static void auth_init(struct auth *auth)
{
	const char *error;

	auth->set = master_service_get_settings(auth->service);
	auth->ioloop = master_service_get_ioloop(auth->service);
	auth->db = auth_db_init(auth->set, &error);
	if (auth->db == NULL)
		auth_config_fatal("auth: invalid passdb/userdb settings: %s", error);
	/* Landlock: read the system directories (NSS, libraries loaded
	   later) and those of its own files; change nothing anywhere. */
	master_service_set_landlock(auth->service,
				    auth_db_landlock_ro_paths(auth->db), NULL);
	master_service_drop_privileges(auth->service, MOAT_SECCOMP_PROFILE_AUTH);

	/* Read the files now so that a permission problem shows at start. */
	auth_db_preload(auth->db);
	auth->tokens = auth_token_table_create(AUTH_TOKEN_MAX);
	if (auth->set->auth_failure_delay > 0) {
		auth->penalty = auth_penalty_create(auth->set->auth_failure_delay,
						    auth->set->auth_penalty_max_ips);
	}
	auth->master_conn = master_service_connect_master(auth->service,
		IPC_PROTO_AUTH_MASTER, auth_master_input, auth);
	auth_penalty_sync_init(auth);
	auth_stats_init(auth);
}

static void auth_deinit(struct auth *auth)
{
	auth_clients_destroy_all(auth);
	auth_userdb_abort_all(auth);
	auth_request_penalty_deinit(auth);
	auth_workers_destroy_all(auth);
	/* the last logins' counters, before the channel closes */
	auth_stats_deinit(auth);
	if (auth->master_conn != NULL)
		ipc_conn_destroy(&auth->master_conn);
	if (auth->penalty != NULL)
		auth_penalty_destroy(&auth->penalty);
	auth_token_table_destroy(&auth->tokens);
	auth_db_deinit(&auth->db);
}

int main(void)
{
	struct auth auth;

	memset(&auth, 0, sizeof(auth));
	auth.service = master_service_init("auth");
	auth_init(&auth);
	master_service_run(auth.service);
	auth_deinit(&auth);
	master_service_deinit(&auth.service);
	return 0;
}
