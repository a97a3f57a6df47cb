/* Unit tests for lib/seccomp-*.c: for each profile a forked child sets
   no_new_privs, installs the filter and makes one call; a forbidden one
   must end it with SIGSYS, an allowed one must let it exit normally.
   Needs no root: no_new_privs lets any user install a filter. */
#include "test-common.h"
#include "seccomp-filter.h"
#include "log.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Child exit codes: the call returned (0), or failed in a way the test
   did not expect. */
#define CHILD_OK 0
#define CHILD_CALL_FAILED 3
#define CHILD_SETUP_FAILED 4
/* /proc/self/status is a few KiB; the Seccomp line is early. */
#define STATUS_BUF_SIZE 8192

typedef int child_call_t(void);

/* Runs call in a child under profile's filter; returns its wait status. */
static int run_filtered(enum moat_seccomp_profile profile,
			enum moat_seccomp_mode mode, child_call_t *call)
{
	pid_t pid = fork();
	if (pid < 0)
		i_fatal("fork() failed: %m");
	if (pid == 0) {
		const char *error;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    moat_seccomp_install(profile, mode, &error) < 0)
			_exit(CHILD_SETUP_FAILED);
		_exit(call() < 0 ? CHILD_CALL_FAILED : CHILD_OK);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			i_fatal("waitpid() failed: %m");
	}
	return status;
}

static bool killed_by_sigsys(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}

static bool exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK;
}

static void check_denied(enum moat_seccomp_profile profile, child_call_t *call)
{
	int status = run_filtered(profile, MOAT_SECCOMP_YES, call);
	if (!killed_by_sigsys(status))
		i_warning("%s: status 0x%x", moat_seccomp_profile_name(profile), status);
	test_assert(killed_by_sigsys(status));
}

static void check_allowed(enum moat_seccomp_profile profile, child_call_t *call)
{
	int status = run_filtered(profile, MOAT_SECCOMP_YES, call);
	if (!exited_ok(status))
		i_warning("%s: status 0x%x", moat_seccomp_profile_name(profile), status);
	test_assert(exited_ok(status));
}

/* The calls. Each returns 0 when the call returned as it would without a
   filter, -1 otherwise (the test then fails on the exit code). */

static int call_execve(void)
{
	char *const argv[] = { (char *)"true", NULL };
	char *const envp[] = { NULL };
	(void)execve("/bin/true", argv, envp);
	return -1;
}

static int call_ptrace(void)
{
	/* the raw call: a libc may check the request first */
	return syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL) < 0 ? -1 : 0;
}

static int call_open_passwd(void)
{
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int call_socket_inet(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int call_socket_unix(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int call_socketpair_unix(void)
{
	int fds[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -1;
	close(fds[0]);
	close(fds[1]);
	return 0;
}

static int call_mmap_exec(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? -1 : 0;
}

static int call_mmap_data(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	memset(p, 1, 4096);
	return munmap(p, 4096);
}

static int call_kill_self(void)
{
	return kill(getpid(), 0);
}

static int call_kill_init(void)
{
	/* signal 0 only checks: with a filter the call itself kills */
	return kill(1, 0) < 0 && errno != EPERM ? -1 : 0;
}

static int call_setuid(void)
{
	return setuid(getuid());
}

static int call_memfd(void)
{
	int fd = memfd_create("test-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	int ret = ftruncate(fd, 4096) < 0 ||
		fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW) < 0 ? -1 : 0;
	close(fd);
	return ret;
}

/* Paths under the test's directory, set before the fork. */
#define TEST_PATH_MAX 512
static char mkdir_path[TEST_PATH_MAX], file_path[TEST_PATH_MAX + 16],
	file2_path[TEST_PATH_MAX + 16];

static void set_paths(const char *name)
{
	(void)snprintf(mkdir_path, sizeof(mkdir_path), "%s/%s", test_tmpdir(), name);
	(void)snprintf(file_path, sizeof(file_path), "%s/file", mkdir_path);
	(void)snprintf(file2_path, sizeof(file2_path), "%s/file2", mkdir_path);
}

static int call_mkdir(void)
{
	if (mkdir(mkdir_path, 0700) < 0)
		return -1;
	int fd = open(file_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) < 0)
		return -1;
	close(fd);
	return rename(file_path, file2_path);
}

static void *thread_main(void *context)
{
	return context;
}

static int call_thread(void)
{
	pthread_t thread;
	void *result;
	if (pthread_create(&thread, NULL, thread_main, &mkdir_path) != 0 ||
	    pthread_join(thread, &result) != 0)
		return -1;
	return result == &mkdir_path ? 0 : -1;
}

/* The sync thread's wakeup (lib/fsync-thread.h): imap only. */
static int call_eventfd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);
	if (fd == -1)
		return -1;
	close(fd);
	return 0;
}

/* What no filtered process may do. */
static void test_seccomp_every_profile_denies(void)
{
	for (unsigned int p = MOAT_SECCOMP_PROFILE_NONE + 1;
	     p < MOAT_SECCOMP_PROFILE_COUNT; p++) {
		check_denied(p, call_execve);
		check_denied(p, call_ptrace);
		check_denied(p, call_kill_init);
		check_denied(p, call_setuid);
		check_allowed(p, call_kill_self);
		check_allowed(p, call_mmap_data);
	}
}

static void test_seccomp_imap_login(void)
{
	check_denied(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_open_passwd);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_socket_inet);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_socket_unix);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_mmap_exec);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_memfd);
	check_allowed(MOAT_SECCOMP_PROFILE_IMAP_LOGIN, call_socketpair_unix);
}

static void test_seccomp_lmtp(void)
{
	check_denied(MOAT_SECCOMP_PROFILE_LMTP, call_open_passwd);
	check_denied(MOAT_SECCOMP_PROFILE_LMTP, call_socket_inet);
	check_denied(MOAT_SECCOMP_PROFILE_LMTP, call_socket_unix);
	check_denied(MOAT_SECCOMP_PROFILE_LMTP, call_mmap_exec);
	check_allowed(MOAT_SECCOMP_PROFILE_LMTP, call_memfd);
}

static int call_accept(void)
{
	/* no listener is at hand: EBADF without a filter */
	return accept4(-1, NULL, NULL, SOCK_CLOEXEC) < 0 && errno != EBADF ? -1 : 0;
}

/* A pair made before the fork: the key-signer's sockets come from
   master too. */
static int seqpacket_pair[2] = { -1, -1 };

static int call_seqpacket_io(void)
{
	char buf[8];

	return send(seqpacket_pair[0], "SIG\n", 4, MSG_DONTWAIT) == 4 &&
		recv(seqpacket_pair[1], buf, sizeof(buf), MSG_DONTWAIT) == 4 ?
		0 : -1;
}

static void test_seccomp_key_signer(void)
{
	enum moat_seccomp_profile p = MOAT_SECCOMP_PROFILE_KEY_SIGNER;

	set_paths("keyd");
	check_denied(p, call_open_passwd);
	check_denied(p, call_socket_inet);
	check_denied(p, call_socket_unix);
	check_denied(p, call_socketpair_unix);
	check_denied(p, call_accept);
	check_denied(p, call_mmap_exec);
	check_denied(p, call_memfd);
	check_denied(p, call_mkdir);
	check_denied(p, call_thread);
	test_assert(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
			       seqpacket_pair) == 0);
	check_allowed(p, call_seqpacket_io);
	close(seqpacket_pair[0]);
	close(seqpacket_pair[1]);
	test_assert_str(moat_seccomp_profile_name(p), "key-signer");
	test_assert(moat_seccomp_profile_size(p) <
		    moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_IMAP_LOGIN));
}

static void test_seccomp_auth(void)
{
	set_paths("auth");
	check_denied(MOAT_SECCOMP_PROFILE_AUTH, call_socket_inet);
	check_denied(MOAT_SECCOMP_PROFILE_AUTH, call_mkdir);
	check_allowed(MOAT_SECCOMP_PROFILE_AUTH, call_open_passwd);
	check_allowed(MOAT_SECCOMP_PROFILE_AUTH, call_socket_unix);
	check_allowed(MOAT_SECCOMP_PROFILE_AUTH, call_thread);
}

static void test_seccomp_auth_worker(void)
{
	set_paths("worker");
	check_denied(MOAT_SECCOMP_PROFILE_AUTH_WORKER, call_mkdir);
	check_allowed(MOAT_SECCOMP_PROFILE_AUTH_WORKER, call_open_passwd);
	check_allowed(MOAT_SECCOMP_PROFILE_AUTH_WORKER, call_socket_inet);
}

static void test_seccomp_imap(void)
{
	set_paths("imap");
	check_denied(MOAT_SECCOMP_PROFILE_IMAP, call_socket_inet);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP, call_socket_unix);
	check_denied(MOAT_SECCOMP_PROFILE_IMAP, call_socketpair_unix);
	/* the group commit's sync thread and its eventfd */
	check_allowed(MOAT_SECCOMP_PROFILE_IMAP, call_thread);
	check_allowed(MOAT_SECCOMP_PROFILE_IMAP, call_eventfd);
	check_allowed(MOAT_SECCOMP_PROFILE_IMAP, call_mkdir);
	check_allowed(MOAT_SECCOMP_PROFILE_IMAP, call_open_passwd);
}

static void test_seccomp_lda(void)
{
	set_paths("lda");
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_socket_inet);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_socket_unix);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_socketpair_unix);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_mmap_exec);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_memfd);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_thread);
	check_denied(MOAT_SECCOMP_PROFILE_LDA, call_eventfd);
	check_allowed(MOAT_SECCOMP_PROFILE_LDA, call_mkdir);
	check_allowed(MOAT_SECCOMP_PROFILE_LDA, call_open_passwd);
}

/* seccomp = log: the call outside the list runs (the kernel logs it). */
static void test_seccomp_log_mode(void)
{
	set_paths("log");
	int status = run_filtered(MOAT_SECCOMP_PROFILE_IMAP_LOGIN,
				  MOAT_SECCOMP_LOG, call_socketpair_unix);
	test_assert(exited_ok(status));
	status = run_filtered(MOAT_SECCOMP_PROFILE_LMTP, MOAT_SECCOMP_LOG,
			      call_socket_inet);
	test_assert(exited_ok(status));
	status = run_filtered(MOAT_SECCOMP_PROFILE_AUTH, MOAT_SECCOMP_LOG,
			      call_mkdir);
	test_assert(exited_ok(status));
}

static int seccomp_status_field(void)
{
	char buf[STATUS_BUF_SIZE];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nSeccomp:\t");
	return p == NULL ? -1 : p[strlen("\nSeccomp:\t")] - '0';
}

static int call_status_is_filter(void)
{
	return seccomp_status_field() == 2 ? 0 : -1;
}

static int call_status_is_none(void)
{
	return seccomp_status_field() == 0 ? 0 : -1;
}

/* /proc/PID/status says "Seccomp: 2" under a filter; mode NO and the
   NONE profile install nothing. */
static void test_seccomp_status(void)
{
	test_assert(exited_ok(run_filtered(MOAT_SECCOMP_PROFILE_IMAP,
		MOAT_SECCOMP_YES, call_status_is_filter)));
	test_assert(exited_ok(run_filtered(MOAT_SECCOMP_PROFILE_IMAP,
		MOAT_SECCOMP_NO, call_status_is_none)));
	test_assert(exited_ok(run_filtered(MOAT_SECCOMP_PROFILE_NONE,
		MOAT_SECCOMP_YES, call_status_is_none)));
	test_assert(exited_ok(run_filtered(MOAT_SECCOMP_PROFILE_NONE,
		MOAT_SECCOMP_YES, call_execve)));
}

static void test_seccomp_profile_size(void)
{
	test_assert_int(moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_NONE), 0);
	unsigned int login = moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_IMAP_LOGIN);
	unsigned int imap = moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_IMAP);
	test_assert(login > 0 && login < imap);
	test_assert(moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_LMTP) < imap);
	test_assert(moat_seccomp_profile_size(MOAT_SECCOMP_PROFILE_LDA) <= imap);
	test_assert_str(moat_seccomp_profile_name(MOAT_SECCOMP_PROFILE_LDA),
			"lda");
	test_assert_str(moat_seccomp_profile_name(MOAT_SECCOMP_PROFILE_AUTH_WORKER),
			"auth-worker");
}

TEST_MAIN(TEST(test_seccomp_every_profile_denies),
	  TEST(test_seccomp_imap_login),
	  TEST(test_seccomp_lmtp),
	  TEST(test_seccomp_key_signer),
	  TEST(test_seccomp_auth),
	  TEST(test_seccomp_auth_worker),
	  TEST(test_seccomp_imap),
	  TEST(test_seccomp_lda),
	  TEST(test_seccomp_log_mode),
	  TEST(test_seccomp_status),
	  TEST(test_seccomp_profile_size))
