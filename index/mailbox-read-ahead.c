/* Reading message files ahead of their turn (mailbox-read-ahead.h). */
#include "lib.h"
#include "prefetch-thread.h"
#include "mailbox-private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

static struct prefetch_thread *read_ahead_thread;

void mailbox_read_ahead_set_thread(struct prefetch_thread *thread)
{
	read_ahead_thread = thread;
}

/* Queue seq's file for the thread: 1 queued or skipped, 0 the queue is
   full, -1 the thread cannot be used for this mailbox. */
static int prefetch_queue(struct mailbox *box, uint32_t seq, off_t len)
{
	const char *fname, *error;

	if (box->prefetch_dir == NULL) {
		if (box->prefetch_dir_failed)
			return -1;
		box->prefetch_dir = prefetch_dir_create(box->cur_fd);
		if (box->prefetch_dir == NULL) {
			box->prefetch_dir_failed = true;
			return -1;
		}
	}
	/* the name goes to the handle's name cache (mailbox_prefetch() made
	   room), where the reader's open finds it at the message's turn */
	if (mailbox_msg_get_fname(box, seq, false, &fname, &error) < 0)
		return 1;
	return prefetch_thread_add(read_ahead_thread, box->prefetch_dir,
				   fname, len) ? 1 : 0;
}

bool mailbox_prefetch(struct mailbox *box, uint32_t seq, off_t len)
{
	const char *error;

	if (mailbox_msg_is_expunged(box, seq) ||
	    maildir_ghosts_holds(box->ghosts, mailbox_msg_uid(box, seq), box))
		return true;
	mailbox_fname_cache_grow(box, MAILBOX_FNAME_CACHE_AHEAD);
	if (read_ahead_thread != NULL && box->cur_fd != -1) {
		int ret = prefetch_queue(box, seq, len);
		if (ret >= 0)
			return ret > 0;
	}
	int fd = mailbox_msg_open(box, seq, &error);
	if (fd < 0)
		return errno != EMFILE && errno != ENFILE;
	(void)posix_fadvise(fd, 0, len, POSIX_FADV_WILLNEED);
	i_close_fd(&fd);
	return true;
}

void mailbox_prefetch_close(struct mailbox *box)
{
	prefetch_dir_unref(&box->prefetch_dir);
}

static void read_ahead(struct mailbox *box, struct mailbox_read_ahead *ra,
		       uint32_t seq, off_t len)
{
	uint32_t count = mailbox_get_count(box);

	/* another order than ascending restarts the window */
	if (ra->next_seq <= seq ||
	    ra->next_seq > seq + MAILBOX_READ_AHEAD_MSGS + 1)
		ra->next_seq = seq + 1;
	/* in batches of half the window: one wakeup of the thread each */
	if (ra->next_seq > seq + MAILBOX_READ_AHEAD_MSGS / 2 + 1)
		return;
	while (ra->next_seq <= count &&
	       ra->next_seq <= seq + MAILBOX_READ_AHEAD_MSGS) {
		if (!mailbox_prefetch(box, ra->next_seq, len))
			break;
		ra->next_seq++;
	}
}

/* The first read of a message: from the page cache only, unless an
   earlier one found the folder cold. Returns what pread would. */
static ssize_t first_read(struct mailbox_read_ahead *ra, int fd, void *buf,
			  size_t size)
{
	if (ra->cold || ra->nowait_failed)
		return pread(fd, buf, size, 0);
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	ssize_t ret = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
	if (ret >= 0 || errno == EINTR)
		return ret;
	if (errno == EAGAIN)
		ra->cold = true;
	else if (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)
		ra->nowait_failed = true;
	else
		return -1;
	return pread(fd, buf, size, 0);
}

ssize_t mailbox_read_ahead_pread(struct mailbox *box,
				 struct mailbox_read_ahead *ra, uint32_t seq,
				 int fd, void *buf, size_t size,
				 uint64_t offset, off_t ahead_len)
{
	ssize_t ret;

	if (offset != 0) {
		do {
			ret = pread(fd, buf, size, (off_t)offset);
		} while (ret < 0 && errno == EINTR);
		return ret;
	}
	/* the same message read again (a second pass) changes nothing */
	bool again = ra->last_seq == seq;
	bool dense = ra->last_seq != 0 && ra->last_seq + 1 == seq;
	ra->last_seq = seq;
	/* a new run finds out again whether the folder is cold */
	if (!dense && !again)
		ra->cold = false;
	do {
		ret = first_read(ra, fd, buf, size);
	} while (ret < 0 && errno == EINTR);
	if (ra->cold && dense)
		read_ahead(box, ra, seq, ahead_len);
	return ret;
}
