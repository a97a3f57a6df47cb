/* moat: the master process.

   SECURITY: runs as root (started by the admin or init) and keeps only
   the capabilities it needs to spawn and restrict children: setuid,
   setgid, setpcap (to empty its children's bounding sets), chown,
   sys_chroot, kill, net_bind_service and dac_override; every other
   capability is dropped from all sets, the bounding set too. It reads the
   config file, opens the listening sockets, and passes client sockets
   between its children; it never reads a byte a client sent. Started
   without root (development) everything runs as the invoking user. */
#include "master-common.h"
#include "master-admin.h"
#include "master-metrics.h"
#include "master-notify.h"
#include "master-activation.h"
#include "restrict.h"

#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *const master_capabilities[] = {
	"cap_setuid", "cap_setgid", "cap_setpcap", "cap_chown", "cap_sys_chroot",
	"cap_kill", "cap_net_bind_service", "cap_dac_override", NULL
};

static void ATTR_NORETURN usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
		"Usage: moat [-F] [-c FILE] [-n | -a]\n"
		"  -c FILE  configuration file (default %s/moat.conf)\n"
		"  -F       stay in the foreground\n"
		"  -n       print the settings that differ from the defaults and exit\n"
		"  -a       print all settings and exit\n"
		"  --version  print the version and exit\n", MOAT_SYSCONFDIR);
	exit(code);
}

static void print_settings(const struct moat_settings *set, bool non_default)
{
	buffer_t buf;
	buffer_init(&buf, 4 * 1024 * 1024);
	if (moat_settings_write(set, non_default, &buf) < 0)
		i_fatal("settings too large to print");
	fwrite(buf.data, 1, buf.used, stdout);
	buffer_free(&buf);
}

static void mkdir_checked(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		i_fatal("mkdir(%s) failed: %s", path, strerror(errno));
}

/* A service's chroot directory (relative names live under base_dir),
   created and checked; NULL for none (warned). */
static char *chroot_prepare(struct master *master, enum service_kind kind)
{
	const struct service *service = &master->services[kind];
	const char *chroot_dir = service->set->chroot;
	struct stat st;

	if (chroot_dir[0] == '\0') {
		i_warning("service %s has no chroot: it can read whatever its "
			  "user can", service->name);
		return NULL;
	}
	char *dir = chroot_dir[0] == '/' ? i_strdup(chroot_dir) :
		i_strdup_printf("%s/%s", master->set->base_dir, chroot_dir);
	mkdir_checked(dir, 0755);
	if (stat(dir, &st) < 0)
		i_fatal("stat(%s) failed: %s", dir, strerror(errno));
	/* The chroot must give the process nothing: root-owned, not
	   writable by anyone else, and empty. */
	if (master->root && (st.st_uid != 0 || (st.st_mode & 022) != 0))
		i_fatal("%s must be owned by root and writable only by root", dir);
	if (st.st_nlink > 2)
		i_fatal("%s must be empty (it is %s's chroot)", dir, service->name);
	return dir;
}

static void prepare_dirs(struct master *master)
{
	/* base_dir may be nested below a prefix that does not exist yet. */
	char *path = i_strdup(master->set->base_dir);
	for (char *p = path + 1; *p != '\0'; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir_checked(path, 0755);
			*p = '/';
		}
	}
	mkdir_checked(path, 0755);
	free(path);

	free(master->empty_dir);
	master->empty_dir = chroot_prepare(master, SERVICE_LOGIN);
	free(master->lmtp_chroot_dir);
	master->lmtp_chroot_dir = !master_lmtp_enabled(master) ? NULL :
		chroot_prepare(master, SERVICE_LMTP);
}

static void pidfile_write(struct master *master)
{
	char buf[32];
	master->pid_path = i_strdup_printf("%s/moat.pid", master->set->base_dir);
	int fd = open(master->pid_path, O_RDONLY);
	if (fd >= 0) {
		ssize_t ret = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[ret > 0 ? ret : 0] = '\0';
		pid_t pid = (pid_t)atoi(buf);
		if (pid > 0 && pid != getpid() && kill(pid, 0) == 0)
			i_fatal("moat is already running with pid %d (%s)", (int)pid,
				master->pid_path);
	}
	fd = open(master->pid_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (fd < 0 || write(fd, buf, (size_t)len) != len)
		i_fatal("writing %s failed: %s", master->pid_path, strerror(errno));
	close(fd);
}

/* On a reopen (SIGUSR1) a failure keeps the old file: losing the log is
   better than losing the server. */
static void log_open(struct master *master, bool reopen)
{
	if (master->set->log_path[0] == '\0') {
		log_set_fd(STDERR_FILENO);
		return;
	}
	int fd = open(master->set->log_path,
		      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0 && reopen) {
		i_error("open(%s) failed: %s", master->set->log_path, strerror(errno));
		return;
	}
	if (fd < 0)
		i_fatal("open(%s) failed: %s", master->set->log_path, strerror(errno));
	if (dup2(fd, STDERR_FILENO) < 0)
		i_fatal("dup2(log) failed: %s", strerror(errno));
	close(fd);
	log_set_fd(STDERR_FILENO);
}

static void sig_chld(void *context)
{
	struct master *master = context;
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		services_child_exited(master, pid, status);
}

static void sig_term(void *context)
{
	struct master *master = context;
	if (master->stopping)
		return;
	i_info("stopping (signal)");
	master_notify_stopping();
	services_stop(master);
}

int master_reload(struct master *master, const char **error_r)
{
	static char error_buf[512];
	const char *error;
	struct moat_settings *old = master->set;

	master_notify_reloading();
	master->set = NULL;
	if (master_settings_load(master, master->config_path, &error) < 0) {
		master->set = old;
		i_error("reload failed, keeping the old settings: %s", error);
		master_notify_ready("reload failed, running with the old settings");
		snprintf(error_buf, sizeof(error_buf), "%s", error);
		*error_r = error_buf;
		return -1;
	}
	moat_settings_free(&old);
	auth_penalty_store_resize(master);
	services_init(master);
	if (master_settings_resolve_users(master, &error) < 0 ||
	    master_listeners_open(master, &error) < 0) {
		/* Users and listeners are as before; new logins use them. */
		i_error("reload: %s", error);
	}
	prepare_dirs(master);
	i_close_fd(&master->config_fd);
	i_close_fd(&master->secret_config_fd);
	master->config_fd = master_settings_create_fd(master->set, false);
	master->secret_config_fd = master_settings_create_fd(master->set, true);
	services_reload(master);
	master_admin_reload(master);
	master_notify_ready("running (reloaded)");
	return 0;
}

static void sig_hup(void *context)
{
	struct master *master = context;
	const char *error;

	i_info("SIGHUP: reloading %s", master->config_path);
	(void)master_reload(master, &error);
}

/* logrotate's postrotate: the file was renamed, open a new one. */
static void sig_usr1(void *context)
{
	struct master *master = context;
	log_open(master, true);
	i_info("SIGUSR1: log reopened");
}

static void daemonize(void)
{
	pid_t pid = fork();
	if (pid < 0)
		i_fatal("fork() failed: %s", strerror(errno));
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		i_fatal("setsid() failed: %s", strerror(errno));
	int fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		close(fd);
	}
}

int main(int argc, char *argv[])
{
	static const struct option long_opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct master master = { .config_fd = -1, .secret_config_fd = -1 };
	bool foreground = false, dump_all = false, dump_changed = false;
	const char *error;
	int c;

	/* before anything opens an fd: the manager's sockets are 3.. */
	master_activation_init();
	log_init("master: ", true);
	master_notify_init();
	master.config_path = MOAT_SYSCONFDIR "/moat.conf";
	while ((c = getopt_long(argc, argv, "c:Fnah", long_opts, NULL)) != -1) {
		switch (c) {
		case 'c': master.config_path = optarg; break;
		case 'F': foreground = true; break;
		case 'n': dump_changed = true; break;
		case 'a': dump_all = true; break;
		case 'h': usage(0);
		case 'V': printf("moat %s\n", PACKAGE_VERSION); return 0;
		default: usage(1);
		}
	}
	if (optind != argc)
		usage(1);
	if (dump_all || dump_changed) {
		struct moat_settings *set;
		if (moat_settings_read(master.config_path, &set, &error) < 0) {
			fprintf(stderr, "moat: %s\n", error);
			return FATAL_CONFIG_EXIT_CODE;
		}
		print_settings(set, dump_changed);
		moat_settings_free(&set);
		return 0;
	}

	if (master_settings_load(&master, master.config_path, &error) < 0) {
		i_error("%s", error);
		return FATAL_CONFIG_EXIT_CODE;
	}
	master.root = geteuid() == 0;
	master.binary_dir = i_strdup(MOAT_PKGLIBEXECDIR);
	services_init(&master);
	if (master_settings_resolve_users(&master, &error) < 0)
		i_fatal("%s", error);
	log_open(&master, false);
	log_set_debug(master.set->log_debug);
	prepare_dirs(&master);
	if (master_listeners_open(&master, &error) < 0)
		i_fatal("%s", error);
	master_fd_limit_adjust(&master);
	master_activation_close_unused();
	if (master_activation_count() > 0)
		i_info("socket activation: %u listeners from the service manager",
		       master_activation_count());
	if (!foreground)
		daemonize();
	pidfile_write(&master);
	master.config_fd = master_settings_create_fd(master.set, false);
	master.secret_config_fd = master_settings_create_fd(master.set, true);
	restrict_master_capabilities(master_capabilities);
	if (!master.root)
		i_warning("not running as root: every process runs as uid %u without "
			  "chroot or privilege separation (development only)",
			  (unsigned)geteuid());
	signal(SIGPIPE, SIG_IGN);

	master.ioloop = io_loop_create();
	login_limits_init(&master);
	auth_penalty_store_init(&master);
	master_admin_init(&master);
	master_metrics_init(&master);
	io_loop_add_signal(master.ioloop, SIGCHLD, sig_chld, &master);
	io_loop_add_signal(master.ioloop, SIGTERM, sig_term, &master);
	io_loop_add_signal(master.ioloop, SIGINT, sig_term, &master);
	io_loop_add_signal(master.ioloop, SIGHUP, sig_hup, &master);
	io_loop_add_signal(master.ioloop, SIGUSR1, sig_usr1, &master);
	i_info("moat %s starting up (%u listeners)", PACKAGE_VERSION,
	       master.listener_count);
	services_start(&master);
	master_notify_ready("running");
	io_loop_run(master.ioloop);

	i_info("stopped");
	master_metrics_deinit(&master);
	master_admin_deinit(&master);
	login_limits_deinit(&master);
	auth_penalty_store_deinit(&master);
	master_listeners_close(&master);
	(void)unlink(master.pid_path);
	io_loop_destroy(&master.ioloop);
	i_close_fd(&master.config_fd);
	i_close_fd(&master.secret_config_fd);
	moat_settings_free(&master.set);
	master_notify_deinit();
	free(master.pid_path);
	free(master.empty_dir);
	free(master.lmtp_chroot_dir);
	free(master.binary_dir);
	return 0;
}
