/* In-process change notification and NOTIFY's event collection
   (imap-notify.h); sending is imap-notify-send.c. */
#include "imap-common.h"
#include "imap-notify.h"
#include "imap-notify-private.h"
#include "imap-commands.h"
#include "mailbox-list.h"
#include "mailbox-name.h"
#include "maildir-watch.h"

#include <time.h>

static void notify_schedule(struct imap_notify_state *st)
{
	if (st->to_flush == NULL)
		st->to_flush = timeout_add(st->client->user->ioloop,
					   IMAP_NOTIFY_FLUSH_MSECS,
					   imap_notify_flush_timeout, st);
}

bool imap_notify_is_subscribed(struct imap_user *user, const char *name)
{
	/* asked per event and session: the memo, not a scan of the root */
	return mailbox_list_is_subscribed(user->mail_root, name);
}

/* Remember that name has something to tell (merged per name and kind).
   Called from watch callbacks too: it only records and schedules. */
void imap_notify_add(struct imap_notify_state *st, const char *name,
		     const char *oldname, enum imap_notify_event event)
{
	bool is_list = (event & IMAP_NOTIFY_MESSAGE_EVENTS) == 0;

	for (unsigned int i = 0; i < st->pending_count; i++) {
		struct imap_notify_pending *p = &st->pending[i];
		if (strcmp(p->name, name) == 0 && p->list == is_list &&
		    oldname == NULL && p->oldname == NULL) {
			notify_schedule(st);
			return;
		}
	}
	if (st->pending_count == IMAP_NOTIFY_PENDING_MAX) {
		st->overflow = true;
	} else {
		struct imap_notify_pending *p = &st->pending[st->pending_count++];
		p->name = i_strdup(name);
		p->oldname = i_strdup(oldname);
		p->list = is_list;
	}
	notify_schedule(st);
}

bool imap_notify_is_selected(struct client *client, const char *path)
{
	return client->mailbox != NULL && path != NULL &&
		strcmp(mailbox_get_path(client->mailbox), path) == 0;
}

/* A message event on folder name (at path) caused by origin. */
static void notify_message_event(struct imap_user *user,
				 struct client *origin, const char *name,
				 const char *path, enum imap_notify_event event)
{
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		struct imap_notify_state *st = c->notify;

		if (c->disconnected)
			continue;
		if (imap_notify_is_selected(c, path)) {
			if (st == NULL ||
			    (st->set->selected_events & event) != 0)
				imap_idle_wakeup(c);
			if (st != NULL && c != origin &&
			    (st->set->selected_events & event) != 0) {
				st->selected_pending = true;
				notify_schedule(st);
			}
			continue;
		}
		/* RFC 5465 5: the client that caused it is not told */
		if (st == NULL || c == origin)
			continue;
		bool sub = imap_notify_set_has_filter(st->set,
				IMAP_NOTIFY_FILTER_SUBSCRIBED) &&
			imap_notify_is_subscribed(user, name);
		if ((imap_notify_set_events(st->set, user->set, name, sub) &
		     event) != 0)
			imap_notify_add(st, name, NULL, event);
	}
}

void imap_notify_changed(struct client *client)
{
	struct mailbox *box = client->mailbox;

	if (box != NULL)
		notify_message_event(client->user, client, mailbox_get_name(box),
				     mailbox_get_path(box),
				     IMAP_NOTIFY_MESSAGE_EXPUNGE);
}

void imap_notify_flags_changed(struct client *client)
{
	struct mailbox *box = client->mailbox;

	if (box != NULL)
		notify_message_event(client->user, client, mailbox_get_name(box),
				     mailbox_get_path(box),
				     IMAP_NOTIFY_FLAG_CHANGE);
}

void imap_notify_message_new(struct imap_user *user, struct client *origin,
			     const char *name, const char *path)
{
	notify_message_event(user, origin, name, path,
			     IMAP_NOTIFY_MESSAGE_NEW);
}

/* "hello/world" -> "hello" into parent (false without a parent). */
static bool name_parent(const char *name, char parent[MAILBOX_NAME_MAX + 1])
{
	const char *sep = strrchr(name, MAILBOX_NAME_SEP);

	if (sep == NULL || (size_t)(sep - name) > MAILBOX_NAME_MAX)
		return false;
	memcpy(parent, name, sep - name);
	parent[sep - name] = '\0';
	return true;
}

/* origin: the session that made the change, NULL for another writer */
static void notify_list_event(struct imap_user *user, struct client *origin,
			      const char *name, const char *oldname,
			      enum imap_notify_event event)
{
	char parent[MAILBOX_NAME_MAX + 1];
	bool has_parent = oldname == NULL &&
		event == IMAP_NOTIFY_MAILBOX_NAME && name_parent(name, parent);

	for (struct client *c = user->clients; c != NULL; c = c->next) {
		struct imap_notify_state *st = c->notify;

		if (c->disconnected || st == NULL || c == origin)
			continue;
		bool sub = imap_notify_set_has_filter(st->set,
				IMAP_NOTIFY_FILTER_SUBSCRIBED) &&
			imap_notify_is_subscribed(user, name);
		enum imap_notify_event events =
			imap_notify_set_events(st->set, user->set, name, sub);
		if (oldname != NULL)
			events |= imap_notify_set_events(st->set, user->set,
							 oldname, sub);
		if ((events & event) == 0)
			continue;
		imap_notify_add(st, name, oldname, event);
		/* RFC 5465 5.4: the direct parent is affected too */
		if (has_parent)
			imap_notify_add(st, parent, NULL, event);
	}
}

/* Remember our own change of name, for the root watch's event of it. */
static void notify_own_add(struct imap_user *user, const char *name)
{
	struct imap_notify_user *nu = user->notify;

	if (nu == NULL || nu->root == NULL)
		return;
	unsigned int i = nu->own_next++ % IMAP_NOTIFY_OWN_MAX;
	i_free(nu->own[i].name);
	nu->own[i].name = i_strdup(name);
	nu->own[i].when = time(NULL);
}

/* Whether name (or a parent of it: RENAME moves the children too) was
   changed by this process a moment ago. */
static bool notify_own_seen(struct imap_user *user, const char *name)
{
	struct imap_notify_user *nu = user->notify;
	time_t now = time(NULL);

	for (unsigned int i = 0; i < IMAP_NOTIFY_OWN_MAX; i++) {
		const char *own = nu->own[i].name;
		size_t len = own == NULL ? 0 : strlen(own);
		if (own == NULL || now - nu->own[i].when > IMAP_NOTIFY_OWN_SECS)
			continue;
		if (strncmp(name, own, len) == 0 &&
		    (name[len] == '\0' || name[len] == MAILBOX_NAME_SEP))
			return true;
	}
	return false;
}

/* CREATE and RENAME make the missing parents of name as folders. */
static void notify_folders_parents(struct imap_user *user, const char *name)
{
	char parent[MAILBOX_NAME_MAX + 1];
	char *sep;

	if (strlen(name) > MAILBOX_NAME_MAX)
		return;
	memcpy(parent, name, strlen(name) + 1);
	while ((sep = strrchr(parent, MAILBOX_NAME_SEP)) != NULL) {
		*sep = '\0';
		imap_notify_folders_changed(user, parent, false, false);
	}
}

void imap_notify_mailbox_name(struct client *origin, const char *name,
			      const char *oldname)
{
	struct imap_user *user = origin->user;

	notify_own_add(user, name);
	if (oldname != NULL)
		notify_own_add(user, oldname);
	/* the watches follow at once, before the tagged OK: a message
	   another program drops into the new folder right after is seen */
	imap_notify_folders_changed(user, oldname != NULL ? oldname : name,
				    oldname != NULL, false);
	if (oldname != NULL)
		imap_notify_folders_changed(user, name, true, false);
	notify_folders_parents(user, name);
	/* RFC 5465 5.4: renaming INBOX creates a new INBOX, reported as
	   the new mailbox only */
	if (oldname != NULL && strcmp(oldname, "INBOX") == 0)
		oldname = NULL;
	notify_list_event(origin->user, origin, name, oldname,
			  IMAP_NOTIFY_MAILBOX_NAME);
}

void imap_notify_subscription(struct client *origin, const char *name)
{
	/* `subscribed` groups cover it now, or no more */
	imap_notify_folders_changed(origin->user, name, false, false);
	notify_list_event(origin->user, origin, name, NULL,
			  IMAP_NOTIFY_SUBSCRIPTION_CHANGE);
}

/* ---- folders made, removed and renamed by other writers ---- */

static bool set_asks_mailbox_name(const struct imap_notify_set *set)
{
	for (unsigned int i = 0; i < set->group_count; i++) {
		if ((set->groups[i].events & IMAP_NOTIFY_MAILBOX_NAME) != 0)
			return true;
	}
	return false;
}

/* The root's events were lost (inotify queue overflow). The folder
   watches are set right from the folder list (each watch then reports
   a change of its own: maildir-watch.c moves every generation, so every
   covered folder's STATUS goes out). Which names came, went or moved
   is not known without a copy of the whole folder list: sessions that
   asked for MailboxName get NOTIFICATIONOVERFLOW (RFC 5465 5.8). */
static void notify_root_overflow(struct imap_user *user)
{
	imap_notify_folders_resync(user);
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		struct imap_notify_state *st = c->notify;

		if (st != NULL && !c->disconnected &&
		    set_asks_mailbox_name(st->set)) {
			st->overflow = true;
			notify_schedule(st);
		}
	}
}

static void notify_root_changed(void *context, enum maildir_root_event event,
				const char *dir, const char *olddir)
{
	struct imap_user *user = context;
	char name[MAILBOX_NAME_MAX + 1], oldname[MAILBOX_NAME_MAX + 1];

	if (event == MAILDIR_ROOT_OVERFLOW) {
		notify_root_overflow(user);
		return;
	}
	bool renamed = event == MAILDIR_ROOT_RENAMED &&
		mailbox_name_from_dir(olddir, oldname) == 0;
	/* renamed away (into a name that is no folder) */
	if (renamed)
		imap_notify_folders_changed(user, oldname, false, false);
	if (mailbox_name_from_dir(dir, name) < 0)
		return;   /* not a folder (moat's own temporary names too) */
	/* the watches follow every change, ours too (the hooks did those
	   already: nothing happens twice) */
	imap_notify_folders_changed(user, name, false,
				    event != MAILDIR_ROOT_DELETED);
	/* new/ came after cur/: the folder can be watched now; its name
	   was told with CREATED */
	if (event == MAILDIR_ROOT_COMPLETED)
		return;
	/* ours were reported when made, without the session that made
	   them */
	if (notify_own_seen(user, name) ||
	    (renamed && notify_own_seen(user, oldname)))
		return;
	notify_list_event(user, NULL, name, renamed ? oldname : NULL,
			  IMAP_NOTIFY_MAILBOX_NAME);
}

void imap_notify_root_ref(struct imap_notify_state *st)
{
	struct imap_user *user = st->client->user;
	struct imap_notify_user *nu = user->notify;

	if (st->root_ref)
		return;
	i_assert(nu != NULL);
	if (nu->root_refs++ == 0) {
		nu->root = maildir_root_watch_add(user->mail_root,
						  notify_root_changed, user);
		if (nu->root != NULL)
			imap_notify_watch_ref(user);
	}
	st->root_ref = true;
}

void imap_notify_root_unref(struct imap_notify_state *st)
{
	struct imap_user *user = st->client->user;
	struct imap_notify_user *nu = user->notify;

	if (!st->root_ref)
		return;
	st->root_ref = false;
	i_assert(nu != NULL && nu->root_refs > 0);
	if (--nu->root_refs > 0)
		return;
	if (nu->root != NULL) {
		maildir_root_watch_remove(&nu->root);
		imap_notify_watch_unref(user);
	}
	for (unsigned int i = 0; i < IMAP_NOTIFY_OWN_MAX; i++)
		i_free(nu->own[i].name);
}

void imap_notify_output_drained(struct client *client)
{
	struct imap_notify_state *st = client->notify;

	if (st != NULL && st->wait_output) {
		st->wait_output = false;
		notify_schedule(st);
	}
}

/* ---- watches of other writers ---- */

static void notify_watch_changed(void *context)
{
	struct imap_notify_watch *w = context;
	struct imap_notify_state *st = w->state;

	if (imap_notify_is_selected(st->client, w->path) &&
	    st->set->selected_events != 0) {
		st->selected_pending = true;
		notify_schedule(st);
	}
}

static bool notify_watch_add(struct imap_notify_state *st,
			     struct imap_notify_watch *w, const char *path)
{
	struct maildir_watch *watch = maildir_watch_ref(path);

	if (watch == NULL || maildir_watch_fd() == -1) {
		if (watch != NULL)
			maildir_watch_unref(&watch);
		return false;
	}
	w->state = st;
	w->path = i_strdup(path);
	/* the listener keeps the watch referenced */
	w->listener = maildir_watch_listen(watch, notify_watch_changed, w);
	w->watch = watch;
	w->gen = maildir_watch_peek_gen(watch);
	maildir_watch_unref(&watch);
	imap_notify_watch_ref(st->client->user);
	return true;
}

void imap_notify_watch_remove(struct imap_notify_state *st,
			      struct imap_notify_watch *w)
{
	if (w->listener == NULL)
		return;
	maildir_watch_unlisten(&w->listener);
	imap_notify_watch_unref(st->client->user);
	i_free(w->path);
}

/* The selected mailbox's watch follows SELECT, EXAMINE and CLOSE. */
void imap_notify_watch_selected(struct imap_notify_state *st)
{
	struct mailbox *box = st->client->mailbox;
	const char *path = box == NULL || st->set->selected_events == 0 ?
		NULL : mailbox_get_path(box);

	if (path != NULL && st->selected.path != NULL &&
	    strcmp(path, st->selected.path) == 0)
		return;
	imap_notify_watch_remove(st, &st->selected);
	if (path != NULL)
		(void)notify_watch_add(st, &st->selected, path);
}

/* ---- the process's inotify fd ---- */

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
