/* imap-login: pre-authentication IMAP (CAPABILITY, NOOP, LOGOUT, ID,
   LOGIN, AUTHENTICATE, STARTTLS), implicit TLS, and the TLS layer of
   logged-in TLS sessions (login-proxy.h).

   SECURITY: this process parses bytes from untrusted clients over TCP.
   It talks to master over an inherited socket (fd 3, moat-login-master)
   and to auth over another (fd 5, moat-auth-client); it can reach nothing
   else. It runs as default_login_user (moat-login), chrooted to an empty
   root-owned directory, with no capabilities, no_new_privs and the
   imap-login seccomp allowlist (no open, no exec, no socket but the
   AF_UNIX pairs of its TLS relays, no executable mappings) and, with
   landlock = yes, a Landlock domain without a rule (no file at all), and
   drops
   to that state in master_service_drop_privileges() before it accepts a
   single client. It never learns which user a login becomes beyond what
   auth tells it, cannot redeem the token auth gives it (only master can),
   and links no post-auth code. With ssl_key_isolation = yes (the
   default) it never holds the TLS private key: the key-signer process
   signs handshakes for it over a socket master hands it (KEYD-CONN,
   login-keyd.h). With no, it holds the key in memory (loaded before the
   drop from its copy of the settings; it never opens the key file, which
   stays readable by root only). One process serves up to client_limit
   clients at once, or service_count clients in total and then exits
   (service_count = 1 gives every client its own process). */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "login-listen.h"
#include "login-proxy.h"
#include "login-ssl.h"
#include "login-keyd.h"
#include "sock-linger.h"

static void login_linger_done(void *context)
{
	login_process_client_gone(context);
}

static void login_process_init_settings(struct login_process *lp)
{
	const struct moat_service_settings *sset =
		master_service_get_service_settings(lp->service);
	const char *error;

	lp->set = master_service_get_settings(lp->service);
	lp->client_limit = sset->client_limit != 0 ? sset->client_limit :
		LOGIN_DEFAULT_CLIENT_LIMIT;
	lp->service_count = sset->service_count;
	lp->reported_accepting = lp->reported_idle = -1;
	if (login_mechs_parse(lp->set->auth_mechanisms, &lp->mechs, &error) < 0)
		i_fatal("%s", error);
	for (unsigned int i = 0; i < LOGIN_CAP_VARIANTS; i++) {
		unsigned int flags = i | (lp->set->imap_literal_minus ?
					  LOGIN_CAP_LITERAL_MINUS : 0);
		lp->capabilities[i] = login_capability_build(lp->pool, &lp->mechs,
							     flags);
	}
}

int main(void)
{
	struct login_process lp;

	memset(&lp, 0, sizeof(lp));
	lp.service = master_service_init("imap-login");
	lp.ioloop = master_service_get_ioloop(lp.service);
	lp.pool = pool_create("imap-login", 4096);
	login_process_init_settings(&lp);
	login_listen_init(&lp);
	lp.lingers = sock_linger_set_create(lp.ioloop, LOGIN_MAX_LINGERING,
				       login_linger_done, &lp);

	/* Everything that needs secrets or files goes here, before the
	   chroot: OpenSSL's providers and, with ssl_key_isolation = no, the
	   TLS key, which came from master in our settings copy. */
	if (lp.set->ssl_key_isolation)
		lp.keyd = login_keyd_create();
	lp.ssl_ctx = login_ssl_ctx_init(lp.set, lp.keyd);

	/* Landlock with no rule: nothing on any file system, should the
	   chroot be escaped or missing (not root: development mode). */
	master_service_set_landlock(lp.service, NULL, NULL);
	master_service_drop_privileges(lp.service, MOAT_SECCOMP_PROFILE_IMAP_LOGIN);

	login_master_connect(&lp);
	login_stats_init(&lp);
	login_auth_connect(&lp, MASTER_AUTH_FD);
	login_listen_update(&lp);

	master_service_run(lp.service);

	lp.stopping = true;
	login_clients_destroy_all(&lp);
	login_proxies_destroy_all(&lp);
	sock_linger_set_destroy(&lp.lingers);
	login_listen_deinit(&lp);
	login_ssl_ctx_deinit(&lp.ssl_ctx);
	login_keyd_destroy(&lp.keyd);
	login_auth_deinit(&lp);
	/* the last counters, before the channel closes */
	login_stats_deinit(&lp);
	login_master_deinit(&lp);
	pool_unref(&lp.pool);
	master_service_deinit(&lp.service);
	return 0;
}
