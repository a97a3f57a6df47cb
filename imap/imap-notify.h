#ifndef IMAP_NOTIFY_H
#define IMAP_NOTIFY_H
/* In-process change notification: all sessions of the user live in this
   process, so a session that changed a mailbox wakes the others that
   IDLE on the same folder at once (other writers reach them through
   inotify, cmd-idle.c). */

#include "imap-client.h"

/* client changed its selected mailbox. */
void imap_notify_changed(struct client *client);
/* Something changed the folder at path (COPY/APPEND targets). */
void imap_notify_path(struct imap_user *user, const char *path);

/* cmd-idle.c: schedule a sync of an idling client (no-op otherwise). */
void imap_idle_wakeup(struct client *client);

#endif
