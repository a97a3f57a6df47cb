#ifndef IMAP_NOTIFY_H
#define IMAP_NOTIFY_H
/* In-process change notification: all sessions of the user live in this
   process, so a session that changed a mailbox wakes the others that
   IDLE on the same folder at once (other writers reach them through
   the process's inotify watch, cmd-idle.c).

   NOTIFY (RFC 5465, cmd-notify.c): a session with a NOTIFY set gets its
   events between commands and during IDLE as well: the selected
   mailbox's EXISTS/EXPUNGE/FETCH (imap-sync.h) and MessageNew's fetch
   attributes, STATUS of other mailboxes, LIST for mailbox names and
   subscriptions. Events are collected (bounded: IMAP_NOTIFY_PENDING_MAX
   mailboxes) and sent within IMAP_NOTIFY_FLUSH_MSECS when no command
   runs (or IDLE does), else right after the command's tagged reply. A
   client that lets more than imap_notify_max_buffer of output wait gets
   "* OK [NOTIFICATIONOVERFLOW]" and NOTIFY is off (RFC 5465 5.8). */

#include "imap-client.h"

/* Mailboxes with unsent events per session; one more is an overflow. */
#define IMAP_NOTIFY_PENDING_MAX 64
/* Events within this delay go out together (as IDLE's sync delay). */
#define IMAP_NOTIFY_FLUSH_MSECS 10

struct imap_notify_set;

/* client changed its selected mailbox: expunges (EXPUNGE, CLOSE, MOVE). */
void imap_notify_changed(struct client *client);
/* client changed flags in its selected mailbox (STORE). */
void imap_notify_flags_changed(struct client *client);
/* Messages were added to the folder name at path by origin (NULL: a
   delivery): APPEND, COPY, MOVE targets, LMTP. */
void imap_notify_message_new(struct imap_user *user, struct client *origin,
			     const char *name, const char *path);
/* MailboxName (RFC 5465 5.4) by origin: name created or deleted
   (oldname NULL), or oldname renamed to name. */
void imap_notify_mailbox_name(struct client *origin, const char *name,
			      const char *oldname);
/* SubscriptionChange (RFC 5465 5.5) by origin. */
void imap_notify_subscription(struct client *origin, const char *name);

/* cmd-notify.c: replace the client's NOTIFY set (NULL: NOTIFY NONE);
   takes set. With the STATUS indicator the STATUS responses go out now. */
void imap_notify_set_client(struct client *client, struct imap_notify_set *set);
/* imap-client.c: cmd finished (its tagged reply is out): what waited
   for the end of the command goes out. */
void imap_notify_command_done(struct client *client,
			      struct client_command *cmd);
/* imap-client.c: the client read all output: events held for it go out. */
void imap_notify_output_drained(struct client *client);
/* imap-client.c: the client is freed. */
void imap_notify_client_free(struct client *client);
/* IDLE: whether it should report the selected mailbox's changes (not
   when a NOTIFY set left the selected mailbox out, RFC 5465 4). */
bool imap_notify_idle_wants_selected(struct client *client);

/* An IDLE started (ref) or ended (unref) listening to a folder's watch:
   while any listens, the process's inotify fd is read from the loop, so
   other writers' changes wake the listeners (maildir-watch.h). */
void imap_notify_watch_ref(struct imap_user *user);
void imap_notify_watch_unref(struct imap_user *user);

/* cmd-idle.c: schedule a sync of an idling client (no-op otherwise). */
void imap_idle_wakeup(struct client *client);
/* cmd-idle.c: whether client's command in progress is IDLE. */
bool imap_idle_is_active(struct client *client);

#endif
