#ifndef IMAP_NOTIFY_PRIVATE_H
#define IMAP_NOTIFY_PRIVATE_H
/* A session's NOTIFY state, shared by imap-notify.c (collecting events)
   and imap-notify-send.c (sending them). */

#include "imap-notify.h"
#include "imap-notify-set.h"

struct imap_notify_state;

/* This process's own CREATE, DELETE and RENAME are remembered this
   long (and this many), so that their inotify events on the root are
   not reported again as another writer's. */
#define IMAP_NOTIFY_OWN_MAX 16
#define IMAP_NOTIFY_OWN_SECS 2

/* A folder whose other writers' changes NOTIFY sessions want told (not
   a selected one: those have their session's watch): one per folder for
   the whole process, shared by every session whose set covers it
   (imap-notify-folders.c). */
struct imap_notify_folder {
	struct imap_user *user;
	struct maildir_watch_listener *listener;
	struct maildir_watch *watch;    /* referenced by the listener */
	/* the watch's generation at the last foreign change seen */
	uint64_t gen;
	char *name, *path;
};

/* Per user, while a session has a NOTIFY set: the folders watched (at
   most imap_notify_max_watches) and the root watch (while a set asks
   for MailboxName). */
struct imap_notify_user {
	unsigned int sessions;          /* NOTIFY states */
	struct imap_notify_folder **folders;
	unsigned int folder_count, folder_alloc;
	bool folders_full_logged;
	struct maildir_root_watch *root;
	unsigned int root_refs;
	struct {
		char *name;
		time_t when;
	} own[IMAP_NOTIFY_OWN_MAX];
	unsigned int own_next;
};

/* The selected mailbox's watch for other writers' changes. */
struct imap_notify_watch {
	struct imap_notify_state *state;
	struct maildir_watch_listener *listener;   /* NULL: unused */
	struct maildir_watch *watch;   /* referenced by the listener */
	uint64_t gen;
	char *path;
};

/* A mailbox with something to tell: its STATUS (a message event) or its
   LIST (MailboxName, SubscriptionChange). */
struct imap_notify_pending {
	char *name, *oldname;
	bool list;
};

struct imap_notify_state {
	struct client *client;
	struct imap_notify_set *set;
	struct timeout *to_flush;
	/* the selected mailbox changed: sync it */
	bool selected_pending;
	/* more than IMAP_NOTIFY_PENDING_MAX, or unread output: the next
	   flush turns NOTIFY off with NOTIFICATIONOVERFLOW */
	bool overflow;
	/* the flush waits for the client to read (imap_notify_output_drained) */
	bool wait_output;
	struct imap_notify_pending pending[IMAP_NOTIFY_PENDING_MAX];
	unsigned int pending_count;
	/* MessageNew fetch-atts: the first UID of the selected mailbox
	   (fetch_path) not fetched yet */
	uint32_t fetch_uid_next;
	char *fetch_path;
	/* holds the FETCH's args while it runs (imap-notify-send.c) */
	struct imap_parser *fetch_parser;
	struct imap_notify_watch selected;
	/* holds a reference of the user's root watch */
	bool root_ref;
};

/* imap-notify-send.c */
void imap_notify_flush_timeout(void *context);

/* imap-notify.c */
/* Remember that name has something to tell (merged per name and kind);
   only records and schedules (watch callbacks call it). */
void imap_notify_add(struct imap_notify_state *st, const char *name,
		     const char *oldname, enum imap_notify_event event);
bool imap_notify_is_subscribed(struct imap_user *user, const char *name);
/* Whether client has the mailbox at path selected. */
bool imap_notify_is_selected(struct client *client, const char *path);

/* imap-notify-folders.c */
/* A session got a NOTIFY set (ref) or lost it (unref, after
   client->notify was cleared: the folders no set covers any more stop
   being watched). */
void imap_notify_user_ref(struct imap_notify_state *st);
void imap_notify_user_unref(struct imap_user *user);
/* Watch folder name for other writers (st's set wants its message
   events); a folder already watched for another session is shared. */
void imap_notify_watch_folder(struct imap_notify_state *st, const char *name);
/* Folders changed after the sets were made: name was made, deleted,
   subscribed or unsubscribed (subtree false: that name alone), or the
   folders at and below name moved (subtree true: RENAME's old and new
   names). Each is watched exactly when it is a selectable folder a set
   covers (imap_notify_max_watches still bounds them). by_other: another
   program made it or moved it there: messages already in it when it
   gets watched are told (some may have come before moat saw it). */
void imap_notify_folders_changed(struct imap_user *user, const char *name,
				 bool subtree, bool by_other);
/* Root events were lost (an inotify queue overflow): watch exactly the
   folders the sets cover now (reads the folder list). */
void imap_notify_folders_resync(struct imap_user *user);
void imap_notify_watch_selected(struct imap_notify_state *st);
void imap_notify_watch_remove(struct imap_notify_state *st,
			      struct imap_notify_watch *w);
/* Folders made, removed or renamed by other writers: the set asks for
   MailboxName or message events of other folders: ref the root watch
   (unref when the state goes). */
void imap_notify_root_ref(struct imap_notify_state *st);
void imap_notify_root_unref(struct imap_notify_state *st);

#endif
