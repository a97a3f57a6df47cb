/* CREATE, DELETE, RENAME and the login-time folders on a Maildir++ root
   (mailbox-list.h). */
#include "lib.h"
#include "log.h"
#include "strfuncs.h"
#include "mailbox-list-private.h"
#include "maildir-uidlist.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* A folder holds cur/ new/ tmp/ and files; nothing nests deeper than
   this unless someone put it there, and then we stop rather than recurse
   without bound. */
#define MAILBOX_DELETE_DEPTH_MAX 8
/* Where a deleted folder is moved before its files are removed: INBOX's
   tmp/, on the same file system, invisible to LIST. */
#define MAILBOX_TRASH_PREFIX "tmp/.moat-delete."

enum folder_state {
	FOLDER_NONE = 0,
	FOLDER_NOSELECT,
	FOLDER_SELECTABLE,
};

static enum folder_state folder_state(const char *path)
{
	char cur[PATH_MAX];
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return FOLDER_NONE;
	snprintf(cur, sizeof(cur), "%s/cur", path);
	return stat(cur, &st) == 0 && S_ISDIR(st.st_mode) ?
		FOLDER_SELECTABLE : FOLDER_NOSELECT;
}

static int ops_normalize(const char *name, char norm[MAILBOX_NAME_MAX + 1],
			 enum mailbox_list_error *code_r, const char **error_r)
{
	switch (mailbox_name_normalize(name, norm, error_r)) {
	case MAILBOX_NAME_OK:
		return 0;
	case MAILBOX_NAME_TOO_LONG:
		*code_r = MAILBOX_LIST_ERR_LIMIT;
		return -1;
	case MAILBOX_NAME_INVALID:
		break;
	}
	*code_r = MAILBOX_LIST_ERR_INVALID;
	return -1;
}

static int ops_path(const char *root, const char *norm, char path[PATH_MAX],
		    enum mailbox_list_error *code_r, const char **error_r)
{
	if (mailbox_name_to_path(root, norm, path, PATH_MAX) < 0) {
		*code_r = MAILBOX_LIST_ERR_LIMIT;
		*error_r = "Mailbox name is too long";
		return -1;
	}
	return 0;
}

static int internal_error(enum mailbox_list_error *code_r,
			  const char **error_r, const char *error)
{
	i_error("%s", error);
	*code_r = MAILBOX_LIST_ERR_INTERNAL;
	*error_r = error;
	return -1;
}

static int file_write_atomic(const char *path, const char *data,
			     const char **error_r)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (f == NULL) {
		*error_r = mailbox_list_set_error("fopen(%s) failed: %m", tmp);
		return -1;
	}
	fputs(data, f);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0 || fclose(f) != 0 ||
	    rename(tmp, path) < 0) {
		*error_r = mailbox_list_set_error("write(%s) failed: %m", tmp);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* A UIDVALIDITY never handed out before in this root (and above floor). */
static int uidvalidity_next(const char *root, uint32_t floor,
			    uint32_t *uv_r, const char **error_r)
{
	char path[PATH_MAX], buf[32];
	uint32_t last = 0, uv;

	snprintf(path, sizeof(path), "%s/" MAILBOX_UIDVALIDITY_FILE, root);
	FILE *f = fopen(path, "re");
	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) != NULL)
			last = (uint32_t)strtoul(buf, NULL, 10);
		fclose(f);
	}
	uv = (uint32_t)time(NULL);
	if (uv <= last)
		uv = last + 1;
	if (uv <= floor)
		uv = floor + 1;
	snprintf(buf, sizeof(buf), "%u\n", uv);
	if (file_write_atomic(path, buf, error_r) < 0)
		return -1;
	*uv_r = uv;
	return 0;
}

/* A new folder's uidlist (format: maildir-uidlist.h), so that a folder
   re-created in the same second does not get the old UIDVALIDITY. */
static int folder_write_uidlist(const char *root, const char *path,
				uint32_t floor, const char **error_r)
{
	char file[PATH_MAX], data[64];
	uint32_t uv;

	if (uidvalidity_next(root, floor, &uv, error_r) < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/" MAILDIR_UIDLIST_NAME, path);
	snprintf(data, sizeof(data), "V1 %u 1\n", uv);
	return file_write_atomic(file, data, error_r);
}

/* mkdir path tmp new (uidlist) cur: cur last, it makes the folder
   selectable. */
static int folder_make(const char *root, const char *path,
		       const char **error_r)
{
	static const char *const subdirs[] = { "tmp", "new", "cur" };
	char sub[PATH_MAX];

	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		*error_r = mailbox_list_set_error("mkdir(%s) failed: %m", path);
		return -1;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(subdirs); i++) {
		if (i == 2 && folder_write_uidlist(root, path, 0, error_r) < 0)
			return -1;
		snprintf(sub, sizeof(sub), "%s/%s", path, subdirs[i]);
		if (mkdir(sub, 0700) < 0 && errno != EEXIST) {
			*error_r = mailbox_list_set_error("mkdir(%s) failed: %m",
							  sub);
			return -1;
		}
	}
	return 0;
}

/* Create every missing ancestor of norm as a mailbox. */
static int make_parents(const char *root, const char *norm,
			enum mailbox_list_error *code_r, const char **error_r)
{
	char parent[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	const char *p = norm;

	while ((p = strchr(p, MAILBOX_NAME_SEP)) != NULL) {
		memcpy(parent, norm, (size_t)(p - norm));
		parent[p - norm] = '\0';
		p++;
		if (strcmp(parent, "INBOX") == 0)
			continue;
		if (ops_path(root, parent, path, code_r, error_r) < 0)
			return -1;
		if (folder_state(path) == FOLDER_NONE &&
		    folder_make(root, path, error_r) < 0)
			return internal_error(code_r, error_r, *error_r);
	}
	return 0;
}

int mailbox_list_create(const char *root, const char *name,
			enum mailbox_list_error *code_r, const char **error_r)
{
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];

	if (ops_normalize(name, norm, code_r, error_r) < 0 ||
	    ops_path(root, norm, path, code_r, error_r) < 0)
		return -1;
	if (strcmp(norm, "INBOX") == 0 ||
	    folder_state(path) == FOLDER_SELECTABLE) {
		*code_r = MAILBOX_LIST_ERR_EXISTS;
		*error_r = "Mailbox already exists";
		return -1;
	}
	if (make_parents(root, norm, code_r, error_r) < 0)
		return -1;
	if (folder_make(root, path, error_r) < 0)
		return internal_error(code_r, error_r, *error_r);
	mailbox_list_cache_invalidate(root);
	return 0;
}

/* Remove name inside dir_fd and everything below it, never following a
   symlink. */
static int rm_rf_at(int dir_fd, const char *name, unsigned int depth)
{
	if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth == 0)
		return -1;
	int fd = openat(dir_fd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	DIR *dir = fdopendir(fd);
	if (dir == NULL) {
		i_close_fd(&fd);
		return -1;
	}
	struct dirent *d;
	int ret = 0;
	while ((d = readdir(dir)) != NULL && ret == 0) {
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			ret = rm_rf_at(dirfd(dir), d->d_name, depth - 1);
	}
	closedir(dir);
	if (ret == 0 && unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
		ret = -1;
	return ret;
}

static void trash_path(const char *root, char path[PATH_MAX])
{
	uint32_t rnd;

	random_fill(&rnd, sizeof(rnd));
	snprintf(path, PATH_MAX, "%s/" MAILBOX_TRASH_PREFIX "%08x", root, rnd);
}

/* Move path away (one rename: LIST stops seeing it at once), then remove
   its files. */
static int folder_remove(const char *root, const char *path,
			 const char **error_r)
{
	char trash[PATH_MAX], tmpdir[PATH_MAX];

	snprintf(tmpdir, sizeof(tmpdir), "%s/tmp", root);
	(void)mkdir(tmpdir, 0700);
	trash_path(root, trash);
	if (rename(path, trash) < 0) {
		*error_r = mailbox_list_set_error("rename(%s, %s) failed: %m",
						  path, trash);
		return -1;
	}
	if (rm_rf_at(AT_FDCWD, trash, MAILBOX_DELETE_DEPTH_MAX) < 0)
		i_error("Removing %s failed: %m", trash);   /* the name is gone */
	return 0;
}

/* Keep the directory (it has children) but remove its messages and
   files: it becomes \Noselect. cur/ goes first. */
static int folder_empty(const char *path, const char **error_r)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1 || rm_rf_at(fd, "cur", MAILBOX_DELETE_DEPTH_MAX) < 0) {
		*error_r = mailbox_list_set_error("Emptying %s failed: %m", path);
		if (fd != -1)
			i_close_fd(&fd);
		return -1;
	}
	DIR *dir = fdopendir(fd);
	if (dir == NULL) {
		i_close_fd(&fd);
		return 0;
	}
	struct dirent *d;
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0 &&
		    rm_rf_at(dirfd(dir), d->d_name, MAILBOX_DELETE_DEPTH_MAX) < 0)
			i_error("Removing %s/%s failed: %m", path, d->d_name);
	}
	closedir(dir);
	return 0;
}

static bool name_has_children(const char *root, const char *norm,
			      const char **error_r, int *ret_r)
{
	struct mailbox_list *list;

	*ret_r = mailbox_list_read(root, NULL, &list, error_r);
	if (*ret_r < 0)
		return false;
	const struct mailbox_list_node *node = mailbox_list_lookup(list, norm);
	bool children = node != NULL &&
		(node->flags & MAILBOX_NODE_CHILDREN) != 0;
	mailbox_list_free(&list);
	return children;
}

int mailbox_list_delete(const char *root, const char *name,
			enum mailbox_list_error *code_r, const char **error_r)
{
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	int ret;

	if (ops_normalize(name, norm, code_r, error_r) < 0 ||
	    ops_path(root, norm, path, code_r, error_r) < 0)
		return -1;
	if (strcmp(norm, "INBOX") == 0) {
		*code_r = MAILBOX_LIST_ERR_CANNOT;
		*error_r = "INBOX can't be deleted";
		return -1;
	}
	enum folder_state state = folder_state(path);
	if (state == FOLDER_NONE) {
		*code_r = MAILBOX_LIST_ERR_NOTFOUND;
		*error_r = "Mailbox doesn't exist";
		return -1;
	}
	bool children = name_has_children(root, norm, error_r, &ret);
	if (ret < 0)
		return internal_error(code_r, error_r, *error_r);
	if (children && state == FOLDER_NOSELECT) {
		*code_r = MAILBOX_LIST_ERR_HASCHILDREN;
		*error_r = "Mailbox has children, delete them first";
		return -1;
	}
	ret = children ? folder_empty(path, error_r) :
		folder_remove(root, path, error_r);
	mailbox_list_cache_invalidate(root);
	return ret < 0 ? internal_error(code_r, error_r, *error_r) : 0;
}

int mailbox_list_autocreate(const char *root,
			    const struct mailbox_special_names *specials,
			    const char **error_r)
{
	enum mailbox_list_error code;
	char path[PATH_MAX];

	if (mkdir(root, 0700) < 0 && errno != EEXIST) {
		*error_r = mailbox_list_set_error("mkdir(%s) failed: %m", root);
		return -1;
	}
	for (unsigned int i = 0; i < MAILBOX_SPECIAL_COUNT; i++) {
		const char *name = specials->name[i];
		if (name == NULL || name[0] == '\0' ||
		    mailbox_name_to_path(root, name, path, sizeof(path)) < 0 ||
		    folder_state(path) != FOLDER_NONE)
			continue;
		if (mailbox_list_create(root, name, &code, error_r) < 0 ||
		    mailbox_list_subscribe(root, name, true, &code, error_r) < 0)
			return -1;
	}
	return 0;
}

/* Whether a file in the root belongs to INBOX (moves on RENAME INBOX):
   moat's per-mailbox files, not the root's own ones. */
static bool root_file_is_inbox(const char *fname)
{
	size_t len = strlen(fname);

	return (str_begins(fname, "moat.", NULL) ||
		str_begins(fname, "moat-", NULL)) &&
		strcmp(fname, MAILBOX_UIDVALIDITY_FILE) != 0 &&
		strcmp(fname, MAILBOX_LIST_CACHE_DIR) != 0 &&
		!(len > 5 && strcmp(fname + len - 5, ".lock") == 0) &&
		strstr(fname, ".tmp") == NULL;
}

static int move_entry(const char *from_dir, const char *to_dir,
		      const char *fname, const char **error_r)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/%s", from_dir, fname);
	snprintf(to, sizeof(to), "%s/%s", to_dir, fname);
	if (rename(from, to) < 0 && errno != ENOENT) {
		*error_r = mailbox_list_set_error("rename(%s, %s) failed: %m",
						  from, to);
		return -1;
	}
	return 0;
}

static int inbox_move_files(const char *root, const char *dest,
			    const char **error_r)
{
	DIR *dir = opendir(root);
	struct dirent *d;
	int ret = 0;

	if (dir == NULL) {
		*error_r = mailbox_list_set_error("opendir(%s) failed: %m", root);
		return -1;
	}
	while ((d = readdir(dir)) != NULL && ret == 0) {
		if (root_file_is_inbox(d->d_name))
			ret = move_entry(root, dest, d->d_name, error_r);
	}
	closedir(dir);
	return ret;
}

/* RENAME INBOX: a new folder gets INBOX's messages and files; INBOX
   starts over with a new UIDVALIDITY. Its children stay. */
static int rename_inbox(const char *root, const char *newpath,
			const char **error_r)
{
	char sub[PATH_MAX];
	struct maildir_uidlist *ul = maildir_uidlist_init(root, false);
	uint32_t old_uv = 0;

	if (maildir_uidlist_refresh(ul, error_r) >= 0)
		old_uv = maildir_uidlist_get_uidvalidity(ul);
	maildir_uidlist_deinit(&ul);

	if (snprintf(sub, sizeof(sub), "%s/tmp", newpath) >= (int)sizeof(sub)) {
		*error_r = "Path too long";
		return -1;
	}
	if (mkdir(newpath, 0700) < 0 || mkdir(sub, 0700) < 0) {
		*error_r = mailbox_list_set_error("mkdir(%s) failed: %m", sub);
		return -1;
	}
	if (inbox_move_files(root, newpath, error_r) < 0 ||
	    move_entry(root, newpath, "new", error_r) < 0 ||
	    move_entry(root, newpath, "cur", error_r) < 0)
		return -1;
	/* INBOX again: empty, and UIDs that can't be confused with the old */
	if (folder_write_uidlist(root, root, old_uv, error_r) < 0)
		return -1;
	return folder_make(root, root, error_r);
}

struct rename_pair {
	char from[PATH_MAX], to[PATH_MAX];
};

/* The folders to move (name and its existing descendants) with their
   new paths; refuses if any target exists. Returns the count or -1. */
static int rename_collect(const char *root, const char *oldname,
			  const char *newname, struct rename_pair **pairs_r,
			  enum mailbox_list_error *code_r, const char **error_r)
{
	char target[MAILBOX_NAME_MAX + 1], norm[MAILBOX_NAME_MAX + 1];
	struct mailbox_list *list;
	struct rename_pair *pairs = NULL;
	int count = 0;

	if (mailbox_list_read(root, NULL, &list, error_r) < 0)
		return internal_error(code_r, error_r, *error_r);
	size_t old_len = strlen(oldname);
	for (unsigned int i = 0; i < mailbox_list_count(list); i++) {
		const struct mailbox_list_node *node = mailbox_list_get(list, i);
		if ((node->flags & MAILBOX_NODE_EXISTS) == 0 ||
		    (strcmp(node->name, oldname) != 0 &&
		     !mailbox_name_is_child(node->name, oldname)))
			continue;
		int len = snprintf(target, sizeof(target), "%s%s", newname,
				   node->name + old_len);
		pairs = i_realloc(pairs, i_mul_size((size_t)count + 1,
						    sizeof(*pairs)));
		struct rename_pair *pair = &pairs[count++];
		if (len >= (int)sizeof(target) ||
		    ops_path(root, node->name, pair->from, code_r, error_r) < 0 ||
		    ops_normalize(target, norm, code_r, error_r) < 0 ||
		    ops_path(root, norm, pair->to, code_r, error_r) < 0) {
			*code_r = MAILBOX_LIST_ERR_LIMIT;
			*error_r = "New mailbox name is too long";
			count = -1;
			break;
		}
		if (folder_state(pair->to) != FOLDER_NONE) {
			*code_r = MAILBOX_LIST_ERR_EXISTS;
			*error_r = "Target mailbox already exists";
			count = -1;
			break;
		}
	}
	mailbox_list_free(&list);
	if (count < 0)
		i_free(pairs);
	*pairs_r = pairs;
	return count;
}

static int rename_check(const char *oldname, const char *newname,
			enum mailbox_list_error *code_r, const char **error_r)
{
	if (strcmp(newname, "INBOX") == 0 || strcmp(oldname, newname) == 0) {
		*code_r = MAILBOX_LIST_ERR_EXISTS;
		*error_r = "Target mailbox already exists";
		return -1;
	}
	if (mailbox_name_is_child(newname, oldname)) {
		*code_r = MAILBOX_LIST_ERR_CANNOT;
		*error_r = "Can't rename a mailbox under itself";
		return -1;
	}
	return 0;
}

int mailbox_list_rename(const char *root, const char *oldname,
			const char *newname,
			enum mailbox_list_error *code_r, const char **error_r)
{
	char oldnorm[MAILBOX_NAME_MAX + 1], newnorm[MAILBOX_NAME_MAX + 1];
	char oldpath[PATH_MAX], newpath[PATH_MAX];
	struct rename_pair *pairs;

	if (ops_normalize(oldname, oldnorm, code_r, error_r) < 0 ||
	    ops_normalize(newname, newnorm, code_r, error_r) < 0 ||
	    ops_path(root, oldnorm, oldpath, code_r, error_r) < 0 ||
	    ops_path(root, newnorm, newpath, code_r, error_r) < 0 ||
	    rename_check(oldnorm, newnorm, code_r, error_r) < 0)
		return -1;
	if (strcmp(oldnorm, "INBOX") != 0 &&
	    folder_state(oldpath) == FOLDER_NONE) {
		*code_r = MAILBOX_LIST_ERR_NOTFOUND;
		*error_r = "Mailbox doesn't exist";
		return -1;
	}
	if (folder_state(newpath) != FOLDER_NONE) {
		*code_r = MAILBOX_LIST_ERR_EXISTS;
		*error_r = "Target mailbox already exists";
		return -1;
	}
	if (strcmp(oldnorm, "INBOX") == 0) {
		if (make_parents(root, newnorm, code_r, error_r) < 0)
			return -1;
		int ret = rename_inbox(root, newpath, error_r);
		mailbox_list_cache_invalidate(root);
		return ret < 0 ? internal_error(code_r, error_r, *error_r) : 0;
	}
	int count = rename_collect(root, oldnorm, newnorm, &pairs, code_r,
				   error_r);
	if (count < 0)
		return -1;
	int ret = make_parents(root, newnorm, code_r, error_r);
	for (int i = 0; i < count && ret == 0; i++) {
		if (rename(pairs[i].from, pairs[i].to) < 0) {
			ret = internal_error(code_r, error_r,
				mailbox_list_set_error("rename(%s, %s) failed: %m",
						       pairs[i].from, pairs[i].to));
		}
	}
	i_free(pairs);
	mailbox_list_cache_invalidate(root);
	return ret;
}

int mailbox_list_find_folder(const char *root, const char *name,
			     char norm_r[MAILBOX_NAME_MAX + 1],
			     char path_r[PATH_MAX])
{
	const char *error;

	if (mailbox_name_normalize(name, norm_r, &error) != MAILBOX_NAME_OK ||
	    mailbox_name_to_path(root, norm_r, path_r, PATH_MAX) < 0)
		return 0;
	if (strcmp(norm_r, "INBOX") == 0)
		return 1;
	return folder_state(path_r) == FOLDER_SELECTABLE ? 1 : 0;
}
