#ifndef IMAP_NOTIFY_H
#define IMAP_NOTIFY_H
/* In-process change notification: all sessions of the user live in this
   process, so a session that changed a mailbox wakes the others that
   IDLE on the same folder at once (other writers reach them through
   the process's inotify watch, cmd-idle.c). */

#include "imap-client.h"

/* client changed its selected mailbox. */
void imap_notify_changed(struct client *client);
/* Something changed the folder at path (COPY/APPEND targets). */
void imap_notify_path(struct imap_user *user, const char *path);

/* An IDLE started (ref) or ended (unref) listening to a folder's watch:
   while any listens, the process's inotify fd is read from the loop, so
   other writers' changes wake the listeners (maildir-watch.h). */
void imap_notify_watch_ref(struct imap_user *user);
void imap_notify_watch_unref(struct imap_user *user);

/* cmd-idle.c: schedule a sync of an idling client (no-op otherwise). */
void imap_idle_wakeup(struct client *client);

#endif
