/* Spawning children (fork + exec, fixed fds), relaying their logs,
   reaping them and restarting crashed ones with back-off. */
#include "master-common.h"
#include "master-admin.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* A child log line longer than this is split: bounds master's memory per
   child whatever the child writes. */
#define CHILD_LOG_LINE_MAX 4000
/* Back-off after crashes: first retry at once, then doubling to a cap. */
#define RESTART_DELAY_FIRST_MS 1000
#define RESTART_DELAY_MAX_MS 60000
#define RESTART_CALM_MS 60000
/* Source fds are moved above this before dup2 to the fixed numbers. */
#define CHILD_FD_SCRATCH 100
#define CHILD_MAX_EXTRA_FDS 64
#define CHILD_MAX_ENV 32

static const char *const preserved_env[] = {
	"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TZ", NULL
};

void services_init(struct master *master)
{
	static const struct {
		const char *name, *binary;
	} roles[SERVICE_KIND_COUNT] = {
		[SERVICE_LOGIN] = { "imap-login", "imap-login" },
		[SERVICE_AUTH] = { "auth", "auth" },
		[SERVICE_IMAP] = { "imap", "imap" },
		[SERVICE_AUTH_WORKER] = { "auth-worker", "auth-worker" },
		[SERVICE_LMTP] = { "lmtp", "lmtp" },
		[SERVICE_KEY_SIGNER] = { "key-signer", "key-signer" },
	};
	for (unsigned int i = 0; i < SERVICE_KIND_COUNT; i++) {
		struct service *service = &master->services[i];
		service->master = master;
		service->kind = i;
		service->name = roles[i].name;
		service->binary = roles[i].binary;
		service->set = moat_settings_get_service(master->set, roles[i].name);
		i_assert(service->set != NULL);
	}
}

struct child *child_find_pid(struct master *master, pid_t pid)
{
	for (struct child *child = master->children; child != NULL; child = child->next) {
		if (child->pid == pid)
			return child;
	}
	return NULL;
}

/* ---- log relay ---- */

static void child_log_flush_lines(struct child *child, bool all)
{
	buffer_t *buf = &child->log_buf;
	for (;;) {
		char *lf = memchr(buf->data, '\n', buf->used);
		if (lf == NULL) {
			if ((all || buf->used >= CHILD_LOG_LINE_MAX) && buf->used > 0) {
				log_write_line(child->log_prefix, buf->data, buf->used);
				buffer_reset(buf);
			}
			return;
		}
		log_write_line(child->log_prefix, buf->data, (size_t)(lf - buf->data));
		buffer_delete_head(buf, (size_t)(lf - buf->data) + 1);
	}
}

static void child_log_close(struct child *child)
{
	child_log_flush_lines(child, true);
	io_remove(&child->log_io);
	i_close_fd(&child->log_fd);
}

static void child_log_input(void *context)
{
	struct child *child = context;
	char *dest = buffer_reserve(&child->log_buf,
				    CHILD_LOG_LINE_MAX - child->log_buf.used);
	ssize_t ret = read(child->log_fd, dest, CHILD_LOG_LINE_MAX - child->log_buf.used);
	if (ret > 0) {
		buffer_commit(&child->log_buf, (size_t)ret);
		child_log_flush_lines(child, false);
	} else if (ret == 0 || (errno != EAGAIN && errno != EINTR)) {
		child_log_close(child);
	}
}

/* ---- spawning ---- */

static void ATTR_NORETURN
child_exec(struct service *service, int log_wfd, int channel_fd,
	   const int *extra_fds, unsigned int extra_fd_count,
	   const char *const *env)
{
	struct master *master = service->master;
	int src[3 + CHILD_MAX_EXTRA_FDS];
	unsigned int count = 0;
	char path[4096];

	/* From here on only async-signal-safe-ish calls; errors go to the
	   log pipe as a "fatal:" line master relays. */
	io_loop_reset_signals_for_child();
	signal(SIGPIPE, SIG_DFL);
	src[count++] = channel_fd;
	/* Only the copy of the process that signs carries ssl_key
	   (doc/security.md). */
	bool secrets = service->kind == SERVICE_KEY_SIGNER ||
		(service->kind == SERVICE_LOGIN &&
		 !master->set->ssl_key_isolation);
	src[count++] = secrets ? master->secret_config_fd : master->config_fd;
	for (unsigned int i = 0; i < extra_fd_count; i++)
		src[count++] = extra_fds[i];
	for (unsigned int i = 0; i < count; i++) {
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, CHILD_FD_SCRATCH);
		if (src[i] < 0)
			_exit(FATAL_EXIT_CODE);
	}
	int log_fd = fcntl(log_wfd, F_DUPFD_CLOEXEC, CHILD_FD_SCRATCH);
	int null_fd = open("/dev/null", O_RDWR);
	if (log_fd < 0 || null_fd < 0 || dup2(null_fd, 0) < 0 ||
	    dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		_exit(FATAL_EXIT_CODE);
	for (unsigned int i = 0; i < count; i++) {
		if (dup2(src[i], MASTER_CHANNEL_FD + (int)i) < 0)
			_exit(FATAL_EXIT_CODE);
	}
	/* Each child reads the settings through its own file description,
	   so offsets of concurrent readers cannot interfere. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", MASTER_CONFIG_FD);
	int cfd = open(path, O_RDONLY);
	if (cfd < 0 || dup2(cfd, MASTER_CONFIG_FD) < 0)
		_exit(FATAL_EXIT_CODE);
	/* Nothing else is inherited. */
	if (syscall(SYS_close_range, MASTER_CHANNEL_FD + count, ~0U, 0) < 0) {
		for (int fd = MASTER_CHANNEL_FD + (int)count; fd < 65536; fd++)
			close(fd);
	}
	snprintf(path, sizeof(path), "%s/%s", master->binary_dir, service->binary);
	char *argv[] = { (char *)service->binary, NULL };
	execve(path, argv, (char *const *)env);
	fprintf(stderr, "fatal: execve(%s) failed: %s\n", path, strerror(errno));
	_exit(FATAL_EXIT_CODE);
}

static const char **child_build_env(struct service *service, const char *const *extra,
				    uid_t uid, gid_t gid, const char *chroot_dir,
				    char storage[][256])
{
	static const char *env[CHILD_MAX_ENV + 1];
	unsigned int n = 0, s = 0;

	snprintf(storage[s], 256, "MOAT_SERVICE=%s", service->name);
	env[n++] = storage[s++];
	if (uid != (uid_t)-1) {
		snprintf(storage[s], 256, "MOAT_UID=%u", (unsigned)uid);
		env[n++] = storage[s++];
		snprintf(storage[s], 256, "MOAT_GID=%u", (unsigned)gid);
		env[n++] = storage[s++];
	}
	if (chroot_dir != NULL) {
		snprintf(storage[s], 256, "MOAT_CHROOT=%s", chroot_dir);
		env[n++] = storage[s++];
	}
	for (unsigned int i = 0; preserved_env[i] != NULL; i++) {
		const char *value = getenv(preserved_env[i]);
		if (value != NULL && strlen(value) < 200) {
			snprintf(storage[s], 256, "%s=%s", preserved_env[i], value);
			env[n++] = storage[s++];
		}
	}
	for (unsigned int i = 0; extra != NULL && extra[i] != NULL; i++) {
		i_assert(n < CHILD_MAX_ENV);
		env[n++] = extra[i];
	}
	env[n] = NULL;
	return env;
}

struct child *child_spawn(struct service *service, const int *extra_fds,
			  unsigned int extra_fd_count, const char *const *env_extra,
			  uid_t uid, gid_t gid, const char *chroot_dir,
			  const char *log_user)
{
	struct master *master = service->master;
	int log_pipe[2], channel[2];
	char env_storage[8][256];

	i_assert(extra_fd_count <= CHILD_MAX_EXTRA_FDS);
	if (pipe2(log_pipe, O_CLOEXEC) < 0 || ipc_socketpair(channel) < 0) {
		i_error("service(%s): pipe/socketpair failed: %s", service->name,
			strerror(errno));
		return NULL;
	}
	const char **env = child_build_env(service, env_extra, uid, gid,
					   chroot_dir, env_storage);
	pid_t pid = fork();
	if (pid < 0) {
		i_error("service(%s): fork() failed: %s", service->name, strerror(errno));
		close(log_pipe[0]); close(log_pipe[1]);
		close(channel[0]); close(channel[1]);
		return NULL;
	}
	if (pid == 0)
		child_exec(service, log_pipe[1], channel[1], extra_fds,
			   extra_fd_count, env);
	close(log_pipe[1]);
	close(channel[1]);

	struct child *child = i_malloc(sizeof(*child));
	child->master = master;
	child->service = service;
	child->pid = pid;
	child->generation = master->generation;
	child->uid = uid;
	child->gid = gid;
	child->user = i_strdup(log_user);
	child->log_prefix = log_user != NULL ?
		i_strdup_printf("%s(%s)[%d]: ", service->name, log_user, (int)pid) :
		i_strdup_printf("%s[%d]: ", service->name, (int)pid);
	child->log_fd = log_pipe[0];
	(void)fd_set_nonblock(child->log_fd, true);
	buffer_init(&child->log_buf, CHILD_LOG_LINE_MAX);
	child->log_io = io_add(master->ioloop, child->log_fd, IO_READ,
			       child_log_input, child);
	child->next = master->children;
	if (master->children != NULL)
		master->children->prev = child;
	master->children = child;
	service->process_count++;
	child->conn = ipc_conn_create(master->ioloop, channel[0], child->log_prefix,
		service->kind == SERVICE_LOGIN ? IPC_PROTO_LOGIN_MASTER :
		service->kind == SERVICE_AUTH ? IPC_PROTO_AUTH_MASTER :
		service->kind == SERVICE_AUTH_WORKER ? IPC_PROTO_WORKER_MASTER :
		service->kind == SERVICE_LMTP ? IPC_PROTO_LMTP_MASTER :
		service->kind == SERVICE_KEY_SIGNER ? IPC_PROTO_KEYD_MASTER :
		IPC_PROTO_IMAP_MASTER, IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
		service->kind == SERVICE_LOGIN ? login_input :
		service->kind == SERVICE_AUTH ? auth_input :
		service->kind == SERVICE_AUTH_WORKER ? child_input_none :
		service->kind == SERVICE_LMTP ? lmtp_input :
		service->kind == SERVICE_KEY_SIGNER ? child_input_none :
		imap_input, child);
	i_debug("service(%s): started process %d", service->name, (int)pid);
	return child;
}

void child_input_none(void *context, const char *const *args, int fd)
{
	struct child *child = context;

	if (args == NULL) {
		ipc_conn_destroy(&child->conn);
		return;
	}
	if (fd >= 0)
		close(fd);
	i_error("service(%s): process %d sent an unknown record, killing it",
		child->service->name, (int)child->pid);
	child_kill(child, SIGKILL);
}

int child_send_peer(struct child *to, const char *record, pid_t pid, int fd)
{
	char pid_str[32];

	if (to->conn == NULL)
		return -1;
	snprintf(pid_str, sizeof(pid_str), "%d", (int)pid);
	return ipc_sendv(to->conn, fd, record, pid_str, NULL);
}

void child_kill(struct child *child, int signo)
{
	if (kill(child->pid, signo) < 0 && errno != ESRCH)
		i_error("kill(%d, %d) failed: %s", (int)child->pid, signo, strerror(errno));
}

static void child_free(struct child *child)
{
	struct master *master = child->master;

	if (child->prev != NULL)
		child->prev->next = child->next;
	else
		master->children = child->next;
	if (child->next != NULL)
		child->next->prev = child->prev;
	child->service->process_count--;
	ipc_conn_destroy(&child->conn);
	child_log_close(child);
	buffer_free(&child->log_buf);
	free(child->log_prefix);
	free(child->user);
	free(child);
}

/* ---- exits and restarts ---- */

static void service_restart(struct service *service)
{
	struct master *master = service->master;

	timeout_remove(&service->restart_timeout);
	if (master->stopping)
		return;
	if (service->kind == SERVICE_AUTH && master->auth == NULL)
		(void)auth_spawn(master);
	else if (service->kind == SERVICE_AUTH_WORKER)
		auth_worker_ensure(master);
	else if (service->kind == SERVICE_LMTP)
		lmtp_ensure_available(master);
	else if (service->kind == SERVICE_KEY_SIGNER)
		keyd_ensure(master);
	else if (service->kind == SERVICE_LOGIN) {
		while (login_count_listening(master) < MAX(service->set->process_min_avail, 1u) &&
		       service->process_count < service->set->process_limit) {
			if (login_spawn(master) == NULL)
				break;
		}
	}
}

static void service_restart_timeout(void *context)
{
	struct service *service = context;
	/* The loop freed the one-shot timer before calling us. */
	service->restart_timeout = NULL;
	service_restart(service);
}

static void service_schedule_restart(struct service *service, bool crashed)
{
	struct master *master = service->master;
	uint64_t now = time_monotonic_ms();
	unsigned int delay = 0;

	if (crashed) {
		if (now - service->last_crash_ms > RESTART_CALM_MS)
			service->restart_delay_ms = 0;
		else if (service->restart_delay_ms == 0)
			service->restart_delay_ms = RESTART_DELAY_FIRST_MS;
		else
			service->restart_delay_ms = MIN(service->restart_delay_ms * 2,
							RESTART_DELAY_MAX_MS);
		service->last_crash_ms = now;
		delay = service->restart_delay_ms;
	}
	if (service->restart_timeout != NULL)
		return;
	if (delay > 0)
		i_warning("service(%s): restarting in %u ms", service->name, delay);
	service->restart_timeout = timeout_add(master->ioloop, delay,
					       service_restart_timeout, service);
}

static bool child_log_exit(struct child *child, int status)
{
	const char *name = child->service->name;

	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
		/* The kernel's seccomp kill (lib/seccomp-filter.h): name it, and
		   say how to learn which call it was. */
		i_error("service(%s): child %d%s%s killed with signal %d (SIGSYS: "
			"a system call outside its seccomp allowlist; "
			"seccomp = log names it in the kernel log, see "
			"doc/security.md)", name, (int)child->pid,
			child->user != NULL ? " of user " : "",
			child->user != NULL ? child->user : "", SIGSYS);
		return true;
	}
	if (WIFSIGNALED(status)) {
		i_error("service(%s): child %d killed with signal %d%s", name,
			(int)child->pid, WTERMSIG(status),
			WCOREDUMP(status) ? " (core dumped)" : "");
		return true;
	}
	int code = WEXITSTATUS(status);
	if (code == 0)
		return false;
	i_error("service(%s): child %d returned error %d%s", name, (int)child->pid,
		code, code == FATAL_EXIT_CODE ? " (fatal error, see above)" : "");
	return true;
}

void services_child_exited(struct master *master, pid_t pid, int status)
{
	struct child *child = child_find_pid(master, pid);
	if (child == NULL)
		return;
	struct service *service = child->service;
	/* Read what it logged last before reporting its death. */
	if (child->log_fd >= 0)
		child_log_input(child);
	bool crashed = child_log_exit(child, status);
	bool expected = master->stopping || child->shutting_down;

	if (service->kind == SERVICE_AUTH)
		auth_penalty_child_gone(master, child);
	if (master->auth == child) {
		master->auth = NULL;
		handoff_fail_all(master, "Authentication process died", true);
		lmtp_rcpt_fail_all(master, "User database process died");
	}
	if (service->kind == SERVICE_LOGIN) {
		handoff_login_gone(master, child);
		login_limits_child_gone(child);
	}
	if (service->kind == SERVICE_LMTP)
		lmtp_rcpt_lmtp_gone(master, child);
	if (service->kind == SERVICE_IMAP) {
		/* its exit was seen before its channel's end */
		if (child->conn != NULL) {
			ipc_conn_destroy(&child->conn);
			master_admin_imap_gone(child);
		}
		handoff_imap_gone(master, child);
	}
	if (master->keyd == child)
		master->keyd = NULL;
	child_free(child);
	if (master->stopping) {
		if (master->children == NULL)
			io_loop_stop(master->ioloop);
		return;
	}
	/* A worker exits cleanly when its auth goes away: replace it at
	   once for the new auth; a crash backs off like any other. */
	if (service->kind == SERVICE_AUTH_WORKER)
		service_schedule_restart(service, crashed);
	else if (service->kind == SERVICE_KEY_SIGNER) {
		/* Handshakes fail until it is back (imap-login's sockets
		   to it closed); a reload started its successor already. */
		if (!expected)
			service_schedule_restart(service, true);
	} else if (service->kind == SERVICE_AUTH ||
		 ((service->kind == SERVICE_LOGIN ||
		   service->kind == SERVICE_LMTP) && !expected))
		service_schedule_restart(service, crashed || !expected);
	else if (service->kind == SERVICE_LOGIN || service->kind == SERVICE_LMTP)
		service_schedule_restart(service, false);
}

void services_start(struct master *master)
{
	(void)auth_spawn(master);
	/* Before the first imap-login, which gets its socket at spawn. */
	keyd_ensure(master);
	service_restart(&master->services[SERVICE_LOGIN]);
	login_idle_check_start(master);
	lmtp_ensure_available(master);
}

void services_reload(struct master *master)
{
	/* Settings pointers now refer to the new settings. */
	for (unsigned int i = 0; i < SERVICE_KIND_COUNT; i++)
		master->services[i].set =
			moat_settings_get_service(master->set, master->services[i].name);
	master_fd_limit_adjust(master);
	/* New logins get the new settings; old imap-login processes finish
	   their clients; user processes keep serving. auth restarts with the
	   new passdb/userdb (imap-login processes reconnect to it). */
	login_shutdown_all(master);
	lmtp_shutdown_all(master);
	/* New handshakes use the new key: a new key-signer before the new
	   imap-login processes. */
	keyd_reload(master);
	if (master->auth != NULL) {
		master->auth->shutting_down = true;
		child_kill(master->auth, SIGTERM);
	}
	service_restart(&master->services[SERVICE_LOGIN]);
	login_idle_check_start(master);
	lmtp_ensure_available(master);
}

static void stop_timeout(void *context)
{
	struct master *master = context;
	master->stop_timeout = NULL;   /* freed by the loop */
	for (struct child *child = master->children; child != NULL; child = child->next) {
		i_warning("service(%s): process %d did not stop, killing",
			  child->service->name, (int)child->pid);
		child_kill(child, SIGKILL);
	}
}

void services_stop(struct master *master)
{
	master->stopping = true;
	timeout_remove(&master->idle_check_timeout);
	for (unsigned int i = 0; i < SERVICE_KIND_COUNT; i++)
		timeout_remove(&master->services[i].restart_timeout);
	handoff_fail_all(master, "Server shutting down", false);
	lmtp_rcpt_fail_all(master, "Server shutting down");
	if (master->children == NULL) {
		io_loop_stop(master->ioloop);
		return;
	}
	for (struct child *child = master->children; child != NULL; child = child->next)
		child_kill(child, SIGTERM);
	/* Children get a few seconds to say BYE and sync; then SIGKILL. */
	master->stop_timeout = timeout_add(master->ioloop, 5000, stop_timeout, master);
}
