/* Child side of master's spawn contract; see master-service.h. */
#include "lib.h"
#include "master-service.h"
#include "log.h"
#include "restrict.h"
#include "strfuncs.h"

#include <signal.h>

struct master_service {
	char *name;
	char *log_prefix;
	struct ioloop *ioloop;
	struct moat_settings *set;
	const struct moat_service_settings *service_set;
	const char *const *landlock_ro_paths;
	const char *const *landlock_rw_paths;
};

const char *master_service_getenv(const char *name)
{
	const char *value = getenv(name);
	if (value == NULL)
		i_fatal("%s not set: this program is started by moat(8), not directly", name);
	return value;
}

static void sig_term(void *context)
{
	master_service_stop(context);
}

struct master_service *master_service_init(const char *name)
{
	struct master_service *service = i_malloc(sizeof(*service));
	const char *error;

	service->name = i_strdup(name);
	/* Master adds "service(user)[pid]: "; children only say the level. */
	log_init("", false);
	if (strcmp(master_service_getenv("MOAT_SERVICE"), name) != 0)
		i_fatal("MOAT_SERVICE is %s, expected %s", getenv("MOAT_SERVICE"), name);
	if (moat_settings_read_fd(MASTER_CONFIG_FD, "(from master)", &service->set,
				  &error) < 0)
		i_fatal("settings from master are invalid: %s", error);
	int fd = MASTER_CONFIG_FD;
	i_close_fd(&fd);
	log_set_debug(service->set->log_debug);
	service->service_set = moat_settings_get_service(service->set, name);
	if (service->service_set == NULL)
		i_fatal("no settings for service %s", name);

	/* A peer that closes must cost an EPIPE, never the process. */
	signal(SIGPIPE, SIG_IGN);
	service->ioloop = io_loop_create();
	io_loop_add_signal(service->ioloop, SIGTERM, sig_term, service);
	io_loop_add_signal(service->ioloop, SIGINT, sig_term, service);
	return service;
}

void master_service_deinit(struct master_service **_service)
{
	struct master_service *service = *_service;
	if (service == NULL)
		return;
	*_service = NULL;
	io_loop_destroy(&service->ioloop);
	moat_settings_free(&service->set);
	free(service->name);
	free(service);
}

struct ioloop *master_service_get_ioloop(struct master_service *service)
{
	return service->ioloop;
}

const struct moat_settings *
master_service_get_settings(struct master_service *service)
{
	return service->set;
}

const struct moat_service_settings *
master_service_get_service_settings(struct master_service *service)
{
	return service->service_set;
}

static uid_t env_id(const char *name)
{
	const char *value = getenv(name);
	unsigned int id;
	if (value == NULL || value[0] == '\0')
		return (uid_t)-1;
	if (str_to_uint(value, &id) < 0)
		i_fatal("%s=%s is not a number", name, value);
	return (uid_t)id;
}

void master_service_set_landlock(struct master_service *service,
				 const char *const *ro_paths,
				 const char *const *rw_paths)
{
	static const char *const none[] = { NULL };

	service->landlock_ro_paths = ro_paths != NULL ? ro_paths : none;
	service->landlock_rw_paths = rw_paths != NULL ? rw_paths : none;
}

void master_service_drop_privileges(struct master_service *service,
				    enum moat_seccomp_profile seccomp_profile)
{
	struct restrict_settings rset = {
		.uid = env_id("MOAT_UID"),
		.gid = (gid_t)env_id("MOAT_GID"),
		.chroot_dir = getenv("MOAT_CHROOT"),
		.vsz_limit = service->service_set->vsz_limit,
		.seccomp_profile = seccomp_profile,
		.seccomp_mode = service->set->seccomp,
		.landlock_ro_paths = service->set->landlock ?
			service->landlock_ro_paths : NULL,
		.landlock_rw_paths = service->set->landlock ?
			service->landlock_rw_paths : NULL,
	};
	if (geteuid() != 0) {
		i_info("not running as root: %s keeps uid %u (development mode)",
		       service->name, (unsigned)geteuid());
		rset.uid = (uid_t)-1;
		rset.gid = (gid_t)-1;
	}
	restrict_process(&rset);
	if (rset.seccomp_mode == MOAT_SECCOMP_LOG)
		i_info("seccomp = log: calls outside the %s allowlist are "
		       "logged by the kernel, not refused",
		       moat_seccomp_profile_name(seccomp_profile));
}

struct ipc_conn *
master_service_connect_master(struct master_service *service,
			      const char *protocol,
			      ipc_input_callback_t *callback, void *context)
{
	return ipc_conn_create(service->ioloop, MASTER_CHANNEL_FD, "master",
			       protocol, IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
			       callback, context);
}

void master_service_run(struct master_service *service)
{
	io_loop_run(service->ioloop);
}

void master_service_stop(struct master_service *service)
{
	io_loop_stop(service->ioloop);
}
