/* Process life cycle: when to accept, when to tell master, when to exit. */
#include "imap-login-common.h"
#include "login-listen.h"
#include "login-master.h"
#include "sock-linger.h"

unsigned int login_process_next_id(struct login_process *lp)
{
	/* 0 means "none" in a client; skip it when the counter wraps. */
	if (++lp->last_request_id == 0)
		lp->last_request_id = 1;
	return lp->last_request_id;
}

static void login_process_check_exit(struct login_process *lp)
{
	/* A process that served its service_count lets its last sockets
	   linger out (seconds at most); a SHUTDOWN does not wait for them. */
	bool lingering = lp->lingers != NULL &&
		sock_linger_set_count(lp->lingers) > 0 && !lp->shutting_down;

	if ((lp->listen_done || lp->shutting_down) && lp->client_count == 0 &&
	    lp->proxy_count == 0 && !lingering && !lp->stopping) {
		lp->stopping = true;
		master_service_stop(lp->service);
	}
}

void login_process_client_gone(struct login_process *lp)
{
	login_listen_update(lp);
	login_process_check_exit(lp);
}

void login_process_stop_listening(struct login_process *lp, bool shutdown)
{
	if (shutdown)
		lp->shutting_down = true;
	else if (!lp->listen_done) {
		lp->listen_done = true;
		/* master may start another process to take our place. */
		login_master_listen_done(lp);
	}
	/* The sockets stay open in master and the other processes. */
	login_listen_deinit(lp);
	login_process_check_exit(lp);
}
