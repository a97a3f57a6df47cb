/* Saving a message into a Maildir folder (mailbox_append_*, mailbox.h):
   write to tmp/, fsync, set the mtime to INTERNALDATE, then under the
   uidlist lock rename into cur/ with size and flags in the name and give
   it the next UID, and fsync cur/ before the caller says OK. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

struct mailbox_append_ctx {
	struct mailbox *box;
	int fd;
	char *tmp_path;
	char base[MAILDIR_FILENAME_MAX + 1];
	enum mail_flags flags;
	char kw_letters[MAILDIR_KEYWORDS_MAX + 1];   /* keyword letters */
	time_t internal_date;
	int64_t mtime;            /* the file's: INTERNALDATE in the index */
	uint64_t size, vsize;
	bool last_cr, failed;
};

static int append_begin(struct mailbox *box, enum mail_flags flags,
			time_t internal_date, const char *delivery_id,
			struct mailbox_append_ctx **ctx_r, const char **error_r)
{
	struct mailbox_append_ctx *ctx = i_malloc(sizeof(*ctx));

	ctx->box = box;
	ctx->flags = flags & MAIL_FLAGS_PERMANENT;
	ctx->internal_date = internal_date;
	ctx->fd = -1;
	if ((delivery_id == NULL ?
	     maildir_unique_next(&box->unique, ctx->base, sizeof(ctx->base)) :
	     maildir_unique_next_delivery(&box->unique, delivery_id, ctx->base,
					  sizeof(ctx->base))) < 0) {
		*error_r = "Can't generate a file name";
		i_free(ctx);
		return -1;
	}
	ctx->tmp_path = i_strdup_printf("%s/%s", box->tmp_dir, ctx->base);
	ctx->fd = open(ctx->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		       0600);
	if (ctx->fd == -1) {
		*error_r = mailbox_set_error(box, "open(%s) failed: %m",
					     ctx->tmp_path);
		i_free(ctx->tmp_path);
		i_free(ctx);
		return -1;
	}
	*ctx_r = ctx;
	return 0;
}

int mailbox_append_begin(struct mailbox *box, enum mail_flags flags,
			 time_t internal_date, struct mailbox_append_ctx **ctx_r,
			 const char **error_r)
{
	return append_begin(box, flags, internal_date, NULL, ctx_r, error_r);
}

int mailbox_append_begin_delivery(struct mailbox *box, const char *id,
				  struct mailbox_append_ctx **ctx_r,
				  const char **error_r)
{
	return append_begin(box, 0, (time_t)-1, id, ctx_r, error_r);
}

int mailbox_append_write(struct mailbox_append_ctx *ctx, const void *data,
			 size_t size, const char **error_r)
{
	const unsigned char *p = data;

	i_assert(!ctx->failed);
	for (size_t i = 0; i < size; i++) {
		if (p[i] == '\n' && !ctx->last_cr)
			ctx->vsize++;
		ctx->last_cr = p[i] == '\r';
	}
	ctx->size += size;
	ctx->vsize += size;
	while (size > 0) {
		ssize_t ret = write(ctx->fd, p, size);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			*error_r = mailbox_set_error(ctx->box,
				"write(%s) failed: %m", ctx->tmp_path);
			ctx->failed = true;
			return -1;
		}
		p += ret;
		size -= (size_t)ret;
	}
	return 0;
}

static void append_free(struct mailbox_append_ctx **_ctx, bool unlink_tmp)
{
	struct mailbox_append_ctx *ctx = *_ctx;

	*_ctx = NULL;
	i_close_fd(&ctx->fd);
	if (unlink_tmp && unlink(ctx->tmp_path) < 0 && errno != ENOENT)
		i_error("unlink(%s) failed: %m", ctx->tmp_path);
	i_free(ctx->tmp_path);
	i_free(ctx);
}

void mailbox_append_set_keywords(struct mailbox_append_ctx *ctx,
				 uint32_t keywords)
{
	maildir_keywords_to_letters(keywords, ctx->kw_letters);
}

void mailbox_append_abort(struct mailbox_append_ctx **ctx)
{
	append_free(ctx, true);
}

/* Durable data and the INTERNALDATE, before the file becomes visible. */
static int append_finish_tmp(struct mailbox_append_ctx *ctx,
			     const char **error_r)
{
	struct mailbox *box = ctx->box;

	if ((box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 && fsync(ctx->fd) < 0) {
		*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
					     ctx->tmp_path);
		return -1;
	}
	if (ctx->internal_date != (time_t)-1) {
		struct timespec ts[2] = {
			{ ctx->internal_date, 0 }, { ctx->internal_date, 0 }
		};
		if (futimens(ctx->fd, ts) < 0) {
			*error_r = mailbox_set_error(box, "futimens(%s) failed: %m",
						     ctx->tmp_path);
			return -1;
		}
	}
	struct stat st;
	if (fstat(ctx->fd, &st) < 0) {
		*error_r = mailbox_set_error(box, "fstat(%s) failed: %m",
					     ctx->tmp_path);
		return -1;
	}
	ctx->mtime = st.st_mtime;
	return 0;
}

/* Tell the index (and so the other sessions) under the uidlist lock. A
   failure is logged: the file and its UID are durable already, and the
   next directory scan adds what the index lacks. */
static void append_index(struct mailbox_append_ctx *ctx, uint32_t uid)
{
	struct mailbox *box = ctx->box;
	const char *error;

	struct mail_index_transaction *t =
		mail_index_transaction_begin(box->index);
	mail_index_append(t, uid, ctx->flags,
			  maildir_keywords_from_letters(ctx->kw_letters),
			  ctx->vsize, ctx->mtime);
	mailbox_index_add_savedate(t, uid, time(NULL));
	mail_index_update_header(t, 0, uid + 1);
	(void)mailbox_index_commit(box, &t, &error);
}

/* Under the uidlist lock: rename into cur/ and record the UID. */
static int append_publish(struct mailbox_append_ctx *ctx, const char *fname,
			  size_t base_len, uint32_t *uid_r, const char **error_r)
{
	struct mailbox *box = ctx->box;
	struct maildir_uidlist *ul = box->uidlist;
	char *dest = i_strdup_printf("%s/%s", box->cur_dir, fname);
	int ret = -1;

	if (maildir_uidlist_lock_append(ul, error_r) < 0) {
		i_free(dest);
		return -1;
	}
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, fname);
	int rename_ret = rename(ctx->tmp_path, dest);
	maildir_watch_settle(box->watch);
	if (rename_ret < 0) {
		*error_r = mailbox_set_error(box, "rename(%s, %s) failed: %m",
					     ctx->tmp_path, dest);
	} else {
		struct maildir_uidlist_rec *rec =
			maildir_uidlist_add(ul, fname, base_len, ctx->size,
					    ctx->vsize);
		uint32_t uid = rec->uid;
		if (maildir_uidlist_write(ul, error_r) == 0) {
			append_index(ctx, uid);
			*uid_r = uid;
			ret = 0;
		} else {
			maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, fname);
			if (unlink(dest) < 0) {
				/* it gets a UID at the next sync instead */
				i_error("unlink(%s) failed: %m", dest);
			}
			maildir_watch_settle(box->watch);
		}
	}
	maildir_uidlist_unlock(ul);
	i_free(dest);
	return ret;
}

int mailbox_publish_staged(struct mailbox *box, mailbox_publish_func_t *publish,
			   void *context, uint32_t *first_uid_r,
			   const char **error_r)
{
	const char *end_error;

	if (maildir_uidlist_lock_append(box->uidlist, error_r) < 0)
		return -1;
	/* a set a dead publisher left half done goes first */
	int ret = mailbox_staged_recover_locked(box, error_r);
	if (ret == 0)
		ret = publish(context, first_uid_r, error_r);
	/* After a failure the journal goes at once: the caller removes the
	   set's files, and nothing may roll them forward. */
	if (ret < 0 && mailbox_staged_end(box, &end_error) < 0)
		i_error("%s", end_error);
	maildir_uidlist_unlock(box->uidlist);
	if (ret == 0 && (box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 &&
	    maildir_fsync_dir(box->cur_dir) < 0) {
		*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
					     box->cur_dir);
		ret = -1;
	}
	/* published and durable: the journal has done its work. A deferred
	   publish is durable only after the caller's syncfs: until then a
	   lost rename must still be rolled forward after a crash, so the
	   journal stays for mailbox_fsync_deferred_done(). */
	if ((ret < 0 || !box->fsync_deferred) &&
	    mailbox_staged_end(box, &end_error) < 0)
		i_error("%s", end_error);
	return ret;
}

int mailbox_fsync_deferred_done(struct mailbox *box, const char **error_r)
{
	return mailbox_staged_end(box, error_r);
}

int mailbox_append_finish(struct mailbox_append_ctx **_ctx, uint32_t *uid_r,
			  const char **error_r)
{
	struct mailbox_append_ctx *ctx = *_ctx;
	struct mailbox *box = ctx->box;
	char base[MAILDIR_FILENAME_MAX + 1], fname[MAILDIR_FILENAME_MAX + 1];

	i_assert(!ctx->failed);
	int len = snprintf(base, sizeof(base), "%s,S=%llu,W=%llu", ctx->base,
			   (unsigned long long)ctx->size,
			   (unsigned long long)ctx->vsize);
	if (len < 0 || (size_t)len >= sizeof(base) ||
	    maildir_filename_make(fname, sizeof(fname), base, (size_t)len,
				  ctx->flags, ctx->kw_letters) < 0) {
		*error_r = "File name too long";
		append_free(_ctx, true);
		return -1;
	}
	if (append_finish_tmp(ctx, error_r) < 0 ||
	    append_publish(ctx, fname, (size_t)len, uid_r, error_r) < 0) {
		append_free(_ctx, true);
		return -1;
	}
	mailbox_quota_account(box, (int64_t)ctx->size, 1);
	append_free(_ctx, false);
	if ((box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 &&
	    maildir_fsync_dir(box->cur_dir) < 0) {
		*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
					     box->cur_dir);
		return -1;
	}
	return 0;
}

/* ---- the save date (RFC 8514) ----
   A cache field written in the same commit as the message's APPEND op
   (one log record), so every session that sees the message can find it.
   Being a cache value it may be lost (cache file deleted, garbled or
   rebuilt); the message then has no save date: FETCH SAVEDATE answers
   NIL and SEARCH SAVED* use INTERNALDATE (doc/mail-storage.md). */

void mailbox_index_add_savedate(struct mail_index_transaction *t,
				uint32_t uid, time_t save_date)
{
	int64_t value = save_date;

	/* fails only for a bad name or size, which these are not */
	if (mail_cache_add(t, uid, MAILBOX_CACHE_SAVEDATE, &value,
			   sizeof(value)) < 0)
		i_unreached();
}

int mailbox_msg_savedate(struct mailbox *box, uint32_t seq, time_t *date_r)
{
	const void *data;
	size_t size;
	int64_t value;

	if (mailbox_msg_cache_lookup(box, seq, MAILBOX_CACHE_SAVEDATE,
				     &data, &size) <= 0 || size != sizeof(value))
		return 0;
	memcpy(&value, data, sizeof(value));
	*date_r = (time_t)value;
	return 1;
}
