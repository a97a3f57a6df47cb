/* Opening a Maildir folder as a mailbox view and reading its messages
   (mailbox.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-read-ahead.h"
#include "safe-open.h"
#include "mailbox-list.h"

#include "mail-cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* Chunk for counting line ends when a name carries no ,W= size. */
#define MAILBOX_VSIZE_CHUNK 32768

const char *mailbox_set_error(struct mailbox *box, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(box->error, sizeof(box->error), fmt, args);
	va_end(args);
	return box->error;
}

int mailbox_location_parse(const char *location, const char *home,
			   char **root_r, const char **error_r)
{
	const char *path;

	if (strncmp(location, "maildir:", 8) != 0) {
		*error_r = "mail_location: only maildir: is supported";
		return -1;
	}
	path = location + 8;
	size_t len = strcspn(path, ":");   /* ":OPTION=..." not used yet */
	char *root;
	if (path[0] == '~' && (len == 1 || path[1] == '/')) {
		if (home == NULL || home[0] != '/') {
			*error_r = "mail_location uses ~ but home is not absolute";
			return -1;
		}
		root = i_strdup_printf("%s%.*s", home, (int)len - 1, path + 1);
	} else {
		root = i_strndup(path, len);
	}
	if (root[0] != '/' || strstr(root, "/../") != NULL) {
		i_free(root);
		*error_r = "mail_location: the Maildir path must be absolute";
		return -1;
	}
	*root_r = root;
	return 0;
}

bool mailbox_name_is_inbox(const char *name)
{
	return strcasecmp(name, "INBOX") == 0;
}

static int mkdir_if_missing(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Create the missing parents of path (a new user's home, e.g.), as the
   user, private to them. */
static int mkdir_parents(const char *path)
{
	char *dir = i_strdup(path);
	int ret = 0;
	for (char *p = dir + 1; *p != '\0' && ret == 0; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		ret = mkdir_if_missing(dir);
		*p = '/';
	}
	free(dir);
	return ret;
}

/* The folder's directory fd, without following a symlink below the mail
   root (safe-open.h; the root itself is the admin's and may be one).
   Returns 1, 0 if the folder is a symlink (not a folder), -1. */
static int mailbox_open_dir_fd(struct mailbox *box, const char *root,
			       const char **error_r)
{
	size_t root_len = strlen(root);

	while (root_len > 1 && root[root_len - 1] == '/')
		root_len--;
	const char *rel = box->path + root_len;
	if (strncmp(box->path, root, root_len) != 0 ||
	    (*rel != '\0' && *rel != '/')) {
		*error_r = mailbox_set_error(box, "%s is not below %s",
					     box->path, root);
		return -1;
	}
	while (*rel == '/')
		rel++;
	int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd == -1) {
		*error_r = mailbox_set_error(box, "open(%s) failed: %m", root);
		return -1;
	}
	if (*rel == '\0') {
		box->dir_fd = root_fd;
		return 1;
	}
	box->dir_fd = safe_openat(root_fd, rel, O_PATH | O_DIRECTORY, 0);
	int saved = errno;
	i_close_fd(&root_fd);
	if (box->dir_fd != -1)
		return 1;
	if (safe_open_errno_is_symlink(saved)) {
		i_warning("%s: a symlink, not a folder: ignored", box->path);
		return 0;
	}
	errno = saved;
	*error_r = mailbox_set_error(box, "open(%s) failed: %m", box->path);
	return -1;
}

/* cur/, new/ and tmp/ (made if missing), and cur/'s fd for opening the
   messages. A symlink in place of one of them makes the folder not a
   mailbox: returns 0 (logged), 1 when usable, -1 on error. */
static int mailbox_create_dirs(struct mailbox *box, const char *root,
			       const char **error_r)
{
	static const char *const subdirs[] = { "cur", "new", "tmp" };

	if (mkdir_parents(box->path) < 0 || mkdir_if_missing(box->path) < 0) {
		*error_r = mailbox_set_error(box, "mkdir(%s) failed: %m",
					     box->path);
		return -1;
	}
	int ret = mailbox_open_dir_fd(box, root, error_r);
	if (ret <= 0)
		return ret;
	for (unsigned int i = 0; i < N_ELEMENTS(subdirs); i++) {
		/* mkdirat() does not follow a symlink in the name's place */
		if (mkdirat(box->dir_fd, subdirs[i], 0700) < 0 &&
		    errno != EEXIST) {
			*error_r = mailbox_set_error(box, "mkdir(%s/%s) failed: %m",
						     box->path, subdirs[i]);
			return -1;
		}
		int fd = safe_openat(box->dir_fd, subdirs[i],
				     O_PATH | O_DIRECTORY, 0);
		if (fd == -1 && safe_open_errno_is_symlink(errno)) {
			i_warning("%s/%s: a symlink, not a directory: the "
				  "folder is not used", box->path, subdirs[i]);
			return 0;
		}
		if (fd == -1) {
			*error_r = mailbox_set_error(box, "open(%s/%s) failed: %m",
						     box->path, subdirs[i]);
			return -1;
		}
		if (i == 0)
			box->cur_fd = fd;
		else
			i_close_fd(&fd);
	}
	return 1;
}

static struct mailbox *mailbox_alloc(const char *path, const char *name,
				     enum mailbox_open_flags flags)
{
	struct mailbox *box = i_malloc(sizeof(*box));

	box->name = i_strdup(name);
	box->path = i_strdup(path);
	box->cur_dir = i_strdup_printf("%s/cur", path);
	box->new_dir = i_strdup_printf("%s/new", path);
	box->tmp_dir = i_strdup_printf("%s/tmp", path);
	box->cur_fd = -1;
	box->dir_fd = -1;
	box->flags = flags;
	box->fsync_mode = (flags & MAILBOX_OPEN_NO_FSYNC) != 0 ?
		MAIL_INDEX_FSYNC_NEVER : MAIL_INDEX_FSYNC_ALWAYS;
	box->uidlist = maildir_uidlist_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	box->keywords = maildir_keywords_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	maildir_unique_init(&box->unique);
	box->uidlookup = maildir_uidlist_lookup_init(path);
	box->ghosts = maildir_ghosts_ref(path);
	if ((flags & MAILBOX_OPEN_SESSION) != 0)
		maildir_ghosts_register(box->ghosts, box);
	return box;
}

/* The index files, for starting over when the library cannot open them. */
static void mailbox_index_unlink(struct mailbox *box)
{
	static const char *const names[] = {
		MAIL_INDEX_FILE_NAME, MAIL_INDEX_LOG_FILE_NAME,
		MAIL_INDEX_LOG2_FILE_NAME, MAIL_INDEX_CACHE_FILE_NAME,
		MAIL_INDEX_MODSEQ_FILE_NAME, MAIL_INDEX_CHANGES_FILE_NAME,
		MAILBOX_DIRSTAMP_NAME
	};
	char path[PATH_MAX];

	for (unsigned int i = 0; i < N_ELEMENTS(names); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", box->path,
			     names[i]) < (int)sizeof(path) &&
		    unlink(path) < 0 && errno != ENOENT)
			i_error("unlink(%s) failed: %m", path);
	}
}

/* The directory mtimes the index reflects (MAILBOX_DIRSTAMP_NAME), if
   the stamp belongs to this index. */
static void mailbox_stamp_load(struct mailbox *box)
{
	char path[PATH_MAX], buf[128];
	unsigned long long modseq, cs, cn, ns, nn;
	unsigned int uidvalidity;
	struct mail_index_status status;

	if (snprintf(path, sizeof(path), "%s/%s", box->path,
		     MAILBOX_DIRSTAMP_NAME) >= (int)sizeof(path))
		return;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return;
	ssize_t ret = read(fd, buf, sizeof(buf) - 1);
	i_close_fd(&fd);
	if (ret <= 0)
		return;
	buf[ret] = '\0';
	mail_index_view_get_status(box->view, &status);
	/* a recreated index has the uidlist's uidvalidity only after its
	   first scan, and a lower modseq than the one the stamp saw */
	if (sscanf(buf, "%u %llu %llu %llu %llu %llu", &uidvalidity, &modseq,
		   &cs, &cn, &ns, &nn) != 6 ||
	    uidvalidity != status.uidvalidity ||
	    modseq > status.highest_modseq || modseq == 0)
		return;
	box->cur_mtime.tv_sec = (time_t)cs;
	box->cur_mtime.tv_nsec = (long)cn;
	box->new_mtime.tv_sec = (time_t)ns;
	box->new_mtime.tv_nsec = (long)nn;
	box->stamp_saved = true;
}

static int mailbox_index_open_files(struct mailbox *box, const char **error_r)
{
	int ret = mail_index_open(box->path, MAIL_INDEX_OPEN_CREATE,
				  &box->index, error_r);
	if (ret > 0) {
		/* the library logged the damage; the scan compares */
		if (mail_index_was_rebuilt(box->index))
			box->scan_dirty = true;
		return 0;
	}
	i_error("%s: index unusable (%s): rebuilding it from the Maildir",
		box->path, ret == 0 ? "missing" : *error_r);
	mailbox_index_unlink(box);
	box->scan_dirty = true;
	ret = mail_index_open(box->path, MAIL_INDEX_OPEN_CREATE, &box->index,
			      error_r);
	if (ret <= 0) {
		*error_r = mailbox_set_error(box, "Can't open the index of %s: %s",
			box->path, ret == 0 ? "missing" : *error_r);
		return -1;
	}
	return 0;
}

int mailbox_index_open(struct mailbox *box, const char **error_r)
{
	if (mailbox_index_open_files(box, error_r) < 0)
		return -1;
	box->view = mail_index_view_open(box->index);
	/* nothing is visible before the first mailbox_sync() */
	box->visible_next_uid = 0;
	if (!box->scan_dirty)
		mailbox_stamp_load(box);
	return 0;
}

static int mailbox_index_commit_mode(struct mailbox *box,
				     struct mail_index_transaction **t,
				     enum mail_index_fsync_mode mode,
				     const char **error_r)
{
	struct mail_index_commit_result result;

	if (mail_index_transaction_commit(t, mode, &result, error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: commit failed: %s",
					     box->path, *error_r);
		i_error("%s", *error_r);
		return -1;
	}
	return 0;
}

int mailbox_index_commit(struct mailbox *box,
			 struct mail_index_transaction **t,
			 const char **error_r)
{
	return mailbox_index_commit_mode(box, t, box->fsync_mode, error_r);
}

int mailbox_index_commit_first(struct mailbox *box,
			       struct mail_index_transaction **t,
			       const char **error_r)
{
	/* Synced unless mail_fsync = never, even while the group commit
	   defers the log's fdatasync: that later sync covers the log, not
	   moat.index, and flags committed after the build need it. */
	enum mail_index_fsync_mode mode =
		(box->flags & MAILBOX_OPEN_NO_FSYNC) != 0 ?
		MAIL_INDEX_FSYNC_NEVER : MAIL_INDEX_FSYNC_ALWAYS;
	int ret = mail_index_transaction_commit_first(t, mode, NULL, error_r);

	if (ret < 0) {
		*error_r = mailbox_set_error(box, "index %s: first build failed: %s",
					     box->path, *error_r);
		i_error("%s", *error_r);
	}
	return ret;
}

int mailbox_index_commit_unsynced(struct mailbox *box,
				  struct mail_index_transaction **t,
				  const char **error_r)
{
	/* a handle that never syncs owes nothing */
	if (box->fsync_mode == MAIL_INDEX_FSYNC_ALWAYS)
		box->flags_unsynced = true;
	return mailbox_index_commit_mode(box, t, MAIL_INDEX_FSYNC_NEVER,
					 error_r);
}

int mailbox_flags_sync(struct mailbox *box, const char **error_r)
{
	const char *error;

	if (!box->flags_unsynced)
		return 0;
	box->flags_unsynced = false;
	if (mail_index_sync_log(box->index, &error) < 0) {
		*error_r = mailbox_set_error(box, "index %s: %s", box->path,
					     error);
		return -1;
	}
	return 0;
}

bool mailbox_flags_unsynced(const struct mailbox *box)
{
	return box->flags_unsynced;
}

bool mailbox_flags_sync_covered(struct mailbox *box,
				const struct mailbox *synced)
{
	if (!box->flags_unsynced || box->index == NULL ||
	    synced->index == NULL ||
	    !mail_index_log_same(box->index, synced->index))
		return false;
	box->flags_unsynced = false;
	return true;
}

void mailbox_index_replace_flags(struct mail_index_transaction *t,
				 uint32_t uid, enum mail_flags flags,
				 uint32_t keywords)
{
	const uint32_t all_kw = (1U << MAILBOX_KEYWORDS_MAX) - 1;

	flags &= MAIL_FLAGS_PERMANENT;
	mail_index_update_flags(t, uid, uid, flags,
				MAIL_FLAGS_PERMANENT & ~flags,
				keywords, all_kw & ~keywords);
}

int mailbox_open(const char *root, const char *name,
		 enum mailbox_open_flags flags, struct mailbox **box_r,
		 const char **error_r)
{
	static char error[MAILBOX_ERROR_MAX];
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];

	/* any selectable folder, by its UTF-8 name (mailbox-list.h) */
	if (mailbox_list_find_folder(root, name, norm, path) <= 0)
		return 0;
	struct mailbox *box = mailbox_alloc(path, norm, flags);
	if ((flags & MAILBOX_OPEN_QUOTA) != 0)
		mailbox_set_quota_root(box, root);
	int ret = mailbox_create_dirs(box, root, error_r);
	if (ret == 0) {
		mailbox_close(&box);
		return 0;
	}
	if (ret < 0 ||
	    mailbox_index_open(box, error_r) < 0 ||
	    mailbox_sync(box, true, NULL, NULL, error_r) < 0) {
		/* the error lives in box: copy it out before freeing */
		snprintf(error, sizeof(error), "%s", *error_r);
		*error_r = error;
		mailbox_close(&box);
		return -1;
	}
	*box_r = box;
	return 1;
}

void mailbox_close(struct mailbox **_box)
{
	struct mailbox *box = *_box;
	const char *error;

	*_box = NULL;
	/* the callers that answer for a change synced it already */
	if (mailbox_flags_sync(box, &error) < 0)
		i_error("%s", error);
	i_free(box->quota_root);
	if (box->cache_trans != NULL)
		(void)mailbox_cache_flush(box, &error);
	if ((box->flags & MAILBOX_OPEN_SESSION) != 0)
		maildir_ghosts_unregister(box->ghosts, box);
	maildir_ghosts_unref(&box->ghosts);
	i_free(box->pending);
	uidset_free(&box->ev_changed);
	uidset_free(&box->recent);
	i_free(box->fnames);
	maildir_uidlist_lookup_deinit(&box->uidlookup);
	mail_index_view_close(&box->view);
	if (box->index != NULL)
		mail_index_close(&box->index);
	maildir_watch_unref(&box->watch);
	mailbox_prefetch_close(box);
	if (box->cur_fd != -1)
		i_close_fd(&box->cur_fd);
	if (box->dir_fd != -1)
		i_close_fd(&box->dir_fd);
	maildir_uidlist_deinit(&box->uidlist);
	maildir_keywords_deinit(&box->keywords);
	i_free(box->name);
	i_free(box->path);
	i_free(box->cur_dir);
	i_free(box->new_dir);
	i_free(box->tmp_dir);
	i_free(box);
}

bool mailbox_is_stale(struct mailbox *box)
{
	struct stat st1, st2;

	if (fstat(box->dir_fd, &st1) < 0 || lstat(box->path, &st2) < 0 ||
	    st1.st_dev != st2.st_dev || st1.st_ino != st2.st_ino)
		return true;
	return fstat(box->cur_fd, &st1) < 0 || lstat(box->cur_dir, &st2) < 0 ||
		st1.st_dev != st2.st_dev || st1.st_ino != st2.st_ino;
}

bool mailbox_is_readonly(struct mailbox *box)
{
	return (box->flags & MAILBOX_OPEN_READONLY) != 0;
}

const char *mailbox_get_name(struct mailbox *box)
{
	return box->name;
}

const char *mailbox_get_path(struct mailbox *box)
{
	return box->path;
}

struct maildir_watch *mailbox_get_watch(struct mailbox *box)
{
	if (!box->watch_tried) {
		box->watch_tried = true;
		box->watch = maildir_watch_ref(box->path);
	}
	return box->watch;
}

uint32_t mailbox_get_uidvalidity(struct mailbox *box)
{
	struct mail_index_status status;

	mail_index_view_get_status(box->view, &status);
	return status.uidvalidity;
}

uint32_t mailbox_get_next_uid(struct mailbox *box)
{
	struct mail_index_status status;

	mail_index_view_get_status(box->view, &status);
	/* our own appends raise the uidlist's before the view syncs */
	return MAX(status.next_uid, maildir_uidlist_get_next_uid(box->uidlist));
}

uint32_t mailbox_visible_count(struct mailbox *box)
{
	uint32_t n = mail_index_view_count(box->view);

	if (n == 0 || mail_index_view_lookup(box->view, n)->uid <
	    box->visible_next_uid)
		return n;
	uint32_t seq = mail_index_view_uid_to_seq_ge(box->view,
						     box->visible_next_uid);
	return seq == 0 ? n : seq - 1;
}

uint32_t mailbox_visible_below(struct mailbox *box, uint32_t uid)
{
	uint32_t seq = mail_index_view_uid_to_seq_ge(box->view, uid);
	uint32_t below = seq == 0 ? mail_index_view_count(box->view) : seq - 1;

	return MIN(below, mailbox_visible_count(box));
}

uint32_t mailbox_get_count(struct mailbox *box)
{
	return mailbox_visible_count(box) + box->pending_count;
}

unsigned int mailbox_pending_below(struct mailbox *box, uint32_t uid)
{
	unsigned int lo = 0, hi = box->pending_count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (box->pending[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The session sequence of the first message with uid >= uid, or
   count + 1. */
static uint32_t session_lower_bound(struct mailbox *box, uint32_t uid)
{
	return mailbox_visible_below(box, uid) + mailbox_pending_below(box, uid) + 1;
}

/* Session sequence of pending expunge i. */
static uint32_t pending_seq(struct mailbox *box, unsigned int i)
{
	return mailbox_visible_below(box, box->pending[i].uid) + i + 1;
}

/* The view sequence of seq, or 0 with *exp_r for a pending expunge. */
static uint32_t seq_resolve(struct mailbox *box, uint32_t seq,
			    const struct mailbox_expunged **exp_r)
{
	unsigned int lo = 0, hi = box->pending_count;

	i_assert(seq >= 1 && seq <= mailbox_get_count(box));
	*exp_r = NULL;
	/* pending_seq() grows with i: find those before seq */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (pending_seq(box, mid) < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < box->pending_count && pending_seq(box, lo) == seq) {
		*exp_r = &box->pending[lo];
		return 0;
	}
	return seq - lo;
}

const struct mail_index_record *
mailbox_seq_lookup(struct mailbox *box, uint32_t seq,
		   const struct mailbox_expunged **exp_r)
{
	uint32_t iseq = seq_resolve(box, seq, exp_r);

	return iseq == 0 ? NULL : mail_index_view_lookup(box->view, iseq);
}

uint32_t mailbox_get_recent_count(struct mailbox *box)
{
	uint32_t n = 0;

	for (unsigned int i = 0; i < box->recent.count; i++) {
		const struct uidset_range *r = &box->recent.ranges[i];
		uint32_t end = r->hi == UINT32_MAX ? mailbox_get_count(box) + 1 :
			session_lower_bound(box, r->hi + 1);
		n += end - session_lower_bound(box, r->lo);
	}
	return n;
}

uint32_t mailbox_get_first_unseen_seq(struct mailbox *box)
{
	struct mail_index_status status;
	uint32_t uid = 0;

	mail_index_view_get_status(box->view, &status);
	if (status.first_unseen_uid != 0 &&
	    status.first_unseen_uid < box->visible_next_uid)
		uid = status.first_unseen_uid;
	for (unsigned int i = 0; i < box->pending_count; i++) {
		if ((box->pending[i].flags & MAIL_SEEN) == 0 &&
		    (uid == 0 || box->pending[i].uid < uid)) {
			uid = box->pending[i].uid;
			break;
		}
	}
	return uid == 0 ? 0 : session_lower_bound(box, uid);
}

uint32_t mailbox_msg_uid(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	return rec != NULL ? rec->uid : exp->uid;
}

enum mail_flags mailbox_msg_flags(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);
	uint32_t uid = rec != NULL ? rec->uid : exp->uid;
	enum mail_flags flags = rec != NULL ? rec->flags : exp->flags;

	flags &= MAIL_FLAGS_PERMANENT;
	if (uidset_contains(&box->recent, uid))
		flags |= MAIL_RECENT;
	return flags;
}

uint32_t mailbox_msg_keywords(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	return rec != NULL ? rec->keywords : exp->keywords;
}

bool mailbox_msg_is_expunged(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;

	return mailbox_seq_lookup(box, seq, &exp) == NULL;
}

uint32_t mailbox_uid_to_seq_ge(struct mailbox *box, uint32_t uid)
{
	uint32_t seq = session_lower_bound(box, uid);

	return seq <= mailbox_get_count(box) ? seq : 0;
}

/* Look for base in cur/ (a name the index flags do not predict). */
static int mailbox_find_base_once(struct mailbox *box, const char *base,
				  char *buf, size_t size)
{
	DIR *dir = opendir(box->cur_dir);
	size_t base_len = strlen(base);
	struct dirent *d;
	int ret = 0;

	if (dir == NULL)
		return -1;
	while (ret == 0 && (d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (strncmp(d->d_name, base, base_len) != 0 ||
		    !maildir_filename_parse(d->d_name, &fn) ||
		    fn.base_len != base_len)
			continue;
		ret = snprintf(buf, size, "%s", d->d_name) < (int)size ? 1 : -1;
	}
	closedir(dir);
	return ret;
}

/* A readdir that another writer's rename overlaps can miss the file. It
   counts as gone after a pass no foreign change overlapped (the watch
   tells), or after MAILBOX_FIND_PASSES passes without a watch. */
#define MAILBOX_FIND_PASSES 3
static int mailbox_find_base(struct mailbox *box, const char *base,
			     char *buf, size_t size)
{
	for (unsigned int pass = 0;; pass++) {
		uint64_t gen = box->watch == NULL ? 0 :
			maildir_watch_get_gen(box->watch);
		int ret = mailbox_find_base_once(box, base, buf, size);
		if (ret != 0 || pass + 1 == MAILBOX_FIND_PASSES ||
		    (box->watch != NULL &&
		     maildir_watch_get_gen(box->watch) == gen))
			return ret;
	}
}

static int mailbox_msg_gone(const char **error_r)
{
	errno = ENOENT;
	*error_r = "Message was expunged";
	return -1;
}

static struct mailbox_fname_cache *fname_slot(struct mailbox *box,
					      uint32_t uid)
{
	if (box->fnames == NULL)
		mailbox_fname_cache_grow(box, MAILBOX_FNAME_CACHE_SIZE);
	return &box->fnames[uid % box->fname_slots];
}

void mailbox_msg_set_fname(struct mailbox *box, uint32_t uid,
			   const char *fname)
{
	struct mailbox_fname_cache *slot = fname_slot(box, uid);

	if (slot->uid != uid)
		slot->size = MAILDIR_SIZE_UNKNOWN;
	if (snprintf(slot->name, sizeof(slot->name), "%s", fname) >=
	    (int)sizeof(slot->name))
		slot->uid = 0;
	else
		slot->uid = uid;
}

/* The name as the uidlist base plus the flags: what it is after a sync
   (or found in cur/ with rescan). Fills slot. */
static int mailbox_fname_build(struct mailbox *box,
			       const struct mail_index_record *rec,
			       bool rescan, struct mailbox_fname_cache *slot,
			       const char **error_r)
{
	char base[MAILDIR_UIDLIST_MAX_LINE + 1];
	char letters[MAILDIR_KEYWORDS_MAX + 1];
	uint64_t size;

	slot->uid = 0;
	int ret = maildir_uidlist_lookup(box->uidlookup, rec->uid, base, &size,
					 error_r);
	if (ret < 0) {
		*error_r = mailbox_set_error(box, "%s", *error_r);
		return -1;
	}
	if (ret == 0)
		return mailbox_msg_gone(error_r);
	if (rescan) {
		ret = mailbox_find_base(box, base, slot->name,
					sizeof(slot->name));
		if (ret < 0) {
			*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
						     box->cur_dir);
			return -1;
		}
		if (ret == 0)
			return mailbox_msg_gone(error_r);
	} else {
		maildir_keywords_to_letters(rec->keywords, letters);
		if (maildir_filename_make(slot->name, sizeof(slot->name), base,
					  strlen(base),
					  rec->flags & MAIL_FLAGS_PERMANENT,
					  letters) < 0)
			return mailbox_msg_gone(error_r);
	}
	slot->uid = rec->uid;
	slot->size = size;
	return 0;
}

int mailbox_msg_get_fname(struct mailbox *box, uint32_t seq, bool rescan,
			  const char **fname_r, const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	if (rec == NULL)
		return mailbox_msg_gone(error_r);
	struct mailbox_fname_cache *slot = fname_slot(box, rec->uid);
	if (slot->uid != rec->uid || rescan) {
		if (mailbox_fname_build(box, rec, rescan, slot, error_r) < 0)
			return -1;
	}
	*fname_r = slot->name;
	return 0;
}

void mailbox_msg_forget_fname(struct mailbox *box, uint32_t seq)
{
	mailbox_fname_forget_uid(box, mailbox_msg_uid(box, seq));
}

void mailbox_fname_forget_uid(struct mailbox *box, uint32_t uid)
{
	if (box->fnames != NULL && box->fnames[uid % box->fname_slots].uid == uid)
		box->fnames[uid % box->fname_slots].uid = 0;
}

void mailbox_fname_cache_grow(struct mailbox *box, unsigned int slots)
{
	if (box->fname_slots >= slots)
		return;
	struct mailbox_fname_cache *fnames = i_malloc(slots * sizeof(*fnames));
	for (unsigned int i = 0; i < box->fname_slots; i++) {
		if (box->fnames[i].uid != 0)
			fnames[box->fnames[i].uid % slots] = box->fnames[i];
	}
	i_free(box->fnames);
	box->fnames = fnames;
	box->fname_slots = slots;
}

uint64_t mailbox_msg_phys_size(struct mailbox *box, uint32_t seq)
{
	const char *fname, *error;

	if (mailbox_msg_get_fname(box, seq, false, &fname, &error) < 0)
		return MAILDIR_SIZE_UNKNOWN;
	return fname_slot(box, mailbox_msg_uid(box, seq))->size;
}

/* RFC822.SIZE if known without reading the file. */
static uint64_t mailbox_msg_known_vsize(struct mailbox *box,
					const struct mail_index_record *rec)
{
	if (rec->size != 0)
		return rec->size;
	return box->vsize_uid == rec->uid ? box->vsize_value :
		MAILDIR_SIZE_UNKNOWN;
}

bool mailbox_msg_is_crlf(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	if (rec == NULL)
		return false;
	uint64_t vsize = mailbox_msg_known_vsize(box, rec);
	uint64_t size = mailbox_msg_phys_size(box, seq);
	return size != MAILDIR_SIZE_UNKNOWN && size == vsize;
}

/* An expunged message the view still has: its kept file, if any. */
static int mailbox_msg_open_ghost(struct mailbox *box,
				  const struct mailbox_expunged *exp,
				  const char **error_r)
{
	int fd = maildir_ghosts_open(box->ghosts, exp->uid, box);

	if (fd != -1)
		return fd;
	if (errno != ENOENT) {
		*error_r = mailbox_set_error(box, "dup(kept file of uid %u) "
					     "failed: %m", exp->uid);
		return -1;
	}
	i_debug("%s: uid %u was expunged and its file is not kept (another "
		"process or program removed it, or the limits of kept files "
		"were reached)", box->path, exp->uid);
	return mailbox_msg_gone(error_r);
}

int mailbox_msg_open(struct mailbox *box, uint32_t seq, const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);
	const char *fname;

	if (rec == NULL)
		return mailbox_msg_open_ghost(box, exp, error_r);
	/* expunged by another handle, and this view has not synced yet */
	if (maildir_ghosts_holds(box->ghosts, rec->uid, box))
		return maildir_ghosts_open(box->ghosts, rec->uid, box);
	/* relative to cur/ (opened without symlinks at mailbox_open()):
	   the kernel walks one name, not the whole path */
	i_assert(box->cur_fd != -1);
	for (unsigned int attempt = 0; attempt < MAILBOX_FNAME_ATTEMPTS;
	     attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0) {
			if (errno == ENOENT) {
				i_debug("%s: uid %u: no file in cur/ (removed "
					"by another process or program)",
					box->path, mailbox_msg_uid(box, seq));
			}
			return -1;
		}
		int fd = openat(box->cur_fd, fname,
				O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd != -1)
			return fd;
		if (errno == ELOOP) {
			/* a symlink is not a message: never served */
			i_warning("%s/%s: a symlink, not a message: not served",
				  box->cur_dir, fname);
			return mailbox_msg_gone(error_r);
		}
		if (errno != ENOENT) {
			*error_r = mailbox_set_error(box, "open(%s/%s) failed: %m",
						     box->cur_dir, fname);
			return -1;
		}
	}
	mailbox_msg_forget_fname(box, seq);
	i_debug("%s: uid %u: its file left cur/ while it was opened (removed "
		"by another process or program)", box->path,
		mailbox_msg_uid(box, seq));
	return mailbox_msg_gone(error_r);
}

/* The mtime of the file mailbox_msg_open() gives (a kept file). */
static int mailbox_msg_fd_date(struct mailbox *box, uint32_t seq,
			       time_t *date_r, const char **error_r)
{
	struct stat st;
	int fd = mailbox_msg_open(box, seq, error_r);

	if (fd == -1)
		return -1;
	int ret = fstat(fd, &st);
	if (ret < 0)
		*error_r = mailbox_set_error(box, "fstat(uid %u) failed: %m",
					     mailbox_msg_uid(box, seq));
	i_close_fd(&fd);
	if (ret < 0)
		return -1;
	*date_r = st.st_mtime;
	return 0;
}

/* A message indexed without a stat() (the first scan of a Maildir made
   by another tool, a rebuild) has INTERNALDATE 0: it is the file's mtime,
   read once and kept in the cache. A file really dated 0 is only
   stat()ed each time. */
static int mailbox_msg_file_date(struct mailbox *box, uint32_t seq,
				 time_t *date_r, const char **error_r)
{
	char path[PATH_MAX];
	const char *fname;
	const void *data;
	size_t size;
	int64_t value;
	struct stat st;

	if (mailbox_msg_cache_lookup(box, seq, MAILBOX_CACHE_DATE, &data,
				     &size) > 0 && size == sizeof(value)) {
		memcpy(&value, data, sizeof(value));
		*date_r = (time_t)value;
		return 0;
	}
	if (maildir_ghosts_holds(box->ghosts, mailbox_msg_uid(box, seq), box))
		return mailbox_msg_fd_date(box, seq, date_r, error_r);
	for (unsigned int attempt = 0; attempt < 2; attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0)
			return -1;
		if (snprintf(path, sizeof(path), "%s/%s", box->cur_dir,
			     fname) >= (int)sizeof(path))
			return mailbox_msg_gone(error_r);
		/* lstat: a symlink's target is not this mailbox's message */
		int sret = lstat(path, &st);
		if (sret == 0 && S_ISLNK(st.st_mode))
			return mailbox_msg_gone(error_r);
		if (sret == 0) {
			value = st.st_mtime;
			*date_r = st.st_mtime;
			(void)mailbox_msg_cache_add(box, seq, MAILBOX_CACHE_DATE,
						    &value, sizeof(value),
						    error_r);
			return 0;
		}
		if (errno != ENOENT) {
			*error_r = mailbox_set_error(box, "stat(%s) failed: %m",
						     path);
			return -1;
		}
	}
	mailbox_msg_forget_fname(box, seq);
	return mailbox_msg_gone(error_r);
}

/* INTERNALDATE of an expunged message: as the index had it, else its
   kept file's mtime. */
static int mailbox_msg_ghost_date(struct mailbox *box, uint32_t seq,
				  const struct mailbox_expunged *exp,
				  time_t *date_r, const char **error_r)
{
	if (exp->internal_date != 0) {
		*date_r = (time_t)exp->internal_date;
		return 0;
	}
	return mailbox_msg_fd_date(box, seq, date_r, error_r);
}

int mailbox_msg_internaldate(struct mailbox *box, uint32_t seq,
			     time_t *date_r, const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	if (rec == NULL)
		return mailbox_msg_ghost_date(box, seq, exp, date_r, error_r);
	if (rec->internal_date == 0)
		return mailbox_msg_file_date(box, seq, date_r, error_r);
	*date_r = (time_t)rec->internal_date;
	return 0;
}

/* Count the bytes seq's file has with every bare LF turned into CRLF.
   A first FETCH of RFC822.SIZE or a SORT (SIZE) counts message after
   message: in a cold folder the next files are read ahead. */
static int mailbox_count_vsize(struct mailbox *box, uint32_t seq, int fd,
			       uint64_t *vsize_r)
{
	unsigned char buf[MAILBOX_VSIZE_CHUNK];
	uint64_t vsize = 0, pos = 0;
	bool last_cr = false;
	ssize_t ret;

	/* pread: a kept file's descriptors share one offset */
	while ((ret = mailbox_read_ahead_pread(box, &box->vsize_read_ahead,
					       seq, fd, buf, sizeof(buf),
					       pos, 0)) != 0) {
		if (ret < 0)
			return -1;
		pos += (uint64_t)ret;
		/* memchr finds the LFs; a bare one gains a CR */
		const unsigned char *p = buf, *end = buf + ret, *lf;
		while ((lf = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			bool cr = lf == buf ? last_cr : lf[-1] == '\r';
			if (!cr)
				vsize++;
			p = lf + 1;
		}
		last_cr = buf[ret - 1] == '\r';
		vsize += (uint64_t)ret;
	}
	*vsize_r = vsize;
	return 0;
}

/* A file that came without ,W=: count once, keep it in the cache. */
static int mailbox_msg_vsize_compute(struct mailbox *box, uint32_t seq,
				     uint32_t uid, uint64_t *vsize_r,
				     const char **error_r)
{
	const void *data;
	size_t size;
	uint64_t vsize;

	if (mailbox_msg_cache_lookup(box, seq, MAILBOX_CACHE_VSIZE, &data,
				     &size) > 0 && size == sizeof(vsize)) {
		memcpy(vsize_r, data, sizeof(vsize));
		return 0;
	}
	int fd = mailbox_msg_open(box, seq, error_r);
	if (fd == -1)
		return -1;
	int ret = mailbox_count_vsize(box, seq, fd, &vsize);
	if (ret < 0)
		*error_r = mailbox_set_error(box, "read(uid %u) failed: %m", uid);
	i_close_fd(&fd);
	if (ret < 0)
		return -1;
	/* the cache add is visible after the next flush: remember it */
	box->vsize_uid = uid;
	box->vsize_value = vsize;
	*vsize_r = vsize;
	(void)mailbox_msg_cache_add(box, seq, MAILBOX_CACHE_VSIZE, &vsize,
				    sizeof(vsize), error_r);
	return 0;
}

int mailbox_msg_vsize(struct mailbox *box, uint32_t seq, uint64_t *vsize_r,
		      const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	if (rec == NULL && exp->vsize != 0) {
		*vsize_r = exp->vsize;
		return 0;
	}
	uint64_t vsize = rec != NULL ? mailbox_msg_known_vsize(box, rec) :
		box->vsize_uid == exp->uid ? box->vsize_value :
		MAILDIR_SIZE_UNKNOWN;
	if (vsize != MAILDIR_SIZE_UNKNOWN) {
		*vsize_r = vsize;
		return 0;
	}
	/* (an expunged message: counted in its kept file) */
	return mailbox_msg_vsize_compute(box, seq, mailbox_msg_uid(box, seq),
					 vsize_r, error_r);
}

/* ---- cache (mailbox.h) ---- */

int mailbox_msg_cache_lookup(struct mailbox *box, uint32_t seq,
			     const char *field, const void **data_r,
			     size_t *size_r)
{
	const struct mailbox_expunged *exp;
	uint32_t iseq = seq_resolve(box, seq, &exp);

	if (iseq == 0)
		return 0;
	return mail_cache_lookup(box->view, iseq, field, data_r, size_r);
}

int mailbox_msg_cache_add(struct mailbox *box, uint32_t seq,
			  const char *field, const void *data, size_t size,
			  const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	if (rec == NULL)
		return mailbox_msg_gone(error_r);
	if (box->cache_trans == NULL)
		box->cache_trans = mail_index_transaction_begin(box->index);
	if (mail_cache_add(box->cache_trans, rec->uid, field, data, size) < 0) {
		*error_r = "Field name or size not acceptable for the cache";
		return -1;
	}
	return 0;
}

int mailbox_cache_flush(struct mailbox *box, const char **error_r)
{
	struct mail_index_commit_result result;

	if (box->cache_trans == NULL)
		return 0;
	/* only a cache: losing it on a crash costs a lookup, never mail */
	if (mail_index_transaction_commit(&box->cache_trans,
					  MAIL_INDEX_FSYNC_NEVER, &result,
					  error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: cache commit failed: %s",
					     box->path, *error_r);
		return -1;
	}
	return 0;
}

int mailbox_msg_set_flags(struct mailbox *box, uint32_t seq,
			  enum mail_flags flags, const char **error_r)
{
	return mailbox_msg_set_flags_keywords(box, seq, flags,
		mailbox_msg_keywords(box, seq), error_r);
}

/* The other session views of this folder that still show uid: its file
   is kept for them until they report the expunge (maildir-ghost.h).
   Returns how many, in *holders_r (i_malloc'd, NULL for none). */
static unsigned int ghost_holders(struct mailbox *box, uint32_t uid,
				  struct mailbox ***holders_r)
{
	unsigned int count, n = 0;
	struct mailbox *const *handles =
		maildir_ghosts_get_handles(box->ghosts, &count);
	struct mailbox **holders = NULL;

	for (unsigned int i = 0; i < count; i++) {
		struct mailbox *h = handles[i];
		/* a view that has not shown uid yet needs nothing */
		if (h == box || uid >= h->visible_next_uid ||
		    mail_index_view_uid_to_seq(h->view, uid) == 0)
			continue;
		if (holders == NULL)
			holders = i_malloc(i_mul_size(count, sizeof(*holders)));
		holders[n++] = h;
	}
	*holders_r = holders;
	return n;
}

/* The bytes of the file that is about to go, for the quota: its S= or,
   without one, its size on disk (0 if even that is gone). */
static uint64_t msg_quota_size(struct mailbox *box, const char *fname,
			       const char *path)
{
	struct maildir_filename fn;
	struct stat st;

	if (box->quota_root == NULL)
		return 0;
	if (maildir_filename_parse(fname, &fn) && fn.size != MAILDIR_SIZE_UNKNOWN)
		return fn.size;
	return lstat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Under the uidlist lock, so a directory scan's commit and ours are
   ordered: unlink, then tell the others through the log. With want_fd,
   the file is opened first and *fd_r is its descriptor (-1 if that
   failed: the expunge goes on without it). */
static int mailbox_msg_unlink_locked(struct mailbox *box, uint32_t seq,
				     bool want_fd, int *fd_r,
				     const char **error_r)
{
	char path[PATH_MAX];
	const char *fname;

	*fd_r = -1;
	for (unsigned int attempt = 0; attempt < MAILBOX_FNAME_ATTEMPTS;
	     attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0)
			break;
		if (snprintf(path, sizeof(path), "%s/%s", box->cur_dir,
			     fname) >= (int)sizeof(path)) {
			errno = ENAMETOOLONG;
			*error_r = "Path too long";
			break;
		}
		/* a rename by another writer keeps the inode: an fd opened
		   under the old name stays right for the new one */
		if (want_fd && *fd_r == -1) {
			*fd_r = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (*fd_r == -1 && errno != ENOENT) {
				i_warning("open(%s) failed: %m (other sessions "
					  "can no longer read the expunged "
					  "message)", path);
				want_fd = false;
			}
		}
		uint64_t size = msg_quota_size(box, fname, path);
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, fname);
		int ret = unlink(path);
		int saved_errno = errno;
		maildir_watch_settle(box->watch);
		errno = saved_errno;
		if (ret == 0) {
			mailbox_quota_account(box, -(int64_t)size, -1);
			box->unlinks_unsynced = true;
			return 0;
		}
		if (errno != ENOENT) {
			*error_r = mailbox_set_error(box, "unlink(%s) failed: %m",
						     path);
			break;
		}
		if (attempt + 1 == MAILBOX_FNAME_ATTEMPTS) {
			mailbox_msg_forget_fname(box, seq);
			(void)mailbox_msg_gone(error_r);
		}
	}
	int saved_errno = errno;
	if (*fd_r != -1)
		i_close_fd(fd_r);
	errno = saved_errno;
	return -1;
}

int mailbox_msg_expunge(struct mailbox *box, uint32_t seq,
			const char **error_r)
{
	uint32_t uid = mailbox_msg_uid(box, seq);
	struct mailbox **holders;
	int fd;

	i_assert(!mailbox_is_readonly(box));
	if (mailbox_msg_is_expunged(box, seq))
		return mailbox_msg_gone(error_r);
	unsigned int holder_count = ghost_holders(box, uid, &holders);
	/* the lock only: nothing here reads the uidlist's records */
	if (maildir_uidlist_lock_append(box->uidlist, error_r) < 0) {
		i_free(holders);
		return -1;
	}
	int ret = mailbox_msg_unlink_locked(box, seq, holder_count > 0, &fd,
					    error_r);
	if (ret == 0) {
		struct mail_index_transaction *t =
			mail_index_transaction_begin(box->index);
		mail_index_expunge(t, uid, uid);
		/* the file is gone: a failed commit is fixed by the next
		   directory scan (cur/ changed) */
		(void)mailbox_index_commit(box, &t, error_r);
		if (fd != -1) {
			maildir_ghosts_keep(box->ghosts, uid, fd, holders,
					    holder_count);
		}
	}
	maildir_uidlist_unlock(box->uidlist);
	i_free(holders);
	/* the next sync drops it from the view */
	return ret;
}

bool mailbox_fsync_defer(struct mailbox *box, bool defer)
{
	if (defer) {
		if ((box->flags & MAILBOX_OPEN_NO_FSYNC) != 0)
			return false;
		box->flags |= MAILBOX_OPEN_NO_FSYNC;
	} else {
		if (!box->fsync_deferred)
			return false;
		box->flags &= ~MAILBOX_OPEN_NO_FSYNC;
	}
	box->fsync_deferred = defer;
	if (defer) {
		/* what mailbox_fsync_deferred_targets() compares with */
		(void)maildir_uidlist_take_unsynced(box->uidlist);
		box->defer_log_seq = mail_index_log_seq(box->index);
	}
	/* what mailbox_open() derives from MAILBOX_OPEN_NO_FSYNC */
	box->fsync_mode = defer ? MAIL_INDEX_FSYNC_NEVER :
		MAIL_INDEX_FSYNC_ALWAYS;
	maildir_uidlist_set_fsync(box->uidlist, !defer);
	return true;
}

static void targets_add(struct mailbox_sync_targets *targets, int fd,
			bool datasync)
{
	i_assert(targets->count < MAILBOX_SYNC_TARGETS_MAX);
	targets->fds[targets->count] = fd;
	targets->datasync[targets->count] = datasync;
	targets->count++;
}

int mailbox_fsync_deferred_targets(struct mailbox *box,
				   struct mailbox_sync_targets *targets_r,
				   const char **error_r)
{
	i_assert(box->fsync_deferred);
	memset(targets_r, 0, sizeof(*targets_r));
	enum maildir_uidlist_unsynced ul =
		maildir_uidlist_take_unsynced(box->uidlist);
	uint32_t seq;
	/* a new log (a first build, a rotation) came with moat.index and
	   directory entries that this handle did not sync */
	if (ul == MAILDIR_UIDLIST_UNSYNCED_OTHER || box->defer_log_seq == 0 ||
	    mail_index_log_seq(box->index) != box->defer_log_seq)
		return 0;
	int fd = open(box->cur_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		*error_r = mailbox_set_error(box, "open(%s) failed: %m",
					     box->cur_dir);
		return -1;
	}
	targets_add(targets_r, fd, false);
	fd = mail_index_log_fd_dup(box->index, &seq);
	if (fd == -1) {
		*error_r = mailbox_set_error(box, "index %s: dup(log) failed: %m",
					     box->path);
		mailbox_sync_targets_close(targets_r);
		return -1;
	}
	targets_add(targets_r, fd, true);
	if (ul == MAILDIR_UIDLIST_UNSYNCED_APPEND) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/" MAILDIR_UIDLIST_NAME,
			     box->path) >= (int)sizeof(path)) {
			*error_r = mailbox_set_error(box, "path too long");
			mailbox_sync_targets_close(targets_r);
			return -1;
		}
		/* read-only does: fdatasync needs no write access */
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1) {
			*error_r = mailbox_set_error(box, "open(%s) failed: %m",
						     path);
			mailbox_sync_targets_close(targets_r);
			return -1;
		}
		targets_add(targets_r, fd, true);
	}
	return 1;
}

void mailbox_sync_targets_close(struct mailbox_sync_targets *targets)
{
	for (unsigned int i = 0; i < targets->count; i++)
		i_close_fd(&targets->fds[i]);
	targets->count = 0;
}

int mailbox_syncfs_fd(struct mailbox *box, const char **error_r)
{
	/* an O_PATH fd does not do: syncfs() needs an open file */
	int fd = open(box->cur_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		*error_r = mailbox_set_error(box, "open(%s) failed: %m",
					     box->cur_dir);
	return fd;
}

int mailbox_syncfs(struct mailbox *box, const char **error_r)
{
	/* an O_PATH fd does not do: syncfs() needs an open file */
	int fd = open(box->cur_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || syncfs(fd) < 0) {
		*error_r = mailbox_set_error(box, "syncfs(%s) failed: %m",
					     box->cur_dir);
		if (fd != -1)
			i_close_fd(&fd);
		return -1;
	}
	i_close_fd(&fd);
	return 0;
}

int mailbox_expunge_sync(struct mailbox *box, const char **error_r)
{
	if (!box->unlinks_unsynced)
		return 0;
	box->unlinks_unsynced = false;
	if ((box->flags & MAILBOX_OPEN_NO_FSYNC) != 0)
		return 0;
	int fd = open(box->cur_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || fsync(fd) < 0) {
		*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
					     box->cur_dir);
		if (fd != -1)
			i_close_fd(&fd);
		return -1;
	}
	i_close_fd(&fd);
	return 0;
}
