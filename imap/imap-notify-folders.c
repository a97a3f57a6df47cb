/* The folders whose other writers' changes NOTIFY sessions want told
   (imap-notify-private.h): one watch listener per folder for the whole
   process, whatever number of sessions cover it, at most
   imap_notify_max_watches; a session holds none of them, so its memory
   does not grow with the number of folders. A change is matched against
   every session's set when it happens; a folder no set covers any more
   is dropped when a session's set goes. */
#include "imap-common.h"
#include "imap-notify-private.h"
#include "mailbox-list.h"
#include "maildir-watch.h"

/* Another writer changed f's folder: every session whose set wants its
   message events is told (one that has it selected hears through its
   own watch). Called from inside whatever read the events. */
static void folder_changed(void *context)
{
	struct imap_notify_folder *f = context;
	struct imap_user *user = f->user;
	uint64_t gen = maildir_watch_peek_gen(f->watch);
	bool sub = false, sub_known = false;

	/* this process's own changes were announced and leave the
	   generation: the hooks report them, without the session that
	   made them */
	if (gen == f->gen)
		return;
	f->gen = gen;
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		struct imap_notify_state *st = c->notify;

		if (st == NULL || c->disconnected ||
		    imap_notify_is_selected(c, f->path))
			continue;
		if (!sub_known && imap_notify_set_has_filter(st->set,
				IMAP_NOTIFY_FILTER_SUBSCRIBED)) {
			sub = imap_notify_is_subscribed(user, f->name);
			sub_known = true;
		}
		/* which change it was is not known: any message event */
		if ((imap_notify_set_events(st->set, user->set, f->name, sub) &
		     IMAP_NOTIFY_MESSAGE_EVENTS) != 0)
			imap_notify_add(st, f->name, NULL,
					IMAP_NOTIFY_MESSAGE_EVENTS);
	}
}

static void folder_free(struct imap_notify_folder **_f)
{
	struct imap_notify_folder *f = *_f;

	*_f = NULL;
	maildir_watch_unlisten(&f->listener);
	imap_notify_watch_unref(f->user);
	i_free(f->name);
	i_free(f->path);
	i_free(f);
}

void imap_notify_watch_folder(struct imap_notify_state *st, const char *name)
{
	struct imap_user *user = st->client->user;
	struct imap_notify_user *nu = user->notify;
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];

	if (mailbox_list_find_folder(user->mail_root, name, norm, path) <= 0)
		return;
	for (unsigned int i = 0; i < nu->folder_count; i++) {
		if (strcmp(nu->folders[i]->path, path) == 0)
			return;
	}
	if (nu->folder_count >= user->set->imap_notify_max_watches) {
		if (!nu->folders_full_logged)
			i_warning("NOTIFY: %u folders watched "
				  "(imap_notify_max_watches): other programs' "
				  "changes in further folders are not reported",
				  nu->folder_count);
		nu->folders_full_logged = true;
		return;
	}
	/* NULL: not watchable (logged there when the kernel's
	   max_user_watches is reached) */
	struct maildir_watch *watch = maildir_watch_ref(path);
	if (watch == NULL || maildir_watch_fd() == -1) {
		maildir_watch_unref(&watch);
		return;
	}
	struct imap_notify_folder *f = i_malloc(sizeof(*f));
	f->user = user;
	f->name = i_strdup(norm);
	f->path = i_strdup(path);
	/* the listener keeps the watch referenced */
	f->listener = maildir_watch_listen(watch, folder_changed, f);
	f->watch = watch;
	f->gen = maildir_watch_peek_gen(watch);
	maildir_watch_unref(&watch);
	imap_notify_watch_ref(user);
	if (nu->folder_count == nu->folder_alloc) {
		nu->folder_alloc = nu->folder_alloc == 0 ? 16 :
			i_mul_size(nu->folder_alloc, 2);
		nu->folders = i_realloc(nu->folders, i_mul_size(
			nu->folder_alloc, sizeof(*nu->folders)));
	}
	nu->folders[nu->folder_count++] = f;
}

void imap_notify_user_ref(struct imap_notify_state *st)
{
	struct imap_user *user = st->client->user;

	if (user->notify == NULL)
		user->notify = i_malloc(sizeof(*user->notify));
	user->notify->sessions++;
}

/* Whether a session's set still wants f's message events. */
static bool folder_is_covered(struct imap_user *user,
			      const struct imap_notify_folder *f,
			      const struct mailbox_list *list)
{
	const struct mailbox_list_node *node = list == NULL ? NULL :
		mailbox_list_lookup(list, f->name);
	bool sub = node != NULL &&
		(node->flags & MAILBOX_NODE_SUBSCRIBED) != 0;

	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (c->notify != NULL &&
		    (imap_notify_set_events(c->notify->set, user->set, f->name,
					    sub) &
		     IMAP_NOTIFY_MESSAGE_EVENTS) != 0)
			return true;
	}
	return false;
}

void imap_notify_user_unref(struct imap_user *user)
{
	struct imap_notify_user *nu = user->notify;
	struct mailbox_list *list = NULL;
	const char *error;

	i_assert(nu != NULL && nu->sessions > 0);
	nu->sessions--;
	/* the subscriptions, once, for the sets that filter by them */
	if (nu->sessions > 0 && nu->folder_count > 0 &&
	    mailbox_list_read(user->mail_root, NULL, &list, &error) < 0) {
		i_error("NOTIFY: %s", error);
		list = NULL;
	}
	for (unsigned int i = 0; i < nu->folder_count; ) {
		if (nu->sessions > 0 && folder_is_covered(user, nu->folders[i],
							  list)) {
			i++;
			continue;
		}
		folder_free(&nu->folders[i]);
		nu->folders[i] = nu->folders[--nu->folder_count];
	}
	if (list != NULL)
		mailbox_list_free(&list);
	if (nu->folder_count < user->set->imap_notify_max_watches)
		nu->folders_full_logged = false;
	if (nu->sessions > 0)
		return;
	i_assert(nu->root_refs == 0 && nu->folder_count == 0);
	i_free(nu->folders);
	i_free(user->notify);
}
