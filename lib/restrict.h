#ifndef RESTRICT_H
#define RESTRICT_H

#include "seccomp-filter.h"

/* Dropping privileges, in one place and one fixed order:
     rlimits, chroot (+ chdir "/"), setgroups, setresgid, setresuid,
     check that root cannot be regained, clear all capabilities (effective,
     permitted, inheritable, ambient and bounding), no_new_privs,
     Landlock where asked (landlock.h), and last the process's seccomp
     filter (seccomp-filter.h).
   Any failure is fatal: a process that could not drop what it should must
   not serve a single byte. Run it in main() before the event loop. */

struct restrict_settings {
	/* uid/gid to become; (uid_t)-1 keeps the current ones (used when
	   moat runs without root for development). */
	uid_t uid;
	gid_t gid;
	/* NULL or "" = no chroot. Must be an absolute path. */
	const char *chroot_dir;
	/* RLIMIT_AS in bytes; 0 = leave as is. */
	uint64_t vsz_limit;
	/* RLIMIT_NOFILE; 0 = leave as is. */
	uint64_t fd_limit;
	/* RLIMIT_NPROC = 0 (cannot fork); only effective for non-root uids. */
	bool no_fork;
	/* Leave the capability bounding set alone (master keeps some caps). */
	/* The syscall allowlist installed last; PROFILE_NONE (0) or mode
	   NO install none. */
	enum moat_seccomp_profile seccomp_profile;
	enum moat_seccomp_mode seccomp_mode;
	/* Both NULL: no Landlock. Else the directories the process may
	   read and those it may change (landlock_confine(); a NULL one of
	   the two is an empty list); a kernel without Landlock is logged
	   once. */
	const char *const *landlock_ro_paths;
	const char *const *landlock_rw_paths;
};

/* Fatal on any failure. Returns only when every step succeeded. */
void restrict_process(const struct restrict_settings *set);

/* Master: keep only the capabilities in keep (a NULL-terminated list of
   names such as "cap_setuid") in the permitted, effective and bounding
   sets. Fatal on failure. No-op if not running as root. */
void restrict_master_capabilities(const char *const *keep);

/* Resolve a user name to uid/gid (getpwnam). Returns 0, -1 if unknown. */
int restrict_lookup_user(const char *name, uid_t *uid_r, gid_t *gid_r);

#endif
