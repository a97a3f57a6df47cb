/* Applying another tool's renames in cur/ without reading cur/
   (maildir-sync-renames.h). */
#include "lib.h"
#include "maildir-sync-renames.h"
#include "maildir-uidlist-find.h"

#include <fcntl.h>
#include <sys/stat.h>

#if MAILDIR_UIDLIST_FIND_MAX < MAILDIR_WATCH_MAX_RENAMES
#  error "the uidlist finder must take every rename the watch keeps"
#endif

struct renames_ctx {
	struct mailbox *box;
	struct mail_index_transaction *t;
	const char **names;
	struct maildir_uidlist_find_item *items;
	/* per item: the last item of its base (the base's current name) */
	uint32_t *last;
	unsigned int count, changes;
};

/* 1 applied or nothing to do, 0 when the scan must decide. */
static int renames_apply_one(struct renames_ctx *ctx, unsigned int i)
{
	struct mailbox *box = ctx->box;
	const struct maildir_uidlist_find_item *it = &ctx->items[i];
	const char *name = ctx->names[i];
	struct maildir_filename fn;
	struct stat st;

	if (it->uid == 0 || !maildir_filename_parse(name, &fn) ||
	    !maildir_uidlist_base_is_valid(name, fn.base_len))
		return 0;
	if (ctx->last[it->first] != i)
		return 1;   /* renamed again later */
	if (fstatat(box->cur_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* renamed again (its event comes later) or by us: the
		   index has it, or will have it from that event */
		return errno == ENOENT ? 1 : 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	uint32_t seq = mail_index_view_uid_to_seq(box->view, it->uid);
	if (seq == 0)
		return 0;
	const struct mail_index_record *rec =
		mail_index_view_lookup(box->view, seq);
	enum mail_flags flags = fn.flags & MAIL_FLAGS_PERMANENT;
	uint32_t keywords = fn.other_flags[0] == '\0' ? 0 :
		maildir_keywords_from_letters(fn.other_flags);
	if ((rec->flags & MAIL_FLAGS_PERMANENT) == flags &&
	    rec->keywords == keywords)
		return 1;
	mailbox_index_replace_flags(ctx->t, it->uid, flags, keywords);
	ctx->changes++;
	return 1;
}

/* Locked: find the uids, queue the flags, commit. */
static int renames_apply(struct renames_ctx *ctx, const char **error_r)
{
	struct mailbox *box = ctx->box;
	int ret = maildir_uidlist_find(box->path, ctx->items, ctx->count,
				       error_r);
	if (ret <= 0)
		return ret;
	for (unsigned int i = 0; i < ctx->count; i++)
		ctx->last[ctx->items[i].first] = i;
	ctx->t = mail_index_transaction_begin(box->index);
	for (unsigned int i = 0; i < ctx->count && ret > 0; i++)
		ret = renames_apply_one(ctx, i);
	if (ret <= 0 || ctx->changes == 0) {
		mail_index_transaction_rollback(&ctx->t);
		return ret;
	}
	return mailbox_index_commit(box, &ctx->t, error_r) < 0 ? -1 : 1;
}

int maildir_sync_renames(struct mailbox *box, uint64_t *gen_r,
			 const char **error_r)
{
	struct mail_index_status status;
	struct renames_ctx ctx;
	uint64_t gen;

	mail_index_view_get_status(box->view, &status);
	memset(&ctx, 0, sizeof(ctx));
	ctx.box = box;
	ctx.names = i_malloc(MAILDIR_WATCH_MAX_RENAMES * sizeof(*ctx.names));
	ctx.count = maildir_watch_get_renames(box->watch, status.uidvalidity,
					      status.highest_modseq,
					      ctx.names, &gen);
	if (ctx.count == 0) {
		i_free(ctx.names);
		return 0;
	}
	ctx.items = i_malloc(i_mul_size(ctx.count, sizeof(*ctx.items)));
	ctx.last = i_malloc(i_mul_size(ctx.count, sizeof(*ctx.last)));
	for (unsigned int i = 0; i < ctx.count; i++) {
		ctx.items[i].base = ctx.names[i];
		ctx.items[i].base_len = (uint32_t)strcspn(ctx.names[i], ":");
	}
	int ret = maildir_uidlist_lock_append(box->uidlist, error_r);
	if (ret == 0) {
		ret = renames_apply(&ctx, error_r);
		maildir_uidlist_unlock(box->uidlist);
	}
	if (ret == 0)
		maildir_watch_distrust(box->watch);
	i_free(ctx.last);
	i_free(ctx.items);
	i_free(ctx.names);
	if (ret > 0)
		*gen_r = gen;
	return ret;
}
