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

static void sync_mark_vanished(struct maildir_uidlist *ul)
{
	unsigned int count = maildir_uidlist_count(ul);

	for (unsigned int i = 0; i < count; i++) {
		struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul, i);
		if (rec->fname == NULL && !rec->expunged) {
			rec->expunged = true;
			maildir_uidlist_set_dirty(ul);
		}
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
	ctx->first_new_uid = maildir_uidlist_get_next_uid(ul);
	(void)sync_match(ctx, true);
	sync_mark_vanished(ul);
	int ret = 0;
	if (maildir_uidlist_is_dirty(ul))
		ret = maildir_uidlist_write(ul, error_r);
	maildir_uidlist_unlock(ul);
	return ret;
}

static enum mail_flags fname_flags(const char *fname)
{
	struct maildir_filename fn;

	return maildir_filename_parse(fname, &fn) ? fn.flags : 0;
}

/* The keyword letters a-z of the name's flag part. */
static uint32_t fname_keywords(const char *fname)
{
	struct maildir_filename fn;

	return maildir_filename_parse(fname, &fn) ?
		maildir_keywords_from_letters(fn.other_flags) : 0;
}

/* Update a message still present on disk; returns true if its flags
   changed. */
static bool view_update_msg(struct mailbox_msg *msg,
			    const struct maildir_uidlist_rec *rec)
{
	if (msg->fname == NULL || strcmp(msg->fname, rec->fname) != 0) {
		i_free(msg->fname);
		msg->fname = i_strdup(rec->fname);
	}
	if (msg->size == MAILDIR_SIZE_UNKNOWN)
		msg->size = rec->size;
	if (msg->vsize == MAILDIR_SIZE_UNKNOWN)
		msg->vsize = rec->vsize;
	enum mail_flags flags = fname_flags(rec->fname) |
		(msg->flags & MAIL_RECENT);
	uint32_t keywords = fname_keywords(rec->fname);
	if (flags == msg->flags && keywords == msg->keywords)
		return false;
	msg->flags = flags;
	msg->keywords = keywords;
	return true;
}

/* Walk the view and the uidlist (both ascending uid): update, expunge.
   Returns the view's new count; *ul_idx_r is the first record past the
   view's messages. */
static uint32_t view_merge(struct mailbox *box, bool allow_expunge,
			   const struct mailbox_sync_callbacks *cb,
			   void *context, bool *changed, unsigned int *ul_idx_r)
{
	struct maildir_uidlist *ul = box->uidlist;
	unsigned int rcount = maildir_uidlist_count(ul), j = 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < box->count; i++) {
		struct mailbox_msg msg = box->msgs[i];
		struct maildir_uidlist_rec *rec = NULL;
		while (j < rcount && maildir_uidlist_get(ul, j)->uid < msg.uid)
			j++;   /* not in the view: appears only at the end */
		if (j < rcount && maildir_uidlist_get(ul, j)->uid == msg.uid)
			rec = maildir_uidlist_get(ul, j++);
		if (rec != NULL && rec->fname != NULL && !rec->expunged) {
			msg.expunged = false;
			changed[k] = view_update_msg(&msg, rec);
		} else if (allow_expunge) {
			i_free(msg.fname);
			if (cb != NULL && cb->expunge != NULL)
				cb->expunge(context, k + 1);
			continue;
		} else {
			msg.expunged = true;
			i_free(msg.fname);
			changed[k] = false;
		}
		box->msgs[k++] = msg;
	}
	*ul_idx_r = j;
	return k;
}

static void view_append_new(struct sync_ctx *ctx, unsigned int ul_idx)
{
	struct mailbox *box = ctx->box;
	struct maildir_uidlist *ul = box->uidlist;
	unsigned int rcount = maildir_uidlist_count(ul);
	uint32_t last_uid = box->count == 0 ? 0 : box->msgs[box->count - 1].uid;

	mailbox_msgs_reserve(box, box->count + (rcount - ul_idx));
	for (unsigned int j = ul_idx; j < rcount; j++) {
		struct maildir_uidlist_rec *rec = maildir_uidlist_get(ul, j);
		if (rec->fname == NULL || rec->expunged || rec->uid <= last_uid)
			continue;
		struct mailbox_msg *msg = &box->msgs[box->count++];
		memset(msg, 0, sizeof(*msg));
		msg->uid = rec->uid;
		msg->fname = i_strdup(rec->fname);
		msg->size = rec->size;
		msg->vsize = rec->vsize;
		msg->flags = fname_flags(rec->fname);
		msg->keywords = fname_keywords(rec->fname);
		if (rec->uid >= ctx->first_new_uid)
			msg->flags |= MAIL_RECENT;
	}
}

static void view_update(struct sync_ctx *ctx, bool allow_expunge,
			const struct mailbox_sync_callbacks *cb, void *context)
{
	struct mailbox *box = ctx->box;
	bool *changed = i_malloc(box->count + 1);
	unsigned int ul_idx;

	box->count = view_merge(box, allow_expunge, cb, context, changed,
				&ul_idx);
	for (uint32_t i = 0; i < box->count; i++) {
		if (changed[i] && cb != NULL && cb->flags_changed != NULL)
			cb->flags_changed(context, i + 1);
	}
	free(changed);
	view_append_new(ctx, ul_idx);
}

/* Expunges that were held back can be reported now. */
static void view_flush_expunged(struct mailbox *box,
				const struct mailbox_sync_callbacks *cb,
				void *context)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < box->count; i++) {
		if (box->msgs[i].expunged) {
			if (cb != NULL && cb->expunge != NULL)
				cb->expunge(context, k + 1);
			continue;
		}
		box->msgs[k++] = box->msgs[i];
	}
	box->count = k;
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

static int sync_full(struct sync_ctx *ctx, bool allow_expunge,
		     const struct mailbox_sync_callbacks *cb, void *context,
		     const char **error_r)
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
	if (sync_scan_cur(ctx, error_r) < 0 || sync_uidlist(ctx, error_r) < 0)
		return -1;
	view_update(ctx, allow_expunge, cb, context);
	box->cur_mtime = cur;
	box->new_mtime = new;
	box->scan_dirty = mtime_is_recent(&cur) || mtime_is_recent(&new);
	return 0;
}

int mailbox_sync(struct mailbox *box, bool allow_expunge,
		 const struct mailbox_sync_callbacks *callbacks,
		 void *context, const char **error_r)
{
	struct sync_ctx ctx;
	struct timespec cur, new;
	int ret = 0;

	if (!sync_dirs_changed(box, &cur, &new)) {
		if (allow_expunge)
			view_flush_expunged(box, callbacks, context);
		return 0;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.box = box;
	ret = sync_full(&ctx, allow_expunge, callbacks, context, error_r);
	sync_entries_free(&ctx);
	i_free(ctx.entries);
	return ret;
}
