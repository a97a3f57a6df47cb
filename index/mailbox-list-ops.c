/* CREATE, DELETE, RENAME and the login-time folders on a Maildir++ root
   (mailbox-list.h). */
#include "lib.h"
#include "safe-open.h"
#include "log.h"
#include "strfuncs.h"
#include "mailbox-list-private.h"
#include "mailbox-quota.h"
#include "maildir-uidlist.h"
#include "mailbox-objectid.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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
	/* a symlinked folder or cur/ is not a folder (doc/security.md) */
	return lstat(cur, &st) == 0 && S_ISDIR(st.st_mode) ?
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
	FILE *f = safe_fopen_nofollow(tmp, "w");
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
	FILE *f = safe_fopen_nofollow(path, "r");
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

/* mkdir path tmp new (uidlist, MAILBOXID) cur: cur last, it makes the
   folder selectable, so whoever sees it selectable finds its id. A folder
   made here is a new mailbox (CREATE, a missing parent, INBOX emptied by
   RENAME INBOX): any id file left in it is replaced. */
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
		if (i == 2 && (folder_write_uidlist(root, path, 0, error_r) < 0 ||
			       mailbox_id_create(path, error_r) < 0))
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
	(void)mailbox_list_rename_recover(root);
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
	(void)mailbox_list_rename_recover(root);
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
	/* what the folder held leaves the user's quota (when it has one) */
	struct mailbox_quota_usage gone = { 0, 0 };
	bool counted = mailbox_quota_folder_usage(root, path, &gone) == 0;
	ret = children ? folder_empty(path, error_r) :
		folder_remove(root, path, error_r);
	if (ret == 0 && counted) {
		const char *quota_error;
		if (mailbox_quota_update(root, -gone.storage, -gone.messages,
					 &quota_error) < 0)
			i_error("quota: %s", quota_error);
	}
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
	/* the folder list cache's directory now, at process start: made
	   by the first LIST, it would change the root's mtime and so
	   invalidate what that LIST just learned (mailbox-list-cache.c) */
	if (snprintf(path, sizeof(path), "%s/" MAILBOX_LIST_CACHE_DIR,
		     root) < (int)sizeof(path))
		(void)mkdir(path, 0700);
	/* a RENAME cut short by the death of the previous process */
	(void)mailbox_list_rename_recover(root);
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
		strcmp(fname, MAILBOX_RENAME_JOURNAL) != 0 &&
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

/* ---- RENAME: journaled, always rolled forward ----
   Maildir++ keeps each folder of a hierarchy in its own entry of the
   root, so moving a mailbox with children takes one rename(2) per folder
   and cannot be one atomic step (a directory per hierarchy would be, but
   other Maildir++ tools could no longer read the tree). So RENAME writes
   a journal (phase, old name, new name; fsynced) before its first change,
   every step is one that can be done again, and whoever finds the
   journal later (process start, LIST, open, CREATE/DELETE/RENAME)
   finishes the job. Forward, not back: the checks (old exists, no target
   exists) passed before the journal was written, so finishing cannot
   fail on them, and a client that lost the tagged OK may see either
   outcome. The writer holds an flock on the journal until it has removed
   it, so only a rename whose process died is taken over. */
#define RENAME_JOURNAL_TMP MAILBOX_RENAME_JOURNAL ".tmp"
/* "<phase>\t<old>\t<new>\n"; names have no control characters */
#define RENAME_JOURNAL_MAX (2 * (MAILBOX_NAME_MAX + 1) + 4)

enum rename_phase {
	RENAME_PHASE_FOLDERS = 'F',     /* move old and its children */
	RENAME_PHASE_INBOX_MOVE = 'I',  /* move INBOX's files to new */
	RENAME_PHASE_INBOX_RESET = 'E', /* INBOX: new uidlist, new cur/ */
};

struct rename_journal {
	char phase;
	char oldname[MAILBOX_NAME_MAX + 1], newname[MAILBOX_NAME_MAX + 1];
	int fd;                 /* the journal, flocked; -1 = none */
	unsigned int step;      /* for the test hook */
};

/* Tests only (crash simulation); the one piece of module state. */
static mailbox_list_rename_hook_t *rename_hook;

void mailbox_list_rename_set_hook(mailbox_list_rename_hook_t *hook)
{
	rename_hook = hook;
}

static void rename_step(struct rename_journal *j)
{
	j->step++;
	if (rename_hook != NULL)
		rename_hook(j->step);
}

static int write_all(int fd, const char *data, size_t size)
{
	while (size > 0) {
		ssize_t ret = write(fd, data, size);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			return -1;
		data += ret;
		size -= (size_t)ret;
	}
	return 0;
}

/* Write (or replace, on a phase change) the journal atomically. The new
   file is locked before it becomes visible. */
static int journal_write(const char *root, struct rename_journal *j,
			 const char **error_r)
{
	char path[PATH_MAX], tmp[PATH_MAX], line[RENAME_JOURNAL_MAX];
	int len = snprintf(line, sizeof(line), "%c\t%s\t%s\n", j->phase,
			   j->oldname, j->newname);

	snprintf(path, sizeof(path), "%s/" MAILBOX_RENAME_JOURNAL, root);
	snprintf(tmp, sizeof(tmp), "%s/" RENAME_JOURNAL_TMP, root);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd == -1) {
		*error_r = mailbox_list_set_error("open(%s) failed: %m", tmp);
		return -1;
	}
	if (len < 0 || len >= (int)sizeof(line) || flock(fd, LOCK_EX) < 0 ||
	    write_all(fd, line, (size_t)len) < 0 || fsync(fd) < 0 ||
	    rename(tmp, path) < 0 || maildir_fsync_dir(root) < 0) {
		*error_r = mailbox_list_set_error("write(%s) failed: %m", tmp);
		(void)unlink(tmp);
		i_close_fd(&fd);
		return -1;
	}
	if (j->fd != -1)
		i_close_fd(&j->fd);
	j->fd = fd;
	return 0;
}

/* The rename is complete: drop the journal (durably, so that a folder
   created later under the old name is never moved by a stale journal). */
static int journal_remove(const char *root, struct rename_journal *j,
			  const char **error_r)
{
	char path[PATH_MAX];
	int ret = 0;

	snprintf(path, sizeof(path), "%s/" MAILBOX_RENAME_JOURNAL, root);
	if ((unlink(path) < 0 && errno != ENOENT) ||
	    maildir_fsync_dir(root) < 0) {
		*error_r = mailbox_list_set_error("unlink(%s) failed: %m", path);
		ret = -1;
	}
	i_close_fd(&j->fd);
	return ret;
}

static bool journal_parse(char *line, struct rename_journal *j)
{
	const char *error;
	char *old = strchr(line, '\t'), *new, *end;

	if (old == NULL || old != line + 1 ||
	    (new = strchr(old + 1, '\t')) == NULL ||
	    (end = strchr(new + 1, '\n')) == NULL || end[1] != '\0')
		return false;
	*new = *end = '\0';
	j->phase = line[0];
	if (j->phase != RENAME_PHASE_FOLDERS &&
	    j->phase != RENAME_PHASE_INBOX_MOVE &&
	    j->phase != RENAME_PHASE_INBOX_RESET)
		return false;
	if (mailbox_name_normalize(old + 1, j->oldname, &error) !=
	    MAILBOX_NAME_OK ||
	    mailbox_name_normalize(new + 1, j->newname, &error) !=
	    MAILBOX_NAME_OK)
		return false;
	bool inbox = strcmp(j->oldname, "INBOX") == 0;
	return strcmp(j->oldname, old + 1) == 0 &&
		strcmp(j->newname, new + 1) == 0 &&
		strcmp(j->newname, "INBOX") != 0 &&
		inbox == (j->phase != RENAME_PHASE_FOLDERS);
}

/* Open and lock a journal left behind. Returns 1 (j filled, locked), 0
   if there is none (*absent_r) or its writer is still at work, -1 on
   error. */
static int journal_open(const char *root, struct rename_journal *j,
			bool *absent_r)
{
	char path[PATH_MAX], line[RENAME_JOURNAL_MAX];
	struct stat st;

	*absent_r = false;
	snprintf(path, sizeof(path), "%s/" MAILBOX_RENAME_JOURNAL, root);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		*absent_r = errno == ENOENT;
		return errno == ENOENT ? 0 : -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 ||
	    st.st_nlink == 0) {
		/* busy (a live rename), or removed while we waited */
		i_close_fd(&fd);
		return 0;
	}
	ssize_t len = read(fd, line, sizeof(line) - 1);
	line[len < 0 ? 0 : len] = '\0';
	memset(j, 0, sizeof(*j));
	j->fd = fd;
	if (!journal_parse(line, j)) {
		/* written atomically, so not ours: nothing to finish */
		i_error("%s is garbled, removing it", path);
		(void)unlink(path);
		i_close_fd(&j->fd);
		return 0;
	}
	return 1;
}

/* Path of the folder that name (old or a child of old) becomes. */
static int rename_target(const char *root, const char *oldname,
			 const char *newname, const char *name,
			 char to[PATH_MAX], enum mailbox_list_error *code_r,
			 const char **error_r)
{
	char target[MAILBOX_NAME_MAX + 1], norm[MAILBOX_NAME_MAX + 1];
	int len = snprintf(target, sizeof(target), "%s%s", newname,
			   name + strlen(oldname));

	if (len >= (int)sizeof(target) ||
	    ops_normalize(target, norm, code_r, error_r) < 0 ||
	    ops_path(root, norm, to, code_r, error_r) < 0) {
		*code_r = MAILBOX_LIST_ERR_LIMIT;
		*error_r = "New mailbox name is too long";
		return -1;
	}
	return 0;
}

/* The folder names under the root that are old or its children (read
   completely before anything is renamed: readdir and rename in the
   same directory do not mix). */
static int rename_scan(const char *root, const char *oldname,
		       char ***names_r, unsigned int *count_r,
		       const char **error_r)
{
	char name[MAILBOX_NAME_MAX + 1];
	char **names = NULL;
	unsigned int count = 0;
	DIR *dir = opendir(root);
	struct dirent *d;

	if (dir == NULL) {
		*error_r = mailbox_list_set_error("opendir(%s) failed: %m", root);
		return -1;
	}
	while ((d = readdir(dir)) != NULL && count < MAILBOX_LIST_MAX_NODES) {
		if (d->d_name[0] != '.' ||
		    mailbox_name_from_dir(d->d_name, name) < 0 ||
		    (strcmp(name, oldname) != 0 &&
		     !mailbox_name_is_child(name, oldname)))
			continue;
		names = i_realloc(names, i_mul_size((size_t)count + 1,
						    sizeof(*names)));
		names[count++] = i_strdup(name);
	}
	closedir(dir);
	*names_r = names;
	*count_r = count;
	return 0;
}

static void names_free(char **names, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		i_free(names[i]);
	i_free(names);
}

/* Phase F: make the new parents, then move every folder still under the
   old name. A folder already moved is simply not found any more. */
static int rename_apply_folders(const char *root, struct rename_journal *j,
				const char **error_r)
{
	enum mailbox_list_error code;
	char from[PATH_MAX], to[PATH_MAX];
	char **names;
	unsigned int count;
	int ret = 0;

	if (make_parents(root, j->newname, &code, error_r) < 0)
		return -1;
	rename_step(j);
	if (rename_scan(root, j->oldname, &names, &count, error_r) < 0)
		return -1;
	for (unsigned int i = 0; i < count && ret == 0; i++) {
		if (ops_path(root, names[i], from, &code, error_r) < 0 ||
		    rename_target(root, j->oldname, j->newname, names[i], to,
				  &code, error_r) < 0) {
			ret = -1;
		} else if (folder_state(to) != FOLDER_NONE) {
			/* checked before the journal; someone else's since */
			i_error("RENAME: %s exists, %s left in place", to, from);
		} else if (rename(from, to) < 0 && errno != ENOENT) {
			*error_r = mailbox_list_set_error(
				"rename(%s, %s) failed: %m", from, to);
			ret = -1;
		} else {
			rename_step(j);
		}
	}
	names_free(names, count);
	return ret;
}

/* Phase I: INBOX's per-mailbox files, new/ and cur/ go to the new
   folder. Each move is a rename that finds nothing when redone. */
static int rename_apply_inbox_move(const char *root,
				   struct rename_journal *j,
				   const char **error_r)
{
	enum mailbox_list_error code;
	char newpath[PATH_MAX], sub[PATH_MAX];

	if (make_parents(root, j->newname, &code, error_r) < 0 ||
	    ops_path(root, j->newname, newpath, &code, error_r) < 0)
		return -1;
	rename_step(j);
	if (snprintf(sub, sizeof(sub), "%s/tmp", newpath) >= (int)sizeof(sub)) {
		*error_r = "Path too long";
		return -1;
	}
	if ((mkdir(newpath, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(sub, 0700) < 0 && errno != EEXIST)) {
		*error_r = mailbox_list_set_error("mkdir(%s) failed: %m", sub);
		return -1;
	}
	rename_step(j);
	if (inbox_move_files(root, newpath, error_r) < 0)
		return -1;
	rename_step(j);
	if (move_entry(root, newpath, "new", error_r) < 0)
		return -1;
	rename_step(j);
	return move_entry(root, newpath, "cur", error_r);
}

/* Phase E: INBOX again, empty, with UIDs that can't be confused with
   the old ones (whose UIDVALIDITY now lives in the new folder). */
static int rename_apply_inbox_reset(const char *root,
				    struct rename_journal *j,
				    const char **error_r)
{
	enum mailbox_list_error code;
	char newpath[PATH_MAX];
	const char *error;
	uint32_t old_uv = 0;

	if (ops_path(root, j->newname, newpath, &code, error_r) < 0)
		return -1;
	struct maildir_uidlist *ul = maildir_uidlist_init(newpath, false);
	if (maildir_uidlist_refresh(ul, &error) >= 0)
		old_uv = maildir_uidlist_get_uidvalidity(ul);
	maildir_uidlist_deinit(&ul);
	if (folder_write_uidlist(root, root, old_uv, error_r) < 0)
		return -1;
	rename_step(j);
	return folder_make(root, root, error_r);
}

static int rename_apply(const char *root, struct rename_journal *j,
			const char **error_r)
{
	switch (j->phase) {
	case RENAME_PHASE_FOLDERS:
		return rename_apply_folders(root, j, error_r);
	case RENAME_PHASE_INBOX_MOVE:
		if (rename_apply_inbox_move(root, j, error_r) < 0)
			return -1;
		rename_step(j);
		j->phase = RENAME_PHASE_INBOX_RESET;
		if (journal_write(root, j, error_r) < 0)
			return -1;
		rename_step(j);
		/* fall through */
	case RENAME_PHASE_INBOX_RESET:
		return rename_apply_inbox_reset(root, j, error_r);
	}
	i_unreached();
}

/* Apply j (journal written) and remove the journal. On failure the
   journal stays, so the next recovery finishes the rename. */
static int rename_run(const char *root, struct rename_journal *j,
		      const char **error_r)
{
	int ret = rename_apply(root, j, error_r);

	if (ret == 0) {
		rename_step(j);
		ret = journal_remove(root, j, error_r);
	} else if (j->fd != -1) {
		i_close_fd(&j->fd);
	}
	mailbox_list_cache_invalidate(root);
	return ret;
}

/* The root whose journal this process last found absent, and the root's
   mtime then (see mailbox_list_rename_recover_stat()). One per process,
   like the folder list's memo (mailbox-list-cache.c). */
static struct {
	char *root;
	struct timespec mtime;
} journal_memo;

static bool journal_memo_valid(const char *root, const struct stat *root_st)
{
	return journal_memo.root != NULL && root_st != NULL &&
		journal_memo.mtime.tv_sec == root_st->st_mtim.tv_sec &&
		journal_memo.mtime.tv_nsec == root_st->st_mtim.tv_nsec &&
		strcmp(journal_memo.root, root) == 0;
}

static void journal_memo_set(const char *root, const struct stat *root_st)
{
	struct timespec now;

	/* a journal written in the same timestamp tick as the last change
	   could leave the mtime as it was */
	if (clock_gettime(CLOCK_REALTIME, &now) < 0 ||
	    !mailbox_list_mtime_settled(&root_st->st_mtim, &now))
		return;
	if (journal_memo.root == NULL || strcmp(journal_memo.root, root) != 0) {
		i_free(journal_memo.root);
		journal_memo.root = i_strdup(root);
	}
	journal_memo.mtime = root_st->st_mtim;
}

int mailbox_list_rename_recover_stat(const char *root,
				     const struct stat *root_st)
{
	struct rename_journal j;
	const char *error;
	bool absent;

	if (journal_memo_valid(root, root_st))
		return 0;
	int ret = journal_open(root, &j, &absent);
	if (ret == 0 && absent && root_st != NULL)
		journal_memo_set(root, root_st);
	if (ret <= 0)
		return ret;
	i_warning("Finishing an interrupted RENAME of %s to %s",
		  j.oldname, j.newname);
	if (rename_run(root, &j, &error) < 0) {
		i_error("Finishing RENAME of %s to %s failed: %s",
			j.oldname, j.newname, error);
		return -1;
	}
	return 1;
}

int mailbox_list_rename_recover(const char *root)
{
	return mailbox_list_rename_recover_stat(root, NULL) < 0 ? -1 : 0;
}

/* Refuse (before the journal) if a folder under the old name has a
   target that exists or would be too long. */
static int rename_collect(const char *root, const char *oldname,
			  const char *newname,
			  enum mailbox_list_error *code_r, const char **error_r)
{
	char to[PATH_MAX];
	struct mailbox_list *list;
	int ret = 0;

	if (mailbox_list_read(root, NULL, &list, error_r) < 0)
		return internal_error(code_r, error_r, *error_r);
	for (unsigned int i = 0; i < mailbox_list_count(list) && ret == 0; i++) {
		const struct mailbox_list_node *node = mailbox_list_get(list, i);
		if ((node->flags & MAILBOX_NODE_EXISTS) == 0 ||
		    (strcmp(node->name, oldname) != 0 &&
		     !mailbox_name_is_child(node->name, oldname)))
			continue;
		if (rename_target(root, oldname, newname, node->name, to,
				  code_r, error_r) < 0) {
			ret = -1;
		} else if (folder_state(to) != FOLDER_NONE) {
			*code_r = MAILBOX_LIST_ERR_EXISTS;
			*error_r = "Target mailbox already exists";
			ret = -1;
		}
	}
	mailbox_list_free(&list);
	return ret;
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
	struct rename_journal j = { .fd = -1 };
	char oldpath[PATH_MAX], newpath[PATH_MAX];

	if (ops_normalize(oldname, j.oldname, code_r, error_r) < 0 ||
	    ops_normalize(newname, j.newname, code_r, error_r) < 0 ||
	    ops_path(root, j.oldname, oldpath, code_r, error_r) < 0 ||
	    ops_path(root, j.newname, newpath, code_r, error_r) < 0 ||
	    rename_check(j.oldname, j.newname, code_r, error_r) < 0)
		return -1;
	(void)mailbox_list_rename_recover(root);
	bool inbox = strcmp(j.oldname, "INBOX") == 0;
	if (!inbox && folder_state(oldpath) == FOLDER_NONE) {
		*code_r = MAILBOX_LIST_ERR_NOTFOUND;
		*error_r = "Mailbox doesn't exist";
		return -1;
	}
	if (folder_state(newpath) != FOLDER_NONE) {
		*code_r = MAILBOX_LIST_ERR_EXISTS;
		*error_r = "Target mailbox already exists";
		return -1;
	}
	if (!inbox && rename_collect(root, j.oldname, j.newname, code_r,
				     error_r) < 0)
		return -1;
	j.phase = inbox ? RENAME_PHASE_INBOX_MOVE : RENAME_PHASE_FOLDERS;
	if (journal_write(root, &j, error_r) < 0)
		return internal_error(code_r, error_r, *error_r);
	rename_step(&j);
	if (rename_run(root, &j, error_r) < 0)
		return internal_error(code_r, error_r, *error_r);
	return 0;
}

int mailbox_list_find_folder(const char *root, const char *name,
			     char norm_r[MAILBOX_NAME_MAX + 1],
			     char path_r[PATH_MAX])
{
	const char *error;

	if (mailbox_name_normalize(name, norm_r, &error) != MAILBOX_NAME_OK ||
	    mailbox_name_to_path(root, norm_r, path_r, PATH_MAX) < 0)
		return 0;
	/* one failed open(2) when there is no journal */
	(void)mailbox_list_rename_recover(root);
	if (strcmp(norm_r, "INBOX") == 0)
		return 1;
	return folder_state(path_r) == FOLDER_SELECTABLE ? 1 : 0;
}
