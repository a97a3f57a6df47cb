/* Landlock confinement of a process to a few directories; landlock.h. */
#include "lib.h"
#include "landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/syscall.h>

/* ABI 3 (Linux 6.2); Debian 12's kernel headers stop at ABI 2. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#  define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#  define LANDLOCK_SANITIZER 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#    define LANDLOCK_SANITIZER 1
#  endif
#endif

/* ABI 2: rename and link between directories (LANDLOCK_ACCESS_FS_REFER);
   under ABI 1 they always fail, and Maildir moves a file from tmp/ to
   new/ for every message. */
#define LANDLOCK_MIN_ABI 2
/* An error text: a step, a path and strerror(). */
#define LANDLOCK_ERROR_MAX (PATH_MAX + 128)

/* No user's mail lives in any of them. */
const char *const landlock_system_ro_paths[] = {
	"/usr", "/etc", "/lib", "/lib64", "/dev",
#ifdef LANDLOCK_SANITIZER
	/* the runtimes read /proc/self/maps for their reports */
	"/proc",
#endif
	NULL
};

const char *const landlock_pam_ro_paths[] = {
	"/etc", "/usr/lib", "/lib", "/lib64", "/run/systemd/userdb",
	/* opened as a directory: /proc/PID of the caller. The sanitizer
	   runtimes read only /proc/self/maps there, so sanitizer builds
	   get no more and fail as release builds would. */
	"/proc/self",
	NULL
};

#define LANDLOCK_RO_ACCESS \
	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* No exec, no symlinks, sockets, fifos or devices: a Maildir has none. */
#define LANDLOCK_RW_ACCESS (LANDLOCK_RO_ACCESS | \
	LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
	LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR | \
	LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REFER)
/* Every right ABI 2 knows: all of them are denied unless a rule grants. */
#define LANDLOCK_ABI2_HANDLED ((LANDLOCK_ACCESS_FS_REFER << 1) - 1)

static char landlock_error[LANDLOCK_ERROR_MAX];

static const char *landlock_errorf(const char *step, const char *path)
{
	(void)snprintf(landlock_error, sizeof(landlock_error), "%s(%s) failed: %s",
		       step, path, strerror(errno));
	return landlock_error;
}

/* 1 added, 0 path does not exist, -1 error. */
static int landlock_add_path(int ruleset_fd, const char *path,
			     uint64_t access, const char **error_r)
{
	struct landlock_path_beneath_attr attr = { .allowed_access = access };

	attr.parent_fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (attr.parent_fd < 0) {
		if (errno == ENOENT)
			return 0;
		*error_r = landlock_errorf("open", path);
		return -1;
	}
	int ret = syscall(SYS_landlock_add_rule, ruleset_fd,
			  LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
	if (ret < 0)
		*error_r = landlock_errorf("landlock_add_rule", path);
	close(attr.parent_fd);
	return ret < 0 ? -1 : 1;
}

static int landlock_add_rules(int ruleset_fd, const char *const *ro_paths,
			      const char *const *rw_paths, uint64_t rw_access,
			      const char **error_r)
{
	for (unsigned int i = 0; ro_paths[i] != NULL; i++) {
		i_assert(i < LANDLOCK_MAX_RO_PATHS);
		if (ro_paths[i][0] == '\0')
			continue;
		if (landlock_add_path(ruleset_fd, ro_paths[i],
				      LANDLOCK_RO_ACCESS, error_r) < 0)
			return -1;
	}
	for (unsigned int i = 0; rw_paths[i] != NULL; i++) {
		i_assert(i < LANDLOCK_MAX_RW_PATHS);
		if (rw_paths[i][0] != '/')
			continue;   /* "" (no home) */
		if (landlock_add_path(ruleset_fd, rw_paths[i], rw_access,
				      error_r) < 0)
			return -1;
	}
	return 0;
}

int landlock_confine(const char *const *ro_paths,
		     const char *const *rw_paths, const char **error_r)
{
	int abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			  LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		(void)snprintf(landlock_error, sizeof(landlock_error),
			       "the kernel has no Landlock (%s)", strerror(errno));
		*error_r = landlock_error;
		return 0;
	}
	if (abi < LANDLOCK_MIN_ABI) {
		(void)snprintf(landlock_error, sizeof(landlock_error),
			       "the kernel's Landlock ABI %d cannot allow Maildir "
			       "renames (ABI %d, Linux 5.19, can)", abi,
			       LANDLOCK_MIN_ABI);
		*error_r = landlock_error;
		return 0;
	}

	uint64_t handled = LANDLOCK_ABI2_HANDLED, rw_access = LANDLOCK_RW_ACCESS;
	if (abi >= 3) {
		handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
		rw_access |= LANDLOCK_ACCESS_FS_TRUNCATE;
	}
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled };
	int fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0) {
		*error_r = landlock_errorf("landlock_create_ruleset", "fs");
		return -1;
	}
	int ret = landlock_add_rules(fd, ro_paths, rw_paths, rw_access, error_r);
	if (ret == 0 && syscall(SYS_landlock_restrict_self, fd, 0) < 0) {
		*error_r = landlock_errorf("landlock_restrict_self", "fs");
		ret = -1;
	}
	close(fd);
	return ret < 0 ? -1 : 1;
}
