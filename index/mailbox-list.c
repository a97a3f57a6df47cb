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
	}
	struct mailbox_list_node *node = &list->nodes[list->count++];
	node->name = p_strdup(list->pool, name);
	node->flags = flags;
	node->special = mailbox_special_use_of(list->specials, name);
}

/* A folder is selectable when it has cur/. */
static enum mailbox_list_node_flags dir_flags(int root_fd, const char *dir)
{
	char path[MAILBOX_NAME_DISK_MAX + 8];
	struct stat st;

	if (fstatat(root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return 0;
	snprintf(path, sizeof(path), "%s/cur", dir);
	if (fstatat(root_fd, path, &st, 0) == 0 && S_ISDIR(st.st_mode))
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
		enum mailbox_list_node_flags flags =
			dir_flags(dirfd(dir), d->d_name);
		if (flags == 0)
			continue;
		if (list->count >= MAILBOX_LIST_MAX_NODES) {
			i_warning("%s: more than %u folders, not all listed",
				  root, MAILBOX_LIST_MAX_NODES);
			break;
		}
		list_add(list, name, flags);
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
			  const char **error_r)
{
	struct stat st, st2;
	unsigned int first = list->count;

	if (stat(root, &st) < 0) {
		if (errno == ENOENT)
			return 0;   /* nothing created yet: INBOX only */
		*error_r = mailbox_list_set_error("stat(%s) failed: %m", root);
		return -1;
	}
	if (mailbox_list_cache_read(root, &st.st_mtim, list_cache_add, list) > 0)
		return 0;
	if (list_scan_dir(list, root, error_r) < 0)
		return -1;
	/* cache only what no change during the scan could have made stale */
	if (list->count < MAILBOX_LIST_MAX_NODES && stat(root, &st2) == 0 &&
	    st2.st_mtim.tv_sec == st.st_mtim.tv_sec &&
	    st2.st_mtim.tv_nsec == st.st_mtim.tv_nsec) {
		mailbox_list_cache_write(root, &st.st_mtim, list->nodes + first,
					 list->count - first);
	}
	return 0;
}

static void list_add_subscriptions(struct mailbox_list *list,
				   const char *root)
{
	char **names;
	unsigned int count;

	if (mailbox_subscriptions_read(root, &names, &count) < 0)
		return;   /* logged; listing goes on without them */
	for (unsigned int i = 0; i < count; i++) {
		if (list->count < MAILBOX_LIST_MAX_NODES)
			list_add(list, names[i], MAILBOX_NODE_SUBSCRIBED);
		i_free(names[i]);
	}
	i_free(names);
}

/* Every ancestor of every node becomes a node (flags 0 if missing). */
static void list_add_ancestors(struct mailbox_list *list)
{
	unsigned int count = list->count;
	char name[MAILBOX_NAME_MAX + 1];

	for (unsigned int i = 0; i < count; i++) {
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
		if ((list->nodes[i].flags & MAILBOX_NODE_EXISTS) == 0)
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
	struct mailbox_list *list = i_malloc(sizeof(*list));

	list->specials = specials;
	list->pool = pool_create("mailbox list", 4096);
	list_add(list, "INBOX", MAILBOX_NODE_SELECTABLE);
	if (list_scan_root(list, root, error_r) < 0) {
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
