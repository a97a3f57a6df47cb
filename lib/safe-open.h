#ifndef SAFE_OPEN_H
#define SAFE_OPEN_H
/* Opening a file below a directory we trust without following any
   symlink on the way (doc/security.md, "Symlinks under a mail root").

   All virtual users share one uid, so a symlink in one user's Maildir
   (a message file, cur/, a folder, an index file) may point at another
   user's files, which the kernel lets us read. safe_openat() resolves
   path relative to dirfd with openat2(RESOLVE_BENEATH |
   RESOLVE_NO_SYMLINKS): no component may be a symlink (the last one
   neither), and ".." or an absolute path cannot leave dirfd. Kernels
   without openat2 (before 5.6) get safe_openat_walk(): one openat() per
   component with O_NOFOLLOW, each directory held by its fd, which gives
   the same answer.

   A symlink anywhere fails with errno ELOOP; so does an O_PATH open of
   one (O_PATH | O_NOFOLLOW would otherwise return the link itself). */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Longest path safe_openat_walk() splits (a mail root's relative paths
   are a folder, a subdirectory and a file name: far shorter). */
#define SAFE_OPEN_PATH_MAX 4096

/* openat(dirfd, path, flags | O_NOFOLLOW, mode) with no symlink in any
   component of path, which must be relative and stay below dirfd.
   Returns the fd, or -1 with errno (ELOOP for a symlink, EXDEV or ELOOP
   for a path that leaves dirfd). */
int safe_openat(int dirfd, const char *path, int flags, mode_t mode);
/* The fallback: component by component. Exported for the unit tests. */
int safe_openat_walk(int dirfd, const char *path, int flags, mode_t mode);
/* fopen(path, "w") or "r" (close-on-exec) that never follows a symlink
   as the last component: O_NOFOLLOW, and for writing O_CREAT | O_TRUNC
   with mode 0600. mode is "w" or "r". NULL with errno. */
FILE *safe_fopen_nofollow(const char *path, const char *mode);
/* True if the errno of a failed safe_openat() means "a symlink was in
   the way" (the caller treats the name as not there). */
bool safe_open_errno_is_symlink(int err);

#endif
