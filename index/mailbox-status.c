/* STATUS of a mailbox that is not selected (mailbox.h): from moat.index
   alone when the folder's directories did not change since the index last
   reflected them, else through one full open + sync.

   With a mailbox_status_cache the index handles stay open between calls
   (a few, LRU), so a STATUS of an unchanged mailbox costs three stat()s:
   new/ and cur/ (a file another tool dropped or removed changes their
   mtimes: then the stamp decides, as without the cache), and the log: a
   stat and one pread at the view's position (an append, flag change or
   expunge by any process puts a record there, a rotation or reset
   replaces the file: then the view catches up). Not the log's size and
   mtime: appends overwrite the zeros written ahead of the records, and
   mtime ticks too coarsely to tell two appends apart. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-list.h"
#include "mail-cache.h"
#include "hash.h"

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
   Returns false if it is missing, unreadable or of an index that was
   never scanned. */
static bool status_stamp_read(const char *path, struct status_stamp *stamp_r)
{
	char fpath[PATH_MAX], buf[STATUS_STAMP_MAX];
	unsigned long long modseq, cs, cn, ns, nn;
	unsigned int uidvalidity;

	if (snprintf(fpath, sizeof(fpath), "%s/%s", path,
		     MAILBOX_DIRSTAMP_NAME) >= (int)sizeof(fpath))
		return false;
	int fd = open(fpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return false;
	ssize_t ret = read(fd, buf, sizeof(buf) - 1);
	i_close_fd(&fd);
	if (ret <= 0)
		return false;
	buf[ret] = '\0';
	/* modseq 0 is an index that never had a change: a folder that was
	   empty when scanned (its STATUS must not open it every time). An
	   index not scanned yet has no uidvalidity. */
	if (sscanf(buf, "%u %llu %llu %llu %llu %llu", &uidvalidity, &modseq,
		   &cs, &cn, &ns, &nn) != 6 || uidvalidity == 0)
		return false;
	stamp_r->uidvalidity = uidvalidity;
	stamp_r->modseq = modseq;
	stamp_r->cur.tv_sec = (time_t)cs;
	stamp_r->cur.tv_nsec = (long)cn;
	stamp_r->new.tv_sec = (time_t)ns;
	stamp_r->new.tv_nsec = (long)nn;
	return true;
}

/* Sum of RFC822.SIZE from the records (a size the record lacks may be in
   the cache, as mailbox.c keeps it). Returns false if one is unknown. */
static bool status_index_size(struct mail_index_view *view, uint64_t *size_r,
			      uint64_t *deleted_size_r)
{
	uint32_t count = mail_index_view_count(view);
	uint64_t sum = 0, deleted = 0;
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
		if ((rec->flags & MAIL_DELETED) != 0)
			deleted += vsize;
	}
	*size_r = sum;
	*deleted_size_r = deleted;
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
   Returns 1 when status_r is complete, 0 if a size is not in the index,
   -1 if the index is not the one the stamp describes. */
static int status_from_view(struct mail_index_view *view,
			     const struct status_stamp *stamp,
			     enum mailbox_status_items items,
			     struct mailbox_status *status_r)
{
	struct mail_index_status st;

	mail_index_view_get_status(view, &st);
	/* an index recreated or reset since the scan the stamp describes */
	if (st.uidvalidity != stamp->uidvalidity ||
	    st.highest_modseq < stamp->modseq)
		return -1;
	memset(status_r, 0, sizeof(*status_r));
	status_r->messages = st.messages_count;
	status_r->uidnext = st.next_uid;
	status_r->uidvalidity = st.uidvalidity;
	status_r->unseen = st.messages_count - st.seen_count;
	status_r->deleted = st.deleted_count;
	status_r->highest_modseq = st.highest_modseq;
	status_r->recent = status_index_recent(view);
	if ((items & MAILBOX_STATUS_SIZE) != 0 &&
	    !status_index_size(view, &status_r->size,
			       &status_r->deleted_size))
		return 0;
	status_r->from_index = true;
	return 1;
}

static bool stamp_matches(const struct status_stamp *stamp,
			  const struct stat *st_new, const struct stat *st_cur)
{
	return st_new->st_mtim.tv_sec == stamp->new.tv_sec &&
		st_new->st_mtim.tv_nsec == stamp->new.tv_nsec &&
		st_cur->st_mtim.tv_sec == stamp->cur.tv_sec &&
		st_cur->st_mtim.tv_nsec == stamp->cur.tv_nsec;
}

static bool dir_stat(const char *path, const char *sub, struct stat *st_r)
{
	char dir[PATH_MAX];

	return snprintf(dir, sizeof(dir), "%s/%s", path, sub) <
		(int)sizeof(dir) && stat(dir, st_r) == 0;
}

/* Returns 1 when answered from the index, 0 to fall back. */
static int status_fast(const char *path, enum mailbox_status_items items,
		       struct mailbox_status *status_r)
{
	struct status_stamp stamp;
	struct stat st_new, st_cur;
	struct mail_index *index;
	const char *error;

	if (!status_stamp_read(path, &stamp) ||
	    !dir_stat(path, "new", &st_new) || !dir_stat(path, "cur", &st_cur) ||
	    !stamp_matches(&stamp, &st_new, &st_cur))
		return 0;
	/* read-only: no lock file, no log creation, no checkpoint */
	if (mail_index_open(path, MAIL_INDEX_OPEN_READONLY, &index,
			    &error) <= 0)
		return 0;
	int ret = 0;
	if (!mail_index_was_rebuilt(index)) {
		struct mail_index_view *view = mail_index_view_open(index);
		ret = status_from_view(view, &stamp, items, status_r) > 0 ? 1 : 0;
		mail_index_view_close(&view);
	}
	mail_index_close(&index);
	return ret;
}

/* ---- the handle cache ---- */

/* Above this many index records in all cached handles together the least
   recently used are closed (memory: each handle maps its records, and
   records a log replay touched are private copies): 1M records = 40 MB. */
#define STATUS_CACHE_MAX_RECORDS (1024U * 1024)

struct status_handle {
	char *path;                 /* the Maildir folder; NULL = free slot */
	uint32_t path_hash;
	struct mail_index *index;
	struct mail_index_view *view;
	/* the stamp the view was checked against, and the identity of cur/
	   (a folder deleted or renamed and made again is another one) */
	struct status_stamp stamp;
	dev_t cur_dev;
	ino_t cur_ino;
	uint32_t records;
	uint64_t used_tick;
	time_t used_at;
};

struct mailbox_status_cache {
	struct status_handle *handles;   /* max_handles slots */
	unsigned int max_handles, count;
	uint64_t tick, records;
};

struct mailbox_status_cache *mailbox_status_cache_init(unsigned int max_handles)
{
	struct mailbox_status_cache *cache = i_malloc(sizeof(*cache));

	cache->max_handles = MIN(max_handles, MAILBOX_STATUS_CACHE_MAX_HANDLES);
	if (cache->max_handles > 0) {
		cache->handles = i_malloc(i_mul_size(cache->max_handles,
						     sizeof(*cache->handles)));
	}
	return cache;
}

static void handle_close(struct mailbox_status_cache *cache,
			 struct status_handle *h)
{
	if (h->path == NULL)
		return;
	mail_index_view_close(&h->view);
	mail_index_close(&h->index);
	i_free(h->path);
	i_assert(cache->count > 0 && cache->records >= h->records);
	cache->count--;
	cache->records -= h->records;
	memset(h, 0, sizeof(*h));
}

void mailbox_status_cache_deinit(struct mailbox_status_cache **_cache)
{
	struct mailbox_status_cache *cache = *_cache;

	if (cache == NULL)
		return;
	*_cache = NULL;
	for (unsigned int i = 0; i < cache->max_handles; i++)
		handle_close(cache, &cache->handles[i]);
	i_free(cache->handles);
	i_free(cache);
}

unsigned int mailbox_status_cache_expire(struct mailbox_status_cache *cache,
					 time_t unused_since)
{
	for (unsigned int i = 0; i < cache->max_handles; i++) {
		struct status_handle *h = &cache->handles[i];
		if (h->path != NULL && h->used_at < unused_since)
			handle_close(cache, h);
	}
	return cache->count;
}

unsigned int mailbox_status_cache_count(const struct mailbox_status_cache *cache)
{
	return cache->count;
}

static struct status_handle *
cache_find(struct mailbox_status_cache *cache, const char *path, uint32_t hash)
{
	for (unsigned int i = 0; i < cache->max_handles; i++) {
		struct status_handle *h = &cache->handles[i];
		if (h->path != NULL && h->path_hash == hash &&
		    strcmp(h->path, path) == 0)
			return h;
	}
	return NULL;
}

/* A free slot, closing the least recently used handle if none is. */
static struct status_handle *cache_slot(struct mailbox_status_cache *cache)
{
	struct status_handle *lru = NULL;

	for (unsigned int i = 0; i < cache->max_handles; i++) {
		struct status_handle *h = &cache->handles[i];
		if (h->path == NULL)
			return h;
		if (lru == NULL || h->used_tick < lru->used_tick)
			lru = h;
	}
	handle_close(cache, lru);
	return lru;
}

/* Close least recently used handles (never keep) until the records fit. */
static void cache_trim(struct mailbox_status_cache *cache,
		       struct status_handle *keep)
{
	while (cache->records > STATUS_CACHE_MAX_RECORDS && cache->count > 1) {
		struct status_handle *lru = NULL;
		for (unsigned int i = 0; i < cache->max_handles; i++) {
			struct status_handle *h = &cache->handles[i];
			if (h->path != NULL && h != keep &&
			    (lru == NULL || h->used_tick < lru->used_tick))
				lru = h;
		}
		handle_close(cache, lru);
	}
	if (cache->records > STATUS_CACHE_MAX_RECORDS)
		handle_close(cache, keep);   /* alone too big: not kept */
}

/* Open a handle for path into a slot. Returns it, or NULL. */
static struct status_handle *
cache_open(struct mailbox_status_cache *cache, const char *path,
	   uint32_t hash, const struct stat *st_cur)
{
	struct mail_index *index;
	const char *error;

	if (mail_index_open(path, MAIL_INDEX_OPEN_READONLY, &index,
			    &error) <= 0)
		return NULL;
	if (mail_index_was_rebuilt(index)) {
		mail_index_close(&index);
		return NULL;
	}
	struct status_handle *h = cache_slot(cache);
	h->path = i_strdup(path);
	h->path_hash = hash;
	h->index = index;
	h->view = mail_index_view_open(index);
	h->cur_dev = st_cur->st_dev;
	h->cur_ino = st_cur->st_ino;
	cache->count++;
	return h;
}

/* Bring a cached view up to the log. Returns false if the handle is no
   longer usable (the caller closes it). */
static bool cache_sync(struct status_handle *h)
{
	const char *error;

	if (mail_index_view_at_log_end(h->view))
		return true;
	return mail_index_view_sync(h->view, NULL, NULL, &error) == 0 &&
		!mail_index_was_rebuilt(h->index);
}

/* The handle of path with a view that is current and a stamp that matches
   the directories, or NULL (fall back to a full open). */
static struct status_handle *
cache_get(struct mailbox_status_cache *cache, const char *path)
{
	struct stat st_new, st_cur;
	struct status_stamp stamp;
	uint32_t hash = hash_fnv1a32(path, strlen(path));
	struct status_handle *h = cache_find(cache, path, hash);

	if (!dir_stat(path, "new", &st_new) || !dir_stat(path, "cur", &st_cur)) {
		if (h != NULL)
			handle_close(cache, h);
		return NULL;
	}
	if (h != NULL && (h->cur_ino != st_cur.st_ino ||
			  h->cur_dev != st_cur.st_dev)) {
		/* deleted or renamed, and made again: another mailbox */
		handle_close(cache, h);
		h = NULL;
	}
	if (h == NULL || !stamp_matches(&h->stamp, &st_new, &st_cur)) {
		/* the directories changed since: a sync must have stamped
		   them (else: the full open rescans) */
		if (!status_stamp_read(path, &stamp) ||
		    !stamp_matches(&stamp, &st_new, &st_cur))
			return NULL;
		if (h == NULL) {
			if ((h = cache_open(cache, path, hash, &st_cur)) == NULL)
				return NULL;
		} else if (!cache_sync(h)) {
			handle_close(cache, h);
			return NULL;
		}
		h->stamp = stamp;
	} else if (!cache_sync(h)) {
		handle_close(cache, h);
		return NULL;
	}
	h->used_tick = ++cache->tick;
	h->used_at = time(NULL);
	return h;
}

/* The status from the cached handle of path. Returns 1 when answered, 0 to
   fall back. */
static int status_cached(struct mailbox_status_cache *cache, const char *path,
			 enum mailbox_status_items items,
			 struct mailbox_status *status_r)
{
	struct status_handle *h = cache_get(cache, path);

	if (h == NULL)
		return 0;
	int ret = status_from_view(h->view, &h->stamp, items, status_r);
	if (ret <= 0) {
		/* stale: reset or recreated behind the stamp (a size not
		   known from the index keeps the handle) */
		if (ret < 0)
			handle_close(cache, h);
		return 0;
	}
	cache->records -= h->records;
	h->records = status_r->messages;
	cache->records += h->records;
	cache_trim(cache, h);
	return 1;
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
		if ((flags & MAIL_DELETED) != 0)
			status_r->deleted_size += vsize;
	}
	/* MESSAGES is the view's count, as SELECT's EXISTS was */
	status_r->messages = count;
	status_r->uidnext = mailbox_get_next_uid(box);
	status_r->uidvalidity = mailbox_get_uidvalidity(box);
	status_r->highest_modseq = mailbox_get_highest_modseq(box);
	return 0;
}

int mailbox_status_get(const char *root, const char *name,
		       enum mailbox_open_flags flags,
		       enum mailbox_status_items items,
		       struct mailbox_status *status_r, const char **error_r)
{
	return mailbox_status_get_cached(NULL, root, name, flags, items,
					 status_r, error_r);
}

int mailbox_status_get_cached(struct mailbox_status_cache *cache,
			      const char *root, const char *name,
			      enum mailbox_open_flags flags,
			      enum mailbox_status_items items,
			      struct mailbox_status *status_r,
			      const char **error_r)
{
	static char error[MAILBOX_ERROR_MAX];
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];
	struct mailbox *box;

	if (mailbox_list_find_folder(root, name, norm, path) <= 0)
		return 0;
	if (cache != NULL && cache->max_handles > 0) {
		if (status_cached(cache, path, items, status_r) > 0)
			return 1;
	} else if (status_fast(path, items, status_r) > 0) {
		return 1;
	}
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
