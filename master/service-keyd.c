/* The key-signer: spawning it and handing every imap-login process a
   socket to it (ssl_key_isolation = yes). It runs as auth's user
   (default_internal_user), chrooted to the empty directory, and gets the
   settings copy with ssl_key; imap-login then gets the one without. */
#include "master-common.h"

#include <signal.h>

bool keyd_enabled(const struct master *master)
{
	const struct moat_settings *set = master->set;

	return set->ssl_key_isolation && set->ssl != MOAT_SSL_NO &&
		set->ssl_cert[0] != '\0';
}

void keyd_connect_login(struct master *master, struct child *login)
{
	struct child *keyd = master->keyd;
	int pair[2];

	if (keyd == NULL || keyd->conn == NULL || keyd->shutting_down ||
	    login->conn == NULL)
		return;
	if (ipc_socketpair(pair) < 0) {
		i_error("socketpair() failed: %s", strerror(errno));
		return;
	}
	if (child_send_peer(keyd, "LOGIN-CONN", login->pid, pair[0]) < 0 ||
	    ipc_sendv(login->conn, pair[1], "KEYD-CONN", NULL) < 0)
		i_error("could not connect imap-login %d to the key-signer",
			(int)login->pid);
	close(pair[0]);
	close(pair[1]);
}

static void keyd_spawn(struct master *master)
{
	struct child *child =
		child_spawn(&master->services[SERVICE_KEY_SIGNER], NULL, 0,
			    NULL, master->auth_uid, master->auth_gid,
			    master->empty_dir, NULL);

	if (child == NULL)
		return;
	master->keyd = child;
	/* Those running already lost their socket to the previous one. */
	for (struct child *c = master->children; c != NULL; c = c->next) {
		if (c->service->kind == SERVICE_LOGIN)
			keyd_connect_login(master, c);
	}
}

void keyd_ensure(struct master *master)
{
	if (!master->stopping && master->keyd == NULL && keyd_enabled(master))
		keyd_spawn(master);
}

void keyd_reload(struct master *master)
{
	if (master->keyd != NULL) {
		master->keyd->shutting_down = true;
		child_kill(master->keyd, SIGTERM);
		master->keyd = NULL;
	}
	keyd_ensure(master);
}
