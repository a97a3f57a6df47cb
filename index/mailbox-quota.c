/* The Maildir++ quota file (mailbox-quota.h). */
#include "lib.h"
#include "log.h"
#include "maildir-filename.h"
#include "mailbox-quota.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

/* A file bigger than this (others' writers, never compacted) is not read
   line by line: it is recalculated. */
#define QUOTA_FILE_READ_MAX (1024 * 1024)
/* Opening the file again when a compaction replaced it under us. */
#define QUOTA_OPEN_RETRIES 5
#define QUOTA_ERROR_MAX 512

static char quota_error[QUOTA_ERROR_MAX];

static const char *ATTR_FORMAT(1, 2) set_error(const char *fmt, ...)
{
	va_list args;
	int err = errno;

	va_start(args, fmt);
	errno = err;
	vsnprintf(quota_error, sizeof(quota_error), fmt, args);
	va_end(args);
	return quota_error;
}

static void quota_path(const char *root, char *buf, size_t size)
{
	int ret = snprintf(buf, size, "%s/%s", root, MAILBOX_QUOTA_FILE);
	i_assert(ret > 0 && (size_t)ret < size);
}

/* "<n>S,<n>C" (any order, either missing). Returns 0 or -1. */
static int parse_limits(const char *line, size_t len,
			struct mailbox_quota_limits *limits_r, bool *found_r)
{
	const char *p = line, *end = line + len;

	memset(limits_r, 0, sizeof(*limits_r));
	*found_r = false;
	while (p < end) {
		uint64_t num = 0;
		const char *start = p;
		while (p < end && *p >= '0' && *p <= '9') {
			if (num > (UINT64_MAX - 9) / 10)
				return -1;
			num = num * 10 + (uint64_t)(*p++ - '0');
		}
		if (p == start || p == end)
			return -1;
		if (*p == 'S')
			limits_r->storage = num;
		else if (*p == 'C')
			limits_r->messages = num;
		else
			return -1;
		*found_r = *found_r || num != 0;
		p++;
		if (p < end && *p++ != ',')
			return -1;
	}
	return 0;
}

static int parse_signed(const char **pp, const char *end, int64_t *num_r)
{
	const char *p = *pp;
	bool neg = p < end && *p == '-';
	int64_t num = 0;

	if (neg)
		p++;
	const char *start = p;
	while (p < end && *p >= '0' && *p <= '9') {
		if (num > (INT64_MAX - 9) / 10)
			return -1;
		num = num * 10 + (*p++ - '0');
	}
	if (p == start)
		return -1;
	*num_r = neg ? -num : num;
	*pp = p;
	return 0;
}

/* The file's text: limits from its first line, usage from the sum. */
static int parse_file(const char *data, size_t size,
		      struct mailbox_quota_limits *limits_r, bool *limits_found_r,
		      struct mailbox_quota_usage *usage_r)
{
	const char *p = data, *end = data + size;
	const char *lf = memchr(p, '\n', size);

	if (lf == NULL)
		return -1;
	if (parse_limits(p, (size_t)(lf - p), limits_r, limits_found_r) < 0)
		return -1;
	memset(usage_r, 0, sizeof(*usage_r));
	for (p = lf + 1; p < end; p = lf + 1) {
		int64_t storage, messages;
		lf = memchr(p, '\n', (size_t)(end - p));
		if (lf == NULL)
			break;   /* a line being written: not there yet */
		const char *q = p;
		if (parse_signed(&q, lf, &storage) < 0 || q == lf || *q != ' ')
			return -1;
		while (q < lf && *q == ' ')
			q++;
		if (parse_signed(&q, lf, &messages) < 0 || q != lf)
			return -1;
		usage_r->storage += storage;
		usage_r->messages += messages;
	}
	return 0;
}

static int read_fd(int fd, char **data_r, size_t *size_r)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	if (st.st_size > QUOTA_FILE_READ_MAX) {
		errno = EFBIG;
		return -1;
	}
	char *buf = i_malloc((size_t)st.st_size + 1);
	size_t pos = 0;
	while (pos < (size_t)st.st_size) {
		ssize_t ret = pread(fd, buf + pos, (size_t)st.st_size - pos,
				    (off_t)pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			break;   /* shorter than fstat said: use what is there */
		pos += (size_t)ret;
	}
	buf[pos] = '\0';
	*data_r = buf;
	*size_r = pos;
	return 0;
}

static int write_limits_line(char *buf, size_t size,
			     const struct mailbox_quota_limits *limits)
{
	return snprintf(buf, size, "%lluS,%lluC\n",
			(unsigned long long)limits->storage,
			(unsigned long long)limits->messages);
}

/* The file anew (limits and one sum line), through a temporary file and
   rename(2). The caller holds the lock of the old file, if any. */
static int write_file(const char *root, const struct mailbox_quota_limits *limits,
		      const struct mailbox_quota_usage *usage,
		      const char **error_r)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32], text[128];
	int len = write_limits_line(text, sizeof(text), limits);

	len += snprintf(text + len, sizeof(text) - (size_t)len, "%lld %lld\n",
			(long long)usage->storage, (long long)usage->messages);
	quota_path(root, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0) {
		*error_r = set_error("open(%s) failed: %m", tmp);
		return -1;
	}
	if (write(fd, text, (size_t)len) != len) {
		*error_r = set_error("write(%s) failed: %m", tmp);
		close(fd);
		(void)unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		*error_r = set_error("rename(%s) failed: %m", tmp);
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/* Messages of one cur/ or new/ directory. */
static int walk_dir(const char *path, struct mailbox_quota_usage *usage)
{
	DIR *dir = opendir(path);
	struct dirent *d;

	if (dir == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (d->d_name[0] == '.')
			continue;
		uint64_t size = MAILDIR_SIZE_UNKNOWN;
		if (maildir_filename_parse(d->d_name, &fn))
			size = fn.size;
		if (size == MAILDIR_SIZE_UNKNOWN) {
			struct stat st;
			if (fstatat(dirfd(dir), d->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;   /* gone meanwhile, or not a message */
			size = (uint64_t)st.st_size;
		}
		usage->storage += (int64_t)size;
		usage->messages++;
	}
	closedir(dir);
	return 0;
}

static int walk_folder(const char *folder, struct mailbox_quota_usage *usage)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/cur", folder) >= (int)sizeof(path))
		return -1;
	if (walk_dir(path, usage) < 0)
		return -1;
	(void)snprintf(path, sizeof(path), "%s/new", folder);
	return walk_dir(path, usage);
}

int mailbox_quota_folder_usage(const char *root, const char *path,
			       struct mailbox_quota_usage *usage_r)
{
	char qpath[PATH_MAX];

	quota_path(root, qpath, sizeof(qpath));
	if (access(qpath, F_OK) < 0)
		return -1;
	memset(usage_r, 0, sizeof(*usage_r));
	return walk_folder(path, usage_r);
}

int mailbox_quota_recalc(const char *root,
			 const struct mailbox_quota_limits *limits,
			 struct mailbox_quota_usage *usage_r,
			 const char **error_r)
{
	struct mailbox_quota_usage usage = { 0, 0 };
	char path[PATH_MAX];
	DIR *dir = opendir(root);
	struct dirent *d;

	if (dir == NULL) {
		*error_r = set_error("opendir(%s) failed: %m", root);
		return -1;
	}
	int ret = walk_folder(root, &usage);
	/* Maildir++ folders: ".Name" directories of the root */
	while (ret == 0 && (d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.' || strcmp(d->d_name, ".") == 0 ||
		    strcmp(d->d_name, "..") == 0)
			continue;
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", root, d->d_name);
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		ret = walk_folder(path, &usage);
	}
	closedir(dir);
	if (ret < 0) {
		*error_r = set_error("reading %s failed: %m", root);
		return -1;
	}
	if (write_file(root, limits, &usage, error_r) < 0)
		return -1;
	if (usage_r != NULL)
		*usage_r = usage;
	return 0;
}

/* The file opened and locked (exclusive or shared), after a rename by
   another writer the new one. 1, 0 if it does not exist, -1. */
static int open_locked(const char *root, int flags, int lock, int *fd_r,
		       const char **error_r)
{
	char path[PATH_MAX];

	quota_path(root, path, sizeof(path));
	for (unsigned int i = 0; i < QUOTA_OPEN_RETRIES; i++) {
		int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				return 0;
			*error_r = set_error("open(%s) failed: %m", path);
			return -1;
		}
		struct stat st_fd, st_path;
		if (flock(fd, lock) < 0) {
			*error_r = set_error("flock(%s) failed: %m", path);
			close(fd);
			return -1;
		}
		if (fstat(fd, &st_fd) == 0 && stat(path, &st_path) == 0 &&
		    st_fd.st_ino == st_path.st_ino && st_fd.st_dev == st_path.st_dev) {
			*fd_r = fd;
			return 1;
		}
		close(fd);   /* replaced while we waited: the new one */
	}
	*error_r = set_error("%s keeps being replaced", path);
	return -1;
}

int mailbox_quota_get(const char *root, const struct mailbox_quota_limits *limits,
		      struct mailbox_quota_limits *limits_r,
		      struct mailbox_quota_usage *usage_r, const char **error_r)
{
	int fd;
	int ret = open_locked(root, O_RDONLY, LOCK_SH, &fd, error_r);
	char *data = NULL;
	size_t size;
	bool found = false;

	if (ret < 0)
		return -1;
	if (ret > 0) {
		ret = read_fd(fd, &data, &size) < 0 ? -1 :
			parse_file(data, size, limits_r, &found, usage_r);
		i_free(data);
		close(fd);
		if (ret == 0) {
			if (!found)
				*limits_r = *limits;
			return 0;
		}
		i_warning("%s/%s is unreadable or malformed: recalculating",
			  root, MAILBOX_QUOTA_FILE);
	}
	*limits_r = *limits;
	return mailbox_quota_recalc(root, limits, usage_r, error_r);
}

int mailbox_quota_update(const char *root, int64_t storage, int64_t messages,
			 const char **error_r)
{
	struct mailbox_quota_limits limits;
	struct mailbox_quota_usage usage;
	char line[64];
	bool found;
	int fd;

	if (storage == 0 && messages == 0)
		return 0;
	int ret = open_locked(root, O_RDWR | O_APPEND, LOCK_EX, &fd, error_r);
	if (ret <= 0) {
		/* no file yet: made from the folders, with this change in */
		struct mailbox_quota_limits none = { 0, 0 };
		return ret < 0 ? -1 :
			mailbox_quota_recalc(root, &none, NULL, error_r);
	}
	int len = snprintf(line, sizeof(line), "%lld %lld\n",
			   (long long)storage, (long long)messages);
	if (write(fd, line, (size_t)len) != len) {
		*error_r = set_error("write(%s/%s) failed: %m", root,
				     MAILBOX_QUOTA_FILE);
		close(fd);
		return -1;
	}
	struct stat st;
	ret = 0;
	if (fstat(fd, &st) == 0 && st.st_size > MAILBOX_QUOTA_COMPACT_SIZE) {
		/* the sum in one line, still under our lock */
		char *data;
		size_t size;
		if (read_fd(fd, &data, &size) == 0) {
			if (parse_file(data, size, &limits, &found, &usage) == 0)
				ret = write_file(root, &limits, &usage, error_r);
			i_free(data);
		}
	}
	close(fd);
	return ret;
}

int mailbox_quota_set_limits(const char *root,
			     const struct mailbox_quota_limits *limits,
			     const char **error_r)
{
	struct mailbox_quota_limits old;
	struct mailbox_quota_usage usage;
	char *data;
	size_t size;
	bool found;
	int fd;

	int ret = open_locked(root, O_RDWR, LOCK_EX, &fd, error_r);
	if (ret <= 0)
		return ret < 0 ? -1 :
			mailbox_quota_recalc(root, limits, NULL, error_r);
	data = NULL;
	ret = read_fd(fd, &data, &size) < 0 ? -1 :
		parse_file(data, size, &old, &found, &usage);
	i_free(data);
	if (ret < 0) {
		close(fd);
		return mailbox_quota_recalc(root, limits, NULL, error_r);
	}
	if (old.storage != limits->storage || old.messages != limits->messages)
		ret = write_file(root, limits, &usage, error_r);
	else
		ret = 0;
	close(fd);
	return ret;
}

int mailbox_quota_check(const struct mailbox_quota_limits *limits,
			const struct mailbox_quota_usage *usage,
			uint64_t grace, uint64_t storage, uint64_t messages)
{
	if (limits->messages != 0 && usage->messages >= 0 &&
	    (uint64_t)usage->messages + messages > limits->messages)
		return 0;
	if (limits->storage == 0 || storage == 0)
		return 1;
	uint64_t used = usage->storage < 0 ? 0 : (uint64_t)usage->storage;
	if (used + storage <= limits->storage)
		return 1;
	/* over only by the grace, from below the limit */
	return used < limits->storage &&
		used + storage <= limits->storage + grace ? 1 : 0;
}
