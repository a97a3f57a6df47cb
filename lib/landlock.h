#ifndef LANDLOCK_H
#define LANDLOCK_H
/* Landlock (Linux >= 5.13; moat needs ABI 2, Linux 5.19, for renames
   between directories) for the imap process: after landlock_confine() the
   process may read, write, create, rename and remove only beneath the
   directories it names, and only read a fixed list of system directories
   (/usr, /etc, /lib, /dev and, in sanitizer builds, /proc), so a
   compromised imap process of one virtual user cannot open another
   user's Maildir although both run as the same uid. Nothing may be
   executed anywhere. restrict_process() calls it after no_new_privs and
   before the seccomp filter (which does not allow the Landlock calls). */

/* Paths the process may change, at most this many. */
#define LANDLOCK_MAX_RW_PATHS 4

/* Confines the calling process. rw_paths: NULL-terminated; a path that
   does not exist is skipped (the mail root may be created later beneath
   the home). Returns 1 when confined; 0 when the kernel has no (or too
   old a) Landlock, with the reason in *error_r, for one log line; -1 on
   any other failure, with *error_r set: the caller treats that as fatal.
   *error_r is static text, valid until the next call. */
int landlock_confine(const char *const *rw_paths, const char **error_r);

#endif
