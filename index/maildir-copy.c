/* Copying messages between Maildir folders (mailbox_copy_*, mailbox.h)
   in memory that does not depend on how many are copied: each message is
   hard-linked (or, across file systems, copied with its mtime) into the
   target's tmp/ under a new unique name, and one line per message goes
   to a spool file in tmp/ (mailbox_staged_spool_create()), nothing to
   memory. Commit, under the target's uidlist lock, makes the spool the
   staged journal (maildir-staged.c: a crash from here on rolls the set
   forward), renames the files into cur/ in journal order and gives them
   UIDs, writing the uidlist every COPY_SLICE records, then tells the
   index in transactions of COPY_SLICE messages, and fsyncs cur/.

   A failure before the last uidlist write undoes everything: the
   uidlist is cut back to where it was, the files renamed so far leave
   cur/ and the rest leave tmp/, so the target is as before (RFC 9051
   6.4.7). A crash while staging leaves files in tmp/ (the spool and the
   staged copies, never acknowledged), which the 36-hour tmp/ cleanup of
   a later scan removes; a crash during commit leaves the journal, and
   whoever opens the folder next publishes the rest of the set: every
   message then is in cur/ exactly once (doc/mail-storage.md). */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "mailbox-private.h"
#include "mailbox-objectid.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Bytes per read/write when a hard link is not possible. */
#define COPY_CHUNK (64 * 1024)
/* Records per uidlist write and messages per index transaction: what the
   commit holds in memory at once. */
#define COPY_SLICE 1024
/* A spool line: two file names and a date. */
#define COPY_LINE_MAX (2 * MAILDIR_FILENAME_MAX + 32)
/* kw_map values besides a target index */
#define COPY_KW_UNMAPPED (-1)
#define COPY_KW_DROPPED (-2)

/* The message being staged (on the stack: nothing is kept per message). */
struct copy_item {
	char tmp_path[PATH_MAX];
	char base[MAILDIR_FILENAME_MAX + 1];
	size_t base_len;
	enum mail_flags flags;
	uint64_t size, vsize;
	int64_t internal_date;
	/* the source's EMAILID, carried in the base name ("" if unknown) */
	char emailid[MAILBOX_MSG_OBJECTID_LEN + 1];
	char fname[MAILDIR_FILENAME_MAX + 1];   /* the name in cur/ */
};

struct mailbox_copy_ctx {
	struct mailbox *dest;
	FILE *spool;             /* NULL until the first message */
	char spool_path[PATH_MAX];
	unsigned int count;
	uint64_t bytes;
	/* commit: messages renamed into cur/ so far (undone on failure) */
	unsigned int renamed;
	/* the source's keyword index -> the target's (mapped once each) */
	struct mailbox *kw_src;
	int kw_map[MAILBOX_KEYWORDS_MAX];
};

struct mailbox_copy_ctx *mailbox_copy_begin(struct mailbox *dest)
{
	struct mailbox_copy_ctx *ctx = i_malloc(sizeof(*ctx));

	ctx->dest = dest;
	return ctx;
}

unsigned int mailbox_copy_count(struct mailbox_copy_ctx *ctx)
{
	return ctx->count;
}

uint64_t mailbox_copy_bytes(struct mailbox_copy_ctx *ctx)
{
	return ctx->bytes;
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
		if (link(src_path, item->tmp_path) == 0) {
			/* link() takes a symlink itself: not a message */
			struct stat st;
			if (lstat(item->tmp_path, &st) < 0 ||
			    !S_ISLNK(st.st_mode))
				return 0;
			(void)unlink(item->tmp_path);
			errno = ENOENT;
			*error_r = "Message file is a symlink";
			return -1;
		}
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
	int fd = open(src_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

/* A new base name for the target, carrying the sizes and the source's
   EMAILID (RFC 8474 5.1: a copy has the same one; mailbox-objectid.h). */
static int copy_make_base(struct mailbox *dest, struct copy_item *item)
{
	char unique[MAILDIR_FILENAME_MAX + 1];
	int len;
	size_t pos;

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
	pos = (size_t)len;
	if (item->emailid[0] != '\0') {
		len = snprintf(item->base + pos, sizeof(item->base) - pos,
			       MAILBOX_EMAILID_FIELD "%s", item->emailid);
		if (len < 0 || (size_t)len >= sizeof(item->base) - pos)
			return -1;
		pos += (size_t)len;
	}
	item->base_len = pos;
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

/* The target's keyword letters for src's keyword bits: each source
   keyword is defined in the target once per copy (under the target's
   lock, as maildir_keywords_add() wants); a name that finds no free
   letter is dropped. Returns 0 or -1. */
static int copy_map_keywords(struct mailbox_copy_ctx *ctx, struct mailbox *src,
			     uint32_t keywords, uint32_t *dest_r,
			     const char **error_r)
{
	struct mailbox *dest = ctx->dest;

	if (ctx->kw_src != src) {
		ctx->kw_src = src;
		for (unsigned int i = 0; i < MAILBOX_KEYWORDS_MAX; i++)
			ctx->kw_map[i] = COPY_KW_UNMAPPED;
	}
	*dest_r = 0;
	for (unsigned int i = 0; i < MAILBOX_KEYWORDS_MAX; i++) {
		if ((keywords & (1U << i)) == 0)
			continue;
		if (ctx->kw_map[i] == COPY_KW_UNMAPPED) {
			const char *name = maildir_keywords_name(src->keywords, i);
			unsigned int idx;
			ctx->kw_map[i] = COPY_KW_DROPPED;
			if (name == NULL)
				continue;
			if (maildir_uidlist_lock_append(dest->uidlist,
							error_r) < 0)
				return -1;
			int ret = maildir_keywords_add(dest->keywords, name,
						       &idx, error_r);
			maildir_uidlist_unlock(dest->uidlist);
			if (ret < 0)
				return -1;
			if (ret > 0)
				ctx->kw_map[i] = (int)idx;
		}
		if (ctx->kw_map[i] >= 0)
			*dest_r |= 1U << ctx->kw_map[i];
	}
	return 0;
}

/* Where the messages' lines go; made at the first message. */
static int copy_spool_open(struct mailbox_copy_ctx *ctx, const char **error_r)
{
	char unique[MAILDIR_FILENAME_MAX + 1];

	if (ctx->spool != NULL)
		return 0;
	if (maildir_unique_next(&ctx->dest->unique, unique, sizeof(unique)) < 0) {
		*error_r = "Can't generate a file name";
		return -1;
	}
	ctx->spool = mailbox_staged_spool_create(ctx->dest, unique,
						 ctx->spool_path,
						 sizeof(ctx->spool_path),
						 error_r);
	return ctx->spool == NULL ? -1 : 0;
}

/* What the index or the kept file says of seq, into item. */
static int copy_item_init(struct mailbox *src, uint32_t seq,
			  struct copy_item *item, uint32_t *keywords_r,
			  bool *kept_r, const char **error_r)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(src, seq, &exp);

	memset(item, 0, sizeof(*item));
	/* copied out: rec is valid only until the source's next sync */
	*keywords_r = rec != NULL ? rec->keywords : exp->keywords;
	/* expunged by another handle before src synced: no name in cur/ */
	*kept_r = rec == NULL ||
		maildir_ghosts_holds(src->ghosts, rec->uid, src);
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
	return *kept_r ? copy_ghost_stat(src, seq, item, error_r) : 0;
}

int mailbox_copy_add(struct mailbox_copy_ctx *ctx, struct mailbox *src,
		     uint32_t seq, const char **error_r)
{
	char letters[MAILDIR_KEYWORDS_MAX + 1];
	struct copy_item item;
	uint32_t src_keywords, keywords;
	bool kept;

	if (copy_item_init(src, seq, &item, &src_keywords, &kept, error_r) < 0 ||
	    copy_map_keywords(ctx, src, src_keywords, &keywords, error_r) < 0 ||
	    copy_spool_open(ctx, error_r) < 0)
		return -1;
	/* 0: the source's uidlist line is gone (an expunged message kept
	   for the session): the copy gets an id of its own */
	int ret = mailbox_msg_emailid(src, seq, item.emailid, error_r);
	if (ret < 0)
		return -1;
	if (ret == 0)
		item.emailid[0] = '\0';
	maildir_keywords_to_letters(keywords, letters);
	if (copy_make_base(ctx->dest, &item) < 0 ||
	    maildir_filename_make(item.fname, sizeof(item.fname), item.base,
				  item.base_len, item.flags, letters) < 0 ||
	    snprintf(item.tmp_path, sizeof(item.tmp_path), "%s/%s",
		     ctx->dest->tmp_dir, item.base) >= (int)sizeof(item.tmp_path)) {
		errno = ENAMETOOLONG;
		*error_r = "Can't generate a file name";
		return -1;
	}
	if ((!kept ? copy_stage_file(ctx, src, seq, &item, error_r) :
	     copy_stage_ghost(ctx, src, seq, &item, error_r)) < 0)
		return -1;
	if (fprintf(ctx->spool, "%s %s %lld\n", item.base, item.fname,
		    (long long)item.internal_date) < 0) {
		*error_r = mailbox_set_error(ctx->dest, "write(%s) failed: %m",
					     ctx->spool_path);
		if (unlink(item.tmp_path) < 0 && errno != ENOENT)
			i_error("unlink(%s) failed: %m", item.tmp_path);
		errno = EIO;
		return -1;
	}
	ctx->count++;
	if (item.size != MAILDIR_SIZE_UNKNOWN)
		ctx->bytes += item.size;
	return 0;
}

/* One spool line: its names and date. Returns false at the end or for a
   line we did not write (never: the spool is ours). */
static bool copy_read_line(FILE *spool, char *line, const char **tmp_r,
			   const char **cur_r, int64_t *date_r)
{
	if (fgets(line, COPY_LINE_MAX, spool) == NULL)
		return false;
	char *cur = strchr(line, ' ');
	char *date = cur == NULL ? NULL : strchr(cur + 1, ' ');
	if (date == NULL)
		return false;
	*cur++ = '\0';
	*date++ = '\0';
	*tmp_r = line;
	*cur_r = cur;
	*date_r = strtoll(date, NULL, 10);
	return true;
}

static void copy_unlink(struct mailbox_copy_ctx *ctx, const char *dir,
			const char *name)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
	    unlink(path) < 0 && errno != ENOENT)
		i_error("unlink(%s) failed: %m", path);
}

/* Remove every staged file: the first ctx->renamed from cur/, the rest
   from tmp/; then the spool (or the journal it became). */
static void copy_remove_staged(struct mailbox_copy_ctx *ctx)
{
	char line[COPY_LINE_MAX];
	const char *tmp_name, *cur_name;
	int64_t date;
	unsigned int i = 0, announced = 0;

	mailbox_staged_spool_rewind(ctx->spool);
	while (i < ctx->count &&
	       copy_read_line(ctx->spool, line, &tmp_name, &cur_name, &date)) {
		if (i++ >= ctx->renamed) {
			copy_unlink(ctx, ctx->dest->tmp_dir, tmp_name);
			continue;
		}
		maildir_watch_expect(ctx->dest->watch, MAILDIR_WATCH_CUR,
				     cur_name);
		copy_unlink(ctx, ctx->dest->cur_dir, cur_name);
		if (++announced == MAILDIR_WATCH_MAX_EXPECTED) {
			maildir_watch_settle(ctx->dest->watch);
			announced = 0;
		}
	}
	if (announced > 0)
		maildir_watch_settle(ctx->dest->watch);
}

static void copy_free(struct mailbox_copy_ctx **_ctx, bool failed)
{
	struct mailbox_copy_ctx *ctx = *_ctx;

	*_ctx = NULL;
	if (ctx->spool != NULL) {
		if (failed)
			copy_remove_staged(ctx);
		fclose(ctx->spool);
		/* the journal (if it became one) is removed by
		   mailbox_staged_end(); a spool that never did goes here */
		if (!ctx->dest->staged_journaled &&
		    unlink(ctx->spool_path) < 0 && errno != ENOENT)
			i_error("unlink(%s) failed: %m", ctx->spool_path);
	}
	i_free(ctx);
}

void mailbox_copy_abort(struct mailbox_copy_ctx **ctx)
{
	copy_free(ctx, true);
}

/* The index learns of the published messages in transactions of
   COPY_SLICE (under the uidlist lock). A failure is logged: files and
   UIDs are durable, the next directory scan adds what the index lacks. */
static void copy_index(struct mailbox_copy_ctx *ctx, uint32_t first_uid)
{
	struct mailbox *dest = ctx->dest;
	struct mail_index_transaction *t = NULL;
	char line[COPY_LINE_MAX];
	const char *tmp_name, *cur_name, *error;
	int64_t date;
	/* RFC 8514: a copy's save date is now, not the source's */
	time_t now = time(NULL);
	uint32_t uid = first_uid;

	mailbox_staged_spool_rewind(ctx->spool);
	while (copy_read_line(ctx->spool, line, &tmp_name, &cur_name, &date)) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(cur_name, &fn))
			i_unreached();   /* we made the name */
		if (t == NULL)
			t = mail_index_transaction_begin(dest->index);
		mail_index_append(t, uid, fn.flags & MAIL_FLAGS_PERMANENT,
			fn.other_flags[0] == '\0' ? 0 :
			maildir_keywords_from_letters(fn.other_flags),
			fn.vsize == MAILDIR_SIZE_UNKNOWN ? 0 : fn.vsize, date);
		mailbox_index_add_savedate(t, uid, now);
		uid++;
		if ((uid - first_uid) % COPY_SLICE == 0 ||
		    uid - first_uid == ctx->count) {
			mail_index_update_header(t, 0, uid);
			if (mailbox_index_commit(dest, &t, &error) < 0)
				return;
		}
	}
	if (t != NULL)
		mail_index_transaction_rollback(&t);
}

/* Rename one staged file into cur/ and give it the next UID. */
static int copy_publish_one(struct mailbox_copy_ctx *ctx, const char *tmp_name,
			    const char *cur_name, const char **error_r)
{
	struct mailbox *dest = ctx->dest;
	char src[PATH_MAX], dst[PATH_MAX];
	struct maildir_filename fn;

	if (!maildir_filename_parse(cur_name, &fn) ||
	    snprintf(src, sizeof(src), "%s/%s", dest->tmp_dir, tmp_name) >=
	    (int)sizeof(src) ||
	    snprintf(dst, sizeof(dst), "%s/%s", dest->cur_dir, cur_name) >=
	    (int)sizeof(dst)) {
		*error_r = "File name too long";
		return -1;
	}
	/* announced to the watch, settled in batches it can hold */
	maildir_watch_expect(dest->watch, MAILDIR_WATCH_CUR, cur_name);
	int ret = rename(src, dst);
	int saved = errno;
	if (ret < 0 || (ctx->renamed + 1) % MAILDIR_WATCH_MAX_EXPECTED == 0 ||
	    ctx->renamed + 1 == ctx->count)
		maildir_watch_settle(dest->watch);
	if (ret < 0) {
		errno = saved;
		*error_r = mailbox_set_error(dest, "rename(%s, %s) failed: %m",
					     src, dst);
		return -1;
	}
	ctx->renamed++;
	(void)maildir_uidlist_add(dest->uidlist, cur_name, fn.base_len,
				  fn.size, fn.vsize);
	return 0;
}

/* Under the target's lock: the spool becomes the journal; rename into
   cur/ and record the UIDs slice by slice. */
static int copy_publish(struct mailbox_copy_ctx *ctx, uint32_t *first_uid_r,
			const char **error_r)
{
	struct mailbox *dest = ctx->dest;
	struct maildir_uidlist *ul = dest->uidlist;
	char line[COPY_LINE_MAX];
	const char *tmp_name, *cur_name, *end_error;
	int64_t date;
	uint64_t mark;

	if (maildir_uidlist_append_begin(ul, &mark, error_r) < 0)
		return -1;
	*first_uid_r = maildir_uidlist_get_next_uid(ul);
	/* one rename is atomic by itself: no journal (the spool is removed
	   from tmp/ when the context is freed) */
	if (ctx->count > 1 &&
	    mailbox_staged_begin_spool(dest, ctx->spool, ctx->spool_path,
				       error_r) < 0)
		return -1;
	mailbox_staged_spool_rewind(ctx->spool);
	int ret = 0;
	while (ret == 0 && ctx->renamed < ctx->count) {
		if (!copy_read_line(ctx->spool, line, &tmp_name, &cur_name,
				    &date)) {
			*error_r = mailbox_set_error(dest, "reading %s failed",
						     ctx->spool_path);
			ret = -1;
		} else {
			ret = copy_publish_one(ctx, tmp_name, cur_name, error_r);
		}
		if (ret == 0 && (ctx->renamed % COPY_SLICE == 0 ||
				 ctx->renamed == ctx->count)) {
			ret = maildir_uidlist_write(ul, error_r);
			if (ret == 0)
				maildir_uidlist_forget_written(ul);
		}
	}
	if (ret < 0) {
		/* no UID of the set stays: the target is as before */
		if (maildir_uidlist_append_rollback(ul, mark, &end_error) < 0)
			i_error("%s", end_error);
		return -1;
	}
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
		mailbox_quota_account(dest, (int64_t)ctx->bytes, ctx->count);
	copy_free(_ctx, ret < 0);
	return ret;
}
