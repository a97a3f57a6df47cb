/* Reading message files ahead of their turn (mailbox-read-ahead.h). */
#include "lib.h"
#include "mailbox-read-ahead.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

static void read_ahead(struct mailbox *box, struct mailbox_read_ahead *ra,
		       uint32_t seq, off_t len)
{
	uint32_t count = mailbox_get_count(box);
	const char *error;

	/* another order than ascending restarts the window */
	if (ra->next_seq <= seq ||
	    ra->next_seq > seq + MAILBOX_READ_AHEAD_MSGS + 1)
		ra->next_seq = seq + 1;
	while (ra->next_seq <= count &&
	       ra->next_seq <= seq + MAILBOX_READ_AHEAD_MSGS) {
		uint32_t next = ra->next_seq++;
		if (mailbox_msg_is_expunged(box, next))
			continue;
		int fd = mailbox_msg_open(box, next, &error);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				break;
			continue;
		}
		(void)posix_fadvise(fd, 0, len, POSIX_FADV_WILLNEED);
		i_close_fd(&fd);
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
