/* In-process change notification (imap-notify.h). */
#include "imap-common.h"
#include "imap-notify.h"
#include "maildir-watch.h"

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

static void notify_watch_input(void *context ATTR_UNUSED)
{
	/* listeners are called from inside as events are read */
	maildir_watch_read();
}

void imap_notify_watch_ref(struct imap_user *user)
{
	if (user->watch_listeners++ == 0 && maildir_watch_fd() != -1) {
		user->io_watch = io_add(user->ioloop, maildir_watch_fd(),
					IO_READ, notify_watch_input, NULL);
	}
}

void imap_notify_watch_unref(struct imap_user *user)
{
	i_assert(user->watch_listeners > 0);
	if (--user->watch_listeners == 0)
		io_remove(&user->io_watch);
}
