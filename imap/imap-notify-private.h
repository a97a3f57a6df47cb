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

/* Per user: the root watch while a NOTIFY set asks for MailboxName. */
struct imap_notify_user {
	struct maildir_root_watch *root;
	unsigned int refs;
	struct {
		char *name;
		time_t when;
	} own[IMAP_NOTIFY_OWN_MAX];
	unsigned int own_next;
};

/* A folder's watch for other writers' changes. */
struct imap_notify_watch {
	struct imap_notify_state *state;
	struct maildir_watch_listener *listener;   /* NULL: unused */
	struct maildir_watch *watch;   /* referenced by the listener */
	/* the watch's generation at the last foreign change seen */
	uint64_t gen;
	char *path;
	char *name;                /* NULL for the selected mailbox's */
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
	struct imap_notify_watch watches[IMAP_NOTIFY_WATCH_MAX];
	unsigned int watch_count;
	/* holds a reference of the user's root watch */
	bool root_ref;
};

/* imap-notify-send.c */
void imap_notify_flush_timeout(void *context);

/* imap-notify.c */
void imap_notify_watch_folder(struct imap_notify_state *st, const char *name);
void imap_notify_watch_selected(struct imap_notify_state *st);
void imap_notify_watch_remove(struct imap_notify_state *st,
			      struct imap_notify_watch *w);
/* Folders made, removed or renamed by other writers (MailboxName): the
   set asks for MailboxName somewhere: ref the root watch (unref when
   the state goes). */
void imap_notify_root_ref(struct imap_notify_state *st);
void imap_notify_root_unref(struct imap_notify_state *st);

#endif
