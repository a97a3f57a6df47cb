/* STATUS of a mailbox that is not selected (mailbox.h): from moat.index
   alone when the folder's directories did not change since the index last
   reflected them, else through one full open + sync. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-list.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

/* "uidvalidity modseq cur_sec cur_nsec new_sec new_nsec\n" fits easily. */
#define STATUS_STAMP_MAX 128

struct status_stamp {
	uint32_t uidvalidity;
	uint64_t modseq;
	struct timespec cur, new;
};

/* Read the folder's MAILBOX_DIRSTAMP_NAME (maildir-sync.c writes it).
   Returns false if it is missing or unreadable. */
static bool status_stamp_read(const char *path, struct status_stamp *stamp_r)
{
	char fpath[PATH_MAX], buf[STATUS_STAMP_MAX];
	unsigned long long modseq, cs, cn, ns, nn;
	unsigned int uidvalidity;

	if (snprintf(fpath, sizeof(fpath), "%s/%s", path,
		     MAILBOX_DIRSTAMP_NAME) >= (int)sizeof(fpath))
		return false;
	int fd = open(fpath, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return false;
	ssize_t ret = read(fd, buf, sizeof(buf) - 1);
	i_close_fd(&fd);
	if (ret <= 0)
		return false;
	buf[ret] = '\0';
	if (sscanf(buf, "%u %llu %llu %llu %llu %llu", &uidvalidity, &modseq,
		   &cs, &cn, &ns, &nn) != 6 || modseq == 0)
		return false;
	stamp_r->uidvalidity = uidvalidity;
	stamp_r->modseq = modseq;
	stamp_r->cur.tv_sec = (time_t)cs;
	stamp_r->cur.tv_nsec = (long)cn;
	stamp_r->new.tv_sec = (time_t)ns;
	stamp_r->new.tv_nsec = (long)nn;
	return true;
}

static bool dir_mtime_is(const char *path, const char *sub,
			 const struct timespec *ts)
{
	char dir[PATH_MAX];
	struct stat st;

	if (snprintf(dir, sizeof(dir), "%s/%s", path, sub) >= (int)sizeof(dir) ||
	    stat(dir, &st) < 0)
		return false;
	return st.st_mtim.tv_sec == ts->tv_sec &&
		st.st_mtim.tv_nsec == ts->tv_nsec;
}

/* Sum of RFC822.SIZE from the records (a size the record lacks may be in
   the cache, as mailbox.c keeps it). Returns false if one is unknown. */
static bool status_index_size(struct mail_index_view *view, uint64_t *size_r)
{
	uint32_t count = mail_index_view_count(view);
	uint64_t sum = 0;
	const void *data;
	size_t size;

	for (uint32_t seq = 1; seq <= count; seq++) {
		const struct mail_index_record *rec =
			mail_index_view_lookup(view, seq);
		uint64_t vsize = rec->size;
		if (vsize == 0) {
			if (mail_cache_lookup(view, seq, MAILBOX_CACHE_VSIZE,
					      &data, &size) <= 0 ||
			    size != sizeof(vsize))
				return false;
			memcpy(&vsize, data, sizeof(vsize));
		}
		sum += vsize;
	}
	*size_r = sum;
	return true;
}

/* \Recent as the next SELECT would get it: the messages at or above the
   index's first_recent_uid (reading it does not take them: RFC 3501
   6.3.10). */
static uint32_t status_index_recent(struct mail_index_view *view)
{
	struct mail_index_status st;

	mail_index_view_get_status(view, &st);
	uint32_t seq = mail_index_view_uid_to_seq_ge(view, st.first_recent_uid);
	return seq == 0 ? 0 : st.messages_count - seq + 1;
}

/* The counts from the index view, if the stamp says it is current.
   Returns true when status_r is complete. */
static bool status_from_view(struct mail_index_view *view,
			     const struct status_stamp *stamp,
			     enum mailbox_status_items items,
			     struct mailbox_status *status_r)
{
	struct mail_index_status st;

	mail_index_view_get_status(view, &st);
	/* an index recreated or reset since the scan the stamp describes */
	if (st.uidvalidity != stamp->uidvalidity ||
	    st.highest_modseq < stamp->modseq)
		return false;
	memset(status_r, 0, sizeof(*status_r));
	status_r->messages = st.messages_count;
	status_r->uidnext = st.next_uid;
	status_r->uidvalidity = st.uidvalidity;
	status_r->unseen = st.messages_count - st.seen_count;
	status_r->deleted = st.deleted_count;
	status_r->recent = status_index_recent(view);
	if ((items & MAILBOX_STATUS_SIZE) != 0 &&
	    !status_index_size(view, &status_r->size))
		return false;
	status_r->from_index = true;
	return true;
}

/* Returns 1 when answered from the index, 0 to fall back. */
static int status_fast(const char *path, enum mailbox_status_items items,
		       struct mailbox_status *status_r)
{
	struct status_stamp stamp;
	struct mail_index *index;
	const char *error;

	if (!status_stamp_read(path, &stamp) ||
	    !dir_mtime_is(path, "new", &stamp.new) ||
	    !dir_mtime_is(path, "cur", &stamp.cur))
		return 0;
	/* read-only: no lock file, no log creation, no checkpoint */
	if (mail_index_open(path, MAIL_INDEX_OPEN_READONLY, &index,
			    &error) <= 0)
		return 0;
	int ret = 0;
	if (!mail_index_was_rebuilt(index)) {
		struct mail_index_view *view = mail_index_view_open(index);
		ret = status_from_view(view, &stamp, items, status_r) ? 1 : 0;
		mail_index_view_close(&view);
	}
	mail_index_close(&index);
	return ret;
}

int mailbox_status_from_box(struct mailbox *box,
			    enum mailbox_status_items items,
			    struct mailbox_status *status_r,
			    const char **error_r)
{
	uint32_t count = mailbox_get_count(box);

	memset(status_r, 0, sizeof(*status_r));
	for (uint32_t seq = 1; seq <= count; seq++) {
		if (mailbox_msg_is_expunged(box, seq))
			continue;
		enum mail_flags flags = mailbox_msg_flags(box, seq);
		if ((flags & MAIL_SEEN) == 0)
			status_r->unseen++;
		if ((flags & MAIL_DELETED) != 0)
			status_r->deleted++;
		if ((flags & MAIL_RECENT) != 0)
			status_r->recent++;
		uint64_t vsize;
		if ((items & MAILBOX_STATUS_SIZE) == 0)
			continue;
		if (mailbox_msg_vsize(box, seq, &vsize, error_r) < 0) {
			if (errno == ENOENT)
				continue;   /* expunged meanwhile */
			return -1;
		}
		status_r->size += vsize;
	}
	/* MESSAGES is the view's count, as SELECT's EXISTS was */
	status_r->messages = count;
	status_r->uidnext = mailbox_get_next_uid(box);
	status_r->uidvalidity = mailbox_get_uidvalidity(box);
	return 0;
}

int mailbox_status_get(const char *root, const char *name,
		       enum mailbox_open_flags flags,
		       enum mailbox_status_items items,
		       struct mailbox_status *status_r, const char **error_r)
{
	static char error[MAILBOX_ERROR_MAX];
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	struct mailbox *box;

	if (mailbox_list_find_folder(root, name, norm, path) <= 0)
		return 0;
	if (status_fast(path, items, status_r) > 0)
		return 1;
	int ret = mailbox_open(root, norm, flags, &box, error_r);
	if (ret <= 0)
		return ret;
	ret = mailbox_status_from_box(box, items, status_r, error_r);
	/* not this short-lived view's \Recent: the mailbox's */
	status_r->recent = status_index_recent(box->view);
	if (ret < 0) {
		/* the error may live in box: copy it out before closing */
		snprintf(error, sizeof(error), "%s", *error_r);
		*error_r = error;
	}
	mailbox_close(&box);
	return ret < 0 ? -1 : 1;
}
