/* Unit tests for lib/landlock.c: a forked child confined as the imap
   process is (its home and mail root writable, the system directories
   readable) must reach its own Maildir and not another user's, although
   both belong to the same uid. Needs no root. Skipped, with a line
   saying so, where the kernel has no Landlock ABI 2. */
#include "test-common.h"
#include "landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Child exit codes. */
#define CHILD_OK 0
#define CHILD_NO_LANDLOCK 77
/* 10 + the number of the check that failed */
#define CHILD_CHECK_BASE 10

#define TEST_PATH_MAX 512

static char home_a[TEST_PATH_MAX], root_a[TEST_PATH_MAX + 16];
static char home_b[TEST_PATH_MAX], root_b[TEST_PATH_MAX + 16];
static char path_buf[TEST_PATH_MAX * 2];

static const char *path(const char *dir, const char *rel)
{
	(void)snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, rel);
	return path_buf;
}

static void make_user(char *home, char *root, const char *name)
{
	(void)snprintf(home, TEST_PATH_MAX, "%s/%s", test_tmpdir(), name);
	(void)snprintf(root, TEST_PATH_MAX + 16, "%s/Maildir", home);
	static const char *const subdirs[] = { "", "/cur", "/new", "/tmp" };
	test_assert(mkdir(home, 0700) == 0);
	for (unsigned int i = 0; i < N_ELEMENTS(subdirs); i++) {
		char dir[TEST_PATH_MAX + 32];
		(void)snprintf(dir, sizeof(dir), "%s%s", root, subdirs[i]);
		test_assert(mkdir(dir, 0700) == 0);
	}
	int fd = open(path(root, "cur/1.msg:2,S"), O_WRONLY | O_CREAT, 0600);
	test_assert(fd >= 0 && write(fd, "Subject: x\r\n\r\n", 14) == 14);
	close(fd);
}

static bool can_open(const char *p, int flags)
{
	int fd = open(p, flags | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The checks in the confined child; returns 0 or the failed check's
   number. */
static int confined_checks(void)
{
	int fd;

	/* another user's Maildir: neither its files nor its listing */
	if (can_open(path(root_b, "cur/1.msg:2,S"), O_RDONLY) || errno != EACCES)
		return 1;
	if (opendir(path(root_b, "cur")) != NULL || errno != EACCES)
		return 2;
	if (can_open(path(root_b, "new/2.msg"), O_WRONLY | O_CREAT))
		return 3;
	/* beside the homes: nothing new */
	if (can_open(path(test_tmpdir(), "planted"), O_WRONLY | O_CREAT))
		return 4;
	/* its own: read, deliver (tmp/ then rename into new/), move, remove */
	if (!can_open(path(root_a, "cur/1.msg:2,S"), O_RDONLY))
		return 5;
	fd = open(path(root_a, "tmp/2.msg"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1 || ftruncate(fd, 0) < 0)
		return 6;
	close(fd);
	char from[sizeof(path_buf)];
	memcpy(from, path(root_a, "tmp/2.msg"), sizeof(from));
	if (rename(from, path(root_a, "new/2.msg")) < 0)
		return 7;
	if (mkdir(path(root_a, ".Sub"), 0700) < 0 || rmdir(path_buf) < 0)
		return 8;
	if (unlink(path(root_a, "new/2.msg")) < 0)
		return 9;
	/* the home beside the Maildir (the index may live there) */
	if (!can_open(path(home_a, "dovecot-like-file"), O_WRONLY | O_CREAT))
		return 10;
	/* system files: read only, nothing executed */
	if (!can_open("/etc/passwd", O_RDONLY) || can_open("/etc/passwd", O_WRONLY))
		return 11;
	char *const argv[] = { (char *)"true", NULL };
	char *const envp[] = { NULL };
	if (execve("/bin/true", argv, envp) == 0 || errno != EACCES)
		return 12;
	return 0;
}

static void test_landlock_other_user_unreachable(void)
{
	make_user(home_a, root_a, "a");
	make_user(home_b, root_b, "b");

	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0) {
		const char *const rw[] = { home_a, root_a, NULL };
		const char *error;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(CHILD_CHECK_BASE);
		int ret = landlock_confine(landlock_system_ro_paths, rw, &error);
		if (ret == 0) {
			fprintf(stderr, "test-landlock: skipped: %s\n", error);
			_exit(CHILD_NO_LANDLOCK);
		}
		if (ret < 0) {
			fprintf(stderr, "test-landlock: %s\n", error);
			_exit(CHILD_CHECK_BASE);
		}
		int failed = confined_checks();
		_exit(failed == 0 ? CHILD_OK : CHILD_CHECK_BASE + failed);
	}
	int status;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == CHILD_NO_LANDLOCK)
		return;
	test_assert_int(WEXITSTATUS(status), CHILD_OK);
	/* unconfined, the parent still reaches both */
	test_assert(can_open(path(root_b, "cur/1.msg:2,S"), O_RDONLY));
}

/* A path that does not exist (a mail root created later) is skipped;
   the rest still confines. */
static void test_landlock_missing_path(void)
{
	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0) {
		const char *const rw[] = { home_a, path(home_a, "missing"), "", NULL };
		const char *error;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(CHILD_CHECK_BASE);
		int ret = landlock_confine(landlock_system_ro_paths, rw, &error);
		if (ret == 0)
			_exit(CHILD_NO_LANDLOCK);
		if (ret < 0)
			_exit(CHILD_CHECK_BASE);
		if (!can_open(path(root_a, "cur/1.msg:2,S"), O_RDONLY))
			_exit(CHILD_CHECK_BASE + 1);
		if (can_open(path(root_b, "cur/1.msg:2,S"), O_RDONLY))
			_exit(CHILD_CHECK_BASE + 2);
		_exit(CHILD_OK);
	}
	int status;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status) && (WEXITSTATUS(status) == CHILD_OK ||
					  WEXITSTATUS(status) == CHILD_NO_LANDLOCK));
}

/* Runs checks in a child confined to ro and rw; asserts it passed (or
   that the kernel has no Landlock ABI 2). */
static void run_confined(const char *const *ro, const char *const *rw,
			 int (*checks)(void))
{
	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0) {
		const char *error;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(CHILD_CHECK_BASE);
		int ret = landlock_confine(ro, rw, &error);
		if (ret == 0)
			_exit(CHILD_NO_LANDLOCK);
		if (ret < 0) {
			fprintf(stderr, "test-landlock: %s\n", error);
			_exit(CHILD_CHECK_BASE);
		}
		int failed = checks();
		_exit(failed == 0 ? CHILD_OK : CHILD_CHECK_BASE + failed);
	}
	int status;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) != CHILD_NO_LANDLOCK)
		test_assert_int(WEXITSTATUS(status), CHILD_OK);
}

static char passdb_dir[TEST_PATH_MAX], passdb_file[TEST_PATH_MAX + 16];

/* imap-login: no file at all, not even the system's. */
static int login_checks(void)
{
	if (can_open("/etc/passwd", O_RDONLY) || errno != EACCES)
		return 1;
	if (opendir("/") != NULL || errno != EACCES)
		return 2;
	if (can_open(path(root_a, "cur/1.msg:2,S"), O_RDONLY))
		return 3;
	if (can_open(path(test_tmpdir(), "planted"), O_WRONLY | O_CREAT))
		return 4;
	if (can_open(passdb_file, O_RDONLY))
		return 5;
	return 0;
}

static void test_landlock_login_nothing(void)
{
	const char *const none[] = { NULL };
	run_confined(none, none, login_checks);
}

/* auth: the system files and its passwd-file's directory, read only;
   no Maildir, nothing written. */
static int auth_checks(void)
{
	if (!can_open("/etc/passwd", O_RDONLY))
		return 1;
	if (!can_open(passdb_file, O_RDONLY))
		return 2;
	/* the passwd-file replaced by a rename is still readable */
	if (!can_open(path(passdb_dir, "passwd.new"), O_RDONLY))
		return 3;
	if (can_open(passdb_file, O_WRONLY) || errno != EACCES)
		return 4;
	if (can_open(path(passdb_dir, "planted"), O_WRONLY | O_CREAT))
		return 5;
	if (can_open(path(root_a, "cur/1.msg:2,S"), O_RDONLY) || errno != EACCES)
		return 6;
	if (opendir(home_a) != NULL || errno != EACCES)
		return 7;
	char *const argv[] = { (char *)"true", NULL };
	char *const envp[] = { NULL };
	if (execve("/bin/true", argv, envp) == 0 || errno != EACCES)
		return 8;
	return 0;
}

static void test_landlock_auth_reads_its_files(void)
{
	(void)snprintf(passdb_dir, sizeof(passdb_dir), "%s/etc-moat",
		       test_tmpdir());
	(void)snprintf(passdb_file, sizeof(passdb_file), "%s/passwd",
		       passdb_dir);
	test_assert(mkdir(passdb_dir, 0700) == 0);
	static const char *const names[] = { "passwd", "passwd.new" };
	for (unsigned int i = 0; i < N_ELEMENTS(names); i++) {
		int fd = open(path(passdb_dir, names[i]),
			      O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		test_assert(fd >= 0 && write(fd, "u:{PLAIN}p\n", 11) == 11);
		close(fd);
	}
	const char *ro[LANDLOCK_MAX_RO_PATHS + 1];
	unsigned int n = 0;
	while (landlock_system_ro_paths[n] != NULL) {
		ro[n] = landlock_system_ro_paths[n];
		n++;
	}
	ro[n++] = passdb_dir;
	ro[n] = NULL;
	const char *const none[] = { NULL };
	run_confined(ro, none, auth_checks);
	run_confined(none, none, login_checks);
}

/* auth-worker: what PAM and NSS read, its own /proc entry; nothing else
   (no file of ours, no other process, no /usr/bin, no device), nothing
   written, nothing executed. */
static int auth_worker_checks(void)
{
	if (!can_open("/etc/passwd", O_RDONLY))
		return 1;
	if (can_open("/etc/passwd", O_WRONLY))
		return 2;
	if (!can_open("/proc/self/status", O_RDONLY))
		return 3;
	if (can_open(passdb_file, O_RDONLY) || errno != EACCES)
		return 4;
	if (can_open(path(test_tmpdir(), "planted"), O_WRONLY | O_CREAT))
		return 5;
	DIR *dir = opendir("/usr/lib");
	if (dir == NULL)
		return 6;
	closedir(dir);
	if (opendir("/usr/bin") != NULL || errno != EACCES)
		return 7;
	char *const argv[] = { (char *)"true", NULL };
	char *const envp[] = { NULL };
	if (execve("/bin/true", argv, envp) == 0 || errno != EACCES)
		return 8;
	/* its own /proc entry only; no device */
	if (can_open("/proc/1/status", O_RDONLY) || errno != EACCES)
		return 9;
	if (can_open("/dev/null", O_RDONLY))
		return 10;
	return 0;
}

static void test_landlock_auth_worker_pam(void)
{
	(void)snprintf(passdb_dir, sizeof(passdb_dir), "%s/etc-worker",
		       test_tmpdir());
	(void)snprintf(passdb_file, sizeof(passdb_file), "%s/users",
		       passdb_dir);
	test_assert(mkdir(passdb_dir, 0700) == 0);
	int fd = open(passdb_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	test_assert(fd >= 0 && write(fd, "u\n", 2) == 2);
	close(fd);
	const char *const none[] = { NULL };
	run_confined(landlock_pam_ro_paths, none, auth_worker_checks);
}

TEST_MAIN(TEST(test_landlock_other_user_unreachable),
	  TEST(test_landlock_missing_path),
	  TEST(test_landlock_auth_reads_its_files),
	  TEST(test_landlock_auth_worker_pam),
	  TEST(test_landlock_login_nothing))
