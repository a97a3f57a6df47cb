/* Listing the user's mailboxes: one scan of the Maildir++ root plus the
   subscriptions file (mailbox-list.h). */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "mailbox-list-private.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

const struct mailbox_special_names mailbox_special_defaults = {
	{ "Drafts", "Sent", "Trash", "Junk", "Archive" }
};
static const char *const special_attrs[MAILBOX_SPECIAL_COUNT] = {
	"\\Drafts", "\\Sent", "\\Trash", "\\Junk", "\\Archive"
};

struct mailbox_list {
	pool_t pool;
	const struct mailbox_special_names *specials;
	struct mailbox_list_node *nodes;
	/* per node: the folder's mtime as the scan saw it (else 0) */
	struct timespec *mtimes;
	unsigned int count, alloc;
};

const char *mailbox_list_set_error(const char *fmt, ...)
{
	static char error[MAILBOX_LIST_ERROR_MAX];
	va_list args;

	va_start(args, fmt);
	vsnprintf(error, sizeof(error), fmt, args);
	va_end(args);
	return error;
}

enum mailbox_special_use
mailbox_special_use_of(const struct mailbox_special_names *names,
		       const char *name)
{
	enum mailbox_special_use use = MAILBOX_SPECIAL_NONE;

	for (unsigned int i = 0; names != NULL && i < MAILBOX_SPECIAL_COUNT; i++) {
		if (names->name[i] != NULL && strcmp(names->name[i], name) == 0)
			use |= 1U << i;
	}
	return use;
}

const char *mailbox_special_use_attr(enum mailbox_special_use use)
{
	for (unsigned int i = 0; i < MAILBOX_SPECIAL_COUNT; i++) {
		if (use == (1U << i))
			return special_attrs[i];
	}
	return NULL;
}

static bool name_in_inbox_tree(const char *name)
{
	return strncmp(name, "INBOX", 5) == 0 &&
		(name[5] == '\0' || name[5] == MAILBOX_NAME_SEP);
}

/* INBOX and its children first, then byte order with the separator
   lowest, so that "a/b" sorts right after "a" and before "a-b": a node's
   descendants follow it directly. */
static int name_cmp(const char *a, const char *b)
{
	bool a_inbox = name_in_inbox_tree(a), b_inbox = name_in_inbox_tree(b);

	if (a_inbox != b_inbox)
		return (int)b_inbox - (int)a_inbox;
	for (;; a++, b++) {
		unsigned char ca = *a == MAILBOX_NAME_SEP ? 1 : (unsigned char)*a;
		unsigned char cb = *b == MAILBOX_NAME_SEP ? 1 : (unsigned char)*b;
		if (ca != cb || ca == '\0')
			return (int)ca - (int)cb;
	}
}

static int node_cmp(const void *p1, const void *p2)
{
	const struct mailbox_list_node *n1 = p1, *n2 = p2;

	return name_cmp(n1->name, n2->name);
}

static void list_add(struct mailbox_list *list, const char *name,
		     enum mailbox_list_node_flags flags)
{
	if (list->count == list->alloc) {
		list->alloc = list->alloc == 0 ? 64 : list->alloc * 2;
		list->nodes = i_realloc(list->nodes,
			i_mul_size(list->alloc, sizeof(*list->nodes)));
		list->mtimes = i_realloc(list->mtimes,
			i_mul_size(list->alloc, sizeof(*list->mtimes)));
	}
	memset(&list->mtimes[list->count], 0, sizeof(*list->mtimes));
	struct mailbox_list_node *node = &list->nodes[list->count++];
	node->name = p_strdup(list->pool, name);
	node->flags = flags;
	node->special = mailbox_special_use_of(list->specials, name);
}

/* A folder is selectable when it has cur/. *mtime_r: the folder's mtime
   before looking for cur/ (a cur/ made later changes it: the cache's rule
   in mailbox-list-cache.c). */
static enum mailbox_list_node_flags dir_flags(int root_fd, const char *dir,
					      struct timespec *mtime_r)
{
	char path[MAILBOX_NAME_DISK_MAX + 8];
	struct stat st;

	if (fstatat(root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return 0;
	*mtime_r = st.st_mtim;
	snprintf(path, sizeof(path), "%s/cur", dir);
	/* a symlinked cur/ is not a mailbox (doc/security.md) */
	if (fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		return MAILBOX_NODE_SELECTABLE;
	return MAILBOX_NODE_NOSELECT;
}

static int list_scan_dir(struct mailbox_list *list, const char *root,
			 const char **error_r)
{
	char name[MAILBOX_NAME_MAX + 1];
	struct dirent *d;
	DIR *dir = opendir(root);

	if (dir == NULL) {
		if (errno == ENOENT)
			return 0;   /* nothing created yet: INBOX only */
		*error_r = mailbox_list_set_error("opendir(%s) failed: %m", root);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.' ||
		    mailbox_name_from_dir(d->d_name, name) < 0)
			continue;   /* not a folder moat could have written */
		struct timespec mtime;
		enum mailbox_list_node_flags flags =
			dir_flags(dirfd(dir), d->d_name, &mtime);
		if (flags == 0)
			continue;
		if (list->count >= MAILBOX_LIST_MAX_NODES) {
			i_warning("%s: more than %u folders, not all listed",
				  root, MAILBOX_LIST_MAX_NODES);
			break;
		}
		list_add(list, name, flags);
		list->mtimes[list->count - 1] = mtime;
	}
	closedir(dir);
	return 0;
}

static void list_cache_add(void *context, const char *name,
			   enum mailbox_list_node_flags flags)
{
	list_add(context, name, flags);
}

/* The folders: from the cache while the root's mtime is the one it was
   written for (one stat and one read instead of a stat per folder). */
static int list_scan_root(struct mailbox_list *list, const char *root,
			  int stat_errno, const struct stat *root_st,
			  const char **error_r)
{
	struct stat st2;
	const struct stat *st = root_st;
	unsigned int first = list->count;

	if (stat_errno != 0) {
		if (stat_errno == ENOENT)
			return 0;   /* nothing created yet: INBOX only */
		errno = stat_errno;
		*error_r = mailbox_list_set_error("stat(%s) failed: %m", root);
		return -1;
	}
	if (mailbox_list_cache_read(root, &st->st_mtim, list_cache_add, list) > 0)
		return 0;
	if (list_scan_dir(list, root, error_r) < 0)
		return -1;
	/* cache only what no change during the scan could have made stale */
	if (list->count < MAILBOX_LIST_MAX_NODES && stat(root, &st2) == 0 &&
	    st2.st_mtim.tv_sec == st->st_mtim.tv_sec &&
	    st2.st_mtim.tv_nsec == st->st_mtim.tv_nsec) {
		mailbox_list_cache_write(root, &st->st_mtim, list->nodes + first,
					 list->mtimes + first,
					 list->count - first);
	}
	return 0;
}

/* The subscriptions last read, while the file keeps its identity, size
   and times (moat replaces it by rename; an edit in place changes its
   mtime): one stat instead of a read per LIST. One per process, as the
   folder list's (mailbox-list-cache.c). */
static struct {
	char *root;
	struct stat st;            /* st_ino 0: the file was missing */
	char **names;
	unsigned int count;
} subs_memo;

static void subs_memo_free(void)
{
	for (unsigned int i = 0; i < subs_memo.count; i++)
		i_free(subs_memo.names[i]);
	i_free(subs_memo.names);
	i_free(subs_memo.root);
	subs_memo.count = 0;
}

static bool subs_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
		a->st_size == b->st_size &&
		a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
		a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
		a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
		a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Refresh the memo. Returns false if the file can't be read. */
static bool subs_memo_update(const char *root)
{
	char path[PATH_MAX];
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (snprintf(path, sizeof(path), "%s/" MAILBOX_SUBSCRIPTIONS_FILE,
		     root) >= (int)sizeof(path) ||
	    (stat(path, &st) < 0 && errno != ENOENT)) {
		subs_memo_free();
		return false;
	}
	if (subs_memo.root != NULL && strcmp(subs_memo.root, root) == 0 &&
	    subs_same_file(&subs_memo.st, &st))
		return true;
	subs_memo_free();
	if (mailbox_subscriptions_read(root, &subs_memo.names,
				       &subs_memo.count) < 0)
		return false;   /* logged */
	subs_memo.root = i_strdup(root);
	/* stat before the read: a change meanwhile shows next time */
	subs_memo.st = st;
	return true;
}

static void list_add_subscriptions(struct mailbox_list *list,
				   const char *root)
{
	if (!subs_memo_update(root))
		return;   /* listing goes on without them */
	for (unsigned int i = 0; i < subs_memo.count; i++) {
		if (list->count < MAILBOX_LIST_MAX_NODES)
			list_add(list, subs_memo.names[i],
				 MAILBOX_NODE_SUBSCRIBED);
	}
}

bool mailbox_list_is_subscribed(const char *root, const char *name)
{
	if (!subs_memo_update(root))
		return false;
	for (unsigned int i = 0; i < subs_memo.count; i++) {
		if (strcmp(subs_memo.names[i], name) == 0)
			return true;
	}
	return false;
}

/* Every ancestor of every node becomes a node (flags 0 if missing). */
static void list_add_ancestors(struct mailbox_list *list)
{
	unsigned int count = list->count;
	char name[MAILBOX_NAME_MAX + 1];

	for (unsigned int i = 0; i < count; i++) {
		/* most names have no parent: no copy for them */
		if (strchr(list->nodes[i].name, MAILBOX_NAME_SEP) == NULL)
			continue;
		snprintf(name, sizeof(name), "%s", list->nodes[i].name);
		char *p;
		while ((p = strrchr(name, MAILBOX_NAME_SEP)) != NULL) {
			*p = '\0';
			list_add(list, name, 0);
		}
	}
}

/* Sort, then merge duplicates (flags OR'd). */
static void list_merge(struct mailbox_list *list)
{
	unsigned int out = 0;

	qsort(list->nodes, list->count, sizeof(*list->nodes), node_cmp);
	for (unsigned int i = 0; i < list->count; i++) {
		if (out > 0 &&
		    strcmp(list->nodes[out - 1].name, list->nodes[i].name) == 0) {
			list->nodes[out - 1].flags |= list->nodes[i].flags;
			continue;
		}
		list->nodes[out++] = list->nodes[i];
	}
	list->count = out;
}

static void list_mark_children(struct mailbox_list *list)
{
	char parent[MAILBOX_NAME_MAX + 1];

	for (unsigned int i = 0; i < list->count; i++) {
		if ((list->nodes[i].flags & MAILBOX_NODE_EXISTS) == 0 ||
		    strchr(list->nodes[i].name, MAILBOX_NAME_SEP) == NULL)
			continue;
		snprintf(parent, sizeof(parent), "%s", list->nodes[i].name);
		char *p;
		while ((p = strrchr(parent, MAILBOX_NAME_SEP)) != NULL) {
			*p = '\0';
			struct mailbox_list_node *node = (struct mailbox_list_node *)
				mailbox_list_lookup(list, parent);
			i_assert(node != NULL);   /* ancestors were added */
			node->flags |= MAILBOX_NODE_CHILDREN;
		}
	}
}

int mailbox_list_read(const char *root,
		      const struct mailbox_special_names *specials,
		      struct mailbox_list **list_r, const char **error_r)
{
	struct stat st;
	int stat_errno = stat(root, &st) < 0 ? errno : 0;

	/* finish a RENAME cut short first (mailbox-list-ops.c); the root's
	   stat tells whether a journal can be there at all */
	if (mailbox_list_rename_recover_stat(root, stat_errno != 0 ? NULL :
					     &st) > 0)
		stat_errno = stat(root, &st) < 0 ? errno : 0;
	struct mailbox_list *list = i_malloc(sizeof(*list));

	list->specials = specials;
	list->pool = pool_create("mailbox list", 4096);
	list_add(list, "INBOX", MAILBOX_NODE_SELECTABLE);
	if (list_scan_root(list, root, stat_errno, &st, error_r) < 0) {
		mailbox_list_free(&list);
		return -1;
	}
	list_add_subscriptions(list, root);
	list_add_ancestors(list);
	list_merge(list);
	list_mark_children(list);
	*list_r = list;
	return 0;
}

void mailbox_list_free(struct mailbox_list **_list)
{
	struct mailbox_list *list = *_list;

	*_list = NULL;
	if (list == NULL)
		return;
	pool_unref(&list->pool);
	i_free(list->nodes);
	i_free(list->mtimes);
	i_free(list);
}

unsigned int mailbox_list_count(const struct mailbox_list *list)
{
	return list->count;
}

const struct mailbox_list_node *
mailbox_list_get(const struct mailbox_list *list, unsigned int idx)
{
	i_assert(idx < list->count);
	return &list->nodes[idx];
}

static int node_key_cmp(const void *key, const void *p)
{
	const struct mailbox_list_node *node = p;

	return name_cmp(key, node->name);
}

const struct mailbox_list_node *
mailbox_list_lookup(const struct mailbox_list *list, const char *name)
{
	return bsearch(name, list->nodes, list->count, sizeof(*list->nodes),
		       node_key_cmp);
}
