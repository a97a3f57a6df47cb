#ifndef MAILDIR_GHOST_H
#define MAILDIR_GHOST_H
/* Files of expunged messages kept open for the sessions of this process
   that were not told of the expunge yet (RFC 2180 4.1.1, "ghosted"
   messages; Cyrus calls it delayed expunge).

   A session's view keeps an expunged message (same sequence number, its
   flags) until a command that may send "* n EXPUNGE"; a FETCH by
   sequence number before that must still give the message's data. So
   when one handle expunges a message that other session handles of the
   same folder still show, it opens the file before unlink() and leaves
   the descriptor here, with those handles as its holders. A holder lets
   go when it reports the expunge or closes; the last one closes the fd.

   The file is unlinked as before, so nothing changes on disk: an
   acknowledged expunge stays expunged after a crash, other Maildir
   tools never see the file, and a process that dies frees everything
   with its descriptors. What a ghost costs (a descriptor, the disk
   space of the unlinked file) is bounded by the caps below; past them
   the oldest ghost is dropped, and its holders answer as for a message
   another process expunged (NO [EXPUNGEISSUED]).

   One set per folder per process (shared by its handles, counted).
   Holders are mailbox handles, compared by address only. */

#include <stdbool.h>
#include <stdint.h>

struct mailbox;
struct maildir_ghosts;

/* Ghosts kept by one process at most (one descriptor each); lowered to
   a quarter of RLIMIT_NOFILE where that is smaller, so that clients and
   index files always find descriptors. */
#define MAILDIR_GHOST_MAX_FILES 256
/* Bytes of unlinked files kept by one process at most: an EXPUNGE of a
   folder of big messages must not hold a disk's worth of space. */
#define MAILDIR_GHOST_MAX_BYTES (256ULL * 1024 * 1024)
/* A ghost older than this is dropped at the next ghost operation of
   the process: a session that never syncs does not pin files forever. */
#define MAILDIR_GHOST_MAX_SECS 600

/* The process's set for the folder at path (created on first use). */
struct maildir_ghosts *maildir_ghosts_ref(const char *path);
void maildir_ghosts_unref(struct maildir_ghosts **ghosts);

/* A session view of the folder: it may hold ghosts. Unregistering
   releases every ghost it holds. */
void maildir_ghosts_register(struct maildir_ghosts *ghosts,
			     struct mailbox *box);
void maildir_ghosts_unregister(struct maildir_ghosts *ghosts,
			       struct mailbox *box);
/* The registered handles (valid until the next register/unregister). */
struct mailbox *const *
maildir_ghosts_get_handles(struct maildir_ghosts *ghosts,
			   unsigned int *count_r);

/* Keep fd (open on message uid's file, which is about to be unlinked)
   for holders[0..count-1]. Takes fd in every case: with no holder, over
   a cap that dropping old ghosts cannot make room for, or when uid is
   already kept, it is closed. */
void maildir_ghosts_keep(struct maildir_ghosts *ghosts, uint32_t uid,
			 int fd, struct mailbox *const *holders,
			 unsigned int count);
/* box told its client that uid is expunged (or forgets it). */
void maildir_ghosts_release(struct maildir_ghosts *ghosts, uint32_t uid,
			    struct mailbox *box);
/* Whether box holds a kept file of uid (cheap: no ghosts, no search). */
bool maildir_ghosts_holds(struct maildir_ghosts *ghosts, uint32_t uid,
			  struct mailbox *box);
/* A new descriptor of uid's kept file (the caller closes it; it shares
   the file offset with the kept one, so readers use pread()), or -1:
   errno ENOENT when nothing is kept for uid (or box does not hold it). */
int maildir_ghosts_open(struct maildir_ghosts *ghosts, uint32_t uid,
			struct mailbox *box);

/* Ghosts this process keeps now (tests, debug lines). */
unsigned int maildir_ghosts_count(void);

#endif
