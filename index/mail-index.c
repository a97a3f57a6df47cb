/* mail_index handles: open/close, the writer lock, catching up with the
   log, loading, checkpoints with log rotation, reset and keywords. */
#include "lib.h"
#include "log.h"
#include "mail-index-private.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

/* A log record is at most this big, so is the scratch buffer. */
#define INDEX_REC_BUF_MAX MAIL_TRANSACTION_MAX_SIZE
/* A log that keeps changing under an opener is retried this often. */
#define INDEX_LOAD_RETRIES 5

static __thread char open_error[MAIL_INDEX_ERROR_MAX];

const char *mail_index_set_error(struct mail_index *index, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(index->error, sizeof(index->error), fmt, args);
	va_end(args);
	return index->error;
}

void mail_index_corrupted(struct mail_index *index, const char *fmt, ...)
{
	char msg[MAIL_INDEX_ERROR_MAX];
	va_list args;

	if (index->corruption_logged)
		return;
	index->corruption_logged = true;
	va_start(args, fmt);
	vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	i_error("index %s: corrupted: %s (recovering)", index->dir, msg);
}

/* ---- lock ---- */

static int lock_try(int fd, short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	/* OFD locks: two handles of one process exclude each other too. */
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int mail_index_lock(struct mail_index *index, bool wait, const char **error_r)
{
	uint64_t start = time_monotonic_ms();
	unsigned int sleep_us = 100;

	i_assert(!index->locked);
	if (index->lock_fd < 0) {
		*error_r = mail_index_set_error(index, "index %s is read-only", index->dir);
		return -1;
	}
	while (lock_try(index->lock_fd, F_WRLCK) < 0) {
		if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
			*error_r = mail_index_set_error(index, "fcntl(%s): %s",
				index->lock_path, strerror(errno));
			return -1;
		}
		if (!wait)
			return 0;
		if (time_monotonic_ms() - start > MAIL_INDEX_LOCK_TIMEOUT_MS) {
			*error_r = mail_index_set_error(index,
				"timeout waiting for %s", index->lock_path);
			return -1;
		}
		usleep(sleep_us);
		if (sleep_us < 5000)
			sleep_us *= 2;
	}
	index->locked = true;
	return 1;
}

void mail_index_unlock(struct mail_index *index)
{
	i_assert(index->locked);
	(void)lock_try(index->lock_fd, F_UNLCK);
	index->locked = false;
}

/* ---- log catch-up ---- */

static int read_all(struct mail_index *index, struct mail_index_log_cursor *cursor,
		    struct mail_index_map *map,
		    const struct mail_index_sync_target *target,
		    bool *garbled_r, const char **error_r)
{
	int ret;

	while ((ret = mail_transaction_log_read(cursor->file, &cursor->offset,
						&index->rec_buf, garbled_r,
						error_r)) > 0) {
		mail_index_map_apply(map, index->rec_buf.data,
				     index->rec_buf.used, target);
	}
	return ret;
}

static bool same_file(const struct mail_transaction_log_file *file,
		      const struct stat *st)
{
	return file->dev == st->st_dev && file->ino == st->st_ino;
}

/* The log at path continues seq? Returns the file or NULL. */
static struct mail_transaction_log_file *
open_next_log(struct mail_index *index, const char *path, uint32_t seq)
{
	struct mail_transaction_log_file *file;
	const char *error;

	if (mail_transaction_log_file_open(path, (index->flags &
		MAIL_INDEX_OPEN_READONLY) != 0, &file, &error) <= 0)
		return NULL;
	if (file->hdr.file_seq == seq + 1 && file->hdr.prev_file_seq == seq &&
	    (file->hdr.flags & MAIL_TRANSACTION_LOG_FLAG_RESET) == 0)
		return file;
	mail_transaction_log_file_unref(&file);
	return NULL;
}

static void cursor_switch(struct mail_index_log_cursor *cursor,
			  struct mail_transaction_log_file *file)
{
	mail_transaction_log_file_unref(&cursor->file);
	cursor->file = file;
	cursor->offset = file->hdr.header_size;
}

int mail_index_log_catch_up(struct mail_index *index,
			    struct mail_index_log_cursor *cursor,
			    struct mail_index_map *map,
			    const struct mail_index_sync_target *target,
			    const char **error_r)
{
	struct mail_transaction_log_file *next;
	struct stat st;
	bool garbled;

	for (;;) {
		if (read_all(index, cursor, map, target, &garbled, error_r) < 0)
			return -1;
		if (stat(index->log_path, &st) < 0) {
			/* Deleted: a writer must not append to the lost
			   file, it reloads (and so creates a new log). */
			if (errno == ENOENT) {
				if (index->locked)
					return 0;
				break;
			}
			*error_r = mail_index_set_error(index, "stat(%s): %s",
				index->log_path, strerror(errno));
			return -1;
		}
		if (same_file(cursor->file, &st)) {
			if (garbled && index->locked) {
				/* Only a crashed writer leaves bytes past the
				   last record while nobody holds the lock. */
				mail_index_corrupted(index, "%s: torn record at %u, cut",
					index->log_path, cursor->offset);
				if (mail_transaction_log_truncate(cursor->file,
						cursor->offset, error_r) < 0)
					return -1;
			}
			break;
		}
		/* Rotated: what was appended before the rename is there now. */
		if (read_all(index, cursor, map, target, &garbled, error_r) < 0)
			return -1;
		uint32_t seq = cursor->file->hdr.file_seq;
		if ((next = open_next_log(index, index->log_path, seq)) == NULL &&
		    (next = open_next_log(index, index->log2_path, seq)) == NULL)
			return 0;
		cursor_switch(cursor, next);
		if (next->hdr.initial_modseq > map->hdr.highest_modseq)
			map->hdr.highest_modseq = next->hdr.initial_modseq;
	}
	map->hdr.log_file_seq = cursor->file->hdr.file_seq;
	map->hdr.log_file_offset = cursor->offset;
	return 1;
}

/* ---- loading ---- */

int mail_index_create_log(struct mail_index *index, uint32_t seq,
			  uint32_t prev_seq, uint32_t flags, uint32_t uidvalidity,
			  uint64_t modseq, bool keep_log2, bool do_fsync,
			  struct mail_transaction_log_file **file_r,
			  const char **error_r)
{
	struct mail_transaction_log_header hdr;

	i_assert(index->locked);
	mail_transaction_log_header_init(&hdr, seq, prev_seq, flags, uidvalidity,
					 modseq);
	(void)unlink(index->log2_path);
	if (keep_log2)
		(void)link(index->log_path, index->log2_path);
	return mail_transaction_log_file_create(index->log_path, &hdr, true,
						do_fsync, file_r, error_r);
}

static int create_log(struct mail_index *index, uint32_t seq, uint32_t prev_seq,
		      uint32_t flags, uint32_t uidvalidity, uint64_t modseq,
		      bool keep_log2, struct mail_transaction_log_file **file_r,
		      const char **error_r)
{
	return mail_index_create_log(index, seq, prev_seq, flags, uidvalidity,
				     modseq, keep_log2, true, file_r, error_r);
}

/* Bytes of moat.index holding map. */
static uint64_t map_file_size(const struct mail_index_map *map)
{
	return (uint64_t)map->hdr.header_size + (uint64_t)map->hdr.messages_count *
		sizeof(struct mail_index_record);
}

/* A rotated-out log of log_size bytes is worth keeping as .log.2 only
   when replaying it is clearly cheaper than the reload (which reads
   moat.index) that a lagging reader does without it. */
static bool log2_worth_keeping(uint64_t log_size, const struct mail_index_map *map)
{
	return log_size <= map_file_size(map) / MAIL_INDEX_LOG2_MAX_INDEX_DIV;
}

/* The log of a brand-new index starts with its uidvalidity. */
static int create_first_log(struct mail_index *index,
			    struct mail_transaction_log_file **file_r,
			    const char **error_r)
{
	struct mail_transaction_header_update hu = { (uint32_t)time(NULL), 1 };

	if (create_log(index, 1, 0, 0, hu.uidvalidity, 0, false, file_r, error_r) < 0)
		return -1;
	buffer_reset(&index->rec_buf);
	mail_transaction_rec_begin(&index->rec_buf);
	mail_transaction_rec_add_op(&index->rec_buf, MAIL_TRANSACTION_HEADER,
				    &hu, sizeof(hu));
	mail_transaction_rec_finish(&index->rec_buf, 0);
	return mail_transaction_log_append(*file_r, (*file_r)->hdr.header_size,
					   &index->rec_buf, error_r);
}

/* Open moat.index.log, creating it (lock held) when missing or unusable.
   Returns 1, 0 if missing and not to be created, -1 on error. */
static int open_log(struct mail_index *index, struct mail_index_map *map,
		    bool scratch, struct mail_transaction_log_file **file_r,
		    const char **error_r)
{
	bool readonly = (index->flags & MAIL_INDEX_OPEN_READONLY) != 0;
	int ret = mail_transaction_log_file_open(index->log_path, readonly,
						 file_r, error_r);
	if (ret != 0 && !(ret < 0 && !readonly))
		return ret;
	if (ret < 0)
		mail_index_corrupted(index, "%s", *error_r);
	if (readonly || (scratch && ret == 0 &&
			 (index->flags & MAIL_INDEX_OPEN_CREATE) == 0))
		return ret;
	bool took_lock = !index->locked;
	if (took_lock && mail_index_lock(index, true, error_r) < 0)
		return -1;
	/* Somebody may have created it while we waited. */
	ret = mail_transaction_log_file_open(index->log_path, false, file_r, error_r);
	if (ret == 0 && scratch)
		ret = create_first_log(index, file_r, error_r) < 0 ? -1 : 1;
	else if (ret <= 0) {
		/* Lost or garbled log: continue after what the index has. */
		index->rebuilt = true;
		uint32_t seq = map->hdr.log_file_seq;
		ret = create_log(index, seq + 1, seq, 0, map->hdr.uidvalidity,
				 map->hdr.highest_modseq, false, file_r,
				 error_r) < 0 ? -1 : 1;
	}
	if (took_lock)
		mail_index_unlock(index);
	return ret;
}

/* Where in log to start replaying onto map. May replace the map.
   Returns 0, 1 if the files changed while we looked (retry), -1. */
static int position_cursor(struct mail_index *index, struct mail_index_map **mapp,
			   bool scratch, struct mail_transaction_log_file *log,
			   struct mail_index_log_cursor *cursor, const char **error_r)
{
	struct mail_index_map *map = *mapp;
	uint32_t S = map->hdr.log_file_seq, L = log->hdr.file_seq;
	bool reset = (log->hdr.flags & MAIL_TRANSACTION_LOG_FLAG_RESET) != 0;
	struct stat st;

	cursor->file = log;
	cursor->offset = log->hdr.header_size;
	if (!scratch && L == S) {
		if (fstat(log->fd, &st) < 0 || map->hdr.log_file_offset < log->hdr.header_size ||
		    (off_t)map->hdr.log_file_offset > st.st_size) {
			mail_index_corrupted(index, "index points outside the log");
			index->rebuilt = true;
			/* after the log's last record (not its size: zeros
			   are written ahead of the end), skipping them all */
			const char *err;
			bool garbled;
			while (mail_transaction_log_read(log, &cursor->offset,
							 &index->rec_buf,
							 &garbled, &err) > 0) ;
		} else {
			cursor->offset = map->hdr.log_file_offset;
		}
		return 0;
	}
	if (!scratch && L == S + 1 && log->hdr.prev_file_seq == S && !reset) {
		struct mail_transaction_log_file *old;
		const char *err;
		if (mail_transaction_log_file_open(index->log2_path, true, &old, &err) > 0) {
			if (old->hdr.file_seq == S) {
				/* catch-up moves on to .log by itself */
				cursor->file = old;
				cursor->offset = map->hdr.log_file_offset;
				mail_transaction_log_file_unref(&log);
				return 0;
			}
			mail_transaction_log_file_unref(&old);
		}
	}
	if (!scratch && L < S && (index->flags & MAIL_INDEX_OPEN_READONLY) == 0) {
		/* Crash in the middle of a rotation or of a first build
		   (mail_index_transaction_commit_first): the index is newer.
		   The new log is a RESET one: a reader of log L that
		   outlived the crash cannot tell whether moat.index holds
		   only L (a rotation) or records no log has (a first
		   build), so it reloads rather than continue. */
		struct mail_transaction_log_file *file;
		bool took_lock = !index->locked;
		if (took_lock && mail_index_lock(index, true, error_r) < 0)
			return -1;
		/* Or a rotation finished while we were reading: retry. */
		if (stat(index->log_path, &st) < 0 || !same_file(log, &st)) {
			if (took_lock)
				mail_index_unlock(index);
			return 1;
		}
		int ret = create_log(index, S, L,
				     MAIL_TRANSACTION_LOG_FLAG_RESET,
				     map->hdr.uidvalidity,
				     map->hdr.highest_modseq, false,
				     &file, error_r);
		if (took_lock)
			mail_index_unlock(index);
		if (ret < 0)
			return -1;
		cursor_switch(cursor, file);   /* drops log */
		return 0;
	}
	if (reset || scratch || L != S + 1) {
		/* A reset log (or the first one) holds the whole state. */
		if (!reset && L != 1)
			index->rebuilt = true;
		if (!scratch && !reset)
			mail_index_corrupted(index, "index log seq %u, log seq %u", S, L);
		if (reset || scratch) {
			mail_index_map_free(mapp);
			*mapp = mail_index_map_new_empty(false);
			(*mapp)->hdr.uidvalidity = log->hdr.uidvalidity;
		}
	} else {
		mail_index_corrupted(index, "%s lost", index->log2_path);
		index->rebuilt = true;
	}
	if (log->hdr.initial_modseq > (*mapp)->hdr.highest_modseq)
		(*mapp)->hdr.highest_modseq = log->hdr.initial_modseq;
	return 0;
}

static int load_once(struct mail_index *index, struct mail_index_map **map_r,
		     struct mail_index_log_cursor *cursor_r, const char **error_r)
{
	struct mail_index_map *map = NULL;
	struct mail_transaction_log_file *log;
	const char *why;
	int ret;

	struct stat st0, st1;
	bool had_index = stat(index->index_path, &st0) == 0;
	ret = mail_index_map_read(index->index_path, &map, &why);
	if (ret < 0) {
		mail_index_corrupted(index, "%s: %s", index->index_path, why);
		index->rebuilt = true;
	}
	bool scratch = ret <= 0;
	if (scratch)
		map = mail_index_map_new_empty(false);
	else {
		index->index_file_seq = map->hdr.log_file_seq;
		index->index_file_offset = map->hdr.log_file_offset;
	}
	ret = open_log(index, map, scratch, &log, error_r);
	if (ret <= 0) {
		mail_index_map_free(&map);
		return ret;
	}
	/* A checkpoint or rotation between reading the index and opening
	   the log would pair an old index with a too new log: retry. */
	bool has_index = stat(index->index_path, &st1) == 0;
	bool index_changed = had_index != has_index || (had_index &&
		(st0.st_ino != st1.st_ino || st0.st_dev != st1.st_dev));
	ret = index_changed ? 1 :
		position_cursor(index, &map, scratch, log, cursor_r, error_r);
	if (ret != 0) {
		if (index_changed)
			mail_transaction_log_file_unref(&log);
		else
			mail_transaction_log_file_unref(&cursor_r->file);
		mail_index_map_free(&map);
		return ret < 0 ? -1 : 2;
	}
	/* what the log adds from here on is applied to the map */
	mail_index_history_load(index, map);
	ret = mail_index_log_catch_up(index, cursor_r, map, NULL, error_r);
	if (ret <= 0) {
		mail_transaction_log_file_unref(&cursor_r->file);
		mail_index_map_free(&map);
		return ret < 0 ? -1 : 2;
	}
	*map_r = map;
	return 1;
}

int mail_index_load_fresh(struct mail_index *index, struct mail_index_map **map_r,
			  struct mail_index_log_cursor *cursor_r,
			  const char **error_r)
{
	for (unsigned int i = 0; i < INDEX_LOAD_RETRIES; i++) {
		int ret = load_once(index, map_r, cursor_r, error_r);
		if (ret != 2)
			return ret;
	}
	*error_r = mail_index_set_error(index, "%s keeps changing", index->log_path);
	return -1;
}

int mail_index_tail_refresh(struct mail_index *index, const char **error_r)
{
	i_assert(index->locked);
	if (index->tail == NULL) {
		index->tail = mail_index_map_header_copy(index->map);
		index->tail_cursor = index->cursor;
		mail_transaction_log_file_ref(index->tail_cursor.file);
	}
	int ret = mail_index_log_catch_up(index, &index->tail_cursor,
					  index->tail, NULL, error_r);
	if (ret != 0)
		return ret < 0 ? -1 : 0;
	/* Reset by someone else: start the tail from the files. */
	struct mail_index_map *map;
	mail_index_map_free(&index->tail);
	mail_transaction_log_file_unref(&index->tail_cursor.file);
	if (mail_index_load_fresh(index, &map, &index->tail_cursor, error_r) <= 0)
		return -1;
	index->tail = mail_index_map_header_copy(map);
	mail_index_map_free(&map);
	return 0;
}

/* ---- open / close ---- */

static struct mail_index *index_alloc(const char *dir,
				      enum mail_index_open_flags flags)
{
	struct mail_index *index = i_malloc(sizeof(*index));

	index->dir = i_strdup(dir);
	index->flags = flags;
	index->index_path = i_strdup_printf("%s/%s", dir, MAIL_INDEX_FILE_NAME);
	index->log_path = i_strdup_printf("%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	index->log2_path = i_strdup_printf("%s/%s", dir, MAIL_INDEX_LOG2_FILE_NAME);
	index->cache_path = i_strdup_printf("%s/%s", dir, MAIL_INDEX_CACHE_FILE_NAME);
	index->lock_path = i_strdup_printf("%s/%s", dir, MAIL_INDEX_LOCK_FILE_NAME);
	index->history_path[MAIL_INDEX_HISTORY_EXPUNGES] =
		i_strdup_printf("%s/%s", dir, MAIL_INDEX_MODSEQ_FILE_NAME);
	index->history_path[MAIL_INDEX_HISTORY_CHANGES] =
		i_strdup_printf("%s/%s", dir, MAIL_INDEX_CHANGES_FILE_NAME);
	index->lock_fd = -1;
	index->log_rotate_size = MAIL_TRANSACTION_LOG_ROTATE_SIZE;
	index->checkpoint_bytes = MAIL_INDEX_CHECKPOINT_LOG_BYTES;
	buffer_init(&index->rec_buf, INDEX_REC_BUF_MAX);
	return index;
}

int mail_index_open(const char *dir, enum mail_index_open_flags flags,
		    struct mail_index **index_r, const char **error_r)
{
	struct mail_index *index = index_alloc(dir, flags);
	int ret;

	if ((flags & MAIL_INDEX_OPEN_READONLY) == 0) {
		index->lock_fd = open(index->lock_path,
				      O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (index->lock_fd < 0) {
			snprintf(open_error, sizeof(open_error), "open(%s): %s",
				 index->lock_path, strerror(errno));
			*error_r = open_error;
			mail_index_close(&index);
			return -1;
		}
	}
	ret = mail_index_load_fresh(index, &index->map, &index->cursor, error_r);
	if (ret <= 0) {
		if (ret < 0) {
			snprintf(open_error, sizeof(open_error), "%s", *error_r);
			*error_r = open_error;
		}
		mail_index_close(&index);
		return ret;
	}
	*index_r = index;
	return 1;
}

void mail_index_close(struct mail_index **_index)
{
	struct mail_index *index = *_index;

	if (index == NULL)
		return;
	*_index = NULL;
	i_assert(index->view == NULL);
	if (index->locked)
		mail_index_unlock(index);
	mail_cache_free(&index->cache);
	mail_index_map_free(&index->map);
	mail_index_map_free(&index->tail);
	mail_transaction_log_file_unref(&index->cursor.file);
	mail_transaction_log_file_unref(&index->tail_cursor.file);
	i_close_fd(&index->lock_fd);
	buffer_free(&index->rec_buf);
	i_free(index->dir);
	i_free(index->index_path);
	i_free(index->log_path);
	i_free(index->log2_path);
	i_free(index->cache_path);
	i_free(index->lock_path);
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++)
		i_free(index->history_path[i]);
	i_free(index);
}

bool mail_index_was_rebuilt(struct mail_index *index)
{
	return index->rebuilt;
}

/* ---- checkpoints, rotation, reset ---- */

int mail_index_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	int ret = fsync(fd);
	i_close_fd(&fd);
	return ret;
}

static bool cursor_at_end(struct mail_index *index,
			  const struct mail_index_log_cursor *cursor)
{
	struct stat st2;

	return mail_transaction_log_at_end(cursor->file, cursor->offset) &&
		stat(index->log_path, &st2) == 0 && same_file(cursor->file, &st2);
}

bool mail_index_view_at_log_end(struct mail_index_view *view)
{
	struct mail_index *index = view->index;

	return index->cursor.file != NULL &&
		cursor_at_end(index, &index->cursor);
}

/* Replace the private mapping by one of the file just written, so the
   pages our changes dirtied are given back. */
static void remap_written(struct mail_index *index)
{
	struct mail_index_map *map;
	const char *why;

	if (mail_index_map_read(index->index_path, &map, &why) <= 0)
		return;
	if (map->hdr.messages_count == index->map->hdr.messages_count &&
	    map->hdr.log_file_seq == index->map->hdr.log_file_seq &&
	    map->hdr.log_file_offset == index->map->hdr.log_file_offset) {
		/* the history file just written holds the old map's list */
		mail_index_history_load(index, map);
		mail_index_map_free(&index->map);
		index->map = map;
	} else {
		mail_index_map_free(&map);
	}
}

/* Lock held, map at the end of the log: write moat.index, and rotate the
   log when it is big. */
static int write_checkpoint(struct mail_index *index, const char **error_r)
{
	struct mail_index_map *map = index->map;
	struct mail_transaction_log_file *file;
	uint32_t seq = index->cursor.file->hdr.file_seq;
	uint32_t log_size = index->cursor.offset;
	/* Everything in the log is in moat.index after this: rotate when
	   it is big, or big next to the index (e.g. a first build). */
	bool rotate = log_size >= index->log_rotate_size ||
		(log_size >= index->checkpoint_bytes &&
		 log_size >= map_file_size(map) / MAIL_INDEX_ROTATE_INDEX_DIV);
	const char *why;

	i_assert(index->locked);
	/* The history first: it must reach as far as moat.index does, or a
	   map loaded from the new index would miss expunges. If it cannot
	   be written, later maps start their history from the new index. */
	if (mail_index_history_write(index, map, &why) < 0)
		i_warning("index %s: modseq history: %s", index->dir, why);
	if (rotate) {
		/* The index first: a crash before the new log exists is
		   recovered by creating it (position_cursor). */
		map->hdr.log_file_seq = seq + 1;
		map->hdr.log_file_offset = sizeof(struct mail_transaction_log_header);
	}
	if (mail_index_map_write(map, index->index_path, true, &why) < 0) {
		*error_r = mail_index_set_error(index, "%s: %s", index->index_path, why);
		map->hdr.log_file_seq = seq;
		map->hdr.log_file_offset = index->cursor.offset;
		return -1;
	}
	if (rotate) {
		if (create_log(index, seq + 1, seq, 0, map->hdr.uidvalidity,
			       map->hdr.highest_modseq,
			       log2_worth_keeping(log_size, map), &file,
			       error_r) < 0)
			return -1;
		(void)mail_index_fsync_dir(index->dir);
		cursor_switch(&index->cursor, file);
	}
	index->index_file_seq = map->hdr.log_file_seq;
	index->index_file_offset = map->hdr.log_file_offset;
	remap_written(index);
	return 0;
}

bool mail_index_need_checkpoint(struct mail_index *index)
{
	if (index->flags & MAIL_INDEX_OPEN_READONLY)
		return false;
	/* Never written and never had a message: the first log is the
	   whole state, and the first build writes moat.index itself
	   (mail_index_transaction_commit_first), so an empty one is not
	   worth its syncs. */
	if (index->index_file_seq == 0 && index->cursor.file->hdr.file_seq == 1 &&
	    index->map->hdr.next_uid <= 1 &&
	    index->cursor.offset < index->checkpoint_bytes)
		return false;
	return index->cursor.file->hdr.file_seq != index->index_file_seq ||
		index->cursor.offset - index->index_file_offset >=
		index->checkpoint_bytes;
}

void mail_index_set_limits(struct mail_index *index, uint32_t rotate_bytes,
			   uint32_t checkpoint_bytes)
{
	index->log_rotate_size = rotate_bytes != 0 ? rotate_bytes :
		MAIL_TRANSACTION_LOG_ROTATE_SIZE;
	index->checkpoint_bytes = checkpoint_bytes != 0 ? checkpoint_bytes :
		MAIL_INDEX_CHECKPOINT_LOG_BYTES;
}

int mail_index_checkpoint_locked(struct mail_index *index,
				 const struct mail_index_sync_target *target,
				 bool force, const char **error_r)
{
	int ret = mail_index_log_catch_up(index, &index->cursor, index->map,
					  target, error_r);
	if (ret <= 0)
		return ret;
	if (mail_cache_want_compress(index)) {
		/* after a big fill, while the view is at the end anyway */
		const char *cache_error;
		if (mail_cache_compress_locked(index, &cache_error) < 0)
			i_warning("index %s: cache compression: %s", index->dir,
				  cache_error);
		ret = mail_index_log_catch_up(index, &index->cursor, index->map,
					      target, error_r);
		if (ret <= 0)
			return ret;
	}
	if (!force && !mail_index_need_checkpoint(index))
		return 1;
	return write_checkpoint(index, error_r) < 0 ? -1 : 1;
}

int mail_index_checkpoint(struct mail_index *index, const char **error_r)
{
	int ret = 0;

	if (mail_index_lock(index, true, error_r) < 0)
		return -1;
	/* A view's numbering must not move here: with a view, only write
	   when it already holds everything. */
	if (index->view == NULL) {
		ret = mail_index_checkpoint_locked(index, NULL, true, error_r);
		if (ret == 0)
			*error_r = mail_index_set_error(index, "log replaced: reopen");
		ret = ret > 0 ? 0 : -1;
	} else if (cursor_at_end(index, &index->cursor)) {
		ret = write_checkpoint(index, error_r);
	}
	mail_index_unlock(index);
	return ret;
}

int mail_index_reset(struct mail_index *index, uint32_t uidvalidity,
		     uint32_t next_uid, const char **error_r)
{
	struct mail_transaction_header_update hu = { uidvalidity, next_uid };
	struct mail_transaction_log_file *file;
	const char *why;
	int ret = -1;

	i_assert(uidvalidity != 0);
	if (mail_index_lock(index, true, error_r) < 0)
		return -1;
	if (mail_index_tail_refresh(index, error_r) < 0)
		goto out;
	uint32_t old_seq = index->tail_cursor.file->hdr.file_seq;
	uint32_t seq = MAX(old_seq, index->cursor.file->hdr.file_seq) + 1;
	struct mail_index_map *map = mail_index_map_new_empty(false);
	map->hdr.uidvalidity = uidvalidity;
	map->hdr.next_uid = MAX(next_uid, 1);
	/* the same uids come back: who saw them \Recent still did */
	if (uidvalidity == index->tail->hdr.uidvalidity)
		map->hdr.first_recent_uid = index->tail->hdr.first_recent_uid;
	/* A new modseq: what the reset drops is not in the expunge
	   history, so the history restarts above every older modseq. */
	map->hdr.highest_modseq = index->tail->hdr.highest_modseq + 1;
	map->hdr.cache_file_seq = index->tail->hdr.cache_file_seq + 1;
	map->hdr.log_file_seq = seq;
	map->hdr.log_file_offset = sizeof(struct mail_transaction_log_header);
	if (mail_index_history_reset(index, uidvalidity,
				     map->hdr.highest_modseq, error_r) < 0) {
		mail_index_map_free(&map);
		goto out;
	}
	if (mail_index_map_write(map, index->index_path, true, &why) < 0) {
		*error_r = mail_index_set_error(index, "%s: %s", index->index_path, why);
		mail_index_map_free(&map);
		goto out;
	}
	/* Nobody continues into a RESET log: the old one is of no use. */
	if (create_log(index, seq, old_seq, MAIL_TRANSACTION_LOG_FLAG_RESET,
		       uidvalidity, map->hdr.highest_modseq, false, &file,
		       error_r) < 0) {
		mail_index_map_free(&map);
		goto out;
	}
	buffer_reset(&index->rec_buf);
	mail_transaction_rec_begin(&index->rec_buf);
	mail_transaction_rec_add_op(&index->rec_buf, MAIL_TRANSACTION_HEADER,
				    &hu, sizeof(hu));
	mail_transaction_rec_add_op(&index->rec_buf, MAIL_TRANSACTION_CACHE_RESET,
				    &map->hdr.cache_file_seq, sizeof(uint32_t));
	mail_transaction_rec_finish(&index->rec_buf, map->hdr.highest_modseq);
	ret = mail_transaction_log_append(file, file->hdr.header_size,
					  &index->rec_buf, error_r);
	if (ret == 0 && (fdatasync(file->fd) < 0 ||
			 mail_index_fsync_dir(index->dir) < 0))
		i_warning("index %s: fsync after reset failed: %m", index->dir);
	mail_transaction_log_file_unref(&file);
	mail_index_map_free(&map);
	index->rebuilt = false;
	/* The tail follows the new log at the next refresh (reload). */
	if (ret == 0)
		ret = mail_index_tail_refresh(index, error_r);
out:
	mail_index_unlock(index);
	return ret;
}

/* ---- keywords ---- */

int mail_index_keyword_define(struct mail_index *index, const char *name,
			      unsigned int *idx_r, const char **error_r)
{
	size_t len = strlen(name);
	int ret = -1;

	if (len == 0 || len > MAIL_INDEX_KEYWORD_MAX_LEN) {
		*error_r = mail_index_set_error(index, "invalid keyword length");
		return -1;
	}
	if (mail_index_lock(index, true, error_r) < 0)
		return -1;
	if (mail_index_tail_refresh(index, error_r) < 0)
		goto out;
	int idx = mail_index_map_keyword_find(index->tail, name);
	if (idx >= 0) {
		*idx_r = (unsigned int)idx;
		ret = 0;
		goto out;
	}
	uint32_t n = index->tail->hdr.keywords_count;
	if (n >= MAIL_INDEX_MAX_KEYWORDS) {
		*error_r = mail_index_set_error(index, "too many keywords");
		goto out;
	}
	char payload[sizeof(uint32_t) + MAIL_INDEX_KEYWORD_MAX_LEN + 1];
	memcpy(payload, &n, sizeof(n));
	memcpy(payload + sizeof(n), name, len + 1);
	buffer_reset(&index->rec_buf);
	mail_transaction_rec_begin(&index->rec_buf);
	mail_transaction_rec_add_op(&index->rec_buf, MAIL_TRANSACTION_KEYWORD,
				    payload, sizeof(n) + len + 1);
	mail_transaction_rec_finish(&index->rec_buf, index->tail->hdr.highest_modseq);
	if (mail_transaction_log_append(index->tail_cursor.file,
			index->tail_cursor.offset, &index->rec_buf, error_r) < 0)
		goto out;
	ret = mail_index_tail_refresh(index, error_r);
	if (ret == 0)
		*idx_r = n;
out:
	mail_index_unlock(index);
	return ret;
}
