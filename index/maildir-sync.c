/* Bringing a mailbox view up to date with its Maildir folder:
   move new/ to cur/, scan cur/, give unknown files UIDs in name order
   (under the uidlist lock), drop vanished ones and update the view. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "maildir-name-sort.h"
#include "maildir-sync-renames.h"
#include "safe-open.h"

#include <dirent.h>
#include <fcntl.h>
#ifdef __GLIBC__
#  include <malloc.h>
#endif
#include <sys/stat.h>
#include <time.h>

/* Vanished files are re-checked with this many extra scans: a file that
   another client renamed (flag change) while we read the directory can be
   missing from one readdir pass. */
#define MAILDIR_SYNC_VANISH_RETRIES 1
/* With a watch (maildir-watch.h) a readdir of cur/ that another writer's
   change overlapped is repeated up to this many times; a scan that is
   still not clean then only adds files (see sync_ctx.unclean). */
#define MAILDIR_SYNC_SCAN_RETRIES 3

struct sync_entry {
	/* 8 bytes of the base name from sync_ctx.key_offset on (big-endian,
	   zero-padded): most comparisons of the sort end here, without
	   touching the name */
	uint64_t key;
	const char *fname;       /* in sync_ctx.names */
	uint32_t base_len;       /* <= MAILDIR_FILENAME_MAX */
	uint32_t keywords;       /* of the info part */
	uint64_t size, vsize;
	uint8_t flags;           /* enum mail_flags of the info part */
	bool is_new;
};

struct sync_ctx {
	struct mailbox *box;
	struct sync_entry *entries;
	unsigned int count, alloc;
	pool_t names;            /* the entries' file names */
	/* Bytes every scanned base name shares with the first one: the
	   sort keys start after them */
	uint32_t key_offset;
	/* The index had never been written (a Maildir made by another tool,
	   or a new mailbox): its messages are no news and nothing about them
	   needs a stat() now (sizes and dates are read when asked for). */
	bool first_build;
	uint32_t first_new_uid;  /* UIDs >= this were assigned by us */
	/* The uidlist's next_uid before the readdir: files that got UIDs
	   later (another session's append) may be missing from the scan
	   without having vanished. */
	uint32_t scan_next_uid;
	/* The scan raced another writer (the watch saw a foreign change
	   during the readdir, or a base name came twice): a missing file may
	   only have been renamed and a name may be stale, so this sync adds
	   new files but neither expunges nor takes flags from names; the
	   next sync scans again. */
	bool unclean;
};

/* One pool block holds this many names (~40 bytes each) */
#define SYNC_NAMES_BLOCK (64U * 1024)

static void sync_entries_free(struct sync_ctx *ctx)
{
	if (ctx->names != NULL)
		pool_clear(ctx->names);
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

/* Open the folder's subdirectory for readdir, without following a
   symlink in its place (safe-open.h). NULL with errno. */
static DIR *sync_opendir(struct mailbox *box, const char *subdir)
{
	int fd = safe_openat(box->dir_fd, subdir, O_RDONLY | O_DIRECTORY, 0);

	if (fd == -1)
		return NULL;
	DIR *dir = fdopendir(fd);
	if (dir == NULL) {
		int saved = errno;
		i_close_fd(&fd);
		errno = saved;
	}
	return dir;
}

/* A symlink in cur/ or new/ is not a message: another user's file may be
   its target (virtual users share one uid). Skipped, never indexed,
   served or counted; logged once per mailbox handle. */
static bool sync_entry_is_symlink(struct mailbox *box, DIR *dir,
				  const struct dirent *d, const char *subdir)
{
	struct stat st;

	if (d->d_type != DT_LNK) {
		if (d->d_type != DT_UNKNOWN ||
		    fstatat(dirfd(dir), d->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
			return false;
	}
	if (!box->symlink_logged) {
		box->symlink_logged = true;
		i_warning("%s/%s/%s: a symlink, not a message: ignored (and "
			  "any others in this folder)", box->path, subdir,
			  d->d_name);
	}
	return true;
}

/* Move each new/ file to cur/ with an info part. Another process may move
   it first (ENOENT): that is fine. */
static int sync_move_new(struct mailbox *box, const char **error_r)
{
	DIR *dir = sync_opendir(box, "new");
	struct dirent *d;
	char src[PATH_MAX], dest[PATH_MAX];

	if (dir == NULL) {
		*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
					     box->new_dir);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(d->d_name, &fn) ||
		    sync_entry_is_symlink(box, dir, d, "new"))
			continue;
		const char *info = fn.have_info ? "" : MAILDIR_INFO_PREFIX;
		if (strchr(d->d_name, ':') != NULL && !fn.have_info)
			continue;   /* unknown info version: leave it alone */
		if (snprintf(src, sizeof(src), "%s/%s", box->new_dir,
			     d->d_name) >= (int)sizeof(src) ||
		    snprintf(dest, sizeof(dest), "%s/%s%s", box->cur_dir,
			     d->d_name, info) >= (int)sizeof(dest))
			continue;
		maildir_watch_expect(box->watch, MAILDIR_WATCH_NEW, d->d_name);
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR,
				     strrchr(dest, '/') + 1);
		if (rename(src, dest) < 0 && errno != ENOENT)
			i_error("rename(%s, %s) failed: %m", src, dest);
		maildir_watch_settle(box->watch);
	}
	closedir(dir);
	return 0;
}

/* Files in tmp/ older than this are left over from a crashed writer (the
   Maildir convention, qmail's maildir(5): 36 hours). */
#define MAILDIR_TMP_STALE_SECS (36 * 60 * 60)

/* Remove what crashed writers left in tmp/. Failures only cost disk
   space, so they are logged and ignored. */
static void sync_clean_tmp(struct mailbox *box)
{
	DIR *dir = opendir(box->tmp_dir);
	struct dirent *d;
	time_t limit = time(NULL) - MAILDIR_TMP_STALE_SECS;

	if (dir == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		struct stat st;
		if (d->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_mtime >= limit)
			continue;
		if (unlinkat(dirfd(dir), d->d_name, 0) < 0 && errno != ENOENT)
			i_error("unlink(%s/%s) failed: %m", box->tmp_dir, d->d_name);
	}
	closedir(dir);
}

static void sync_add_entry(struct sync_ctx *ctx, const char *fname,
			   const struct maildir_filename *fn)
{
	if (ctx->count == ctx->alloc) {
		ctx->alloc = ctx->alloc == 0 ? 1024 : ctx->alloc * 2;
		ctx->entries = i_realloc(ctx->entries,
			i_mul_size(ctx->alloc, sizeof(*ctx->entries)));
	}
	if (ctx->names == NULL)
		ctx->names = pool_create("maildir sync names", SYNC_NAMES_BLOCK);
	struct sync_entry *e = &ctx->entries[ctx->count++];
	/* parse() checked that len <= MAILDIR_FILENAME_MAX */
	char *name = p_malloc(ctx->names, fn->len + 1);
	memcpy(name, fname, fn->len);
	e->fname = name;
	e->base_len = (uint32_t)fn->base_len;
	e->size = fn->size;
	e->vsize = fn->vsize;
	e->flags = (uint8_t)(fn->flags & MAIL_FLAGS_PERMANENT);
	e->keywords = fn->other_flags[0] == '\0' ? 0 :
		maildir_keywords_from_letters(fn->other_flags);
	if (ctx->count == 1) {
		ctx->key_offset = e->base_len;
	} else {
		const char *first = ctx->entries[0].fname;
		uint32_t n = 0;
		while (n < ctx->key_offset && n < e->base_len &&
		       first[n] == e->fname[n])
			n++;
		ctx->key_offset = n;
	}
}

/* Base names in byte order, a shorter prefix first. */
static int entry_cmp(const void *p1, const void *p2)
{
	const struct sync_entry *e1 = p1, *e2 = p2;

	if (e1->key != e2->key)
		return e1->key < e2->key ? -1 : 1;
	uint32_t len = MIN(e1->base_len, e2->base_len);
	int ret = memcmp(e1->fname, e2->fname, len);

	if (ret != 0)
		return ret;
	return e1->base_len < e2->base_len ? -1 :
		e1->base_len > e2->base_len ? 1 : 0;
}

static int entry_tie_cmp(uint32_t idx1, uint32_t idx2, void *context)
{
	const struct sync_ctx *ctx = context;

	return entry_cmp(&ctx->entries[idx1], &ctx->entries[idx2]);
}

/* Puts entries[items[i].idx] at i for every i, in place (following each
   cycle of the permutation; a done item points at itself). */
static void sync_permute_entries(struct sync_entry *entries,
				 struct maildir_name_sort_item *items,
				 unsigned int count)
{
	for (unsigned int i = 0; i < count; i++) {
		if (items[i].idx == i)
			continue;
		struct sync_entry first = entries[i];
		unsigned int j = i;
		for (;;) {
			unsigned int k = items[j].idx;
			items[j].idx = j;
			if (k == i) {
				entries[j] = first;
				break;
			}
			entries[j] = entries[k];
			j = k;
		}
	}
}

/* Base names in byte order (entry_cmp), a name found twice in readdir
   order: a radix sort of the keys (maildir-name-sort.h) instead of a
   comparison sort of the entries. */
static void sync_sort_entries(struct sync_ctx *ctx)
{
	if (ctx->count == 0)
		return;
	struct maildir_name_sort_item *items =
		i_malloc(i_mul_size(ctx->count, sizeof(*items)));
	for (unsigned int i = 0; i < ctx->count; i++) {
		struct sync_entry *e = &ctx->entries[i];
		e->key = maildir_name_sort_key(e->fname, e->base_len,
					       ctx->key_offset);
		items[i].key = e->key;
		items[i].idx = i;
	}
	maildir_name_sort(items, ctx->count, entry_tie_cmp, ctx);
	sync_permute_entries(ctx->entries, items, ctx->count);
	i_free(items);
}

static int sync_scan_cur(struct sync_ctx *ctx, const char **error_r)
{
	struct mailbox *box = ctx->box;
	DIR *dir = sync_opendir(box, "cur");
	struct dirent *d;

	if (dir == NULL) {
		*error_r = mailbox_set_error(box, "opendir(%s) failed: %m",
					     box->cur_dir);
		return -1;
	}
	sync_entries_free(ctx);
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(d->d_name, &fn) ||
		    sync_entry_is_symlink(box, dir, d, "cur"))
			continue;
		if (!maildir_uidlist_base_is_valid(d->d_name, fn.base_len)) {
			i_warning("%s/%s: file name not usable, ignored",
				  box->cur_dir, d->d_name);
			continue;
		}
		sync_add_entry(ctx, d->d_name, &fn);
	}
	closedir(dir);
	sync_sort_entries(ctx);
	return 0;
}

/* Scan cur/ until no foreign change overlapped the readdir (the watch
   says), at most MAILDIR_SYNC_SCAN_RETRIES more times. Without a watch
   one pass is all there is (mtimes cannot tell). */
static int sync_scan_cur_clean(struct sync_ctx *ctx, const char **error_r)
{
	struct maildir_watch *watch = ctx->box->watch;

	ctx->box->scan_count++;
	for (unsigned int attempt = 0;; attempt++) {
		uint64_t gen = watch == NULL ? 0 : maildir_watch_get_gen(watch);
		if (sync_scan_cur(ctx, error_r) < 0)
			return -1;
		ctx->unclean = watch != NULL &&
			maildir_watch_get_gen(watch) != gen;
		if (!ctx->unclean || attempt == MAILDIR_SYNC_SCAN_RETRIES)
			return 0;
	}
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
	    (int)sizeof(path) || lstat(path, &st) < 0)
		return MAILDIR_SIZE_UNKNOWN;
	return (uint64_t)st.st_size;
}

static void sync_rec_set_file(struct maildir_uidlist_rec *rec,
			      const struct sync_entry *e)
{
	rec->fname = e->fname;
	rec->fname_flags = e->flags;
	rec->fname_keywords = e->keywords;
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
			/* same base twice: renamed during the readdir */
			ctx->unclean = true;
			i++;
			continue;
		}
		int cmp = i == ctx->count ? 1 : j == rcount ? -1 :
			entry_rec_cmp(&ctx->entries[i], recs[j]);
		if (cmp == 0) {
			sync_rec_set_file(recs[j], &ctx->entries[i]);
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
		uint64_t size = e->size != MAILDIR_SIZE_UNKNOWN ||
			ctx->first_build ? e->size :
			sync_stat_size(ctx->box, e->fname);
		struct maildir_uidlist_rec *rec = maildir_uidlist_add(ul,
			e->fname, e->base_len, size, e->vsize);
		sync_rec_set_file(rec, e);
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

/* ---- index view events ----
   A view sync changes the records under the session. Expunged messages
   the session saw become pending (keeping their sequence numbers until
   a sync that may expunge); flag changes are remembered as uids and
   reported by mailbox_sync(); appends stay hidden until then. */

static void pending_insert(struct mailbox *box, uint32_t uid,
			   const struct mail_index_record *rec)
{
	unsigned int pos = box->pending_count;

	while (pos > 0 && box->pending[pos - 1].uid >= uid) {
		if (box->pending[pos - 1].uid == uid)
			return;
		pos--;
	}
	if (box->pending_count == box->pending_alloc) {
		box->pending_alloc = box->pending_alloc == 0 ? 16 :
			box->pending_alloc * 2;
		box->pending = i_realloc(box->pending,
			i_mul_size(box->pending_alloc, sizeof(*box->pending)));
	}
	memmove(&box->pending[pos + 1], &box->pending[pos],
		(box->pending_count - pos) * sizeof(*box->pending));
	struct mailbox_expunged *e = &box->pending[pos];
	e->uid = uid;
	e->flags = rec == NULL ? 0 : rec->flags & MAIL_FLAGS_PERMANENT;
	e->keywords = rec == NULL ? 0 : rec->keywords;
	e->vsize = rec == NULL ? 0 : rec->size;
	e->internal_date = rec == NULL ? 0 : rec->internal_date;
	e->modseq = rec == NULL ? 0 : rec->modseq;
	e->expunge_modseq = mail_index_view_sync_modseq(box->view);
	box->pending_count++;
}

/* Drop the pending expunges that are back in the view (a rebuilt index
   re-added them), in one pass: a reset may bring back every message. */
static void pending_compact(struct mailbox *box)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < box->pending_count; i++) {
		if (mail_index_view_uid_to_seq(box->view,
					       box->pending[i].uid) == 0)
			box->pending[n++] = box->pending[i];
		else
			maildir_ghosts_release(box->ghosts,
					       box->pending[i].uid, box);
	}
	box->pending_count = n;
	box->pending_revived = false;
}

/* A name guessed before a flag change is stale. */
static void ev_forget_fname(struct mailbox *box, uint32_t uid)
{
	mailbox_fname_forget_uid(box, uid);
}

static void ev_expunge(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	ev_forget_fname(box, uid);
	if (uid >= box->visible_next_uid)
		return;   /* the session never saw it */
	/* the record is still in the map during the callback */
	uint32_t iseq = mail_index_view_uid_to_seq(box->view, uid);
	pending_insert(box, uid, iseq == 0 ? NULL :
		       mail_index_view_lookup(box->view, iseq));
}

static void ev_flags(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	ev_forget_fname(box, uid);
	if (uid < box->visible_next_uid)
		uidset_add(&box->ev_changed, uid);
}

static void ev_appended(void *context, uint32_t seq ATTR_UNUSED, uint32_t uid)
{
	struct mailbox *box = context;

	if (uid >= box->visible_next_uid)
		return;   /* new: shown by the next mailbox_sync() */
	/* back after a rebuild: the index is the truth */
	box->pending_revived = true;
	uidset_add(&box->ev_changed, uid);
}

static const struct mail_index_sync_callbacks ev_callbacks = {
	.expunge = ev_expunge,
	.flags_changed = ev_flags,
	.appended = ev_appended,
};

static int index_view_sync(struct mailbox *box, const char **error_r)
{
	int ret = mail_index_view_sync(box->view, &ev_callbacks, box, error_r);

	if (box->pending_revived)
		pending_compact(box);
	if (ret < 0) {
		*error_r = mailbox_set_error(box, "index %s: sync failed: %s",
					     box->path, *error_r);
		return -1;
	}
	return 0;
}

int mailbox_view_refresh_own(struct mailbox *box, uint32_t uid,
			     const char **error_r)
{
	if (index_view_sync(box, error_r) < 0)
		return -1;
	/* the caller reports its own change (STORE's FETCH) */
	uidset_remove(&box->ev_changed, uid);
	return 0;
}

/* Report the pending expunges: each in the numbering left by the ones
   before it, i.e. after the visible messages below it. */
static void events_flush_expunged(struct mailbox *box,
				  const struct mailbox_sync_callbacks *cb,
				  void *context)
{
	for (unsigned int i = 0; i < box->pending_count; i++) {
		uint32_t seq = mailbox_visible_below(box, box->pending[i].uid) + 1;
		if (cb != NULL && cb->expunge != NULL)
			cb->expunge(context, seq, box->pending[i].uid);
		/* told: its kept file is no longer needed here */
		maildir_ghosts_release(box->ghosts, box->pending[i].uid, box);
	}
	box->pending_count = 0;
}

/* Report the flag changes of visible messages, ascending. */
static void events_report_flags(struct mailbox *box,
				const struct mailbox_sync_callbacks *cb,
				void *context)
{
	for (unsigned int i = 0; i < box->ev_changed.count; i++) {
		const struct uidset_range *r = &box->ev_changed.ranges[i];
		uint32_t first = mail_index_view_uid_to_seq_ge(box->view, r->lo);
		uint32_t count = mailbox_visible_count(box);
		for (uint32_t iseq = first; iseq != 0 && iseq <= count; iseq++) {
			uint32_t uid = mail_index_view_lookup(box->view, iseq)->uid;
			if (uid > r->hi)
				break;
			if (cb != NULL && cb->flags_changed != NULL) {
				cb->flags_changed(context,
					mailbox_uid_to_seq_ge(box, uid));
			}
		}
	}
	uidset_clear(&box->ev_changed);
}

/* \Recent of the messages that became visible, [old_next, new_next):
   a SELECT session claims them in the index (the first one to do so
   owns them); any other session shows those not claimed yet. */
static void events_recent(struct mailbox *box, uint32_t old_next,
			  uint32_t new_next)
{
	struct mail_index_status status;
	struct mail_index_commit_result result;
	const char *error;

	if (new_next <= old_next)
		return;
	mail_index_view_get_status(box->view, &status);
	/* uids start at 1: an empty range is no claim */
	uint32_t first = MAX(MAX(status.first_recent_uid, old_next), 1);
	if (first >= new_next)
		return;
	if ((box->flags & MAILBOX_OPEN_SELECT) == 0 ||
	    mailbox_is_readonly(box)) {
		uidset_add_range(&box->recent, first, new_next - 1);
		return;
	}
	struct mail_index_transaction *t =
		mail_index_transaction_begin(box->index);
	mail_index_update_first_recent(t, new_next);
	/* losing a claim in a crash only shows \Recent once more */
	if (mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER, &result,
					  &error) < 0) {
		i_error("index %s: claiming \\Recent failed: %s", box->path,
			error);
		return;
	}
	first = MAX(result.prev_first_recent_uid, 1);
	if (first < new_next)
		uidset_add_range(&box->recent, first, new_next - 1);
}

/* The uid from which messages are still hidden: all of the view. */
static uint32_t view_next_uid(struct mailbox *box)
{
	struct mail_index_status status;
	uint32_t count = mail_index_view_count(box->view);

	mail_index_view_get_status(box->view, &status);
	if (count > 0) {
		uint32_t last = mail_index_view_lookup(box->view, count)->uid;
		return MAX(status.next_uid, last + 1);
	}
	return MAX(status.next_uid, 1);
}

static void events_apply(struct mailbox *box, bool allow_expunge,
			 const struct mailbox_sync_callbacks *cb, void *context)
{
	if (allow_expunge)
		events_flush_expunged(box, cb, context);
	events_report_flags(box, cb, context);
	uint32_t old_next = box->visible_next_uid;
	box->visible_next_uid = view_next_uid(box);
	events_recent(box, old_next, box->visible_next_uid);
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

/* stat() a file the index does not know yet: INTERNALDATE is its
   mtime. Returns false if it is gone. */
static bool sync_stat_file(struct mailbox *box, const char *fname,
			   struct stat *st_r)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", box->cur_dir, fname) <
		(int)sizeof(path) && lstat(path, st_r) == 0 &&
		!S_ISLNK(st_r->st_mode);
}

/* new_mail: the file is new to the mailbox (not a rebuild of a lost
   index), so it gets a save date: its ctime, when it was renamed into
   cur/ (by us from new/, or by another Maildir writer). Rebuilt
   messages get none: RFC 8514 wants the real one or nothing; and no
   stat() either: INTERNALDATE 0 means "the file's mtime, read when
   asked for" (mailbox_msg_internaldate), so indexing a big Maildir reads
   no inodes. */
static void sync_index_append(struct mailbox *box,
			      struct mail_index_transaction *t,
			      const struct maildir_uidlist_rec *rec,
			      bool new_mail)
{
	struct stat st;
	int64_t date = 0;
	time_t saved = 0;

	if (new_mail) {
		if (sync_stat_file(box, rec->fname, &st)) {
			date = (int64_t)st.st_mtime;
			saved = st.st_ctime;
		} else {
			/* Renamed (or expunged) since the scan. It has its UID
			   in the uidlist now, so it must be in the index too:
			   skipping it would leave a hole below next_uid that
			   the next sync takes for a lost index. Its date is
			   read when asked for; a file really gone is expunged
			   by the next scan. */
			saved = time(NULL);
		}
	}
	mail_index_append(t, rec->uid, rec->fname_flags, rec->fname_keywords,
			  rec->vsize == MAILDIR_SIZE_UNKNOWN ? 0 : rec->vsize,
			  date);
	if (new_mail)
		mailbox_index_add_savedate(t, rec->uid, saved);
}

/* Walk the uidlist and the index (both ascending uid) and queue the
   differences. Sets *lost_r if a file the index lost (a uid below its
   next_uid) exists: appending it is impossible, the caller rebuilds.
   Appends of uids >= new_from are new mail (get a save date). */
static unsigned int sync_index_fill(struct mailbox *box,
				    struct mail_index_transaction *t,
				    uint32_t index_next_uid,
				    uint32_t scan_next_uid, uint32_t new_from,
				    bool unclean, bool *lost_r)
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
			sync_index_append(box, t, r, r->uid >= new_from);
			changes++;
		} else {
			i++; j++;
			if (r->fname == NULL && !r->expunged &&
			    (r->uid >= scan_next_uid || unclean))
				continue;   /* added after our readdir, or missed */
			if (!rec_present(r)) {
				mail_index_expunge(t, x->uid, x->uid);
				changes++;
				continue;
			}
			if (unclean ||
			    (r->fname_flags == (x->flags & MAIL_FLAGS_PERMANENT) &&
			     r->fname_keywords == x->keywords))
				continue;   /* a name read in a race may be stale */
			/* The readdir ran before the lock: another process may
			   have renamed the file since and committed its flags
			   (x has them). Our writers rename only under this
			   lock, so a name still there now is the file's own;
			   one that is not would revert an acknowledged STORE. */
			if (!sync_stat_file(box, r->fname, &st))
				continue;
			mailbox_index_replace_flags(t, x->uid, r->fname_flags,
						    r->fname_keywords);
			changes++;
		}
	}
	return changes;
}

/* Start over: the index lost messages or belongs to another uidvalidity.
   quiet: the index was never written, so building it is no news. */
static int sync_index_reset(struct mailbox *box, bool quiet,
			    const char **error_r)
{
	uint32_t uidvalidity = maildir_uidlist_get_uidvalidity(box->uidlist);

	if (!quiet) {
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

/* Changes in one sync from which moat.index is rewritten at once: the
   next session maps the records instead of replaying a long log (a big
   rebuild; the first index of a Maildir is written straight into
   moat.index: mailbox_index_commit_first()). */
#define MAILDIR_SYNC_CHECKPOINT_MIN 1024

static void sync_index_checkpoint(struct mailbox *box, unsigned int changes)
{
	const char *error;

	if (changes < MAILDIR_SYNC_CHECKPOINT_MIN)
		return;
	/* only an optimization: the log has everything */
	if (mail_index_checkpoint(box->index, &error) < 0)
		i_warning("index %s: checkpoint failed: %s", box->path, error);
}

/* Locked (uidlist): commit what the scan found that the index does not
   have, as one transaction. first_new_uid: the first uid this scan gave
   out (those files are new mail even when the index is rebuilt). */
static int sync_index(struct mailbox *box, uint32_t scan_next_uid,
		      uint32_t first_new_uid, bool first_build, bool unclean,
		      const char **error_r)
{
	struct maildir_uidlist *ul = box->uidlist;
	struct mail_index_status status;
	/* uids from here on are new mail; a rebuild lowers it to only
	   what this scan found (older save dates are unknown); the first
	   index of a Maildir has none */
	uint32_t new_from = first_build ? UINT32_MAX : 0;

	if (index_view_sync(box, error_r) < 0)
		return -1;
	mail_index_view_get_status(box->view, &status);
	if (status.uidvalidity != maildir_uidlist_get_uidvalidity(ul)) {
		/* an index that never had a message has nothing to lose */
		bool quiet = status.next_uid <= 1 &&
			status.messages_count == 0;
		if (sync_index_reset(box, quiet, error_r) < 0)
			return -1;
		mail_index_view_get_status(box->view, &status);
		new_from = first_build ? UINT32_MAX : first_new_uid;
	} else if (status.messages_count == 0 &&
		   status.next_uid < scan_next_uid &&
		   maildir_uidlist_count(ul) > 0) {
		/* deleted with its log (a healthy index is never behind) */
		i_warning("%s: index is missing, rebuilding it from the Maildir",
			  box->path);
		new_from = first_new_uid;
	}
	for (unsigned int attempt = 0;; attempt++) {
		struct mail_index_transaction *t =
			mail_index_transaction_begin(box->index);
		bool lost = false;
		unsigned int changes = sync_index_fill(box, t, status.next_uid,
						       scan_next_uid, new_from,
						       unclean, &lost);
		if (lost && attempt == 0) {
			mail_index_transaction_rollback(&t);
			if (sync_index_reset(box, false, error_r) < 0)
				return -1;
			mail_index_view_get_status(box->view, &status);
			new_from = first_new_uid;
			continue;
		}
		if (box->import_first_recent > 1) {
			/* imported: the other server's messages are old */
			mail_index_update_first_recent(t,
						       box->import_first_recent);
			changes++;
		}
		if (box->import_modseq_floor > 0) {
			mail_index_raise_modseq(t, box->import_modseq_floor);
			changes++;
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
		/* a never-written index: straight into moat.index, instead
		   of the log and then moat.index at the view's next sync */
		int built = mailbox_index_commit_first(box, &t, error_r);
		if (built < 0 ||
		    (built == 0 && mailbox_index_commit(box, &t, error_r) < 0))
			return -1;
		box->import_first_recent = 0;
		box->import_modseq_floor = 0;
		if (index_view_sync(box, error_r) < 0)
			return -1;
		if (built == 0)
			sync_index_checkpoint(box, changes);
		return 0;
	}
}

static int sync_uidlist(struct sync_ctx *ctx, const char **error_r)
{
	struct maildir_uidlist *ul = ctx->box->uidlist;

	for (unsigned int retry = 0;; retry++) {
		if (maildir_uidlist_lock(ul, error_r) < 0)
			return -1;
		/* after a clean scan (watch) a missing file is gone */
		if (sync_match(ctx, false) == 0 ||
		    retry == MAILDIR_SYNC_VANISH_RETRIES ||
		    (ctx->box->watch != NULL && !ctx->unclean))
			break;
		maildir_uidlist_unlock(ul);
		if (sync_scan_cur_clean(ctx, error_r) < 0)
			return -1;
	}
	struct mail_index_status status;
	mail_index_view_get_status(ctx->box->view, &status);
	/* No uidlist and an index that never had a message: the first
	   index of this Maildir. No UID was ever shown, so the index's
	   UIDVALIDITY stays valid (no rebuild of the new index). */
	ctx->first_build = maildir_uidlist_was_reset(ul) &&
		status.messages_count == 0 && status.next_uid <= 1;
	/* A lost or corrupt uidlist gives every message a new UID: clients
	   that cached the index's UIDVALIDITY must see a greater one, even
	   when the clock gives the same second (or went back). The index is
	   then rebuilt under the new value (sync_index). */
	if (ctx->first_build && status.uidvalidity != 0)
		maildir_uidlist_adopt_uidvalidity(ul, status.uidvalidity);
	else if (maildir_uidlist_was_reset(ul) && status.uidvalidity != 0 &&
		 status.uidvalidity < UINT32_MAX)
		maildir_uidlist_raise_uidvalidity(ul, status.uidvalidity);
	/* the index may have seen UIDs a lost uidlist forgot */
	if (status.uidvalidity == maildir_uidlist_get_uidvalidity(ul))
		maildir_uidlist_raise_next_uid(ul, status.next_uid);
	ctx->first_new_uid = maildir_uidlist_get_next_uid(ul);
	(void)sync_match(ctx, true);
	if (!ctx->unclean)
		sync_mark_vanished(ul, ctx->scan_next_uid);
	int ret = 0;
	if (maildir_uidlist_is_dirty(ul))
		ret = maildir_uidlist_write(ul, error_r);
	if (ret == 0)
		ret = sync_index(ctx->box, ctx->scan_next_uid,
				 ctx->first_new_uid, ctx->first_build,
				 ctx->unclean, error_r);
	maildir_uidlist_unlock(ul);
	return ret;
}

/* The scan is done: the records point into its entries, and a session
   needs no uidlist in memory (names are looked up by uid when a file is
   opened: maildir-uidlist-lookup.h). Dropping it keeps a big mailbox's
   session small; the next scan or save reads it again. */
static void sync_drop_uidlist(struct mailbox *box)
{
	if (maildir_uidlist_is_locked(box->uidlist))
		return;
	maildir_uidlist_deinit(&box->uidlist);
	box->uidlist = maildir_uidlist_init(box->path,
		(box->flags & MAILBOX_OPEN_NO_FSYNC) == 0);
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
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
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

static uint32_t box_uidvalidity(struct mailbox *box)
{
	struct mail_index_status st;

	mail_index_view_get_status(box->view, &st);
	return st.uidvalidity;
}

static uint64_t box_modseq(struct mailbox *box)
{
	struct mail_index_status st;

	mail_index_view_get_status(box->view, &st);
	return st.highest_modseq;
}

/* The watch says the index reflects the directories, but our own changes
   moved their mtimes: once the mtimes are old enough to be trusted by
   another process, write them to the stamp (STATUS and the next session's
   open read it). Checked at most once a second per handle. */
static void sync_stamp_refresh(struct mailbox *box)
{
	struct timespec cur, new;
	time_t now = time(NULL);

	if (box->stamp_checked_at == now)
		return;
	box->stamp_checked_at = now;
	if (!dir_mtime_get(box->cur_dir, &cur) ||
	    !dir_mtime_get(box->new_dir, &new) ||
	    (box->stamp_saved && timespec_equals(&cur, &box->cur_mtime) &&
	     timespec_equals(&new, &box->new_mtime)) ||
	    mtime_is_recent(&cur) || mtime_is_recent(&new) ||
	    !maildir_watch_is_trusted(box->watch, box_uidvalidity(box),
				      box_modseq(box)))
		return;
	box->cur_mtime = cur;
	box->new_mtime = new;
	box->scan_dirty = false;
	sync_stamp_save(box);
}

static int sync_full(struct sync_ctx *ctx, const char **error_r)
{
	struct mailbox *box = ctx->box;
	struct timespec cur, new;

	/* a COPY or MULTIAPPEND cut short leaves all or nothing */
	if (mailbox_staged_recover(box, error_r) < 0 ||
	    sync_move_new(box, error_r) < 0)
		return -1;
	if (!mailbox_is_readonly(box))
		sync_clean_tmp(box);
	/* a Dovecot or Courier folder keeps its UIDs (before the scan:
	   Courier's keywords rename files) */
	if (mailbox_import_foreign(box, error_r) < 0)
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
	if (sync_scan_cur_clean(ctx, error_r) < 0 ||
	    sync_uidlist(ctx, error_r) < 0)
		return -1;
	box->cur_mtime = cur;
	box->new_mtime = new;
	box->scan_dirty = mtime_is_recent(&cur) || mtime_is_recent(&new) ||
		ctx->unclean;
	box->stamp_saved = false;
	if (!box->scan_dirty)
		sync_stamp_save(box);
	return 0;
}

/* Another tool's renames that the watch saw, applied without a readdir
   (maildir-sync-renames.h). true: the index has them and the watch
   trusts it again; false: the folder is to be scanned. */
static bool sync_watch_renames(struct mailbox *box)
{
	struct mail_index_status status;
	const char *error;
	uint64_t gen;

	if (box->watch == NULL || mail_index_was_rebuilt(box->index))
		return false;
	int ret = maildir_sync_renames(box, &gen, &error);
	if (ret > 0 && index_view_sync(box, &error) < 0)
		ret = -1;
	if (ret < 0) {
		/* the scan tries again, and reports what still fails */
		i_error("%s: applying renames: %s", box->path, error);
		maildir_watch_distrust(box->watch);
		return false;
	}
	if (ret == 0)
		return false;
	mail_index_view_get_status(box->view, &status);
	maildir_watch_trust(box->watch, gen, status.uidvalidity,
			    status.highest_modseq);
	return true;
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
	(void)mailbox_get_watch(box);
	/* Taken before the stat()s and the scan: whatever happens after
	   it moves the generation, so trusting the state as of here is safe. */
	uint64_t gen = box->watch == NULL ? 0 : maildir_watch_get_gen(box->watch);
	struct mail_index_status istatus;
	mail_index_view_get_status(box->view, &istatus);
	bool watch_skip = box->watch != NULL &&
		!mail_index_was_rebuilt(box->index) &&
		maildir_watch_is_trusted(box->watch, istatus.uidvalidity,
					 istatus.highest_modseq);
	if (!watch_skip)
		watch_skip = sync_watch_renames(box);
	bool scanned = !watch_skip &&
		((box->watch != NULL && maildir_watch_saw_change(box->watch)) ||
		 sync_dirs_changed(box, &cur, &new));
	if (scanned)
		ret = sync_full(&ctx, error_r);
	else if (watch_skip)
		sync_stamp_refresh(box);
	if (box->watch != NULL && !watch_skip &&
	    (scanned ? ret == 0 && !ctx.unclean : !box->scan_dirty)) {
		/* After a clean scan, or when old mtimes equal the ones the
		   index reflects, nothing foreign happened before gen: the
		   watch answers from now on, for every handle. */
		mail_index_view_get_status(box->view, &istatus);
		maildir_watch_trust(box->watch, gen, istatus.uidvalidity,
				    istatus.highest_modseq);
	}
	/* the changes seen so far are reported even if the scan failed */
	events_apply(box, allow_expunge, callbacks, context);
	/* an error may live in the uidlist: keep it past the drop */
	if (ret < 0 && *error_r != box->error)
		*error_r = mailbox_set_error(box, "%s", *error_r);
	if (scanned)
		sync_drop_uidlist(box);
	bool big_scan = ctx.alloc >= MAILDIR_SYNC_CHECKPOINT_MIN;
	if (ctx.names != NULL)
		pool_unref(&ctx.names);
	i_free(ctx.entries);
#ifdef __GLIBC__
	/* a big scan's names and uidlist came from the heap: give them
	   back, a session stays small whatever the mailbox size */
	if (big_scan)
		(void)malloc_trim(0);
#else
	(void)big_scan;
#endif
	return ret;
}
