/* MULTIAPPEND staging (mailbox-append-multi.h): each message goes to its
   own file in tmp/ with its final name already computed; commit renames
   them all into cur/ under the uidlist lock and records their UIDs with
   one uidlist write and one index transaction. A failed commit unlinks
   what it moved, so the mailbox never shows part of the set. */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "mailbox-private.h"
#include "mailbox-append-multi.h"

#include <fcntl.h>
#include <sys/stat.h>

struct multi_item {
	char *tmp_path;
	char *cur_path;            /* set once renamed into cur/ */
	char base[MAILDIR_FILENAME_MAX + 1];
	size_t base_len;
	char fname[MAILDIR_FILENAME_MAX + 1];
	enum mail_flags flags;
	uint32_t keywords;
	char kw_letters[MAILDIR_KEYWORDS_MAX + 1];
	time_t internal_date;
	int64_t mtime;             /* the file's: INTERNALDATE in the index */
	uint64_t size, vsize;
	bool last_cr;
};

struct mailbox_append_multi {
	struct mailbox *box;
	pool_t pool;
	struct multi_item *items;
	unsigned int count, alloc;  /* count includes the open one */
	struct multi_item *cur;     /* being written, or NULL */
	int fd;
	bool failed;
	/* group commit: the messages' data reaches the disk with one
	   syncfs() at commit instead of an fsync() each (sync_fd: an fd on
	   the file system, the first message's) */
	bool group;
	int sync_fd;
	bool data_synced;    /* mailbox_append_multi_sync_data() did it */
	/* the most messages of one source (a MULTIAPPEND) merged in: only
	   such a set must appear all or none, so only it is journaled;
	   independent deliveries and APPENDs merged by the group commit
	   are not (a crash may publish some of them: none was answered) */
	unsigned int unit;
	bool merged;
};

struct mailbox_append_multi *mailbox_append_multi_begin(struct mailbox *box)
{
	pool_t pool = pool_create("mailbox multiappend", 1024);
	struct mailbox_append_multi *ctx = p_malloc(pool, sizeof(*ctx));

	ctx->box = box;
	ctx->pool = pool;
	ctx->fd = -1;
	ctx->sync_fd = -1;
	return ctx;
}

struct mailbox_append_multi *
mailbox_append_multi_begin_group(struct mailbox *box)
{
	struct mailbox_append_multi *ctx = mailbox_append_multi_begin(box);

	ctx->group = true;
	return ctx;
}

unsigned int mailbox_append_multi_count(struct mailbox_append_multi *ctx)
{
	return ctx->cur == NULL ? ctx->count : ctx->count - 1;
}

uint64_t mailbox_append_multi_bytes(struct mailbox_append_multi *ctx)
{
	uint64_t size = 0;

	for (unsigned int i = 0; i < ctx->count; i++)
		size += ctx->items[i].size;
	return size;
}

static void multi_free(struct mailbox_append_multi **_ctx, bool failed);

static struct multi_item *multi_new_item(struct mailbox_append_multi *ctx)
{
	if (ctx->count == ctx->alloc) {
		ctx->alloc = ctx->alloc == 0 ? 8 : ctx->alloc * 2;
		ctx->items = i_realloc(ctx->items,
				       i_mul_size(ctx->alloc, sizeof(*ctx->items)));
	}
	struct multi_item *item = &ctx->items[ctx->count++];
	memset(item, 0, sizeof(*item));
	return item;
}

static int multi_next(struct mailbox_append_multi *ctx, enum mail_flags flags,
		      uint32_t keywords, time_t internal_date,
		      const char *delivery_id, const char **error_r)
{
	struct mailbox *box = ctx->box;

	i_assert(ctx->cur == NULL && !ctx->failed);
	struct multi_item *item = multi_new_item(ctx);
	item->flags = flags & MAIL_FLAGS_PERMANENT;
	item->internal_date = internal_date;
	item->keywords = keywords;
	maildir_keywords_to_letters(keywords, item->kw_letters);
	if ((delivery_id == NULL ?
	     maildir_unique_next(&box->unique, item->base, sizeof(item->base)) :
	     maildir_unique_next_delivery(&box->unique, delivery_id, item->base,
					  sizeof(item->base))) < 0) {
		ctx->count--;
		ctx->failed = true;
		*error_r = "Can't generate a file name";
		return -1;
	}
	item->tmp_path = p_strdup_printf(ctx->pool, "%s/%s", box->tmp_dir,
					 item->base);
	ctx->fd = open(item->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		       0600);
	if (ctx->fd == -1) {
		*error_r = mailbox_set_error(box, "open(%s) failed: %m",
					     item->tmp_path);
		ctx->count--;
		ctx->failed = true;
		return -1;
	}
	ctx->cur = item;
	return 0;
}

int mailbox_append_multi_next(struct mailbox_append_multi *ctx,
			      enum mail_flags flags, uint32_t keywords,
			      time_t internal_date, const char **error_r)
{
	return multi_next(ctx, flags, keywords, internal_date, NULL, error_r);
}

int mailbox_append_multi_next_delivery(struct mailbox_append_multi *ctx,
				       const char *id, const char **error_r)
{
	return multi_next(ctx, 0, 0, (time_t)-1, id, error_r);
}

int mailbox_append_multi_write(struct mailbox_append_multi *ctx,
			       const void *data, size_t size,
			       const char **error_r)
{
	struct multi_item *item = ctx->cur;
	const unsigned char *p = data;

	i_assert(item != NULL && !ctx->failed);
	/* the virtual size counts a CR for every bare LF */
	for (size_t i = 0; i < size; i++) {
		if (p[i] == '\n' && !item->last_cr)
			item->vsize++;
		item->last_cr = p[i] == '\r';
	}
	item->size += size;
	item->vsize += size;
	while (size > 0) {
		ssize_t ret = write(ctx->fd, p, size);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			*error_r = mailbox_set_error(ctx->box,
				"write(%s) failed: %m", item->tmp_path);
			ctx->failed = true;
			return -1;
		}
		p += ret;
		size -= (size_t)ret;
	}
	return 0;
}

unsigned int mailbox_append_multi_merge(struct mailbox_append_multi *dst,
					struct mailbox_append_multi **_src)
{
	struct mailbox_append_multi *src = *_src;
	unsigned int first = dst->count;
	unsigned int dst_unit = dst->merged ? dst->unit : dst->count;
	unsigned int src_unit = src->merged ? src->unit : src->count;

	i_assert(dst->cur == NULL && !dst->failed && dst->group);
	i_assert(src->cur == NULL && !src->failed && src->group);
	i_assert(strcmp(dst->box->tmp_dir, src->box->tmp_dir) == 0);
	for (unsigned int i = 0; i < src->count; i++) {
		struct multi_item *item = multi_new_item(dst);
		*item = src->items[i];
		/* src's pool goes: the path moves into dst's */
		item->tmp_path = p_strdup(dst->pool, src->items[i].tmp_path);
	}
	if (dst->sync_fd == -1) {
		dst->sync_fd = src->sync_fd;
		src->sync_fd = -1;
	}
	/* synced only if all of it was */
	dst->data_synced = dst->data_synced && src->data_synced;
	dst->unit = MAX(dst_unit, src_unit);
	dst->merged = true;
	/* its files are dst's now: nothing of them is unlinked here */
	src->count = 0;
	multi_free(_src, false);
	return first;
}

/* The final name (sizes and flags) of an ended message. */
static int multi_make_fname(struct multi_item *item)
{
	char base[MAILDIR_FILENAME_MAX + 1];
	int len = snprintf(base, sizeof(base), "%s,S=%llu,W=%llu", item->base,
			   (unsigned long long)item->size,
			   (unsigned long long)item->vsize);

	if (len < 0 || (size_t)len >= sizeof(base))
		return -1;
	memcpy(item->base, base, (size_t)len + 1);
	item->base_len = (size_t)len;
	return maildir_filename_make(item->fname, sizeof(item->fname),
				     item->base, item->base_len, item->flags,
				     item->kw_letters);
}

int mailbox_append_multi_end(struct mailbox_append_multi *ctx,
			     const char **error_r)
{
	struct multi_item *item = ctx->cur;
	struct mailbox *box = ctx->box;
	int ret = 0;

	i_assert(item != NULL && !ctx->failed);
	if ((box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 && !ctx->group &&
	    fsync(ctx->fd) < 0) {
		*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
					     item->tmp_path);
		ret = -1;
	}
	if (ret == 0 && item->internal_date != (time_t)-1) {
		struct timespec ts[2] = {
			{ item->internal_date, 0 }, { item->internal_date, 0 }
		};
		if (futimens(ctx->fd, ts) < 0) {
			*error_r = mailbox_set_error(box, "futimens(%s) failed: %m",
						     item->tmp_path);
			ret = -1;
		}
	}
	struct stat st;
	if (ret == 0 && fstat(ctx->fd, &st) < 0) {
		*error_r = mailbox_set_error(box, "fstat(%s) failed: %m",
					     item->tmp_path);
		ret = -1;
	}
	if (ret == 0)
		item->mtime = st.st_mtime;
	if (ret == 0 && multi_make_fname(item) < 0) {
		*error_r = "File name too long";
		ret = -1;
	}
	if (ctx->group && ctx->sync_fd == -1) {
		ctx->sync_fd = ctx->fd;   /* kept for the one syncfs() */
		ctx->fd = -1;
	}
	i_close_fd(&ctx->fd);
	ctx->cur = NULL;
	if (ret < 0)
		ctx->failed = true;
	return ret;
}

static void multi_free(struct mailbox_append_multi **_ctx, bool failed)
{
	struct mailbox_append_multi *ctx = *_ctx;

	*_ctx = NULL;
	if (ctx->fd != -1)
		i_close_fd(&ctx->fd);
	i_close_fd(&ctx->sync_fd);
	unsigned int announced = 0;
	for (unsigned int i = 0; i < ctx->count && failed; i++) {
		const char *path = ctx->items[i].cur_path != NULL ?
			ctx->items[i].cur_path : ctx->items[i].tmp_path;
		if (ctx->items[i].cur_path != NULL) {
			maildir_watch_expect(ctx->box->watch, MAILDIR_WATCH_CUR,
					     ctx->items[i].fname);
			announced++;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			i_error("unlink(%s) failed: %m", path);
		if (announced == MAILDIR_WATCH_MAX_EXPECTED) {
			maildir_watch_settle(ctx->box->watch);
			announced = 0;
		}
	}
	if (announced > 0)
		maildir_watch_settle(ctx->box->watch);
	i_free(ctx->items);
	pool_unref(&ctx->pool);
}

void mailbox_append_multi_abort(struct mailbox_append_multi **ctx)
{
	multi_free(ctx, true);
}

/* One index transaction for all of them (under the uidlist lock). A
   failure is logged: files and UIDs are durable, and the next directory
   scan adds what the index lacks. */
static void multi_index(struct mailbox_append_multi *ctx, uint32_t first_uid)
{
	struct mailbox *box = ctx->box;
	const char *error;

	struct mail_index_transaction *t =
		mail_index_transaction_begin(box->index);
	time_t now = time(NULL);   /* the save date (RFC 8514) */
	for (unsigned int i = 0; i < ctx->count; i++) {
		struct multi_item *item = &ctx->items[i];
		mail_index_append(t, first_uid + i, item->flags, item->keywords,
				  item->vsize, item->mtime);
		mailbox_index_add_savedate(t, first_uid + i, now);
	}
	mail_index_update_header(t, 0, first_uid + ctx->count);
	(void)mailbox_index_commit(box, &t, &error);
}

static void multi_pair_cb(void *context, unsigned int i,
			  const char **tmp_name_r, const char **cur_name_r)
{
	struct mailbox_append_multi *ctx = context;

	*tmp_name_r = strrchr(ctx->items[i].tmp_path, '/') + 1;
	*cur_name_r = ctx->items[i].fname;
}

/* Under the lock: rename each into cur/, then one uidlist write. */
static int multi_publish(struct mailbox_append_multi *ctx,
			 uint32_t *first_uid_r, const char **error_r)
{
	struct mailbox *box = ctx->box;
	struct maildir_uidlist *ul = box->uidlist;

	*first_uid_r = maildir_uidlist_get_next_uid(ul);
	unsigned int unit = ctx->merged ? ctx->unit : ctx->count;
	if (unit > 1 && mailbox_staged_begin(box, multi_pair_cb, ctx,
					     ctx->count, error_r) < 0)
		return -1;
	for (unsigned int i = 0; i < ctx->count; i++) {
		struct multi_item *item = &ctx->items[i];
		char *dest = p_strdup_printf(ctx->pool, "%s/%s", box->cur_dir,
					     item->fname);
		/* announced to the watch, settled in batches it can hold */
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, item->fname);
		int ret = rename(item->tmp_path, dest);
		if (ret < 0 || (i + 1) % MAILDIR_WATCH_MAX_EXPECTED == 0 ||
		    i + 1 == ctx->count)
			maildir_watch_settle(box->watch);
		if (ret < 0) {
			*error_r = mailbox_set_error(box,
				"rename(%s, %s) failed: %m", item->tmp_path,
				dest);
			return -1;
		}
		item->cur_path = dest;
		struct maildir_uidlist_rec *rec = maildir_uidlist_add(ul,
			item->base, item->base_len, item->size, item->vsize);
		i_assert(rec->uid == *first_uid_r + i);
	}
	if (maildir_uidlist_write(ul, error_r) < 0)
		return -1;
	multi_index(ctx, *first_uid_r);
	return 0;
}

static int multi_publish_cb(void *context, uint32_t *first_uid_r,
			    const char **error_r)
{
	return multi_publish(context, first_uid_r, error_r);
}


int mailbox_append_multi_sync_plan(struct mailbox_append_multi *const *ctxs,
				   unsigned int count, unsigned int max_files,
				   int *fds_r, unsigned int *fd_count_r,
				   bool *syncfs_r, const char **error_r)
{
	struct mailbox_append_multi *first = NULL;
	unsigned int messages = 0, n = 0;

	for (unsigned int i = 0; i < count; i++) {
		struct mailbox_append_multi *ctx = ctxs[i];
		i_assert(ctx->group && ctx->cur == NULL && !ctx->failed);
		if ((ctx->box->flags & MAILBOX_OPEN_NO_FSYNC) != 0 ||
		    ctx->count == 0)
			continue;
		messages += ctx->count;
		if (first == NULL)
			first = ctx;
	}
	if (first == NULL)
		return 0;
	/* few files: an fsync each is cheaper than writing out everything
	   dirty on the file system (other writers' data too) */
	*syncfs_r = messages > max_files;
	for (unsigned int i = 0; i < count && !*syncfs_r; i++) {
		struct mailbox_append_multi *ctx = ctxs[i];
		if ((ctx->box->flags & MAILBOX_OPEN_NO_FSYNC) != 0)
			continue;
		for (unsigned int j = 0; j < ctx->count; j++) {
			/* read-only does: fsync needs no write access */
			fds_r[n] = open(ctx->items[j].tmp_path,
					O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fds_r[n] == -1) {
				*error_r = mailbox_set_error(ctx->box,
					"open(%s) failed: %m",
					ctx->items[j].tmp_path);
				while (n > 0)
					i_close_fd(&fds_r[--n]);
				return -1;
			}
			n++;
		}
	}
	if (!*syncfs_r) {
		*fd_count_r = n;
		return 1;
	}
	/* the caller's own: the context may close its fd meanwhile (a
	   merge moves it, an abort closes it) */
	fds_r[0] = fcntl(first->sync_fd, F_DUPFD_CLOEXEC, 0);
	if (fds_r[0] == -1) {
		*error_r = mailbox_set_error(first->box, "dup() failed: %m");
		return -1;
	}
	*fd_count_r = 1;
	return 1;
}

void mailbox_append_multi_set_synced(struct mailbox_append_multi *const *ctxs,
				     unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		ctxs[i]->data_synced = true;
}

int mailbox_append_multi_sync_data(struct mailbox_append_multi *const *ctxs,
				   unsigned int count, const char **error_r)
{
	int fd;
	unsigned int fd_count;
	bool use_syncfs;
	/* one file: its fsync; more: one syncfs (on the loop, one call) */
	int ret = mailbox_append_multi_sync_plan(ctxs, count, 1, &fd,
						 &fd_count, &use_syncfs,
						 error_r);
	if (ret < 0)
		return -1;
	if (ret > 0) {
		i_assert(fd_count == 1);
		ret = use_syncfs ? syncfs(fd) : fsync(fd);
		if (ret < 0) {
			*error_r = mailbox_set_error(ctxs[0]->box,
				"%s failed: %m", use_syncfs ? "syncfs()" : "fsync()");
		}
		i_close_fd(&fd);
		if (ret < 0)
			return -1;
	}
	mailbox_append_multi_set_synced(ctxs, count);
	return 0;
}

int mailbox_append_multi_commit(struct mailbox_append_multi **_ctx,
				uint32_t *first_uid_r, const char **error_r)
{
	struct mailbox_append_multi *ctx = *_ctx;
	struct mailbox *box = ctx->box;

	i_assert(ctx->cur == NULL && !ctx->failed);
	if (ctx->count == 0) {
		*first_uid_r = 0;
		multi_free(_ctx, false);
		return 0;
	}
	/* group commit: every staged file's data and inode in one go, before
	   any of them becomes visible */
	if (ctx->group && !ctx->data_synced &&
	    (box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 &&
	    (ctx->count == 1 ? fsync(ctx->sync_fd) : syncfs(ctx->sync_fd)) < 0) {
		*error_r = mailbox_set_error(box, "syncfs(%s) failed: %m",
					     box->tmp_dir);
		multi_free(_ctx, true);
		return -1;
	}
	int ret = mailbox_publish_staged(box, multi_publish_cb, ctx,
					 first_uid_r, error_r);
	if (ret == 0)
		mailbox_quota_account(box, (int64_t)mailbox_append_multi_bytes(ctx),
				      ctx->count);
	multi_free(_ctx, ret < 0);
	return ret;
}
