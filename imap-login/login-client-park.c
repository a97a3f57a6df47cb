/* Requests parked while the process has no connection to auth (a reload
   or a crash of auth): they wait, bounded in number and time, and are
   sent to the new auth as soon as master hands us a socket to it. A
   request that was at auth without an answer when auth went away is
   parked again, once, if nothing of it but the AUTH record was sent
   (no SASL exchange started) and its initial response is short. auth
   sees a parked request like any other, so its penalty (waits, the
   per-address queue) applies to it unchanged; the wait here counts
   toward login_timeout like the penalty's. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"

static void client_park_free(struct login_client *client)
{
	struct login_process *lp = client->lp;

	i_assert(client->auth_parked);
	i_assert(lp->auth_parked_count > 0);
	client->auth_parked = false;
	lp->auth_parked_count--;
	if (client->to_park != NULL)
		timeout_remove(&client->to_park);
}

static void client_park_timeout(void *context)
{
	struct login_client *client = context;

	client->to_park = NULL;   /* freed by the loop */
	i_debug("auth did not come back within login_auth_park_timeout: "
		"request of %s answered as a temporary failure",
		client->remote_ip);
	login_client_auth_unpark(client);
	login_client_auth_fail(client, "tempfail", NULL);
}

bool login_client_auth_park(struct login_client *client, const char *ir_b64)
{
	struct login_process *lp = client->lp;

	if (lp->auth_parked_count >= lp->set->login_auth_park_limit)
		return false;
	client->park_ir = i_strdup(ir_b64);
	client->auth_parked = true;
	client->auth_id = 0;
	lp->auth_parked_count++;
	/* Input is watched for a hangup but not parsed, as while auth has
	   the request (client_update_io). */
	client->state = LOGIN_CLIENT_STATE_AUTH_WAIT;
	client->to_park = timeout_add(lp->ioloop,
				      lp->set->login_auth_park_timeout * 1000U,
				      client_park_timeout, client);
	i_debug("auth is not connected: request of %s parked (%u waiting)",
		client->remote_ip, lp->auth_parked_count);
	return true;
}

void login_client_auth_unpark(struct login_client *client)
{
	if (!client->auth_parked)
		return;
	client_park_free(client);
	if (client->park_ir != NULL) {
		/* It may carry a password. */
		safe_memset(client->park_ir, 0, strlen(client->park_ir));
		i_free(client->park_ir);
	}
}

static struct login_client *client_find_parked(struct login_process *lp)
{
	for (struct login_client *c = lp->clients; c != NULL; c = c->next) {
		if (c->auth_parked && !c->destroyed)
			return c;
	}
	return NULL;
}

void login_clients_auth_send_parked(struct login_process *lp)
{
	struct login_client *client;

	/* One at a time from the list's head: sending may destroy clients
	   or lose auth again (the rest then stay parked). At most
	   login_auth_park_limit passes over the client list. */
	while (login_auth_is_connected(lp) &&
	       (client = client_find_parked(lp)) != NULL) {
		char *ir = client->park_ir;

		client->park_ir = NULL;
		client_park_free(client);
		login_client_ref(client);
		login_client_auth_send(client, ir);
		safe_memset(ir, 0, strlen(ir));
		i_free(ir);
		login_client_unref(&client);
	}
}

void login_client_auth_keep_replay(struct login_client *client,
				   const char *ir_b64)
{
	login_client_auth_forget_replay(client);
	if (!client->auth_replayed && strlen(ir_b64) <= LOGIN_MAX_REPLAY_IR)
		client->replay_ir = i_strdup(ir_b64);
}

void login_client_auth_forget_replay(struct login_client *client)
{
	if (client->replay_ir == NULL)
		return;
	safe_memset(client->replay_ir, 0, strlen(client->replay_ir));
	i_free(client->replay_ir);
}

bool login_client_auth_repark(struct login_client *client)
{
	char *ir = client->replay_ir;
	bool parked;

	if (ir == NULL || client->auth_cancel_reason != NULL)
		return false;
	client->replay_ir = NULL;
	/* Once: a request that auth died on twice is not sent a third
	   time (it may be what kills it). */
	client->auth_replayed = true;
	parked = login_client_auth_park(client, ir);
	safe_memset(ir, 0, strlen(ir));
	i_free(ir);
	return parked;
}
