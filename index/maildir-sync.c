/* Bringing a mailbox view up to date with its Maildir folder:
   move new/ to cur/, scan cur/, give unknown files UIDs in name order
   (under the uidlist lock), drop vanished ones and update the view. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"

#include <dirent.h>
#include <fcntl.h>

/* Vanished files are re-checked with this many extra scans: a file that
   another client renamed (flag change) while we read the directory can be
   missing from one readdir pass. */
#define MAILDIR_SYNC_VANISH_RETRIES 1

struct sync_entry {
	char *fname;             /* i_malloc'd */
	size_t base_len;
	uint64_t size, vsize;
	bool is_new;
};

struct sync_ctx {
	struct mailbox *box;
	struct sync_entry *entries;
	unsigned int count, alloc;
	uint32_t first_new_uid;  /* UIDs >= this were assigned by us */
	/* The uidlist's next_uid before the readdir: files that got UIDs
	   later (another session's append) may be missing from the scan
	   without having vanished. */
	uint32_t scan_next_uid;
};

static void sync_entries_free(struct sync_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->count; i++)
		i_free(ctx->entries[i].fname);
	ctx->count = 0;
}

static bool dir_mtime_get(const char *dir, struct timespec *mtime_r)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return false;
	*mtime_r = st.st_mtim;
	return true;
}

static bool timespec_equals(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Move each new/ file to cur/ with an info part. Another process may move
   it first (ENOENT): that is fine. */
static int sync_move_new(struct mailbox *box, const char **error_r)
{
	DIR *dir = opendir(box->new_dir);
	struct dirent *d;
	char src[PATH_MAX], dest[PATH_MAX];

	if (dir == NULL) {
		*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
					     box->new_dir);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(d->d_name, &fn))
			continue;
		const char *info = fn.have_info ? "" : MAILDIR_INFO_PREFIX;
		if (strchr(d->d_name, ':') != NULL && !fn.have_info)
			continue;   /* unknown info version: leave it alone */
		if (snprintf(src, sizeof(src), "%s/%s", box->new_dir,
			     d->d_name) >= (int)sizeof(src) ||
		    snprintf(dest, sizeof(dest), "%s/%s%s", box->cur_dir,
			     d->d_name, info) >= (int)sizeof(dest))
			continue;
		if (rename(src, dest) < 0 && errno != ENOENT)
			i_error("rename(%s, %s) failed: %m", src, dest);
	}
	closedir(dir);
	return 0;
}

static void sync_add_entry(struct sync_ctx *ctx, const char *fname,
			   const struct maildir_filename *fn)
{
	if (ctx->count == ctx->alloc) {
		ctx->alloc = ctx->alloc == 0 ? 128 : ctx->alloc * 2;
		ctx->entries = i_realloc(ctx->entries,
			i_mul_size(ctx->alloc, sizeof(*ctx->entries)));
	}
	struct sync_entry *e = &ctx->entries[ctx->count++];
	e->fname = i_strdup(fname);
	e->base_len = fn->base_len;
	e->size = fn->size;
	e->vsize = fn->vsize;
}

static int entry_cmp(const void *p1, const void *p2)
{
	const struct sync_entry *e1 = p1, *e2 = p2;
	size_t len = MIN(e1->base_len, e2->base_len);
	int ret = memcmp(e1->fname, e2->fname, len);

	if (ret != 0)
		return ret;
	return e1->base_len < e2->base_len ? -1 :
		e1->base_len > e2->base_len ? 1 : 0;
}

static int sync_scan_cur(struct sync_ctx *ctx, const char **error_r)
{
	struct mailbox *box = ctx->box;
	DIR *dir = opendir(box->cur_dir);
	struct dirent *d;

	if (dir == NULL) {
		*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
					     box->cur_dir);
		return -1;
	}
	sync_entries_free(ctx);
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(d->d_name, &fn))
			continue;
		if (!maildir_uidlist_base_is_valid(d->d_name, fn.base_len)) {
			i_warning("%s/%s: file name not usable, ignored",
				  box->cur_dir, d->d_name);
			continue;
		}
		sync_add_entry(ctx, d->d_name, &fn);
	}
	closedir(dir);
	if (ctx->count > 0)
		qsort(ctx->entries, ctx->count, sizeof(*ctx->entries), entry_cmp);
	return 0;
}

static int entry_rec_cmp(const struct sync_entry *e,
			 const struct maildir_uidlist_rec *rec)
{
	size_t rlen = strlen(rec->base);
	int ret = memcmp(e->fname, rec->base, MIN(e->base_len, rlen));

	if (ret != 0)
		return ret;
	return e->base_len < rlen ? -1 : e->base_len > rlen ? 1 : 0;
}

/* A foreign file without ,S=: stat it once; the size goes to the uidlist
   so the next open does not stat again. */
static uint64_t sync_stat_size(struct mailbox *box, const char *fname)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", box->cur_dir, fname) >=
	    (int)sizeof(path) || stat(path, &st) < 0)
		return MAILDIR_SIZE_UNKNOWN;
	return (uint64_t)st.st_size;
}

/* Match the scanned entries with the uidlist records (both sorted by base
   name). Returns the number of records whose file was not found. With
   add_new, unknown entries get UIDs in name order (after the walk: adding
   reallocates the records). */
static unsigned int sync_match(struct sync_ctx *ctx, bool add_new)
{
	struct maildir_uidlist *ul = ctx->box->uidlist;
	unsigned int rcount, i = 0, j = 0, vanished = 0;
	struct maildir_uidlist_rec *const *recs =
		maildir_uidlist_get_sorted_by_base(ul, &rcount);

	for (unsigned int r = 0; r < rcount; r++)
		recs[r]->fname = NULL;
	for (unsigned int e = 0; e < ctx->count; e++)
		ctx->entries[e].is_new = false;
	while (i < ctx->count || j < rcount) {
		if (i > 0 && i < ctx->count &&
		    entry_cmp(&ctx->entries[i - 1], &ctx->entries[i]) == 0) {
			i++;   /* same base twice: keep the first */
			continue;
		}
		int cmp = i == ctx->count ? 1 : j == rcount ? -1 :
			entry_rec_cmp(&ctx->entries[i], recs[j]);
		if (cmp == 0) {
			recs[j]->fname = ctx->entries[i].fname;
			recs[j]->expunged = false;
			i++; j++;
		} else if (cmp > 0) {
			if (recs[j]->uid < ctx->scan_next_uid)
				vanished++;
			j++;
		} else {
			ctx->entries[i++].is_new = true;
		}
	}
	if (!add_new)
		return vanished;
	for (i = 0; i < ctx->count; i++) {
		struct sync_entry *e = &ctx->entries[i];
		if (!e->is_new)
			continue;
		uint64_t size = e->size != MAILDIR_SIZE_UNKNOWN ?
			e->size : sync_stat_size(ctx->box, e->fname);
		struct maildir_uidlist_rec *rec = maildir_uidlist_add(ul,
			e->fname, e->base_len, size, e->vsize);
		rec->fname = e->fname;
	}
	return vanished;
}

static void sync_mark_vanished(struct maildir_uidlist *ul,
			       uint32_t scan_next_uid)
{
	unsigned int count = maildir_uidlist_count(ul);

	for (unsigned int i = 0; i < count; i++) {
		struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul, i);
		if (rec->fname == NULL && !rec->expunged &&
		    rec->uid < scan_next_uid) {
			rec->expunged = true;
			maildir_uidlist_set_dirty(ul);
		}
	}
}

/* ---- index view events ---- */

static void uid_array_add(struct mailbox_uid_array *a, uint32_t uid)
{
	if (a->count == a->alloc) {
		a->alloc = a->alloc == 0 ? 64 : a->alloc * 2;
		a->uids = i_realloc(a->uids, i_mul_size(a->alloc, sizeof(uint32_t)));
	}
	a->uids[a->count++] = uid;
}

static void ev_expunge(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	uid_array_add(&box->ev_expunged, uid);
}

static void ev_flags(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	uid_array_add(&box->ev_changed, uid);
}

static void ev_appended(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	uid_array_add(&box->ev_appended, uid);
}

static void ev_uidvalidity(void *context, uint32_t uidvalidity ATTR_UNUSED)
{
	struct mailbox *box = context;

	box->ev_reset = true;
}

static const struct mail_index_sync_callbacks ev_callbacks = {
	.expunge = ev_expunge,
	.flags_changed = ev_flags,
	.appended = ev_appended,
	.uidvalidity_changed = ev_uidvalidity,
};

static int index_view_sync(struct mailbox *box, const char **error_r)
{
	if (mail_index_view_sync(box->view, &ev_callbacks, box, error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: sync failed: %s",
					     box->path, *error_r);
		return -1;
	}
	return 0;
}

static int uid_cmp(const void *p1, const void *p2)
{
	const uint32_t *u1 = p1, *u2 = p2;

	return *u1 < *u2 ? -1 : *u1 > *u2 ? 1 : 0;
}

/* Index of the first message with uid >= uid (box->count if none). */
static uint32_t msg_pos(struct mailbox *box, uint32_t uid)
{
	uint32_t lo = 0, hi = box->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (box->msgs[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct mailbox_msg *msg_find(struct mailbox *box, uint32_t uid)
{
	uint32_t pos = msg_pos(box, uid);

	return pos < box->count && box->msgs[pos].uid == uid ?
		&box->msgs[pos] : NULL;
}

static const struct mail_index_record *
index_rec(struct mailbox *box, uint32_t uid)
{
	uint32_t seq = mail_index_view_uid_to_seq(box->view, uid);

	return seq == 0 ? NULL : mail_index_view_lookup(box->view, seq);
}

static void events_apply_expunges(struct mailbox *box)
{
	struct mailbox_uid_array *a = &box->ev_expunged;

	for (unsigned int i = 0; i < a->count; i++) {
		struct mailbox_msg *msg = msg_find(box, a->uids[i]);
		/* a rebuilt index may have re-added it */
		if (msg == NULL || index_rec(box, a->uids[i]) != NULL)
			continue;
		msg->expunged = true;
		i_free(msg->fname);
	}
	a->count = 0;
}

static void msg_set_from_rec(struct mailbox *box, struct mailbox_msg *msg,
			     const struct mail_index_record *rec)
{
	bool recent = rec->uid >= box->recent_lo && rec->uid < box->recent_hi;

	memset(msg, 0, sizeof(*msg));
	msg->uid = rec->uid;
	msg->flags = (rec->flags & MAIL_FLAGS_PERMANENT) |
		(recent ? MAIL_RECENT : 0);
	msg->keywords = rec->keywords;
	msg->size = MAILDIR_SIZE_UNKNOWN;
	msg->vsize = rec->size == 0 ? MAILDIR_SIZE_UNKNOWN : rec->size;
	msg->internal_date = rec->internal_date;
}

static void events_apply_appends(struct mailbox *box)
{
	struct mailbox_uid_array *a = &box->ev_appended;

	if (a->count > 1)
		qsort(a->uids, a->count, sizeof(uint32_t), uid_cmp);
	mailbox_msgs_reserve(box, box->count + a->count);
	for (unsigned int i = 0; i < a->count; i++) {
		const struct mail_index_record *rec = index_rec(box, a->uids[i]);
		if (rec == NULL)
			continue;   /* appended and expunged in one sync */
		uint32_t pos = msg_pos(box, rec->uid);
		struct mailbox_msg *msg = &box->msgs[pos];
		if (pos < box->count && msg->uid == rec->uid) {
			/* back after a rebuild: the index is the truth */
			i_free(msg->fname);
			msg_set_from_rec(box, msg, rec);
			continue;
		}
		if (pos < box->count) {
			memmove(msg + 1, msg,
				(box->count - pos) * sizeof(*msg));
		}
		box->count++;
		msg_set_from_rec(box, msg, rec);
	}
	a->count = 0;
}

/* Apply the flag changes; returns them as uids in ev_changed (those
   whose view flags really changed). */
static void events_apply_flags(struct mailbox *box)
{
	struct mailbox_uid_array *a = &box->ev_changed;
	unsigned int n = 0;

	for (unsigned int i = 0; i < a->count; i++) {
		struct mailbox_msg *msg = msg_find(box, a->uids[i]);
		const struct mail_index_record *rec = index_rec(box, a->uids[i]);
		if (msg == NULL || rec == NULL || msg->expunged)
			continue;
		enum mail_flags flags = (rec->flags & MAIL_FLAGS_PERMANENT) |
			(msg->flags & MAIL_RECENT);
		if (flags == msg->flags && rec->keywords == msg->keywords)
			continue;
		msg->flags = flags;
		msg->keywords = rec->keywords;
		/* the name carries the flags: find it again when needed */
		i_free(msg->fname);
		a->uids[n++] = a->uids[i];
	}
	a->count = n;
}

/* Expunges that were held back can be reported now. */
static void view_flush_expunged(struct mailbox *box,
				const struct mailbox_sync_callbacks *cb,
				void *context)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < box->count; i++) {
		if (box->msgs[i].expunged) {
			i_free(box->msgs[i].fname);
			if (cb != NULL && cb->expunge != NULL)
				cb->expunge(context, k + 1);
			continue;
		}
		box->msgs[k++] = box->msgs[i];
	}
	box->count = k;
}

static void events_apply(struct mailbox *box, bool allow_expunge,
			 const struct mailbox_sync_callbacks *cb, void *context)
{
	events_apply_expunges(box);
	events_apply_appends(box);
	events_apply_flags(box);
	box->ev_reset = false;
	if (allow_expunge)
		view_flush_expunged(box, cb, context);
	struct mailbox_uid_array *a = &box->ev_changed;
	if (a->count > 1)
		qsort(a->uids, a->count, sizeof(uint32_t), uid_cmp);
	for (unsigned int i = 0; i < a->count; i++) {
		if (i > 0 && a->uids[i] == a->uids[i - 1])
			continue;
		uint32_t pos = msg_pos(box, a->uids[i]);
		if (pos < box->count && box->msgs[pos].uid == a->uids[i] &&
		    cb != NULL && cb->flags_changed != NULL)
			cb->flags_changed(context, pos + 1);
	}
	a->count = 0;
}

int mailbox_index_catch_up(struct mailbox *box, bool allow_expunge,
			   const struct mailbox_sync_callbacks *cb,
			   void *context, const char **error_r)
{
	if (index_view_sync(box, error_r) < 0)
		return -1;
	events_apply(box, allow_expunge, cb, context);
	return 0;
}

/* ---- reconciling the index with the scanned directory ---- */

static bool rec_present(const struct maildir_uidlist_rec *rec)
{
	return rec->fname != NULL && !rec->expunged;
}

static void fname_flags(const char *fname, enum mail_flags *flags_r,
			uint32_t *keywords_r)
{
	struct maildir_filename fn;

	if (!maildir_filename_parse(fname, &fn)) {
		*flags_r = 0;
		*keywords_r = 0;
		return;
	}
	*flags_r = fn.flags & MAIL_FLAGS_PERMANENT;
	*keywords_r = maildir_keywords_from_letters(fn.other_flags);
}

/* stat() a file the index does not know yet: INTERNALDATE is its
   mtime. Returns false if it is gone. */
static bool sync_stat_file(struct mailbox *box, const char *fname,
			   struct stat *st_r)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", box->cur_dir, fname) <
		(int)sizeof(path) && stat(path, st_r) == 0;
}

static void sync_index_append(struct mailbox *box,
			      struct mail_index_transaction *t,
			      const struct maildir_uidlist_rec *rec)
{
	enum mail_flags flags;
	uint32_t keywords;
	struct stat st;

	if (!sync_stat_file(box, rec->fname, &st))
		return;   /* vanished since the scan: the next one sees it */
	fname_flags(rec->fname, &flags, &keywords);
	mail_index_append(t, rec->uid, flags, keywords,
			  rec->vsize == MAILDIR_SIZE_UNKNOWN ? 0 : rec->vsize,
			  (int64_t)st.st_mtime);
}

/* Walk the uidlist and the index (both ascending uid) and queue the
   differences. Sets *lost_r if a file the index lost (a uid below its
   next_uid) exists: appending it is impossible, the caller rebuilds. */
static unsigned int sync_index_fill(struct mailbox *box,
				    struct mail_index_transaction *t,
				    uint32_t index_next_uid,
				    uint32_t scan_next_uid, bool *lost_r)
{
	struct maildir_uidlist *ul = box->uidlist;
	unsigned int rcount = maildir_uidlist_count(ul), i = 0, changes = 0;
	uint32_t count = mail_index_view_count(box->view), j = 0;
	struct stat st;

	while (i < rcount || j < count) {
		struct maildir_uidlist_rec *r = i < rcount ?
			maildir_uidlist_get(ul, i) : NULL;
		const struct mail_index_record *x = j < count ?
			mail_index_view_lookup(box->view, j + 1) : NULL;
		if (x != NULL && (r == NULL || x->uid < r->uid)) {
			mail_index_expunge(t, x->uid, x->uid);
			changes++; j++;
		} else if (x == NULL || r->uid < x->uid) {
			i++;
			if (!rec_present(r))
				continue;   /* (or added after our readdir) */
			if (r->uid < index_next_uid) {
				/* expunged since our readdir, or lost */
				if (sync_stat_file(box, r->fname, &st))
					*lost_r = true;
				continue;
			}
			sync_index_append(box, t, r);
			changes++;
		} else {
			i++; j++;
			enum mail_flags flags;
			uint32_t keywords;
			if (r->fname == NULL && !r->expunged &&
			    r->uid >= scan_next_uid)
				continue;   /* added after our readdir */
			if (!rec_present(r)) {
				mail_index_expunge(t, x->uid, x->uid);
				changes++;
				continue;
			}
			fname_flags(r->fname, &flags, &keywords);
			if (flags == (x->flags & MAIL_FLAGS_PERMANENT) &&
			    keywords == x->keywords)
				continue;
			mailbox_index_replace_flags(t, x->uid, flags, keywords);
			changes++;
		}
	}
	return changes;
}

/* Start over: the index lost messages or belongs to another uidvalidity. */
static int sync_index_reset(struct mailbox *box, const char **error_r)
{
	uint32_t uidvalidity = maildir_uidlist_get_uidvalidity(box->uidlist);

	/* a new mailbox's first index is no news */
	if (maildir_uidlist_count(box->uidlist) > 0 ||
	    mail_index_view_count(box->view) > 0) {
		i_warning("%s: index does not match the Maildir, rebuilding it",
			  box->path);
	}
	/* next_uid 1: the uidlist's UIDs are appended again, then raised */
	if (mail_index_reset(box->index, uidvalidity, 1, error_r) < 0) {
		*error_r = mailbox_set_error(box, "index %s: reset failed: %s",
					     box->path, *error_r);
		return -1;
	}
	return index_view_sync(box, error_r);
}

/* Locked (uidlist): commit what the scan found that the index does not
   have, as one transaction. */
static int sync_index(struct mailbox *box, uint32_t scan_next_uid,
		      const char **error_r)
{
	struct maildir_uidlist *ul = box->uidlist;
	struct mail_index_status status;

	if (index_view_sync(box, error_r) < 0)
		return -1;
	mail_index_view_get_status(box->view, &status);
	if (status.uidvalidity != maildir_uidlist_get_uidvalidity(ul)) {
		if (sync_index_reset(box, error_r) < 0)
			return -1;
		mail_index_view_get_status(box->view, &status);
	} else if (status.messages_count == 0 &&
		   status.next_uid < scan_next_uid &&
		   maildir_uidlist_count(ul) > 0) {
		/* deleted with its log (a healthy index is never behind) */
		i_warning("%s: index is missing, rebuilding it from the Maildir",
			  box->path);
	}
	for (unsigned int attempt = 0;; attempt++) {
		struct mail_index_transaction *t =
			mail_index_transaction_begin(box->index);
		bool lost = false;
		unsigned int changes = sync_index_fill(box, t, status.next_uid,
						       scan_next_uid, &lost);
		if (lost && attempt == 0) {
			mail_index_transaction_rollback(&t);
			if (sync_index_reset(box, error_r) < 0)
				return -1;
			mail_index_view_get_status(box->view, &status);
			continue;
		}
		uint32_t next_uid = maildir_uidlist_get_next_uid(ul);
		if (next_uid > status.next_uid) {
			mail_index_update_header(t, 0, next_uid);
			changes++;
		}
		if (changes == 0) {
			mail_index_transaction_rollback(&t);
			return 0;
		}
		if (mailbox_index_commit(box, &t, error_r) < 0)
			return -1;
		return index_view_sync(box, error_r);
	}
}

static int sync_uidlist(struct sync_ctx *ctx, const char **error_r)
{
	struct maildir_uidlist *ul = ctx->box->uidlist;

	for (unsigned int retry = 0;; retry++) {
		if (maildir_uidlist_lock(ul, error_r) < 0)
			return -1;
		if (sync_match(ctx, false) == 0 ||
		    retry == MAILDIR_SYNC_VANISH_RETRIES)
			break;
		maildir_uidlist_unlock(ul);
		if (sync_scan_cur(ctx, error_r) < 0)
			return -1;
	}
	/* the index may have seen UIDs a lost uidlist forgot */
	struct mail_index_status status;
	mail_index_view_get_status(ctx->box->view, &status);
	if (status.uidvalidity == maildir_uidlist_get_uidvalidity(ul))
		maildir_uidlist_raise_next_uid(ul, status.next_uid);
	ctx->first_new_uid = maildir_uidlist_get_next_uid(ul);
	(void)sync_match(ctx, true);
	ctx->box->recent_lo = ctx->first_new_uid;
	ctx->box->recent_hi = maildir_uidlist_get_next_uid(ul);
	sync_mark_vanished(ul, ctx->scan_next_uid);
	int ret = 0;
	if (maildir_uidlist_is_dirty(ul))
		ret = maildir_uidlist_write(ul, error_r);
	if (ret == 0)
		ret = sync_index(ctx->box, ctx->scan_next_uid, error_r);
	maildir_uidlist_unlock(ul);
	return ret;
}

/* Give the view the names the scan found (they carry the flags), then
   forget them in the uidlist: they point into the scan's entries. */
static void sync_take_fnames(struct mailbox *box)
{
	struct maildir_uidlist *ul = box->uidlist;
	unsigned int rcount = maildir_uidlist_count(ul), j = 0;

	for (uint32_t i = 0; i < box->count; i++) {
		struct mailbox_msg *msg = &box->msgs[i];
		while (j < rcount && maildir_uidlist_get(ul, j)->uid < msg->uid)
			j++;
		if (j == rcount)
			break;
		struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul, j);
		if (rec->uid != msg->uid || !rec_present(rec) || msg->expunged)
			continue;
		if (msg->fname == NULL || strcmp(msg->fname, rec->fname) != 0) {
			i_free(msg->fname);
			msg->fname = i_strdup(rec->fname);
		}
		msg->size = rec->size;
	}
	for (j = 0; j < rcount; j++)
		maildir_uidlist_get(ul, j)->fname = NULL;
}

/* Whether the directories changed since the last scan. Records the new
   mtimes in cur_r and new_r. */
static bool sync_dirs_changed(struct mailbox *box, struct timespec *cur_r,
			      struct timespec *new_r)
{
	if (!dir_mtime_get(box->cur_dir, cur_r) ||
	    !dir_mtime_get(box->new_dir, new_r))
		return true;
	return box->scan_dirty || !timespec_equals(cur_r, &box->cur_mtime) ||
		!timespec_equals(new_r, &box->new_mtime);
}

static bool mtime_is_recent(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	/* coarse file system timestamps: within 2 seconds we cannot know
	   that a later change would move the mtime */
	return ts->tv_sec >= now.tv_sec - 2;
}

/* Tell later sessions that the index reflects the directories as of
   these mtimes (a hint: a lost or stale stamp only costs a rescan). */
static void sync_stamp_save(struct mailbox *box)
{
	char path[PATH_MAX], tmp[PATH_MAX], buf[128];

	if (snprintf(path, sizeof(path), "%s/%s", box->path,
		     MAILBOX_DIRSTAMP_NAME) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path,
		     (long)getpid()) >= (int)sizeof(tmp))
		return;
	struct mail_index_status status;
	mail_index_view_get_status(box->view, &status);
	int len = snprintf(buf, sizeof(buf), "%u %llu %llu %llu %llu %llu\n",
		status.uidvalidity, (unsigned long long)status.highest_modseq,
		(unsigned long long)box->cur_mtime.tv_sec,
		(unsigned long long)box->cur_mtime.tv_nsec,
		(unsigned long long)box->new_mtime.tv_sec,
		(unsigned long long)box->new_mtime.tv_nsec);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		return;
	bool ok = write(fd, buf, (size_t)len) == len;
	i_close_fd(&fd);
	if (!ok || rename(tmp, path) < 0) {
		(void)unlink(tmp);
		return;
	}
	box->stamp_saved = true;
}

static int sync_full(struct sync_ctx *ctx, const char **error_r)
{
	struct mailbox *box = ctx->box;
	struct timespec cur, new;

	if (sync_move_new(box, error_r) < 0)
		return -1;
	/* mtimes before the scan: a change during it shows up next time */
	if (!dir_mtime_get(box->cur_dir, &cur) ||
	    !dir_mtime_get(box->new_dir, &new)) {
		*error_r = mailbox_set_error(box, "stat(%s) failed: %m",
					     box->path);
		return -1;
	}
	if (maildir_uidlist_refresh(box->uidlist, error_r) < 0)
		return -1;
	ctx->scan_next_uid = maildir_uidlist_get_next_uid(box->uidlist);
	if (sync_scan_cur(ctx, error_r) < 0 || sync_uidlist(ctx, error_r) < 0)
		return -1;
	box->cur_mtime = cur;
	box->new_mtime = new;
	box->scan_dirty = mtime_is_recent(&cur) || mtime_is_recent(&new);
	box->stamp_saved = false;
	if (!box->scan_dirty)
		sync_stamp_save(box);
	return 0;
}

int mailbox_sync(struct mailbox *box, bool allow_expunge,
		 const struct mailbox_sync_callbacks *callbacks,
		 void *context, const char **error_r)
{
	struct sync_ctx ctx;
	struct timespec cur, new;
	const char *cache_error;
	int ret = 0;

	if (box->cache_trans != NULL &&
	    mailbox_cache_flush(box, &cache_error) < 0)
		i_error("%s", cache_error);
	if (index_view_sync(box, error_r) < 0)
		return -1;
	memset(&ctx, 0, sizeof(ctx));
	ctx.box = box;
	bool scanned = sync_dirs_changed(box, &cur, &new);
	if (scanned)
		ret = sync_full(&ctx, error_r);
	/* the changes seen so far are reported even if the scan failed */
	events_apply(box, allow_expunge, callbacks, context);
	if (scanned)
		sync_take_fnames(box);
	sync_entries_free(&ctx);
	i_free(ctx.entries);
	return ret;
}
