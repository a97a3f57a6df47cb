/* Opening a Maildir folder as a mailbox view and reading its messages
   (mailbox.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-list.h"

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
	box->uidlist = maildir_uidlist_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	box->keywords = maildir_keywords_init(path,
		(flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	maildir_unique_init(&box->unique);
	return box;
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

	*_box = NULL;
	for (uint32_t i = 0; i < box->count; i++)
		i_free(box->msgs[i].fname);
	i_free(box->msgs);
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
	return maildir_uidlist_get_uidvalidity(box->uidlist);
}

uint32_t mailbox_get_next_uid(struct mailbox *box)
{
	return maildir_uidlist_get_next_uid(box->uidlist);
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

bool mailbox_msg_is_crlf(struct mailbox *box, uint32_t seq)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	return msg->size != MAILDIR_SIZE_UNKNOWN && msg->size == msg->vsize;
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

static int mailbox_msg_path(struct mailbox *box, struct mailbox_msg *msg,
			    char *buf, size_t size, const char **error_r)
{
	if (msg->expunged || msg->fname == NULL) {
		errno = ENOENT;
		*error_r = "Message was expunged";
		return -1;
	}
	if (snprintf(buf, size, "%s/%s", box->cur_dir, msg->fname) >= (int)size) {
		errno = ENAMETOOLONG;
		*error_r = "Path too long";
		return -1;
	}
	return 0;
}

int mailbox_msg_open(struct mailbox *box, uint32_t seq, const char **error_r)
{
	char path[PATH_MAX];
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	if (mailbox_msg_path(box, msg, path, sizeof(path), error_r) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		*error_r = errno == ENOENT ? "Message was expunged" :
			mailbox_set_error(box, "open(%s) failed: %m", path);
	}
	return fd;
}

int mailbox_msg_internaldate(struct mailbox *box, uint32_t seq,
			     time_t *date_r, const char **error_r)
{
	char path[PATH_MAX];
	struct stat st;

	if (mailbox_msg_path(box, mailbox_msg(box, seq), path, sizeof(path),
			     error_r) < 0)
		return -1;
	if (stat(path, &st) < 0) {
		*error_r = errno == ENOENT ? "Message was expunged" :
			mailbox_set_error(box, "stat(%s) failed: %m", path);
		return -1;
	}
	*date_r = st.st_mtime;
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

int mailbox_msg_vsize(struct mailbox *box, uint32_t seq, uint64_t *vsize_r,
		      const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	if (msg->vsize == MAILDIR_SIZE_UNKNOWN) {
		int fd = mailbox_msg_open(box, seq, error_r);
		if (fd == -1)
			return -1;
		int ret = mailbox_count_vsize(fd, &msg->vsize);
		if (ret < 0)
			*error_r = mailbox_set_error(box, "read(%s) failed: %m",
						     msg->fname);
		i_close_fd(&fd);
		if (ret < 0)
			return -1;
	}
	*vsize_r = msg->vsize;
	return 0;
}

int mailbox_msg_set_flags(struct mailbox *box, uint32_t seq,
			  enum mail_flags flags, const char **error_r)
{
	struct mailbox_msg *msg = mailbox_msg(box, seq);
	struct maildir_filename fn;
	char old_path[PATH_MAX], new_path[PATH_MAX];
	char new_name[MAILDIR_FILENAME_MAX + 1];

	i_assert(!mailbox_is_readonly(box));
	flags &= MAIL_FLAGS_PERMANENT;
	if (mailbox_msg_path(box, msg, old_path, sizeof(old_path), error_r) < 0)
		return -1;
	if ((msg->flags & MAIL_FLAGS_PERMANENT) == flags)
		return 0;
	if (!maildir_filename_parse(msg->fname, &fn) ||
	    maildir_filename_make(new_name, sizeof(new_name), msg->fname,
				  fn.base_len, flags, fn.other_flags) < 0 ||
	    snprintf(new_path, sizeof(new_path), "%s/%s", box->cur_dir,
		     new_name) >= (int)sizeof(new_path)) {
		*error_r = mailbox_set_error(box, "Can't rename %s", msg->fname);
		return -1;
	}
	if (rename(old_path, new_path) < 0) {
		*error_r = errno == ENOENT ? "Message was expunged" :
			mailbox_set_error(box, "rename(%s, %s) failed: %m",
					  old_path, new_path);
		return -1;
	}
	i_free(msg->fname);
	msg->fname = i_strdup(new_name);
	msg->flags = flags | (msg->flags & MAIL_RECENT);
	return 0;
}

int mailbox_msg_expunge(struct mailbox *box, uint32_t seq,
			const char **error_r)
{
	char path[PATH_MAX];
	struct mailbox_msg *msg = mailbox_msg(box, seq);

	i_assert(!mailbox_is_readonly(box));
	if (mailbox_msg_path(box, msg, path, sizeof(path), error_r) < 0)
		return -1;
	if (unlink(path) < 0) {
		*error_r = errno == ENOENT ? "Message was expunged" :
			mailbox_set_error(box, "unlink(%s) failed: %m", path);
		return -1;
	}
	/* the next sync drops it from the view and the uidlist */
	return 0;
}
