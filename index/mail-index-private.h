#ifndef MAIL_INDEX_PRIVATE_H
#define MAIL_INDEX_PRIVATE_H
/* Bodies of the index structs, shared by mail-index*.c and mail-cache.c
   only. */

#include "buffer.h"
#include "mail-index.h"
#include "mail-transaction-log.h"

#define MAIL_INDEX_MAGIC 0x58494f4dU          /* "MOIX" little-endian */
#define MAIL_INDEX_MAJOR 1
#define MAIL_INDEX_MINOR 0
/* compat byte: which byte order and layout wrote the file. */
#define MAIL_INDEX_COMPAT_LE64 0x01
/* 16M messages: far above any real folder; bounds a garbled count. */
#define MAIL_INDEX_MAX_MESSAGES (16U * 1024 * 1024)
/* Rewrite moat.index when this much log lies beyond it, so that an open
   replays at most this much. */
#define MAIL_INDEX_CHECKPOINT_LOG_BYTES (64U * 1024)
/* A checkpoint also rotates a log of at least 1/DIV of moat.index's size
   (once it is past the checkpoint size): all of it is in moat.index. */
#define MAIL_INDEX_ROTATE_INDEX_DIV 4
/* The rotated-out log stays as .log.2 only if at most 1/DIV of
   moat.index's size. */
#define MAIL_INDEX_LOG2_MAX_INDEX_DIV 2
#define MAIL_INDEX_ERROR_MAX 512

struct mail_index_header {
	uint32_t magic;
	uint8_t major_version;
	uint8_t minor_version;
	uint16_t compat_flags;
	uint32_t header_size;      /* incl. keyword names, multiple of 8 */
	uint32_t record_size;

	uint32_t uidvalidity;
	uint32_t next_uid;
	uint32_t messages_count;
	uint32_t seen_count;
	uint32_t deleted_count;
	uint32_t first_unseen_uid;
	uint64_t highest_modseq;

	uint32_t log_file_seq;     /* the log position this file reflects */
	uint32_t log_file_offset;
	uint32_t cache_file_seq;
	uint32_t keywords_count;
	/* \Recent belongs to uids >= this: the first SELECT that sees them
	   raises it (0 in files of older versions: all recent) */
	uint32_t first_recent_uid;
	uint32_t crc;              /* crc32 of header_size bytes, crc = 0 */
};

/* One run of consecutive uids that one transaction (modseq) expunged,
   or changed or appended, as kept in the history files and in a map's
   lists of the runs it applied (mail-index-modseq.c). */
struct mail_index_modseq_run {
	uint64_t modseq;
	uint32_t uid1, uid2;
};

/* The two histories: expunges (exact: uids that were messages, for
   VANISHED) and changes (flags, keywords, appends: where to look for
   modseqs above a value, for CHANGEDSINCE and QRESYNC). */
enum mail_index_history_kind {
	MAIL_INDEX_HISTORY_EXPUNGES = 0,
	MAIL_INDEX_HISTORY_CHANGES,
	MAIL_INDEX_HISTORY_KINDS
};

/* A history file as a map loaded it: the runs up to the state it was
   written with (read with pread, never changed). */
struct mail_index_history {
	int fd;
	uint32_t count;            /* entries after the header */
	uint64_t base_modseq;      /* complete for runs above this ... */
	uint64_t highest_modseq;   /* ... up to this */
};

/* The runs a map applied since it was loaded, ascending modseq: every
   one with modseq in (from, the map's highest]. */
struct mail_index_history_list {
	struct mail_index_modseq_run *runs;
	uint32_t count, alloc;
	uint64_t from;
};

/* The records of a view plus its header. recs lives in mem: a private
   mapping of moat.index (pages are shared with the page cache until
   written) followed by anonymous pages for appends. */
struct mail_index_map {
	struct mail_index_header hdr;
	char *keywords[MAIL_INDEX_MAX_KEYWORDS];
	struct mail_index_record *recs;
	uint32_t rec_capacity;
	void *mem;
	size_t mem_size;
	/* Only the header matters (the writer's view of the log tail). */
	bool header_only;
	/* Per history kind: the file as it was when the map was loaded
	   (fd -1: none) and the runs applied since. Together they know
	   every run above the file's base, if the file reaches the list's
	   start, else above the list's start. Header-only maps keep none. */
	struct mail_index_history hist[MAIL_INDEX_HISTORY_KINDS];
	struct mail_index_history_list list[MAIL_INDEX_HISTORY_KINDS];
	/* the modseq of the log record being applied (sync callbacks) */
	uint64_t apply_modseq;
};

/* A position in the log. */
struct mail_index_log_cursor {
	struct mail_transaction_log_file *file;
	uint32_t offset;
};

struct mail_cache;

struct mail_index {
	char *dir, *index_path, *log_path, *log2_path, *cache_path, *lock_path;
	/* moat.index.modseq (expunges), moat.index.changes */
	char *history_path[MAIL_INDEX_HISTORY_KINDS];
	enum mail_index_open_flags flags;
	int lock_fd;
	bool locked;

	/* What the view sees. */
	struct mail_index_map *map;
	struct mail_index_log_cursor cursor;
	/* The log position of moat.index as we last read/wrote it. */
	uint32_t index_file_seq, index_file_offset;

	/* The log tail as last seen by a writer (next uid, modseq, names). */
	struct mail_index_map *tail;
	struct mail_index_log_cursor tail_cursor;

	struct mail_index_view *view;
	struct mail_cache *cache;
	buffer_t rec_buf;          /* log record scratch */
	uint32_t log_rotate_size;  /* MAIL_TRANSACTION_LOG_ROTATE_SIZE */
	uint32_t checkpoint_bytes; /* MAIL_INDEX_CHECKPOINT_LOG_BYTES */
	bool rebuilt;              /* opened without a usable index */
	bool corruption_logged;
	char error[MAIL_INDEX_ERROR_MAX];
};

struct mail_index_view {
	struct mail_index *index;
};

struct mail_index_transaction {
	struct mail_index *index;
	buffer_t rec;              /* the log record being built */
	buffer_t cache;            /* pending mail_cache_add()s */
	bool changes;              /* anything that gets a new modseq */
	uint64_t modseq_floor;     /* the commit's modseq is at least this */
	/* The last APPEND op (header offset) and where it ended: a
	   following append extends it. */
	size_t append_op_pos, append_op_end;
};

/* The view's sync reporting target, NULL for the tail. */
struct mail_index_sync_target {
	const struct mail_index_sync_callbacks *cb;
	void *context;
};

/* mail-index.c */
const char *mail_index_set_error(struct mail_index *index, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* Logs a corruption once per handle. */
void mail_index_corrupted(struct mail_index *index, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
int mail_index_lock(struct mail_index *index, bool wait, const char **error_r);
void mail_index_unlock(struct mail_index *index);
/* Catch cursor/map up with the end of the log. Returns 1 when at the end,
   0 if the log no longer continues from the cursor (the caller reloads),
   -1 on error. With the lock held, a garbled tail is cut off. */
int mail_index_log_catch_up(struct mail_index *index,
			    struct mail_index_log_cursor *cursor,
			    struct mail_index_map *map,
			    const struct mail_index_sync_target *target,
			    const char **error_r);
/* Read moat.index + the log into a fresh map and cursor. Returns 0 or -1. */
int mail_index_load_fresh(struct mail_index *index, struct mail_index_map **map_r,
			  struct mail_index_log_cursor *cursor_r,
			  const char **error_r);
/* Refresh the writer tail (lock held). Returns 0 or -1. */
int mail_index_tail_refresh(struct mail_index *index, const char **error_r);

/* Lock held: replace moat.index.log by a new empty log (tmp + rename;
   fdatasynced first if do_fsync). keep_log2: the old log becomes .log.2
   for readers a whole log file behind; else .log.2 goes (such readers
   reload, doc/index-format.md "Rotation"). Returns 0 or -1. */
int mail_index_create_log(struct mail_index *index, uint32_t seq,
			  uint32_t prev_seq, uint32_t flags, uint32_t uidvalidity,
			  uint64_t modseq, bool keep_log2, bool do_fsync,
			  struct mail_transaction_log_file **file_r,
			  const char **error_r);
/* fsync() a directory (its renames are durable after it). 0 or -1. */
int mail_index_fsync_dir(const char *dir);
/* Tests only: hook(step) runs after each step of a first build
   (mail_index_transaction_commit_first: 1 before moat.index is written,
   2 after its rename, 3 after the new log's rename, 4 after the
   directory's fsync), so a test can stop there to simulate a crash.
   NULL = none. */
typedef void mail_index_build_hook_t(unsigned int step);
void mail_index_build_set_hook(mail_index_build_hook_t *hook);

/* Whether enough log lies beyond moat.index to rewrite it. */
bool mail_index_need_checkpoint(struct mail_index *index);
/* Lock held: catch the view up (reporting to target), compress the cache
   if mail_cache_want_compress(), and write moat.index (if force or
   mail_index_need_checkpoint()). Returns 1, 0 if the view must reload,
   -1 on error. */
int mail_index_checkpoint_locked(struct mail_index *index,
				 const struct mail_index_sync_target *target,
				 bool force, const char **error_r);

/* mail-index-map.c */
struct mail_index_map *mail_index_map_new_empty(bool header_only);
void mail_index_map_free(struct mail_index_map **map);
struct mail_index_map *mail_index_map_header_copy(const struct mail_index_map *map);
/* Validate a header as read from a file of file_size bytes. */
bool mail_index_header_is_valid(const struct mail_index_header *hdr,
				size_t file_size, const char **error_r);
/* Map an index file. Returns 1, 0 if missing, -1 if corrupt/unreadable. */
int mail_index_map_read(const char *path, struct mail_index_map **map_r,
			const char **error_r);
/* Same from memory (fuzzing): copies the data. */
int mail_index_map_read_mem(const void *data, size_t size,
			    struct mail_index_map **map_r, const char **error_r);
/* Write map as path (tmp + fsync + rename). Returns 0 or -1. */
int mail_index_map_write(struct mail_index_map *map, const char *path,
			 bool do_fsync, const char **error_r);
/* Apply one valid log record. */
void mail_index_map_apply(struct mail_index_map *map, const void *rec, size_t size,
			  const struct mail_index_sync_target *target);
/* Binary search: the first seq (1-based) with uid >= uid, or count + 1. */
uint32_t mail_index_map_lower_bound(const struct mail_index_map *map, uint32_t uid);
bool mail_index_map_check(const struct mail_index_map *map, const char **error_r);
void mail_index_map_set_keyword(struct mail_index_map *map, unsigned int idx,
				const char *name, size_t len);
int mail_index_map_keyword_find(const struct mail_index_map *map, const char *name);

/* mail-index-modseq.c */
/* Remember that the transaction with modseq expunged (all of them were
   records) or changed uids uid1..uid2 (full maps only). */
/* The histories forget every run at or below modseq: what lay before it
   is unknown (a MODSEQ_FLOOR record). */
void mail_index_map_history_restart(struct mail_index_map *map,
				    uint64_t modseq);
void mail_index_map_add_run(struct mail_index_map *map,
			    enum mail_index_history_kind kind, uint64_t modseq,
			    uint32_t uid1, uint32_t uid2);
void mail_index_map_init_history(struct mail_index_map *map);
/* After loading map from moat.index (before replaying the log): open
   the history files that belong to it; the others start here. */
void mail_index_history_load(struct mail_index *index,
			     struct mail_index_map *map);
void mail_index_history_close(struct mail_index_map *map);
/* Lock held, map at the end of the log: write the history files with
   every run up to map's highest modseq (before moat.index is
   replaced). Returns 0 or -1. */
int mail_index_history_write(struct mail_index *index,
			     struct mail_index_map *map, const char **error_r);
/* mail_index_reset(): empty histories above base_modseq. */
int mail_index_history_reset(struct mail_index *index, uint32_t uidvalidity,
			     uint64_t base_modseq, const char **error_r);

/* mail-cache.c */
void mail_cache_free(struct mail_cache **cache);
/* Lock held, tail fresh: write t's cached fields to the cache file and
   add their offsets to t's log record. Returns 0 or -1. */
int mail_cache_transaction_flush(struct mail_index_transaction *t,
				 const char **error_r);
/* Called when the view's map changed its cache file seq. */
void mail_cache_invalidate(struct mail_cache *cache);
/* The view caught up with the log: forget the chain heads we wrote. */
void mail_cache_view_synced(struct mail_cache *cache);
/* Automatic compression: this handle wrote at least MIN records (and
   1/DIV of the messages) that chain to older records of their message,
   e.g. a FETCH filling ENVELOPEs of messages that have a savedate
   record: merging saves a record header each and the chain hops. */
#define MAIL_CACHE_COMPRESS_MIN_CHAINED 1024U
#define MAIL_CACHE_COMPRESS_CHAINED_DIV 4U
bool mail_cache_want_compress(struct mail_index *index);
/* Lock held; compress when the view is at the end of the log.
   Returns 1 if compressed, 0 if not, -1 on error. */
int mail_cache_compress_locked(struct mail_index *index, const char **error_r);

#endif
