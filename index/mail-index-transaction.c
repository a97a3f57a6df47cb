/* Transactions: changes collected in memory, committed as one log record. */
#include "lib.h"
#include "log.h"
#include "mail-index-private.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>

/* One transaction is one log record, bounded like any record. */
#define TRANSACTION_MAX_SIZE MAIL_TRANSACTION_MAX_SIZE

struct mail_index_transaction *mail_index_transaction_begin(struct mail_index *index)
{
	struct mail_index_transaction *t = i_malloc(sizeof(*t));

	t->index = index;
	buffer_init(&t->rec, TRANSACTION_MAX_SIZE);
	buffer_init(&t->cache, TRANSACTION_MAX_SIZE);
	mail_transaction_rec_begin(&t->rec);
	return t;
}

static void transaction_free(struct mail_index_transaction **_t)
{
	struct mail_index_transaction *t = *_t;

	*_t = NULL;
	buffer_free(&t->rec);
	buffer_free(&t->cache);
	i_free(t);
}

void mail_index_transaction_rollback(struct mail_index_transaction **t)
{
	transaction_free(t);
}

void mail_index_append(struct mail_index_transaction *t, uint32_t uid,
		       enum mail_flags flags, uint32_t keywords,
		       uint64_t size, int64_t internal_date)
{
	struct mail_transaction_append a;

	memset(&a, 0, sizeof(a));
	a.uid = uid;
	a.flags = (uint8_t)(flags & MAIL_FLAGS_PERMANENT);
	a.keywords = keywords;
	a.size = size;
	a.internal_date = internal_date;
	if (t->append_op_end != 0 && t->append_op_end == t->rec.used) {
		/* Consecutive appends share one op: 8 bytes of op header
		   per message would be 25% of the log of a big build. */
		struct mail_transaction_op_header op;
		if (buffer_append(&t->rec, &a, sizeof(a)) < 0)
			i_panic("transaction too large");
		memcpy(&op, t->rec.data + t->append_op_pos, sizeof(op));
		op.size += sizeof(a);
		memcpy(t->rec.data + t->append_op_pos, &op, sizeof(op));
	} else {
		t->append_op_pos = t->rec.used;
		mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_APPEND,
					    &a, sizeof(a));
	}
	t->append_op_end = t->rec.used;
	t->changes = true;
}

void mail_index_update_flags(struct mail_index_transaction *t,
			     uint32_t uid1, uint32_t uid2,
			     enum mail_flags add, enum mail_flags remove,
			     uint32_t add_keywords, uint32_t remove_keywords)
{
	struct mail_transaction_flags f;

	i_assert(uid1 <= uid2);
	memset(&f, 0, sizeof(f));
	f.uid1 = uid1;
	f.uid2 = uid2;
	f.add_flags = (uint8_t)(add & MAIL_FLAGS_PERMANENT);
	f.remove_flags = (uint8_t)(remove & MAIL_FLAGS_PERMANENT);
	f.add_keywords = add_keywords;
	f.remove_keywords = remove_keywords;
	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_FLAGS, &f, sizeof(f));
	t->changes = true;
}

void mail_index_expunge(struct mail_index_transaction *t,
			uint32_t uid1, uint32_t uid2)
{
	struct mail_transaction_range r = { uid1, uid2 };

	i_assert(uid1 <= uid2);
	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_EXPUNGE, &r, sizeof(r));
	t->changes = true;
}

void mail_index_update_header(struct mail_index_transaction *t,
			      uint32_t uidvalidity, uint32_t next_uid)
{
	struct mail_transaction_header_update hu = { uidvalidity, next_uid };

	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_HEADER, &hu, sizeof(hu));
	t->changes = true;
}

void mail_index_update_first_recent(struct mail_index_transaction *t,
				    uint32_t uid)
{
	/* not a change of any message: no modseq */
	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_FIRST_RECENT,
				    &uid, sizeof(uid));
}

void mail_index_raise_modseq(struct mail_index_transaction *t,
			     uint64_t floor)
{
	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_MODSEQ_FLOOR,
				    &floor, sizeof(floor));
	t->modseq_floor = MAX(t->modseq_floor, floor);
	t->changes = true;
}

/* Give uid-0 appends their uids and check the given ones. */
static int assign_uids(struct mail_index_transaction *t,
		       struct mail_index_commit_result *result,
		       const char **error_r)
{
	struct mail_transaction_op_iter iter;
	const struct mail_transaction_op_header *op;
	const void *payload;
	struct mail_transaction_append a;
	uint32_t next = t->index->tail->hdr.next_uid;

	mail_transaction_op_iter_init(&iter, t->rec.data, t->rec.used);
	while (mail_transaction_op_next(&iter, &op, &payload)) {
		if (op->type != MAIL_TRANSACTION_APPEND)
			continue;
		for (uint32_t pos = 0; pos + sizeof(a) <= op->size; pos += sizeof(a)) {
			char *p = (char *)payload + pos;
			memcpy(&a, p, sizeof(a));
			if (a.uid == 0)
				a.uid = next;
			if (a.uid < next || a.uid == UINT32_MAX) {
				*error_r = mail_index_set_error(t->index,
					"append of uid %u, but next_uid is %u",
					a.uid, next);
				return -1;
			}
			next = a.uid + 1;
			memcpy(p, &a, sizeof(a));
			if (result->first_uid == 0)
				result->first_uid = a.uid;
			result->last_uid = a.uid;
		}
	}
	return 0;
}

/* Lock held, tail fresh: write the record. */
static int commit_locked(struct mail_index_transaction *t,
			 struct mail_index_commit_result *result,
			 const char **error_r)
{
	struct mail_index *index = t->index;

	if (assign_uids(t, result, error_r) < 0)
		return -1;
	if (t->cache.used > 0 && mail_cache_transaction_flush(t, error_r) < 0)
		return -1;
	uint64_t modseq = index->tail->hdr.highest_modseq + (t->changes ? 1 : 0);
	modseq = MAX(modseq, t->modseq_floor);
	result->modseq = modseq;
	result->prev_first_recent_uid = index->tail->hdr.first_recent_uid;
	if (t->rec.used > sizeof(struct mail_transaction_rec_header)) {
		mail_transaction_rec_finish(&t->rec, modseq);
		if (mail_transaction_log_append(index->tail_cursor.file,
				index->tail_cursor.offset, &t->rec, error_r) < 0)
			return -1;
		mail_index_map_apply(index->tail, t->rec.data, t->rec.used, NULL);
		index->tail_cursor.offset += (uint32_t)t->rec.used;
		index->tail->hdr.log_file_offset = index->tail_cursor.offset;
	}
	result->log_file_seq = index->tail_cursor.file->hdr.file_seq;
	result->log_file_offset = index->tail_cursor.offset;
	return 0;
}

int mail_index_transaction_commit(struct mail_index_transaction **_t,
				  enum mail_index_fsync_mode fsync_mode,
				  struct mail_index_commit_result *result_r,
				  const char **error_r)
{
	struct mail_index_transaction *t = *_t;
	struct mail_index *index = t->index;
	struct mail_index_commit_result result;
	int ret;

	memset(&result, 0, sizeof(result));
	if (mail_index_lock(index, true, error_r) < 0) {
		transaction_free(_t);
		return -1;
	}
	ret = mail_index_tail_refresh(index, error_r);
	if (ret == 0)
		ret = commit_locked(t, &result, error_r);
	struct mail_transaction_log_file *file = index->tail_cursor.file;
	mail_transaction_log_file_ref(file);
	mail_index_unlock(index);
	transaction_free(_t);

	/* fsync outside the lock: other writers need not wait for it, and
	   a later writer's fsync covers our bytes too. */
	if (ret == 0 && fsync_mode == MAIL_INDEX_FSYNC_ALWAYS &&
	    fdatasync(file->fd) < 0) {
		*error_r = mail_index_set_error(index, "fdatasync(%s): %s",
						file->path, strerror(errno));
		ret = -1;
	}
	mail_transaction_log_file_unref(&file);
	if (ret == 0 && result_r != NULL)
		*result_r = result;
	/* A handle without a view (a delivery agent) never syncs, so it
	   rewrites the index itself once the log has grown big. */
	const char *cp_error;
	if (ret == 0 && index->view == NULL &&
	    index->tail_cursor.offset >= index->log_rotate_size * 2 &&
	    mail_index_checkpoint(index, &cp_error) < 0)
		i_warning("index %s: checkpoint: %s", index->dir, cp_error);
	return ret;
}

/* ---- the first build ---- */

/* Tests only (crash simulation); the one piece of module state. */
static mail_index_build_hook_t *build_hook;

void mail_index_build_set_hook(mail_index_build_hook_t *hook)
{
	build_hook = hook;
}

static void build_step(unsigned int step)
{
	if (build_hook != NULL)
		build_hook(step);
}

static bool path_missing(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 && errno == ENOENT;
}

/* Lock held, tail fresh: the index was never written and never had a
   message, and t needs nothing but moat.index. */
static bool build_applies(struct mail_index_transaction *t)
{
	struct mail_index *index = t->index;

	if (t->cache.used > 0 || t->modseq_floor > 0 ||
	    index->tail_cursor.file->hdr.file_seq != 1 ||
	    index->tail->hdr.next_uid > 1 || !path_missing(index->index_path))
		return false;
	/* a history left from an earlier index would be taken for this
	   one's; without any, a map loaded from the new moat.index starts
	   its histories there (nothing older exists) */
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++) {
		if (!path_missing(index->history_path[i]))
			return false;
	}
	return true;
}

/* Lock held, build_applies(): the state so far (log 1: a header, maybe
   keyword names) plus t, written as moat.index for a new log. */
static int build_locked(struct mail_index_transaction *t, bool do_fsync,
			struct mail_index_commit_result *result,
			const char **error_r)
{
	struct mail_index *index = t->index;
	struct mail_index_map *map;
	struct mail_index_log_cursor cursor;
	struct mail_transaction_log_file *log;
	const char *why;

	if (assign_uids(t, result, error_r) < 0 ||
	    mail_index_load_fresh(index, &map, &cursor, error_r) <= 0)
		return -1;
	mail_transaction_log_file_unref(&cursor.file);
	uint64_t modseq = map->hdr.highest_modseq + (t->changes ? 1 : 0);
	result->modseq = modseq;
	result->prev_first_recent_uid = map->hdr.first_recent_uid;
	mail_transaction_rec_finish(&t->rec, modseq);
	mail_index_map_apply(map, t->rec.data, t->rec.used, NULL);
	/* The records are in no log: a reader of log 1 must reload from
	   moat.index, which a RESET log makes it do (it cannot continue
	   into one). moat.index first: a reader notices only the log. */
	uint32_t seq = index->tail_cursor.file->hdr.file_seq + 1;
	map->hdr.log_file_seq = seq;
	map->hdr.log_file_offset = sizeof(struct mail_transaction_log_header);
	build_step(1);
	if (mail_index_map_write(map, index->index_path, do_fsync, &why) < 0) {
		*error_r = mail_index_set_error(index, "%s: %s",
						index->index_path, why);
		mail_index_map_free(&map);
		return -1;
	}
	build_step(2);
	/* empty: the directory's fsync below is all it needs before a
	   commit's own fdatasync */
	if (mail_index_create_log(index, seq, seq - 1,
				  MAIL_TRANSACTION_LOG_FLAG_RESET,
				  map->hdr.uidvalidity, map->hdr.highest_modseq,
				  false, false, &log, error_r) < 0) {
		mail_index_map_free(&map);
		return -1;
	}
	build_step(3);
	if (do_fsync && mail_index_fsync_dir(index->dir) < 0) {
		*error_r = mail_index_set_error(index, "fsync(%s): %s",
						index->dir, strerror(errno));
		mail_transaction_log_file_unref(&log);
		mail_index_map_free(&map);
		return -1;
	}
	build_step(4);
	/* the writer tail goes on in the new log; the view reloads */
	mail_index_map_free(&index->tail);
	mail_transaction_log_file_unref(&index->tail_cursor.file);
	index->tail = mail_index_map_header_copy(map);
	index->tail_cursor.file = log;
	index->tail_cursor.offset = log->hdr.header_size;
	index->index_file_seq = seq;
	index->index_file_offset = map->hdr.log_file_offset;
	result->log_file_seq = seq;
	result->log_file_offset = index->tail_cursor.offset;
	mail_index_map_free(&map);
	return 0;
}

int mail_index_transaction_commit_first(struct mail_index_transaction **_t,
					enum mail_index_fsync_mode fsync_mode,
					struct mail_index_commit_result *result_r,
					const char **error_r)
{
	struct mail_index_transaction *t = *_t;
	struct mail_index *index = t->index;
	struct mail_index_commit_result result;

	/* without the lock, from what the view knows: an index this handle
	   read or wrote, or a log past the first, is not fresh any more */
	if (index->index_file_seq != 0 || index->cursor.file->hdr.file_seq != 1)
		return 0;
	memset(&result, 0, sizeof(result));
	if (mail_index_lock(index, true, error_r) < 0) {
		transaction_free(_t);
		return -1;
	}
	int ret = mail_index_tail_refresh(index, error_r);
	if (ret == 0 && !build_applies(t)) {
		mail_index_unlock(index);
		return 0;
	}
	if (ret == 0)
		ret = build_locked(t, fsync_mode == MAIL_INDEX_FSYNC_ALWAYS,
				   &result, error_r);
	mail_index_unlock(index);
	transaction_free(_t);
	if (ret < 0)
		return -1;
	if (result_r != NULL)
		*result_r = result;
	return 1;
}

int mail_index_sync_log(struct mail_index *index, const char **error_r)
{
	struct mail_transaction_log_file *file = index->tail_cursor.file;

	/* a handle that never committed has nothing of its own there */
	if (file == NULL || fdatasync(file->fd) == 0)
		return 0;
	*error_r = mail_index_set_error(index, "fdatasync(%s): %s",
					file->path, strerror(errno));
	return -1;
}

bool mail_index_log_same(const struct mail_index *a,
			 const struct mail_index *b)
{
	const struct mail_transaction_log_file *fa = a->tail_cursor.file;
	const struct mail_transaction_log_file *fb = b->tail_cursor.file;

	return fa != NULL && fb != NULL && fa->dev == fb->dev &&
		fa->ino == fb->ino;
}

int mail_index_log_fd_dup(struct mail_index *index, uint32_t *seq_r)
{
	struct mail_transaction_log_file *file = index->tail_cursor.file;

	if (file == NULL) {
		errno = ENOENT;
		return -1;
	}
	int fd = fcntl(file->fd, F_DUPFD_CLOEXEC, 0);
	if (fd != -1)
		*seq_r = file->hdr.file_seq;
	return fd;
}

uint32_t mail_index_log_seq(struct mail_index *index)
{
	struct mail_transaction_log_file *file = index->tail_cursor.file;

	return file == NULL ? 0 : file->hdr.file_seq;
}
