/* Unit tests for lib/safe-open.c: a symlink in any component (the file,
   a directory on the way), ".." and absolute paths are refused by both
   openat2 and the per-component fallback; plain files and directories
   open. */
#include "test-common.h"
#include "safe-open.h"

#include <fcntl.h>
#include <sys/stat.h>

typedef int open_func_t(int dirfd, const char *path, int flags, mode_t mode);

/* root/cur/msg, root/other/secret, root/link -> other/secret,
   root/curlink -> other, root/cur/msglink -> ../other/secret */
static int make_tree(const char *root)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/cur", root);
	test_assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/other", root);
	test_assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/cur/msg", root);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	test_assert(fd != -1 && write(fd, "mine", 4) == 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/other/secret", root);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	test_assert(fd != -1 && write(fd, "theirs", 6) == 6);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", root);
	test_assert(symlink("other/secret", path) == 0);
	snprintf(path, sizeof(path), "%s/curlink", root);
	test_assert(symlink("other", path) == 0);
	snprintf(path, sizeof(path), "%s/cur/msglink", root);
	test_assert(symlink("../other/secret", path) == 0);
	return open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void check_opens(open_func_t *func, int root_fd)
{
	char buf[16];

	int fd = func(root_fd, "cur/msg", O_RDONLY, 0);
	test_assert(fd != -1);
	test_assert(fd != -1 && read(fd, buf, sizeof(buf)) == 4);
	if (fd != -1)
		close(fd);
	fd = func(root_fd, "cur", O_PATH | O_DIRECTORY, 0);
	test_assert(fd != -1);
	if (fd != -1)
		close(fd);
	/* a file the caller creates, below a real directory */
	fd = func(root_fd, "cur/new-file", O_WRONLY | O_CREAT | O_EXCL, 0600);
	test_assert(fd != -1);
	if (fd != -1)
		close(fd);
	test_assert(unlinkat(root_fd, "cur/new-file", 0) == 0);
}

static void check_refusals(open_func_t *func, int root_fd)
{
	static const char *const bad[] = {
		"link",            /* the file itself */
		"curlink/secret",  /* a directory on the way */
		"cur/msglink",     /* a symlink inside a real directory */
		"cur/../../x", "../x", "/etc/passwd",
	};

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++) {
		errno = 0;
		int fd = func(root_fd, bad[i], O_RDONLY, 0);
		test_assert(fd == -1);
		if (fd != -1)
			close(fd);
		test_assert(safe_open_errno_is_symlink(errno));
	}
	/* O_PATH of a symlink: not the link itself */
	int fd = func(root_fd, "curlink", O_PATH | O_DIRECTORY, 0);
	test_assert(fd == -1 && safe_open_errno_is_symlink(errno));
	fd = func(root_fd, "link", O_PATH, 0);
	test_assert(fd == -1 && safe_open_errno_is_symlink(errno));
	/* O_CREAT through a symlinked directory creates nothing there */
	fd = func(root_fd, "curlink/planted", O_WRONLY | O_CREAT, 0600);
	test_assert(fd == -1);
	test_assert(faccessat(root_fd, "other/planted", F_OK, 0) < 0);
	errno = 0;
	fd = func(root_fd, "cur/nonexistent", O_RDONLY, 0);
	test_assert(fd == -1 && errno == ENOENT);
}

static void test_safe_openat(void)
{
	int root_fd = make_tree(test_tmpdir());

	test_assert(root_fd != -1);
	check_opens(safe_openat, root_fd);
	check_refusals(safe_openat, root_fd);
	close(root_fd);
	test_tmpdir_cleanup();
}

static void test_safe_openat_walk(void)
{
	int root_fd = make_tree(test_tmpdir());

	test_assert(root_fd != -1);
	check_opens(safe_openat_walk, root_fd);
	check_refusals(safe_openat_walk, root_fd);
	close(root_fd);
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_safe_openat), TEST(test_safe_openat_walk))
