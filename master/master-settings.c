/* Loading the settings once, and handing the checked result to children
   as a sealed memfd. */
#include "master-common.h"
#include "restrict.h"

#include <fcntl.h>
#include <sys/mman.h>

int master_settings_load(struct master *master, const char *path,
			 const char **error_r)
{
	struct moat_settings *set;

	if (moat_settings_read(path, &set, error_r) < 0)
		return -1;
	if (set->base_dir[0] != '/') {
		*error_r = "base_dir must be an absolute path";
		moat_settings_free(&set);
		return -1;
	}
	moat_settings_free(&master->set);
	master->set = set;
	master->generation++;
	return 0;
}

int master_settings_create_fd(const struct moat_settings *set, bool with_secrets)
{
	buffer_t buf;
	/* The serialized settings of a big config stay far below this. */
	buffer_init(&buf, 4 * 1024 * 1024);
	if (moat_settings_write(set, false, &buf) < 0 ||
	    (with_secrets && moat_settings_write_secrets(set, &buf) < 0))
		i_fatal("settings do not fit the 4 MiB hand-over buffer");

	int fd = memfd_create("moat-settings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		i_fatal("memfd_create() failed: %s", strerror(errno));
	size_t pos = 0;
	while (pos < buf.used) {
		ssize_t ret = write(fd, buf.data + pos, buf.used - pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			i_fatal("write(memfd) failed: %s", strerror(errno));
		pos += (size_t)ret;
	}
	/* Children get a read-only view that nobody can change later. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
		  F_SEAL_SEAL) < 0)
		i_fatal("sealing the settings memfd failed: %s", strerror(errno));
	/* The key must not linger in master's heap either. */
	safe_memset(buf.data, 0, buf.used);
	buffer_free(&buf);
	return fd;
}

/* lmtp's uid: its own, not imap-login's or auth's (a compromised one must
   not reach the others); only needed when lmtp runs. */
static int resolve_lmtp_user(struct master *master, const char **error_r)
{
	static char error[256];
	const char *user =
		moat_settings_service_user(master->set, master->services[SERVICE_LMTP].set);

	master->lmtp_uid = (uid_t)-1;
	master->lmtp_gid = (gid_t)-1;
	if (!master_lmtp_enabled(master))
		return 0;
	if (restrict_lookup_user(user, &master->lmtp_uid, &master->lmtp_gid) < 0) {
		snprintf(error, sizeof(error), "lmtp user %s does not exist "
			 "(service lmtp { user }; create it with useradd --system)",
			 user);
		*error_r = error;
		return -1;
	}
	if (master->lmtp_uid == 0 || master->lmtp_uid == master->login_uid ||
	    master->lmtp_uid == master->auth_uid) {
		*error_r = "service lmtp must run as its own user, not root, "
			"imap-login's or auth's";
		return -1;
	}
	return 0;
}

int master_settings_resolve_users(struct master *master, const char **error_r)
{
	static char error[256];
	const struct moat_settings *set = master->set;
	const char *login_user =
		moat_settings_service_user(set, master->services[SERVICE_LOGIN].set);
	const char *auth_user =
		moat_settings_service_user(set, master->services[SERVICE_AUTH].set);
	if (!master->root) {
		master->login_uid = master->auth_uid = master->lmtp_uid = (uid_t)-1;
		master->login_gid = master->auth_gid = master->lmtp_gid = (gid_t)-1;
		return 0;
	}
	if (restrict_lookup_user(login_user, &master->login_uid, &master->login_gid) < 0) {
		snprintf(error, sizeof(error), "login user %s does not exist "
			 "(default_login_user; create it with useradd --system)", login_user);
		*error_r = error;
		return -1;
	}
	if (restrict_lookup_user(auth_user, &master->auth_uid, &master->auth_gid) < 0) {
		snprintf(error, sizeof(error), "auth user %s does not exist "
			 "(default_internal_user; create it with useradd --system)", auth_user);
		*error_r = error;
		return -1;
	}
	if (master->login_uid == 0 || master->auth_uid == 0) {
		*error_r = "imap-login and auth must not run as root";
		return -1;
	}
	if (master->login_uid == master->auth_uid) {
		*error_r = "default_login_user and default_internal_user must differ: "
			"a compromised imap-login must not get auth's rights";
		return -1;
	}
	return resolve_lmtp_user(master, error_r);
}
