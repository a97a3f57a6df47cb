#ifndef MAILBOX_READ_AHEAD_H
#define MAILBOX_READ_AHEAD_H
/* Reading message files ahead of their turn, for a reader that goes
   through messages in ascending order (SEARCH, the parse of a FETCH,
   counting sizes). While consecutive messages need their files (a run:
   where cheap keys decide most messages, reading ahead would read files
   nobody needs), the first read of each asks for what the page cache
   holds only (preadv2 RWF_NOWAIT); once one had to wait for the disk,
   the next MAILBOX_READ_AHEAD_MSGS messages' files are opened,
   posix_fadvise(WILLNEED)d and closed for the rest of the run (the page
   cache keeps what is read), so the disk works while the caller parses.
   A warm folder costs nothing: no second open, no extra system call.
   Advisory only: a file that does not open here is opened (and its error
   reported) when its turn comes.

   Where the process started a read-ahead thread (lib/prefetch-thread.h,
   mailbox_read_ahead_set_thread()), that thread makes the opens and the
   fadvise calls, so the reader neither waits for inode reads nor spends
   its own time submitting reads. */

#include "mailbox.h"

struct prefetch_thread;

#define MAILBOX_READ_AHEAD_MSGS 16
/* The process's read-ahead thread: how many files it may have queued. */
#define MAILBOX_READ_AHEAD_QUEUE 128

/* One per reader (a command, or a mailbox handle's size counting),
   zero-initialised. */
struct mailbox_read_ahead {
	uint32_t last_seq;   /* the last message whose file was read */
	uint32_t next_seq;   /* the next one to ask the kernel for */
	bool cold;           /* a first read of this run waited for the disk */
	bool nowait_failed;  /* RWF_NOWAIT is not supported here */
};

/* pread(fd) of message seq's file. offset 0 starts the message (and the
   reading ahead, ahead_len bytes of each file; 0 = all of it). Returns
   bytes read (0 at EOF) or -1 with errno; EINTR is retried. */
ssize_t mailbox_read_ahead_pread(struct mailbox *box,
				 struct mailbox_read_ahead *ra, uint32_t seq,
				 int fd, void *buf, size_t size,
				 uint64_t offset, off_t ahead_len);

/* Use thread (NULL: none) for every mailbox's reading ahead from now
   on. The process keeps it until after the last mailbox_prefetch()
   call: set NULL before destroying it. */
void mailbox_read_ahead_set_thread(struct prefetch_thread *thread);

/* Ask for the first len bytes (0 = all) of message seq's file ahead of
   its turn: queued for the thread, or (without one) opened, advised and
   closed here. Expunged messages and files that do not open are
   skipped. false if nothing more can be asked for now (the thread's
   queue is full, or no descriptor is left): the caller asks again at its
   next message. */
bool mailbox_prefetch(struct mailbox *box, uint32_t seq, off_t len);
/* mailbox_close(): drop the handle's share of the thread's directory. */
void mailbox_prefetch_close(struct mailbox *box);

#endif
