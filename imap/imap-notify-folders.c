/* The folders whose other writers' changes NOTIFY sessions want told
   (imap-notify-private.h): one watch listener per folder for the whole
   process, whatever number of sessions cover it, at most
   imap_notify_max_watches; a session holds none of them, so its memory
   does not grow with the number of folders. A change is matched against
   every session's set when it happens. The watched set follows the
   folders: one made, renamed in or subscribed after NOTIFY SET is
   watched at once (imap_notify_folders_changed()), one deleted, renamed
   away or no set covers any more is dropped. */
#include "imap-common.h"
#include "imap-notify-private.h"
#include "mailbox-list.h"
#include "mailbox-name.h"
#include "maildir-watch.h"

#include <dirent.h>

/* Every session whose set wants f's message events is told (one that
   has it selected hears through its own watch). */
static void folder_tell(struct imap_notify_folder *f)
{
	struct imap_user *user = f->user;
	bool sub = false, sub_known = false;

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

/* Another writer changed f's folder. Called from inside whatever read
   the events. */
static void folder_changed(void *context)
{
	struct imap_notify_folder *f = context;
	uint64_t gen = maildir_watch_peek_gen(f->watch);

	/* this process's own changes were announced and leave the
	   generation: the hooks report them, without the session that
	   made them */
	if (gen == f->gen)
		return;
	f->gen = gen;
	folder_tell(f);
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

static void folder_drop(struct imap_notify_user *nu, unsigned int idx,
			const struct moat_settings *mset)
{
	folder_free(&nu->folders[idx]);
	nu->folders[idx] = nu->folders[--nu->folder_count];
	if (nu->folder_count < mset->imap_notify_max_watches)
		nu->folders_full_logged = false;
}

static struct imap_notify_folder *
folder_add(struct imap_user *user, const char *norm, const char *path)
{
	struct imap_notify_user *nu = user->notify;

	for (unsigned int i = 0; i < nu->folder_count; i++) {
		if (strcmp(nu->folders[i]->path, path) == 0)
			return NULL;
	}
	if (nu->folder_count >= user->set->imap_notify_max_watches) {
		if (!nu->folders_full_logged)
			i_warning("NOTIFY: %u folders watched "
				  "(imap_notify_max_watches): other programs' "
				  "changes in further folders are not reported",
				  nu->folder_count);
		nu->folders_full_logged = true;
		return NULL;
	}
	/* NULL: not watchable (logged there when the kernel's
	   max_user_watches is reached) */
	struct maildir_watch *watch = maildir_watch_ref(path);
	if (watch == NULL || maildir_watch_fd() == -1) {
		maildir_watch_unref(&watch);
		return NULL;
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
	return f;
}

void imap_notify_user_ref(struct imap_notify_state *st)
{
	struct imap_user *user = st->client->user;

	if (user->notify == NULL)
		user->notify = i_malloc(sizeof(*user->notify));
	user->notify->sessions++;
}

/* Whether a session's set wants the message events of name. */
static bool folder_is_covered(struct imap_user *user, const char *name,
			      bool subscribed)
{
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (c->notify != NULL &&
		    (imap_notify_set_events(c->notify->set, user->set, name,
					    subscribed) &
		     IMAP_NOTIFY_MESSAGE_EVENTS) != 0)
			return true;
	}
	return false;
}

static bool any_set_has_subscribed(struct imap_user *user)
{
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (c->notify != NULL && imap_notify_set_has_filter(
				c->notify->set, IMAP_NOTIFY_FILTER_SUBSCRIBED))
			return true;
	}
	return false;
}

static bool name_in_subtree(const char *root, const char *name)
{
	size_t len = strlen(root);

	return strncmp(root, name, len) == 0 &&
		(name[len] == '\0' || name[len] == MAILBOX_NAME_SEP);
}

/* Whether new/ or cur/ of the folder at path holds an entry (another
   writer's message dropped before the folder was watched). Reads at
   most a directory block of each. */
static bool folder_has_mail(const char *path)
{
	static const char *const subdirs[] = { "new", "cur" };
	char dir[PATH_MAX];
	bool found = false;

	for (unsigned int i = 0; i < N_ELEMENTS(subdirs) && !found; i++) {
		if (snprintf(dir, sizeof(dir), "%s/%s", path, subdirs[i]) >=
		    (int)sizeof(dir))
			continue;
		DIR *d = opendir(dir);
		if (d == NULL)
			continue;
		struct dirent *de;
		while (!found && (de = readdir(d)) != NULL)
			found = de->d_name[0] != '.';
		(void)closedir(d);
	}
	return found;
}

static struct imap_notify_folder *
folder_watch_name(struct imap_user *user, const char *name)
{
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];

	if (mailbox_list_find_folder(user->mail_root, name, norm, path) <= 0)
		return NULL;
	return folder_add(user, norm, path);
}

void imap_notify_watch_folder(struct imap_notify_state *st, const char *name)
{
	(void)folder_watch_name(st->client->user, name);
}

/* One folder name: watched if it is a selectable folder a set covers,
   else not. */
static void folder_update_one(struct imap_user *user, const char *name,
			      bool by_other)
{
	struct imap_notify_user *nu = user->notify;
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	bool covered = false;
	/* gone: its watch is known by the name as given */
	const char *key = name;

	if (mailbox_list_find_folder(user->mail_root, name, norm, path) > 0) {
		bool sub = any_set_has_subscribed(user) &&
			imap_notify_is_subscribed(user, norm);
		covered = folder_is_covered(user, norm, sub);
		key = norm;
	}
	for (unsigned int i = 0; i < nu->folder_count; i++) {
		struct imap_notify_folder *f = nu->folders[i];

		if (strcmp(f->name, key) != 0)
			continue;
		if (covered && strcmp(f->path, path) == 0)
			return;
		folder_drop(nu, i, user->set);
		break;
	}
	if (!covered)
		return;
	struct imap_notify_folder *f = folder_add(user, norm, path);
	/* a folder another program made or moved here may have had
	   messages dropped into it before the watch was set up: a STATUS
	   too many (it held them before) is harmless, a missed one not */
	if (f != NULL && by_other && folder_has_mail(path))
		folder_tell(f);
}

/* Whether f's watch stays (folder_update_list()). */
static bool folder_keep(struct imap_user *user,
			const struct imap_notify_folder *f,
			const struct mailbox_list *list, const char *name)
{
	if (name != NULL)
		return !name_in_subtree(name, f->name);
	const struct mailbox_list_node *node =
		mailbox_list_lookup(list, f->name);
	return node != NULL && (node->flags & MAILBOX_NODE_SELECTABLE) != 0 &&
		folder_is_covered(user, f->name,
				  (node->flags & MAILBOX_NODE_SUBSCRIBED) != 0);
}

/* name given (a rename's old or new name): every watched folder at or
   below it goes (a rename moved them, and the watches' paths are
   stale). name NULL (lost events): every watched folder that is no
   selectable folder a set covers any more goes. Then every selectable
   folder there (or anywhere) that a set covers is watched. */
static void folder_update_list(struct imap_user *user, const char *name)
{
	struct imap_notify_user *nu = user->notify;
	struct mailbox_list *list;
	const char *error;

	if (mailbox_list_read(user->mail_root, NULL, &list, &error) < 0) {
		i_error("NOTIFY: %s", error);
		return;
	}
	for (unsigned int i = 0; i < nu->folder_count; ) {
		if (folder_keep(user, nu->folders[i], list, name))
			i++;
		else
			folder_drop(nu, i, user->set);
	}
	unsigned int count = mailbox_list_count(list);
	for (unsigned int i = 0; i < count; i++) {
		const struct mailbox_list_node *node = mailbox_list_get(list, i);
		bool sub = (node->flags & MAILBOX_NODE_SUBSCRIBED) != 0;

		if ((node->flags & MAILBOX_NODE_SELECTABLE) != 0 &&
		    (name == NULL || name_in_subtree(name, node->name)) &&
		    folder_is_covered(user, node->name, sub))
			(void)folder_watch_name(user, node->name);
	}
	mailbox_list_free(&list);
}

void imap_notify_folders_changed(struct imap_user *user, const char *name,
				 bool subtree, bool by_other)
{
	struct imap_notify_user *nu = user->notify;

	/* nothing is watched without a set; without inotify nothing can be */
	if (nu == NULL || nu->sessions == 0 || maildir_watch_fd() == -1)
		return;
	if (subtree)
		folder_update_list(user, name);
	else
		folder_update_one(user, name, by_other);
}

void imap_notify_folders_resync(struct imap_user *user)
{
	struct imap_notify_user *nu = user->notify;

	if (nu != NULL && nu->sessions > 0 && maildir_watch_fd() != -1)
		folder_update_list(user, NULL);
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
		const struct imap_notify_folder *f = nu->folders[i];
		const struct mailbox_list_node *node = list == NULL ? NULL :
			mailbox_list_lookup(list, f->name);
		bool sub = node != NULL &&
			(node->flags & MAILBOX_NODE_SUBSCRIBED) != 0;

		if (nu->sessions > 0 && folder_is_covered(user, f->name, sub))
			i++;
		else
			folder_drop(nu, i, user->set);
	}
	if (list != NULL)
		mailbox_list_free(&list);
	if (nu->sessions > 0)
		return;
	i_assert(nu->root_refs == 0 && nu->folder_count == 0);
	i_free(nu->folders);
	i_free(user->notify);
}
