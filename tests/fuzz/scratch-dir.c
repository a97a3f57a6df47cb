/* See scratch-dir.h. */
#include "scratch-dir.h"
#include "log.h"

#include <dirent.h>
#include <fcntl.h>

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

/* Empty the directory open as fd (closed here). */
static void remove_children(int fd, const char *top, unsigned int depth)
{
	DIR *dir = fdopendir(fd);
	struct dirent *d;

	if (dir == NULL)
		i_fatal("fuzz: fdopendir(%s) failed: %s", top, strerror(errno));
	/* Linux's readdir() goes on correctly past entries removed
	   since the directory was opened. */
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (d->d_type == DT_DIR)
			remove_at(dirfd(dir), d->d_name, top, depth + 1);
		else if (unlinkat(dirfd(dir), d->d_name, 0) < 0) {
			/* DT_UNKNOWN on a file system without types */
			if (errno != EISDIR)
				i_fatal("fuzz: unlink(%s/.../%s) failed: %s",
					top, d->d_name, strerror(errno));
			remove_at(dirfd(dir), d->d_name, top, depth + 1);
		}
	}
	closedir(dir);
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

void scratch_clear_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		i_fatal("fuzz: open(%s) failed: %s", path, strerror(errno));
	remove_children(fd, path, 0);
}
