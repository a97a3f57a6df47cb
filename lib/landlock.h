#ifndef LANDLOCK_H
#define LANDLOCK_H
/* Landlock (Linux >= 5.13; moat needs ABI 2, Linux 5.19, for renames
   between directories): after landlock_confine() the process may read,
   write, create, rename and remove only beneath the rw directories it
   names, and only read beneath its ro directories; everything else on
   the file system is out of reach, whatever the uid's permissions say.
   Nothing may be executed anywhere.
     imap         rw: its user's home and mail root; ro: the system list
                  below, so a compromised imap process of one virtual user
                  cannot open another user's Maildir under the same uid
     auth         ro: the system list and the directories of its
                  passwd-files and oauth2-file; rw: nothing
     auth-worker  ro: landlock_pam_ro_paths (PAM, NSS, /etc/shadow, its
                  own /proc entry); rw: nothing
     imap-login   nothing at all (it opens no file after its chroot)
   restrict_process() calls it after no_new_privs and before the seccomp
   filter (which does not allow the Landlock calls). */

/* Paths the process may change, at most this many. */
#define LANDLOCK_MAX_RW_PATHS 4
/* Paths the process may read, at most this many: the system list and the
   directories of auth's files (16 passwd-files and an oauth2-file at
   most). */
#define LANDLOCK_MAX_RO_PATHS 32

/* What a process that loads code or uses NSS may read: shared libraries
   and gconv, NSS and PAM modules, /etc (time zone, NSS files, PAM
   configuration, /etc/shadow for auth-worker), /dev/null and, in
   sanitizer builds, /proc (the runtimes read /proc/self/maps).
   NULL-terminated. */
extern const char *const landlock_system_ro_paths[];

/* What auth-worker's PAM and NSS lookups read, as strace -f of PAM logins
   through pam_unix and Debian's default stack (/etc/pam.d/other:
   pam_unix, pam_deny, pam_permit, pam_cap) showed: /etc (pam.d,
   security/, shadow, passwd, group, nsswitch.conf, login.defs,
   ld.so.cache), the libraries and PAM modules beneath /usr/lib (/lib and
   /lib64 where they are not links to it), systemd's user database
   sockets (/run/systemd/userdb, for nss_systemd) and the process's own
   /proc entry: libcap-ng, for libaudit's records of pam_unix, reads
   CapBnd from /proc/PID/status and, when it cannot, asks prctl(), which
   the seccomp list does not allow (a release build died of it: SIGSYS).
   The same in sanitizer builds. Not /dev, the rest of /usr, or /proc.
   NULL-terminated. */
extern const char *const landlock_pam_ro_paths[];

/* Confines the calling process. ro_paths and rw_paths: NULL-terminated
   lists of directories (either may be empty: { NULL }); a path that does
   not exist, or "", is skipped (the mail root may be created later
   beneath the home). Returns 1 when confined; 0 when the kernel has no (or too
   old a) Landlock, with the reason in *error_r, for one log line; -1 on
   any other failure, with *error_r set: the caller treats that as fatal.
   *error_r is static text, valid until the next call. */
int landlock_confine(const char *const *ro_paths,
		     const char *const *rw_paths, const char **error_r);

#endif
