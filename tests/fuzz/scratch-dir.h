#ifndef SCRATCH_DIR_H
#define SCRATCH_DIR_H
/* A fuzz target's scratch directory (fuzz-index-files.c,
   fuzz-imap-session.c): created once per fuzzer process on tmpfs and
   removed at exit, and a cheap recursive remove for resetting what an
   input left in it. */

#include "lib.h"

/* Deeper than this is not a tree our targets make (Maildir++ folders
   are flat: INBOX's cur/new/tmp, .Name/cur/...); the remover stops
   there rather than recurse without a bound. */
#define SCRATCH_MAX_DEPTH 16

/* mkdtemp() of "DIR/moat-fuzz-NAME.XXXXXX", where DIR is
   $MOAT_FUZZ_TMPDIR, else /dev/shm (tmpfs) when writable, else /tmp: on
   a disk file system the files an input writes and the fsyncs the
   index makes cost more than the input itself. The directory and
   everything in it is removed at exit. Returns the path (static,
   valid until exit); fatal on failure. */
const char *scratch_dir_create(const char *name);

/* Remove path and, when it is a directory, everything below it; a
   missing path is fine. One unlinkat() per entry and no stat(): the
   entry types come from readdir(). Fatal on any other failure. */
void scratch_remove_tree(const char *path);
/* The same for name in the directory open as dir_fd; top names the tree
   in messages. */
void scratch_remove_at(int dir_fd, const char *name, const char *top);
/* The same for everything in the directory path, which stays. */
void scratch_clear_dir(const char *path);

#endif
