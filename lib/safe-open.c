/* Symlink-free opens below a directory (safe-open.h). */
#include "lib.h"
#include "safe-open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

/* Whether the kernel has openat2: learned at the first call (ENOSYS). */
static bool safe_open_no_openat2;

bool safe_open_errno_is_symlink(int err)
{
	return err == ELOOP || err == EXDEV;
}

/* An O_PATH open with O_NOFOLLOW gives the symlink itself: refuse it. */
static int safe_open_check_link(int fd, int flags)
{
	struct stat st;

	if ((flags & O_PATH) == 0)
		return fd;
	int ret = fstat(fd, &st);
	if (ret < 0 || S_ISLNK(st.st_mode)) {
		int saved = ret < 0 ? errno : ELOOP;
		i_close_fd(&fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* O_DIRECTORY | O_NOFOLLOW of a symlink fails with ENOTDIR: say ELOOP,
   so that callers see "a symlink" (only the errno is decided here). */
static int safe_open_fix_errno(int dirfd, const char *path, int flags)
{
	struct stat st;
	int saved = errno;

	if (saved == ENOTDIR && (flags & O_DIRECTORY) != 0 &&
	    fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		saved = ELOOP;
	errno = saved;
	return -1;
}

int safe_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if (!safe_open_no_openat2) {
		struct open_how how;

		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
		/* openat2 refuses a mode without O_CREAT/O_TMPFILE */
		how.mode = (flags & (O_CREAT | __O_TMPFILE)) != 0 ? mode : 0;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			RESOLVE_NO_MAGICLINKS;
		long fd;
		do {
			fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		} while (fd < 0 && errno == EAGAIN);
		if (fd >= 0)
			return safe_open_check_link((int)fd, flags);
		if (errno != ENOSYS)
			return safe_open_fix_errno(dirfd, path, flags);
		safe_open_no_openat2 = true;
	}
	return safe_openat_walk(dirfd, path, flags, mode);
}

int safe_openat_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	char buf[SAFE_OPEN_PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		errno = len == 0 ? ENOENT : ENAMETOOLONG;
		return -1;
	}
	if (path[0] == '/') {
		errno = EXDEV;   /* as openat2 answers RESOLVE_BENEATH */
		return -1;
	}
	memcpy(buf, path, len + 1);
	int cur = dirfd;
	char *name = buf;
	for (;;) {
		char *slash = strchr(name, '/');
		if (slash != NULL)
			*slash = '\0';
		if (strcmp(name, "..") == 0) {
			if (cur != dirfd)
				i_close_fd(&cur);
			errno = EXDEV;
			return -1;
		}
		/* "a//b" and "a/./b" name the same file: skip the empty part */
		bool skip = name[0] == '\0' || strcmp(name, ".") == 0;
		int fd;
		if (slash == NULL) {
			fd = openat(cur, skip ? "." : name,
				    flags | O_NOFOLLOW | O_CLOEXEC, mode);
			if (fd != -1)
				fd = safe_open_check_link(fd, flags);
			else
				(void)safe_open_fix_errno(cur, name, flags);
		} else if (skip) {
			name = slash + 1;
			continue;
		} else {
			/* a symlinked directory gives ENOTDIR or the link */
			fd = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
				    O_CLOEXEC);
			if (fd == -1 && errno == ENOTDIR) {
				struct stat st;
				if (fstatat(cur, name, &st,
					    AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode))
					errno = ELOOP;
				else
					errno = ENOTDIR;
			}
			if (fd != -1)
				fd = safe_open_check_link(fd, O_PATH);
		}
		int saved = errno;
		if (cur != dirfd)
			i_close_fd(&cur);
		if (fd == -1) {
			/* a symlink as the last component with O_NOFOLLOW */
			errno = saved;
			return -1;
		}
		if (slash == NULL)
			return fd;
		cur = fd;
		name = slash + 1;
	}
}

FILE *safe_fopen_nofollow(const char *path, const char *mode)
{
	bool write = mode[0] == 'w';
	int fd = open(path, (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) |
		      O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd == -1)
		return NULL;
	FILE *f = fdopen(fd, write ? "w" : "r");
	if (f == NULL) {
		int saved = errno;
		i_close_fd(&fd);
		errno = saved;
	}
	return f;
}
