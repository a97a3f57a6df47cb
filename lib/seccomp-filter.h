#ifndef SECCOMP_FILTER_H
#define SECCOMP_FILTER_H
/* seccomp-bpf system call allowlists, one per unprivileged process
   (libseccomp). restrict_process() installs the process's filter as the
   last step of its privilege drop, after no_new_privs; from then on a
   system call outside the list kills the whole process with SIGSYS
   (SECCOMP_RET_KILL_PROCESS), which master logs with the service's name.
   With seccomp = log the kernel logs such a call instead (SECCOMP_RET_LOG,
   an audit record naming the syscall number) and the process goes on:
   that is how an admin finds what a site's PAM modules need.

   The lists are in seccomp-table.c; doc/security.md gives their sizes.
   A sanitizer build (ASan/UBSan) adds what the sanitizer runtimes need,
   decided at compile time, so the production filter stays small. */

#include <stdbool.h>

/* The setting seccomp = no|yes|log, in this order (SET_ENUM index). */
enum moat_seccomp_mode {
	MOAT_SECCOMP_NO = 0,
	MOAT_SECCOMP_YES,
	MOAT_SECCOMP_LOG,
};

/* Which allowlist. MOAT_SECCOMP_PROFILE_NONE installs nothing (master
   and the tools). */
enum moat_seccomp_profile {
	MOAT_SECCOMP_PROFILE_NONE = 0,
	MOAT_SECCOMP_PROFILE_IMAP_LOGIN,
	MOAT_SECCOMP_PROFILE_AUTH,
	MOAT_SECCOMP_PROFILE_AUTH_WORKER,
	MOAT_SECCOMP_PROFILE_IMAP,
	MOAT_SECCOMP_PROFILE_LMTP,
	MOAT_SECCOMP_PROFILE_KEY_SIGNER,
	MOAT_SECCOMP_PROFILE_LDA,

	MOAT_SECCOMP_PROFILE_COUNT
};

/* Loads profile's filter into the calling process (all of its threads:
   moat's processes have one). mode NO or profile NONE do nothing.
   Requires no_new_privs (or CAP_SYS_ADMIN). Returns 0, or -1 with
   *error_r set (static or strerror text): the caller treats that as
   fatal, a process that should be filtered must not run unfiltered. */
int moat_seccomp_install(enum moat_seccomp_profile profile,
			 enum moat_seccomp_mode mode, const char **error_r);

/* The profile's name as in the logs and doc/security.md ("imap-login"). */
const char *moat_seccomp_profile_name(enum moat_seccomp_profile profile);

/* The number of system calls the profile allows (some of them only with
   the arguments its rules name), in this build (a sanitizer build counts
   its extra calls). For the docs and the tests. */
unsigned int moat_seccomp_profile_size(enum moat_seccomp_profile profile);

#endif
