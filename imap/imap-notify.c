/* In-process change notification (imap-notify.h). */
#include "imap-common.h"
#include "imap-notify.h"

void imap_notify_path(struct imap_user *user, const char *path)
{
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (!c->disconnected && c->mailbox != NULL &&
		    strcmp(mailbox_get_path(c->mailbox), path) == 0)
			imap_idle_wakeup(c);
	}
}

void imap_notify_changed(struct client *client)
{
	if (client->mailbox != NULL)
		imap_notify_path(client->user, mailbox_get_path(client->mailbox));
}
