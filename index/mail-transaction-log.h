#ifndef MAIL_TRANSACTION_LOG_H
#define MAIL_TRANSACTION_LOG_H
/* moat.index.log: an append-only file of checksummed records, one record
   per committed transaction (so a transaction is all or nothing). Byte
   layout: doc/index-format.md. This module knows the file format only:
   open/create, read one record, append one record, cut a torn tail.
   What the operations mean is applied in mail-index-map.c. */

#include "buffer.h"

#include <stdint.h>
#include <sys/types.h>

#define MAIL_TRANSACTION_LOG_MAGIC 0x474c4f4dU     /* "MOLG" little-endian */
#define MAIL_TRANSACTION_LOG_MAJOR 1
#define MAIL_TRANSACTION_LOG_MINOR 0
/* A transaction bigger than this is refused: the largest legitimate one
   is a cache compression of 1M messages (8 bytes each). */
#define MAIL_TRANSACTION_MAX_SIZE (64U * 1024 * 1024)
/* Log files are rotated past this size (mail-index.c). */
#define MAIL_TRANSACTION_LOG_ROTATE_SIZE (1024U * 1024)

/* The log does not continue the previous file: readers reload. */
#define MAIL_TRANSACTION_LOG_FLAG_RESET 0x01

struct mail_transaction_log_header {
	uint32_t magic;
	uint8_t major_version;
	uint8_t minor_version;
	uint16_t header_size;
	uint32_t file_seq;
	uint32_t prev_file_seq;
	uint32_t flags;
	uint32_t uidvalidity;      /* of the index when the file was created */
	uint64_t initial_modseq;   /* highest modseq before the first record */
	uint32_t unused;
	uint32_t crc;              /* crc32 of the bytes above */
};

/* Every record: header, then ops, size includes the header. */
struct mail_transaction_rec_header {
	uint32_t size;             /* multiple of 4, >= sizeof(this) */
	uint32_t crc;              /* crc32 of the record with crc = 0 */
	uint64_t modseq;
};

enum mail_transaction_op_type {
	MAIL_TRANSACTION_APPEND = 1,      /* struct mail_transaction_append[] */
	MAIL_TRANSACTION_FLAGS = 2,       /* struct mail_transaction_flags[] */
	MAIL_TRANSACTION_EXPUNGE = 3,     /* struct mail_transaction_range[] */
	MAIL_TRANSACTION_KEYWORD = 4,     /* u32 idx, then the name */
	MAIL_TRANSACTION_HEADER = 5,      /* struct mail_transaction_header_update */
	MAIL_TRANSACTION_CACHE_RESET = 6, /* u32 new cache file seq */
	MAIL_TRANSACTION_CACHE_OFFSET = 7,/* struct mail_transaction_cache_offset[] */
	MAIL_TRANSACTION_FIRST_RECENT = 8,/* u32 first_recent_uid, raised to it */
	MAIL_TRANSACTION_MODSEQ_FLOOR = 9,/* u64: the modseq was raised to it */
};

struct mail_transaction_op_header {
	uint16_t type;
	uint16_t unused;
	uint32_t size;             /* payload bytes, multiple of 4 */
};

struct mail_transaction_append {
	uint32_t uid;
	uint8_t flags;
	uint8_t unused[3];
	uint32_t keywords;
	uint32_t unused2;
	uint64_t size;
	int64_t internal_date;
};

struct mail_transaction_flags {
	uint32_t uid1, uid2;
	uint8_t add_flags, remove_flags;
	uint8_t unused[2];
	uint32_t add_keywords, remove_keywords;
};

struct mail_transaction_range {
	uint32_t uid1, uid2;
};

struct mail_transaction_header_update {
	uint32_t uidvalidity;      /* 0 = unchanged */
	uint32_t next_uid;         /* raised to this, never lowered */
};

struct mail_transaction_cache_offset {
	uint32_t uid;
	uint32_t offset;
};

struct mail_transaction_log_file {
	char *path;
	int fd;
	int refcount;              /* shared by the view and the writer tail */
	struct mail_transaction_log_header hdr;
	dev_t dev;
	ino_t ino;
	/* the file's size as last seen by this handle's appends: zeros
	   written ahead of the records up to here (0 = not known) */
	uint64_t alloc_end;
};

/* Open path read-write (or read-only). Returns 1, 0 if it does not exist,
   -1 on error or a bad header (*error_r is a static-lifetime string of
   this thread). */
int mail_transaction_log_file_open(const char *path, bool readonly,
				   struct mail_transaction_log_file **file_r,
				   const char **error_r);
/* Create path (via a temporary file + rename when replace is true, else
   O_EXCL), fdatasynced before the rename if do_fsync (a caller that
   syncs the directory afterwards and has nothing in the log yet may
   skip it: the first commit's fdatasync covers the header). Returns 0
   or -1. */
int mail_transaction_log_file_create(const char *path,
				     const struct mail_transaction_log_header *hdr,
				     bool replace, bool do_fsync,
				     struct mail_transaction_log_file **file_r,
				     const char **error_r);
/* Drop one reference; the last one closes the file. */
void mail_transaction_log_file_unref(struct mail_transaction_log_file **file);
void mail_transaction_log_file_ref(struct mail_transaction_log_file *file);
/* Fill the magic, versions, size and crc of hdr. */
void mail_transaction_log_header_init(struct mail_transaction_log_header *hdr,
				      uint32_t file_seq, uint32_t prev_file_seq,
				      uint32_t flags, uint32_t uidvalidity,
				      uint64_t initial_modseq);
/* Validate a header read from disk. */
bool mail_transaction_log_header_is_valid(const struct mail_transaction_log_header *hdr,
					  const char **error_r);

/* Read the record at *offset into rec (replacing its contents). Returns 1
   and advances *offset; 0 at the end of the records (the end of the file,
   or a header whose size is 0: the zeros appends write ahead) or at a
   torn/garbled
   record (*garbled_r = true for the latter, i.e. bytes that are not a
   valid record); -1 on I/O error. */
int mail_transaction_log_read(struct mail_transaction_log_file *file,
			      uint32_t *offset, buffer_t *rec, bool *garbled_r,
			      const char **error_r);
/* Whether no record starts at offset: the end of the file, or the
   zeros appends write ahead of the last record. */
bool mail_transaction_log_at_end(struct mail_transaction_log_file *file,
				 uint32_t offset);
/* Validate a record held in memory (size, alignment, crc, op framing). */
bool mail_transaction_rec_is_valid(const void *data, size_t size);

/* Iterate the ops of a valid record. */
struct mail_transaction_op_iter {
	const unsigned char *p, *end;
};
void mail_transaction_op_iter_init(struct mail_transaction_op_iter *iter,
				   const void *rec, size_t size);
/* Returns true and the op; false at the end. */
bool mail_transaction_op_next(struct mail_transaction_op_iter *iter,
			      const struct mail_transaction_op_header **op_r,
			      const void **payload_r);

/* Builder: rec must start empty. */
void mail_transaction_rec_begin(buffer_t *rec);
void mail_transaction_rec_add_op(buffer_t *rec, enum mail_transaction_op_type type,
				 const void *payload, size_t size);
/* Fill size, modseq and crc. */
void mail_transaction_rec_finish(buffer_t *rec, uint64_t modseq);

/* Append rec at offset (the caller holds the lock and knows the end).
   On a short write the tail is cut back to offset. Returns 0 or -1. */
int mail_transaction_log_append(struct mail_transaction_log_file *file,
				uint32_t offset, const buffer_t *rec,
				const char **error_r);
/* Cut the file to size (a torn tail, lock held). Returns 0 or -1. */
int mail_transaction_log_truncate(struct mail_transaction_log_file *file,
				  uint32_t size, const char **error_r);

#endif
