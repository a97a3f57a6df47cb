#ifndef PREFETCH_THREAD_H
#define PREFETCH_THREAD_H
/* A helper thread that asks the kernel to read files ahead of their
   turn: for each queued name it opens the file, posix_fadvise(WILLNEED)s
   its first bytes and closes it. A reader going through thousands of
   cold message files (the first THREAD or SORT of a folder, a SEARCH)
   then neither waits for the inode reads of those opens nor spends its
   own CPU time submitting the reads; it parses while the other core does
   that (doc/performance.md, "Reading ahead on a helper thread").

   Advisory only: the thread reports nothing back. A file that does not
   open there is opened (and its error reported) by the reader when its
   turn comes. The thread makes openat, fadvise64 and close calls and
   waits on futexes; it touches no memory of the caller's but its queue
   (and frees a directory whose last reference it drops), so nothing
   else in the process needs to be thread-safe. Like
   fsync-thread.h, create it after the process installed its seccomp
   filter (the "thread" group of lib/seccomp-table.c), so it inherits
   the filter. */

#include "lib.h"

#include <sys/types.h>

/* A directory the queued names are relative to: a dup of the caller's
   descriptor, shared by the entries queued in it and closed when the
   last of them and the caller are done with it. */
struct prefetch_dir;

struct prefetch_thread;

struct prefetch_thread_stats {
	uint64_t queued;      /* entries accepted by prefetch_thread_add() */
	uint64_t full;        /* refused: the queue was full */
	uint64_t done;        /* opened and advised */
	uint64_t failed;      /* did not open (gone, renamed, EMFILE...) */
};

/* capacity: entries queued at most (their names are copied into a
   fixed array allocated here). Returns NULL with *error_r set (a
   constant text; errno says why). */
struct prefetch_thread *prefetch_thread_create(unsigned int capacity,
					       const char **error_r);
/* Drops what is still queued, stops and joins the thread. *thread = NULL. */
void prefetch_thread_destroy(struct prefetch_thread **thread);

/* Queue name (relative to dir, at most NAME_MAX bytes) for reading its
   first len bytes (0 = all of it). false if the queue is full (the
   caller tries again later) or the name is too long. */
bool prefetch_thread_add(struct prefetch_thread *thread,
			 struct prefetch_dir *dir, const char *name, off_t len);
/* Block until every queued entry is done (tests, and a caller that
   needs the files in the page cache now). */
void prefetch_thread_wait_idle(struct prefetch_thread *thread);
void prefetch_thread_get_stats(struct prefetch_thread *thread,
			       struct prefetch_thread_stats *stats_r);

/* A dup of dirfd (an O_PATH descriptor works), or NULL with errno set. */
struct prefetch_dir *prefetch_dir_create(int dirfd);
/* The caller's reference; queued entries keep the directory open. */
void prefetch_dir_unref(struct prefetch_dir **dir);

#endif
