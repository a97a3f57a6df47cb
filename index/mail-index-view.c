/* The view: stable sequence numbers over the map, changed only by sync. */
#include "lib.h"
#include "mail-index-private.h"
#include "mail-cache.h"

static const struct mail_index_sync_callbacks no_callbacks;

struct mail_index_view *mail_index_view_open(struct mail_index *index)
{
	struct mail_index_view *view;

	/* One view per handle: sessions open their own handles. */
	i_assert(index->view == NULL);
	view = i_malloc(sizeof(*view));
	view->index = index;
	index->view = view;
	return view;
}

void mail_index_view_close(struct mail_index_view **_view)
{
	struct mail_index_view *view = *_view;

	if (view == NULL)
		return;
	*_view = NULL;
	view->index->view = NULL;
	i_free(view);
}

void mail_index_view_get_status(struct mail_index_view *view,
				struct mail_index_status *status_r)
{
	const struct mail_index_header *hdr = &view->index->map->hdr;

	memset(status_r, 0, sizeof(*status_r));
	status_r->uidvalidity = hdr->uidvalidity;
	status_r->next_uid = hdr->next_uid;
	status_r->messages_count = hdr->messages_count;
	status_r->seen_count = hdr->seen_count;
	status_r->deleted_count = hdr->deleted_count;
	status_r->first_unseen_uid = hdr->first_unseen_uid;
	status_r->highest_modseq = hdr->highest_modseq;
	status_r->keywords_count = hdr->keywords_count;
	status_r->first_recent_uid = hdr->first_recent_uid;
}

uint32_t mail_index_view_count(struct mail_index_view *view)
{
	return view->index->map->hdr.messages_count;
}

const struct mail_index_record *
mail_index_view_lookup(struct mail_index_view *view, uint32_t seq)
{
	const struct mail_index_map *map = view->index->map;

	i_assert(seq >= 1 && seq <= map->hdr.messages_count);
	return &map->recs[seq - 1];
}

uint32_t mail_index_view_uid_to_seq_ge(struct mail_index_view *view, uint32_t uid)
{
	const struct mail_index_map *map = view->index->map;
	uint32_t seq = mail_index_map_lower_bound(map, uid);

	return seq > map->hdr.messages_count ? 0 : seq;
}

uint32_t mail_index_view_uid_to_seq(struct mail_index_view *view, uint32_t uid)
{
	uint32_t seq = mail_index_view_uid_to_seq_ge(view, uid);

	if (seq == 0 || view->index->map->recs[seq - 1].uid != uid)
		return 0;
	return seq;
}

bool mail_index_keyword_lookup(struct mail_index_view *view, const char *name,
			       unsigned int *idx_r)
{
	int idx = mail_index_map_keyword_find(view->index->map, name);

	if (idx < 0)
		return false;
	*idx_r = (unsigned int)idx;
	return true;
}

const char *mail_index_keyword_name(struct mail_index_view *view,
				    unsigned int idx)
{
	const struct mail_index_map *map = view->index->map;

	if (idx >= map->hdr.keywords_count)
		return NULL;
	return map->keywords[idx];
}

uint64_t mail_index_view_sync_modseq(struct mail_index_view *view)
{
	return view->index->map->apply_modseq;
}

bool mail_index_view_check(struct mail_index_view *view, const char **error_r)
{
	return mail_index_map_check(view->index->map, error_r);
}

/* Report the difference between two maps as expunges, flag changes and
   appends (the view lost the log: reset, or a log that went missing). */
static void diff_maps(const struct mail_index_map *old,
		      const struct mail_index_map *new,
		      const struct mail_index_sync_target *t)
{
	const struct mail_index_sync_callbacks *cb = t->cb;
	uint32_t i = 0, j = 0, seq = 1;
	bool new_validity = old->hdr.uidvalidity != new->hdr.uidvalidity;

	while (i < old->hdr.messages_count) {
		const struct mail_index_record *o = &old->recs[i];
		const struct mail_index_record *n = j < new->hdr.messages_count ?
			&new->recs[j] : NULL;
		if (new_validity || n == NULL || o->uid < n->uid) {
			if (cb->expunge != NULL)
				cb->expunge(t->context, seq, o->uid);
			i++;
		} else if (o->uid == n->uid) {
			if ((o->flags != n->flags || o->keywords != n->keywords) &&
			    cb->flags_changed != NULL)
				cb->flags_changed(t->context, seq, o->uid);
			i++; j++; seq++;
		} else {
			/* A uid we never saw below one we have: only a
			   rebuilt index does that. Report it as new. */
			if (cb->appended != NULL)
				cb->appended(t->context, seq, n->uid);
			j++; seq++;
		}
	}
	if (new_validity && cb->uidvalidity_changed != NULL)
		cb->uidvalidity_changed(t->context, new->hdr.uidvalidity);
	for (; j < new->hdr.messages_count; j++, seq++) {
		if (cb->appended != NULL)
			cb->appended(t->context, seq, new->recs[j].uid);
	}
}

static int view_reload(struct mail_index *index,
		       const struct mail_index_sync_target *target,
		       const char **error_r)
{
	struct mail_index_map *map;
	struct mail_index_log_cursor cursor;

	if (mail_index_load_fresh(index, &map, &cursor, error_r) <= 0)
		return -1;
	/* when they happened is unknown: after what the old map had */
	index->map->apply_modseq = index->map->hdr.highest_modseq + 1;
	diff_maps(index->map, map, target);
	mail_index_map_free(&index->map);
	mail_transaction_log_file_unref(&index->cursor.file);
	index->map = map;
	index->cursor = cursor;
	return 0;
}

int mail_index_view_sync(struct mail_index_view *view,
			 const struct mail_index_sync_callbacks *callbacks,
			 void *context, const char **error_r)
{
	struct mail_index *index = view->index;
	struct mail_index_sync_target target = {
		callbacks != NULL ? callbacks : &no_callbacks, context
	};
	uint32_t cache_seq = index->map->hdr.cache_file_seq;
	int ret;

	ret = mail_index_log_catch_up(index, &index->cursor, index->map,
				      &target, error_r);
	if (ret == 0)
		ret = view_reload(index, &target, error_r) < 0 ? -1 : 1;
	if (ret > 0 && (mail_index_need_checkpoint(index) ||
			mail_cache_want_compress(index))) {
		/* Readers never wait for writers: skip when busy. */
		ret = mail_index_lock(index, false, error_r);
		if (ret > 0) {
			ret = mail_index_checkpoint_locked(index, &target, false,
							   error_r);
			mail_index_unlock(index);
			if (ret == 0)
				ret = view_reload(index, &target, error_r) < 0 ? -1 : 1;
		} else if (ret == 0) {
			ret = 1;
		}
	}
	if (index->cache != NULL && index->map->hdr.cache_file_seq != cache_seq)
		mail_cache_invalidate(index->cache);
	else if (index->cache != NULL && ret > 0)
		mail_cache_view_synced(index->cache);
	return ret < 0 ? -1 : 0;
}
