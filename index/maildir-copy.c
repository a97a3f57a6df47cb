/* Copying messages between Maildir folders (mailbox_copy_*, mailbox.h):
   each message is hard-linked (or, across file systems, copied with its
   mtime) into the target's tmp/ under a new unique name; commit then
   renames them into cur/ with their flags under the target's uidlist
   lock, gives them UIDs, and fsyncs cur/ before returning. */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "mailbox-private.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Bytes per read/write when a hard link is not possible. */
#define COPY_CHUNK (64 * 1024)

struct copy_item {
	char *tmp_path;
	char base[MAILDIR_FILENAME_MAX + 1];
	size_t base_len;
	enum mail_flags flags;
	uint32_t keywords;      /* the target's, set at commit */
	uint64_t size, vsize;
	int64_t internal_date;
	const char *kw_names[MAILBOX_KEYWORDS_MAX];
	unsigned int kw_count;
	char *cur_path;         /* set once renamed into cur/ */
	char fname[MAILDIR_FILENAME_MAX + 1];   /* the name in cur/ */
};

struct mailbox_copy_ctx {
	struct mailbox *dest;
	pool_t pool;
	struct copy_item *items;
	unsigned int count, alloc;
};

struct mailbox_copy_ctx *mailbox_copy_begin(struct mailbox *dest)
{
	pool_t pool = pool_create("mailbox copy", 1024);
	struct mailbox_copy_ctx *ctx = p_malloc(pool, sizeof(*ctx));

	ctx->dest = dest;
	ctx->pool = pool;
	return ctx;
}

unsigned int mailbox_copy_count(struct mailbox_copy_ctx *ctx)
{
	return ctx->count;
}

uint64_t mailbox_copy_bytes(struct mailbox_copy_ctx *ctx)
{
	uint64_t size = 0;

	for (unsigned int i = 0; i < ctx->count; i++)
		size += ctx->items[i].size;
	return size;
}

static struct copy_item *copy_new_item(struct mailbox_copy_ctx *ctx)
{
	if (ctx->count == ctx->alloc) {
		ctx->alloc = ctx->alloc == 0 ? 32 : ctx->alloc * 2;
		ctx->items = i_realloc(ctx->items,
				       i_mul_size(ctx->alloc, sizeof(*ctx->items)));
	}
	struct copy_item *item = &ctx->items[ctx->count++];
	memset(item, 0, sizeof(*item));
	return item;
}

static int copy_write_all(int fd, const unsigned char *p, size_t size)
{
	while (size > 0) {
		ssize_t ret = write(fd, p, size);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += ret;
		size -= (size_t)ret;
	}
	return 0;
}

/* Copy the bytes and the mtime (INTERNALDATE) of src_fd into a new
   file at dest. */
static int copy_file_data(int src_fd, const char *dest, bool do_fsync)
{
	unsigned char buf[COPY_CHUNK];
	struct stat st;
	int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ssize_t ret = 0;
	off_t pos = 0;

	if (fd == -1 || fstat(src_fd, &st) < 0)
		goto fail;
	/* pread: a kept file's descriptors share one offset */
	while ((ret = pread(src_fd, buf, sizeof(buf), pos)) != 0) {
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0 || copy_write_all(fd, buf, (size_t)ret) < 0)
			goto fail;
		pos += ret;
	}
	struct timespec ts[2] = { st.st_mtim, st.st_mtim };
	if (futimens(fd, ts) < 0 || (do_fsync && fsync(fd) < 0))
		goto fail;
	i_close_fd(&fd);
	return 0;
fail:;
	int saved = errno;
	if (fd != -1) {
		i_close_fd(&fd);
		(void)unlink(dest);
	}
	errno = saved;
	return -1;
}

/* Put the file of src's seq at item->tmp_path. */
static int copy_stage_file(struct mailbox_copy_ctx *ctx, struct mailbox *src,
			   uint32_t seq, struct copy_item *item,
			   const char **error_r)
{
	struct mailbox *dest = ctx->dest;
	char src_path[PATH_MAX];
	const char *fname;

	/* the name is guessed from the index flags: retry once from cur/ */
	for (unsigned int attempt = 0;; attempt++) {
		if (mailbox_msg_get_fname(src, seq, attempt > 0, &fname,
					  error_r) < 0)
			return -1;
		if (snprintf(src_path, sizeof(src_path), "%s/%s", src->cur_dir,
			     fname) >= (int)sizeof(src_path)) {
			errno = ENAMETOOLONG;
			*error_r = "Path too long";
			return -1;
		}
		if (link(src_path, item->tmp_path) == 0)
			return 0;
		if (errno != ENOENT)
			break;
		if (attempt > 0) {
			mailbox_msg_forget_fname(src, seq);
			*error_r = "Message was expunged";
			return -1;
		}
	}
	if (errno != EXDEV && errno != EPERM && errno != EMLINK) {
		*error_r = mailbox_set_error(dest, "link(%s, %s) failed: %m",
					     src_path, item->tmp_path);
		return -1;
	}
	int fd = open(src_path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		*error_r = errno == ENOENT ? "Message was expunged" :
			mailbox_set_error(dest, "open(%s) failed: %m", src_path);
		return -1;
	}
	int ret = copy_file_data(fd, item->tmp_path,
		(dest->flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	if (ret < 0)
		*error_r = mailbox_set_error(dest, "copying %s to %s failed: %m",
					     src_path, item->tmp_path);
	i_close_fd(&fd);
	return ret;
}

/* A new base name for the target, carrying the sizes. */
static int copy_make_base(struct mailbox *dest, struct copy_item *item)
{
	char unique[MAILDIR_FILENAME_MAX + 1];
	int len;

	if (maildir_unique_next(&dest->unique, unique, sizeof(unique)) < 0)
		return -1;
	if (item->size == MAILDIR_SIZE_UNKNOWN)
		len = snprintf(item->base, sizeof(item->base), "%s", unique);
	else if (item->vsize == MAILDIR_SIZE_UNKNOWN)
		len = snprintf(item->base, sizeof(item->base), "%s,S=%llu",
			       unique, (unsigned long long)item->size);
	else
		len = snprintf(item->base, sizeof(item->base), "%s,S=%llu,W=%llu",
			       unique, (unsigned long long)item->size,
			       (unsigned long long)item->vsize);
	if (len < 0 || (size_t)len >= sizeof(item->base))
		return -1;
	item->base_len = (size_t)len;
	return 0;
}

/* An expunged message the session still shows (RFC 2180 4.4.2: what
   the client numbers at the start of the COPY is copied): the bytes of
   its kept file (maildir-ghost.h); it has no name in cur/ to link. */
static int copy_stage_ghost(struct mailbox_copy_ctx *ctx, struct mailbox *src,
			    uint32_t seq, struct copy_item *item,
			    const char **error_r)
{
	struct mailbox *dest = ctx->dest;
	int fd = mailbox_msg_open(src, seq, error_r);

	if (fd == -1)
		return -1;
	int ret = copy_file_data(fd, item->tmp_path,
				 (dest->flags & MAILBOX_OPEN_NO_FSYNC) == 0);
	if (ret < 0) {
		*error_r = mailbox_set_error(dest, "copying expunged uid %u to "
					     "%s failed: %m",
					     mailbox_msg_uid(src, seq),
					     item->tmp_path);
	}
	i_close_fd(&fd);
	return ret;
}

/* The size (and, if the index had none, the date) of a kept file, for
   the new name's ,S= before the file is staged. */
static int copy_ghost_stat(struct mailbox *src, uint32_t seq,
			   struct copy_item *item, const char **error_r)
{
	struct stat st;
	int fd = mailbox_msg_open(src, seq, error_r);

	if (fd == -1)
		return -1;
	int ret = fstat(fd, &st);
	if (ret < 0) {
		*error_r = mailbox_set_error(src, "fstat(expunged uid %u) "
					     "failed: %m",
					     mailbox_msg_uid(src, seq));
	} else {
		item->size = (uint64_t)st.st_size;
		if (item->internal_date == 0)
			item->internal_date = st.st_mtime;
	}
	i_close_fd(&fd);
	return ret;
}

int mailbox_copy_add(struct mailbox_copy_ctx *ctx, struct mailbox *src,
		     uint32_t seq, const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(src, seq, &exp);

	/* copied out: rec is valid only until the source's next sync */
	uint32_t keywords = rec != NULL ? rec->keywords : exp->keywords;
	/* expunged by another handle before src synced: no name in cur/ */
	bool kept = rec == NULL ||
		maildir_ghosts_holds(src->ghosts, rec->uid, src);
	struct copy_item *item = copy_new_item(ctx);
	if (rec != NULL) {
		item->flags = rec->flags & MAIL_FLAGS_PERMANENT;
		item->vsize = rec->size == 0 ? MAILDIR_SIZE_UNKNOWN : rec->size;
		item->internal_date = rec->internal_date;
		item->size = mailbox_msg_phys_size(src, seq);
	} else {
		item->flags = exp->flags;
		item->vsize = exp->vsize == 0 ? MAILDIR_SIZE_UNKNOWN :
			exp->vsize;
		item->internal_date = exp->internal_date;
	}
	if (kept) {
		if (copy_ghost_stat(src, seq, item, error_r) < 0) {
			ctx->count--;
			return -1;
		}
	}
	for (unsigned int i = 0; i < MAILBOX_KEYWORDS_MAX; i++) {
		const char *name = (keywords & (1U << i)) == 0 ? NULL :
			maildir_keywords_name(src->keywords, i);
		if (name != NULL)
			item->kw_names[item->kw_count++] = p_strdup(ctx->pool, name);
	}
	if (copy_make_base(ctx->dest, item) < 0) {
		ctx->count--;
		errno = ENAMETOOLONG;
		*error_r = "Can't generate a file name";
		return -1;
	}
	item->tmp_path = p_strdup_printf(ctx->pool, "%s/%s",
					 ctx->dest->tmp_dir, item->base);
	if ((!kept ? copy_stage_file(ctx, src, seq, item, error_r) :
	     copy_stage_ghost(ctx, src, seq, item, error_r)) < 0) {
		ctx->count--;
		return -1;
	}
	return 0;
}

static void copy_free(struct mailbox_copy_ctx **_ctx, bool failed)
{
	struct mailbox_copy_ctx *ctx = *_ctx;

	*_ctx = NULL;
	unsigned int announced = 0;
	for (unsigned int i = 0; i < ctx->count && failed; i++) {
		const char *path = ctx->items[i].cur_path != NULL ?
			ctx->items[i].cur_path : ctx->items[i].tmp_path;
		if (ctx->items[i].cur_path != NULL) {
			maildir_watch_expect(ctx->dest->watch, MAILDIR_WATCH_CUR,
					     strrchr(path, '/') + 1);
			announced++;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			i_error("unlink(%s) failed: %m", path);
		if (announced == MAILDIR_WATCH_MAX_EXPECTED) {
			maildir_watch_settle(ctx->dest->watch);
			announced = 0;
		}
	}
	if (announced > 0)
		maildir_watch_settle(ctx->dest->watch);
	i_free(ctx->items);
	pool_unref(&ctx->pool);
}

void mailbox_copy_abort(struct mailbox_copy_ctx **ctx)
{
	copy_free(ctx, true);
}

/* The target's keyword letters of item (names defined as needed; a name
   that finds no free letter is dropped). Called under the lock. */
static uint32_t copy_map_keywords(struct mailbox *dest, struct copy_item *item,
				  const char **error_r, bool *failed_r)
{
	uint32_t keywords = 0;

	for (unsigned int i = 0; i < item->kw_count; i++) {
		unsigned int idx;
		int ret = maildir_keywords_add(dest->keywords, item->kw_names[i],
					       &idx, error_r);
		if (ret < 0) {
			*failed_r = true;
			return 0;
		}
		if (ret > 0)
			keywords |= 1U << idx;
	}
	return keywords;
}

/* One index transaction for the whole copy (under the uidlist lock). A
   failure is logged: files and UIDs are durable, the next directory scan
   adds what the index lacks. */
static void copy_index(struct mailbox_copy_ctx *ctx, uint32_t first_uid)
{
	struct mailbox *dest = ctx->dest;
	const char *error;

	struct mail_index_transaction *t =
		mail_index_transaction_begin(dest->index);
	/* RFC 8514: a copy's save date is now, not the source's */
	time_t now = time(NULL);
	for (unsigned int i = 0; i < ctx->count; i++) {
		struct copy_item *item = &ctx->items[i];
		mail_index_append(t, first_uid + i, item->flags, item->keywords,
			item->vsize == MAILDIR_SIZE_UNKNOWN ? 0 : item->vsize,
			item->internal_date);
		mailbox_index_add_savedate(t, first_uid + i, now);
	}
	mail_index_update_header(t, 0, first_uid + ctx->count);
	(void)mailbox_index_commit(dest, &t, &error);
}

static void copy_pair_cb(void *context, unsigned int i,
			 const char **tmp_name_r, const char **cur_name_r)
{
	struct mailbox_copy_ctx *ctx = context;

	*tmp_name_r = strrchr(ctx->items[i].tmp_path, '/') + 1;
	*cur_name_r = ctx->items[i].fname;
}

/* The target's keywords and the file names in cur/, before anything is
   renamed (the journal needs them all). */
static int copy_make_fnames(struct mailbox_copy_ctx *ctx, const char **error_r)
{
	char letters[MAILDIR_KEYWORDS_MAX + 1];

	for (unsigned int i = 0; i < ctx->count; i++) {
		struct copy_item *item = &ctx->items[i];
		bool failed = false;
		uint32_t kw = copy_map_keywords(ctx->dest, item, error_r,
						&failed);
		if (failed)
			return -1;
		item->keywords = kw;
		maildir_keywords_to_letters(kw, letters);
		if (maildir_filename_make(item->fname, sizeof(item->fname),
					  item->base, item->base_len,
					  item->flags, letters) < 0) {
			*error_r = "File name too long";
			return -1;
		}
	}
	return 0;
}

/* Under the target's lock: rename into cur/ and record the UIDs. */
static int copy_publish(struct mailbox_copy_ctx *ctx, uint32_t *first_uid_r,
			const char **error_r)
{
	struct mailbox *dest = ctx->dest;
	struct maildir_uidlist *ul = dest->uidlist;

	*first_uid_r = maildir_uidlist_get_next_uid(ul);
	if (copy_make_fnames(ctx, error_r) < 0 ||
	    mailbox_staged_begin(dest, copy_pair_cb, ctx, ctx->count,
				 error_r) < 0)
		return -1;
	for (unsigned int i = 0; i < ctx->count; i++) {
		struct copy_item *item = &ctx->items[i];
		const char *fname = item->fname;
		char *dest_path = p_strdup_printf(ctx->pool, "%s/%s",
						  dest->cur_dir, fname);
		/* announced to the watch, settled in batches it can hold */
		maildir_watch_expect(dest->watch, MAILDIR_WATCH_CUR, fname);
		int ret = rename(item->tmp_path, dest_path);
		if (ret < 0 || (i + 1) % MAILDIR_WATCH_MAX_EXPECTED == 0 ||
		    i + 1 == ctx->count)
			maildir_watch_settle(dest->watch);
		if (ret < 0) {
			*error_r = mailbox_set_error(dest,
				"rename(%s, %s) failed: %m", item->tmp_path,
				dest_path);
			return -1;
		}
		item->cur_path = dest_path;
		struct maildir_uidlist_rec *rec = maildir_uidlist_add(ul,
			item->base, item->base_len, item->size, item->vsize);
		i_assert(rec->uid == *first_uid_r + i);
	}
	if (maildir_uidlist_write(ul, error_r) < 0)
		return -1;
	copy_index(ctx, *first_uid_r);
	return 0;
}

static int copy_publish_cb(void *context, uint32_t *first_uid_r,
			   const char **error_r)
{
	return copy_publish(context, first_uid_r, error_r);
}



int mailbox_copy_commit(struct mailbox_copy_ctx **_ctx, uint32_t *first_uid_r,
			const char **error_r)
{
	struct mailbox_copy_ctx *ctx = *_ctx;
	struct mailbox *dest = ctx->dest;

	if (ctx->count == 0) {
		*first_uid_r = 0;
		copy_free(_ctx, false);
		return 0;
	}
	int ret = mailbox_publish_staged(dest, copy_publish_cb, ctx,
					 first_uid_r, error_r);
	if (ret == 0)
		mailbox_quota_account(dest, (int64_t)mailbox_copy_bytes(ctx),
				      ctx->count);
	copy_free(_ctx, ret < 0);
	return ret;
}
