/* The user's sessions' deferred STORE syncs, one per log file per loop
   turn (imap-flag-sync.h). */
#include "lib.h"
#include "ioloop.h"
#include "log.h"
#include "mailbox.h"
#include "imap-common.h"
#include "imap-client.h"
#include "imap-flag-sync.h"

static void flag_sync_run(void *context);

void imap_flag_sync_wait(struct client *client)
{
	struct imap_user *user = client->user;

	i_assert(!client->flag_sync_wait);
	client->flag_sync_wait = true;
	client->flag_sync_next = user->flag_sync_clients;
	user->flag_sync_clients = client;
	/* a deferred callback runs after every io of this turn */
	if (user->to_flag_sync == NULL)
		user->to_flag_sync = io_loop_defer(user->ioloop,
						   flag_sync_run, user);
}

void imap_flag_sync_cancel(struct client *client)
{
	struct imap_user *user = client->user;

	if (!client->flag_sync_wait)
		return;
	for (struct client **p = &user->flag_sync_clients; *p != NULL;
	     p = &(*p)->flag_sync_next) {
		if (*p == client) {
			*p = client->flag_sync_next;
			break;
		}
	}
	client->flag_sync_wait = false;
	client->flag_sync_next = NULL;
	if (user->flag_sync_clients == NULL)
		timeout_remove(&user->to_flag_sync);
}

/* Did an earlier session of the list sync, in this turn, the log file
   client's folder handle appends to? */
static bool flag_sync_covered(struct client *list, struct client *client)
{
	for (struct client *c = list; c != client; c = c->flag_sync_next) {
		if (c->flag_sync_done &&
		    mailbox_flags_sync_covered(client->mailbox, c->mailbox))
			return true;
	}
	return false;
}

static void flag_sync_run(void *context)
{
	struct imap_user *user = context;
	const char *error;

	user->to_flag_sync = NULL;
	/* the syncs first, with no callback in between: the list stays as
	   it is */
	for (struct client *c = user->flag_sync_clients; c != NULL;
	     c = c->flag_sync_next) {
		c->flag_sync_done = false;
		if (c->mailbox == NULL || !mailbox_flags_unsynced(c->mailbox) ||
		    flag_sync_covered(user->flag_sync_clients, c))
			continue;
		if (mailbox_flags_sync(c->mailbox, &error) < 0) {
			i_error("STORE: %s", error);
			c->flags_sync_failed = true;
		} else {
			c->flag_sync_done = true;
		}
	}
	/* then the replies: finishing one session may change the list
	   (another one's disconnect), so take them one at a time */
	struct client *c;
	while ((c = user->flag_sync_clients) != NULL) {
		user->flag_sync_clients = c->flag_sync_next;
		c->flag_sync_next = NULL;
		c->flag_sync_wait = false;
		client_batch_finish(c);
	}
}
