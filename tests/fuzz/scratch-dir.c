/* See scratch-dir.h. */
#include "scratch-dir.h"
#include "log.h"

#include <dirent.h>
#include <fcntl.h>

/* Directory entries read per getdents64() call: a Maildir folder's
   few entries at once, and deeper levels each have their own. */
#define SCRATCH_DIRENT_BUF 2048

static char scratch_path[PATH_MAX];

static const char *scratch_parent(void)
{
	const char *dir = getenv("MOAT_FUZZ_TMPDIR");

	if (dir != NULL && dir[0] != '\0')
		return dir;
	if (access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

static void scratch_cleanup(void)
{
	scratch_remove_tree(scratch_path);
}

const char *scratch_dir_create(const char *name)
{
	int len = snprintf(scratch_path, sizeof(scratch_path),
			   "%s/moat-fuzz-%s.XXXXXX", scratch_parent(), name);

	if (len < 0 || (size_t)len >= sizeof(scratch_path))
		i_fatal("fuzz: scratch directory path too long");
	if (mkdtemp(scratch_path) == NULL)
		i_fatal("fuzz: mkdtemp(%s) failed: %s", scratch_path,
			strerror(errno));
	atexit(scratch_cleanup);
	return scratch_path;
}

static void remove_at(int dir_fd, const char *name, const char *top,
		      unsigned int depth);

/* Empty the directory open as fd (closed here). getdents64() into a
   buffer on the stack rather than readdir(): fdopendir()'s 32 KiB
   allocation per directory, under ASan, cost more than the removal. */
static void remove_children(int fd, const char *top, unsigned int depth)
{
	char buf[SCRATCH_DIRENT_BUF] __attribute__((aligned(8)));
	ssize_t len;

	/* Linux goes on correctly past entries removed since the
	   directory was opened (as readdir() relies on too). */
	while ((len = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t pos = 0; pos < len; ) {
			const struct dirent64 *d = (const void *)(buf + pos);

			pos += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			if (d->d_type == DT_DIR)
				remove_at(fd, d->d_name, top, depth + 1);
			else if (unlinkat(fd, d->d_name, 0) < 0) {
				/* DT_UNKNOWN on a file system without types */
				if (errno != EISDIR)
					i_fatal("fuzz: unlink(%s/.../%s) failed: %s",
						top, d->d_name, strerror(errno));
				remove_at(fd, d->d_name, top, depth + 1);
			}
		}
	}
	if (len < 0)
		i_fatal("fuzz: getdents64(%s/...) failed: %s", top,
			strerror(errno));
	i_close_fd(&fd);
}

static void remove_at(int dir_fd, const char *name, const char *top,
		      unsigned int depth)
{
	if (depth > SCRATCH_MAX_DEPTH)
		i_fatal("fuzz: %s is deeper than %u levels", top,
			SCRATCH_MAX_DEPTH);
	int fd = openat(dir_fd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		/* not a directory (or a symlink to one): the entry itself */
		if (errno == ENOTDIR || errno == ELOOP) {
			if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
				return;
		}
		i_fatal("fuzz: removing %s failed: %s", top, strerror(errno));
	}
	remove_children(fd, top, depth);
	if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		i_fatal("fuzz: rmdir(%s/...) failed: %s", top, strerror(errno));
}

void scratch_remove_tree(const char *path)
{
	remove_at(AT_FDCWD, path, path, 0);
}

void scratch_remove_at(int dir_fd, const char *name, const char *top)
{
	remove_at(dir_fd, name, top, 1);
}

void scratch_clear_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		i_fatal("fuzz: open(%s) failed: %s", path, strerror(errno));
	remove_children(fd, path, 0);
}
