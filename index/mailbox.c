/* Opening a Maildir folder as a mailbox view and reading its messages
   (mailbox.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-list.h"

#include "mail-cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* Chunk for counting line ends when a name carries no ,W= size. */
#define MAILBOX_VSIZE_CHUNK 8192

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

static int mailbox_create_dirs(struct mailbox *box, const char **error_r)
{
	const char *const dirs[] = { box->path, box->cur_dir, box->new_dir,
				     box->tmp_dir };

	if (mkdir_parents(box->path) < 0) {
		*error_r = mailbox_set_error(box, "mkdir(parents of %s) failed: %m",
					     box->path);
		return -1;
	}

	for (unsigned int i = 0; i < N_ELEMENTS(dirs); i++) {
		if (mkdir_if_missing(dirs[i]) < 0) {
			*error_r = mailbox_set_error(box, "mkdir(%s) failed: %m",
						     dirs[i]);
			return -1;
		}
	}
	return 0;
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
	box->flags = flags;
	box->fsync_mode = (flags & MAILBOX_OPEN_NO_FSYNC) != 0 ?
		MAIL_INDEX_FSYNC_NEVER : MAIL_INDEX_FSYNC_ALWAYS;
	box->uidlist = maildir_uidlist_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	box->keywords = maildir_keywords_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	maildir_unique_init(&box->unique);
	return box;
}

/* The index files, for starting over when the library cannot open them. */
static void mailbox_index_unlink(struct mailbox *box)
{
	static const char *const names[] = {
		MAIL_INDEX_FILE_NAME, MAIL_INDEX_LOG_FILE_NAME,
		MAIL_INDEX_LOG2_FILE_NAME, MAIL_INDEX_CACHE_FILE_NAME,
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

static void mailbox_msg_from_rec(struct mailbox_msg *msg,
				 const struct mail_index_record *rec)
{
	memset(msg, 0, sizeof(*msg));
	msg->uid = rec->uid;
	msg->flags = rec->flags & MAIL_FLAGS_PERMANENT;
	msg->keywords = rec->keywords;
	msg->size = MAILDIR_SIZE_UNKNOWN;
	msg->vsize = rec->size == 0 ? MAILDIR_SIZE_UNKNOWN : rec->size;
	msg->internal_date = rec->internal_date;
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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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
	uint32_t count = mail_index_view_count(box->view);
	mailbox_msgs_reserve(box, count);
	for (uint32_t seq = 1; seq <= count; seq++) {
		mailbox_msg_from_rec(&box->msgs[seq - 1],
				     mail_index_view_lookup(box->view, seq));
	}
	box->count = count;
	if (!box->scan_dirty)
		mailbox_stamp_load(box);
	return 0;
}

int mailbox_index_commit(struct mailbox *box,
			 struct mail_index_transaction **t,
			 const char **error_r)
{
	struct mail_index_commit_result result;

	if (mail_index_transaction_commit(t, box->fsync_mode, &result,
					  error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: commit failed: %s",
					     box->path, *error_r);
		i_error("%s", *error_r);
		return -1;
	}
	return 0;
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
	if (mailbox_create_dirs(box, error_r) < 0 ||
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
	if (box->cache_trans != NULL)
		(void)mailbox_cache_flush(box, &error);
	for (uint32_t i = 0; i < box->count; i++)
		i_free(box->msgs[i].fname);
	i_free(box->msgs);
	i_free(box->ev_expunged.uids);
	i_free(box->ev_changed.uids);
	i_free(box->ev_appended.uids);
	mail_index_view_close(&box->view);
	if (box->index != NULL)
		mail_index_close(&box->index);
	maildir_uidlist_deinit(&box->uidlist);
	maildir_keywords_deinit(&box->keywords);
	i_free(box->name);
	i_free(box->path);
	i_free(box->cur_dir);
	i_free(box->new_dir);
	i_free(box->tmp_dir);
	i_free(box);
}

void mailbox_msgs_reserve(struct mailbox *box, uint32_t count)
{
	if (count <= box->alloc)
		return;
	uint32_t alloc = box->alloc == 0 ? 64 : box->alloc;
	while (alloc < count)
		alloc *= 2;
	box->msgs = i_realloc(box->msgs, i_mul_size(alloc, sizeof(*box->msgs)));
	box->alloc = alloc;
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

uint32_t mailbox_get_count(struct mailbox *box)
{
	return box->count;
}

uint32_t mailbox_get_recent_count(struct mailbox *box)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < box->count; i++) {
		if ((box->msgs[i].flags & MAIL_RECENT) != 0)
			n++;
	}
	return n;
}

uint32_t mailbox_get_first_unseen_seq(struct mailbox *box)
{
	for (uint32_t i = 0; i < box->count; i++) {
		if ((box->msgs[i].flags & MAIL_SEEN) == 0)
			return i + 1;
	}
	return 0;
}

static struct mailbox_msg *mailbox_msg(struct mailbox *box, uint32_t seq)
{
	i_assert(seq >= 1 && seq <= box->count);
	return &box->msgs[seq - 1];
}

uint32_t mailbox_msg_uid(struct mailbox *box, uint32_t seq)
{
	return mailbox_msg(box, seq)->uid;
}

enum mail_flags mailbox_msg_flags(struct mailbox *box, uint32_t seq)
{
	return mailbox_msg(box, seq)->flags;
}

bool mailbox_msg_is_expunged(struct mailbox *box, uint32_t seq)
{
	return mailbox_msg(box, seq)->expunged;
}

uint32_t mailbox_uid_to_seq_ge(struct mailbox *box, uint32_t uid)
{
	uint32_t lo = 0, hi = box->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (box->msgs[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < box->count ? lo + 1 : 0;
}

/* The uidlist record of uid; the file is read (again) only when the uid
   is not in memory yet. */
static struct maildir_uidlist_rec *
mailbox_uidlist_find(struct mailbox *box, uint32_t uid, const char **error_r)
{
	for (unsigned int pass = 0; pass < 2; pass++) {
		unsigned int lo = 0, hi = maildir_uidlist_count(box->uidlist);
		while (lo < hi) {
			unsigned int mid = lo + (hi - lo) / 2;
			struct maildir_uidlist_rec *rec =
				maildir_uidlist_get(box->uidlist, mid);
			if (rec->uid == uid)
				return rec;
			if (rec->uid < uid)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (pass == 0 && !maildir_uidlist_is_locked(box->uidlist) &&
		    maildir_uidlist_refresh(box->uidlist, error_r) <= 0)
			break;
	}
	return NULL;
}

/* Look for base in cur/ (a name the index flags do not predict). */
static int mailbox_find_base(struct mailbox *box, const char *base,
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

static int mailbox_msg_gone(const char **error_r)
{
	errno = ENOENT;
	*error_r = "Message was expunged";
	return -1;
}

int mailbox_msg_get_fname(struct mailbox *box, uint32_t seq, bool rescan,
			  const char **fname_r, const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	char name[MAILDIR_FILENAME_MAX + 1];
	char letters[MAILDIR_KEYWORDS_MAX + 1];

	if (msg->expunged)
		return mailbox_msg_gone(error_r);
	if (msg->fname != NULL && !rescan) {
		*fname_r = msg->fname;
		return 0;
	}
	struct maildir_uidlist_rec *rec =
		mailbox_uidlist_find(box, msg->uid, error_r);
	if (rec == NULL)
		return mailbox_msg_gone(error_r);
	if (msg->size == MAILDIR_SIZE_UNKNOWN)
		msg->size = rec->size;
	if (rescan) {
		int ret = mailbox_find_base(box, rec->base, name, sizeof(name));
		if (ret < 0) {
			*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
						     box->cur_dir);
			return -1;
		}
		if (ret == 0)
			return mailbox_msg_gone(error_r);
	} else {
		/* the index flags are what the name carries after a sync */
		maildir_keywords_to_letters(msg->keywords, letters);
		if (maildir_filename_make(name, sizeof(name), rec->base,
					  strlen(rec->base),
					  msg->flags & MAIL_FLAGS_PERMANENT,
					  letters) < 0)
			return mailbox_msg_gone(error_r);
	}
	i_free(msg->fname);
	msg->fname = i_strdup(name);
	*fname_r = msg->fname;
	return 0;
}

void mailbox_msg_forget_fname(struct mailbox *box, uint32_t seq)
{
	i_free(mailbox_msg(box, seq)->fname);
}

uint64_t mailbox_msg_phys_size(struct mailbox *box, uint32_t seq)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	const char *error;

	if (msg->size == MAILDIR_SIZE_UNKNOWN && !msg->expunged) {
		struct maildir_uidlist_rec *rec =
			mailbox_uidlist_find(box, msg->uid, &error);
		if (rec != NULL)
			msg->size = rec->size;
	}
	return msg->size;
}

bool mailbox_msg_is_crlf(struct mailbox *box, uint32_t seq)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	uint64_t size = mailbox_msg_phys_size(box, seq);

	return size != MAILDIR_SIZE_UNKNOWN && size == msg->vsize;
}

int mailbox_msg_open(struct mailbox *box, uint32_t seq, const char **error_r)
{
	char path[PATH_MAX];
	const char *fname;

	for (unsigned int attempt = 0; attempt < 2; attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0)
			return -1;
		if (snprintf(path, sizeof(path), "%s/%s", box->cur_dir,
			     fname) >= (int)sizeof(path)) {
			errno = ENAMETOOLONG;
			*error_r = "Path too long";
			return -1;
		}
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd != -1)
			return fd;
		if (errno != ENOENT) {
			*error_r = mailbox_set_error(box, "open(%s) failed: %m",
						     path);
			return -1;
		}
	}
	mailbox_msg_forget_fname(box, seq);
	return mailbox_msg_gone(error_r);
}

int mailbox_msg_internaldate(struct mailbox *box, uint32_t seq,
			     time_t *date_r, const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	if (msg->expunged)
		return mailbox_msg_gone(error_r);
	*date_r = (time_t)msg->internal_date;
	return 0;
}

/* Count the bytes the file has with every bare LF turned into CRLF. */
static int mailbox_count_vsize(int fd, uint64_t *vsize_r)
{
	unsigned char buf[MAILBOX_VSIZE_CHUNK];
	uint64_t vsize = 0;
	bool last_cr = false;
	ssize_t ret;

	while ((ret = read(fd, buf, sizeof(buf))) != 0) {
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (ssize_t i = 0; i < ret; i++) {
			if (buf[i] == '\n' && !last_cr)
				vsize++;
			last_cr = buf[i] == '\r';
		}
		vsize += (uint64_t)ret;
	}
	*vsize_r = vsize;
	return 0;
}

/* A file that came without ,W=: count once, keep it in the cache. */
static int mailbox_msg_vsize_compute(struct mailbox *box, uint32_t seq,
				     const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	const void *data;
	size_t size;
	uint64_t vsize;

	if (mailbox_msg_cache_lookup(box, seq, MAILBOX_CACHE_VSIZE, &data,
				     &size) > 0 && size == sizeof(vsize)) {
		memcpy(&vsize, data, sizeof(vsize));
		msg->vsize = vsize;
		return 0;
	}
	int fd = mailbox_msg_open(box, seq, error_r);
	if (fd == -1)
		return -1;
	int ret = mailbox_count_vsize(fd, &vsize);
	if (ret < 0)
		*error_r = mailbox_set_error(box, "read(%s) failed: %m",
					     msg->fname);
	i_close_fd(&fd);
	if (ret < 0)
		return -1;
	msg->vsize = vsize;
	(void)mailbox_msg_cache_add(box, seq, MAILBOX_CACHE_VSIZE, &vsize,
				    sizeof(vsize), error_r);
	return 0;
}

int mailbox_msg_vsize(struct mailbox *box, uint32_t seq, uint64_t *vsize_r,
		      const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	if (msg->expunged)
		return mailbox_msg_gone(error_r);
	if (msg->vsize == MAILDIR_SIZE_UNKNOWN &&
	    mailbox_msg_vsize_compute(box, seq, error_r) < 0)
		return -1;
	*vsize_r = msg->vsize;
	return 0;
}

/* ---- cache (mailbox.h) ---- */

int mailbox_msg_cache_lookup(struct mailbox *box, uint32_t seq,
			     const char *field, const void **data_r,
			     size_t *size_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	uint32_t iseq = mail_index_view_uid_to_seq(box->view, msg->uid);

	if (msg->expunged || iseq == 0)
		return 0;
	return mail_cache_lookup(box->view, iseq, field, data_r, size_r);
}

int mailbox_msg_cache_add(struct mailbox *box, uint32_t seq,
			  const char *field, const void *data, size_t size,
			  const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	if (msg->expunged)
		return mailbox_msg_gone(error_r);
	if (box->cache_trans == NULL)
		box->cache_trans = mail_index_transaction_begin(box->index);
	if (mail_cache_add(box->cache_trans, msg->uid, field, data, size) < 0) {
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
		mailbox_msg(box, seq)->keywords, error_r);
}

/* Under the uidlist lock, so a directory scan's commit and ours are
   ordered: unlink, then tell the others through the log. */
static int mailbox_msg_unlink_locked(struct mailbox *box, uint32_t seq,
				     const char **error_r)
{
	char path[PATH_MAX];
	const char *fname;

	for (unsigned int attempt = 0; attempt < 2; attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0)
			return -1;
		if (snprintf(path, sizeof(path), "%s/%s", box->cur_dir,
			     fname) >= (int)sizeof(path)) {
			errno = ENAMETOOLONG;
			*error_r = "Path too long";
			return -1;
		}
		if (unlink(path) == 0)
			return 0;
		if (errno != ENOENT) {
			*error_r = mailbox_set_error(box, "unlink(%s) failed: %m",
						     path);
			return -1;
		}
	}
	mailbox_msg_forget_fname(box, seq);
	return mailbox_msg_gone(error_r);
}

int mailbox_msg_expunge(struct mailbox *box, uint32_t seq,
			const char **error_r)
{
	uint32_t uid = mailbox_msg(box, seq)->uid;

	i_assert(!mailbox_is_readonly(box));
	if (maildir_uidlist_lock(box->uidlist, error_r) < 0)
		return -1;
	int ret = mailbox_msg_unlink_locked(box, seq, error_r);
	if (ret == 0) {
		struct mail_index_transaction *t =
			mail_index_transaction_begin(box->index);
		mail_index_expunge(t, uid, uid);
		/* the file is gone: a failed commit is fixed by the next
		   directory scan (cur/ changed) */
		(void)mailbox_index_commit(box, &t, error_r);
	}
	maildir_uidlist_unlock(box->uidlist);
	/* the next sync drops it from the view */
	return ret;
}
