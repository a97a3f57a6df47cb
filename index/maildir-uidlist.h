#ifndef MAILDIR_UIDLIST_H
#define MAILDIR_UIDLIST_H
/* moat.uidlist: the permanent UID of each message of one Maildir folder.

     V2 <uidvalidity> <uidnext>\n
     <uid> <basename>[ S=<size>][ W=<vsize>]\n      (ascending uid)

   Unknown "key=value" fields after the base name are ignored (room for
   later versions). Base names with whitespace or control characters are
   never stored (maildir-sync skips such files). UIDs are never reused.

   Writers hold the lock (an OFD fcntl lock on moat.uidlist.lock, so two
   opens in one process exclude each other too). New UIDs are appended as
   lines to the existing file (one pwrite, one fdatasync: O(new), whatever
   the folder's size); the header is written only when the file is
   replaced, so uidnext is the greater of the header's value and the last
   record's uid + 1. The file is replaced atomically (tmp file, fsync,
   rename, directory fsync) only when records go away (expunges), the
   header changes (UIDVALIDITY, a raised uidnext) or it is created.

   A crash during an append can leave a torn tail after the last complete
   line: an incomplete line, or zeros where a power loss extended the
   file without its data. Readers ignore it; the next appender cuts it
   (ftruncate under the lock) before writing. Any other invalid line is
   corruption: the list is reset with a new UIDVALIDITY. Readers need no
   lock: a concurrent append shows them the old records plus at most an
   incomplete line, which they ignore.

   V1 (written before append mode) has the same lines and is read the
   same way; rewrites write V2. An appender reads only the header and the
   last UIDLIST_TAIL_READ_SIZE bytes (maildir_uidlist_lock_append()).

   A folder that came from Dovecot (maildir-import.h) starts as a copy of
   its dovecot-uidlist; while that file has our UIDVALIDITY, every write
   also appends the new records to it in Dovecot's format.

   The uidlist owns its records; pointers returned stay valid until the
   next refresh, lock or write. */

#include "mempool.h"
#include "mail-flags.h"

#define MAILDIR_UIDLIST_NAME "moat.uidlist"
#define MAILDIR_UIDLIST_LOCK_NAME "moat.uidlist.lock"
/* A base name plus the number fields; longer lines are corruption. */
#define MAILDIR_UIDLIST_MAX_LINE 512
/* 16M messages at ~70 bytes: far above any real folder, stops a
   runaway file from exhausting memory. */
#define MAILDIR_UIDLIST_MAX_FILE_SIZE (1024ULL * 1024 * 1024)
/* Other writers hold the lock only for a rename and a rewrite. */
#define MAILDIR_UIDLIST_LOCK_TIMEOUT_MS 30000

struct maildir_uidlist_rec {
	uint32_t uid;
	bool expunged;           /* dropped at the next write */
	uint64_t size;           /* or MAILDIR_SIZE_UNKNOWN */
	uint64_t vsize;          /* or MAILDIR_SIZE_UNKNOWN */
	const char *base;        /* base name (NUL-terminated) */
	/* Current full file name in cur/ as last seen by a sync; NULL until
	   then. Not stored in the file. */
	const char *fname;
	/* The flags (MAIL_FLAGS_PERMANENT) and keyword bits of fname's
	   info part, set with it. */
	enum mail_flags fname_flags;
	uint32_t fname_keywords;
};

struct maildir_uidlist;

/* dir: the Maildir folder holding the file. fsync: whether writes are
   fsynced (mail_fsync != never). */
struct maildir_uidlist *maildir_uidlist_init(const char *dir, bool fsync);
void maildir_uidlist_deinit(struct maildir_uidlist **ul);
/* Change the fsync choice of maildir_uidlist_init() (mailbox_fsync_defer()). */
void maildir_uidlist_set_fsync(struct maildir_uidlist *ul, bool fsync);
/* What the writes made while not fsyncing left to sync, in rising order
   of what covers it: nothing; moat.uidlist's own size and data (appends,
   a rollback's truncate: fdatasync of the file); other files or
   directory entries (a rewrite's tmp + rename, the dovecot-uidlist
   mirror: only a syncfs, or fsyncs of the files and the folder). */
enum maildir_uidlist_unsynced {
	MAILDIR_UIDLIST_UNSYNCED_NONE = 0,
	MAILDIR_UIDLIST_UNSYNCED_APPEND,
	MAILDIR_UIDLIST_UNSYNCED_OTHER,
};
/* Returns that since the last call and starts counting again. */
enum maildir_uidlist_unsynced
maildir_uidlist_take_unsynced(struct maildir_uidlist *ul);

/* Re-read the file if it changed since we last read or wrote it.
   Returns 1 if (re)read, 0 if unchanged, -1 on I/O error. A missing file
   gives an empty list with a new UIDVALIDITY; a corrupt one is logged and
   replaced the same way at the next write. */
int maildir_uidlist_refresh(struct maildir_uidlist *ul, const char **error_r);

/* Take the write lock (waits up to MAILDIR_UIDLIST_LOCK_TIMEOUT_MS) and
   refresh. Returns 0 or -1. */
int maildir_uidlist_lock(struct maildir_uidlist *ul, const char **error_r);
/* Take the write lock for appending only: reads just the header and the
   last lines of the file (O(1), not O(messages)), enough for
   get_next_uid(), add() and write(). Until the next full refresh or lock
   the old records are not in memory: count(), get() and
   get_sorted_by_base() must not be used. Returns 0 or -1. */
int maildir_uidlist_lock_append(struct maildir_uidlist *ul,
				const char **error_r);
void maildir_uidlist_unlock(struct maildir_uidlist *ul);
bool maildir_uidlist_is_locked(struct maildir_uidlist *ul);

uint32_t maildir_uidlist_get_uidvalidity(struct maildir_uidlist *ul);
uint32_t maildir_uidlist_get_next_uid(struct maildir_uidlist *ul);
/* Records in ascending uid order (including ones marked expunged). */
unsigned int maildir_uidlist_count(struct maildir_uidlist *ul);
struct maildir_uidlist_rec *
maildir_uidlist_get(struct maildir_uidlist *ul, unsigned int idx);
/* Records sorted by base name (built on demand). */
struct maildir_uidlist_rec *const *
maildir_uidlist_get_sorted_by_base(struct maildir_uidlist *ul,
				   unsigned int *count_r);

/* Locked only. Give base (copied; maildir_uidlist_base_is_valid() must
   be true) the next UID. Returns the new record. */
struct maildir_uidlist_rec *
maildir_uidlist_add(struct maildir_uidlist *ul, const char *base,
		    size_t base_len, uint64_t size, uint64_t vsize);
/* Locked only. UIDs below next_uid are never given out (the index saw
   them: moat.index's next_uid must never be above the uidlist's). */
void maildir_uidlist_raise_next_uid(struct maildir_uidlist *ul,
				    uint32_t next_uid);
/* The file was missing or corrupt, so its UIDs start over with a new
   UIDVALIDITY (until the next write). */
bool maildir_uidlist_was_reset(struct maildir_uidlist *ul);
/* After a reset: make UIDVALIDITY greater than above (the value clients
   may have cached from the index): RFC 3501 2.3.1.1 requires a greater
   one whenever UIDs did not persist. */
void maildir_uidlist_raise_uidvalidity(struct maildir_uidlist *ul,
				       uint32_t above);
/* After a reset, when no UID was ever shown under the index's
   UIDVALIDITY (an index without messages, next_uid 1): use it as this
   list's UIDVALIDITY, so the new index need not be rebuilt. */
void maildir_uidlist_adopt_uidvalidity(struct maildir_uidlist *ul,
				       uint32_t uidvalidity);
/* Locked only. Appends the records added since the last read or write
   (fdatasync), or, after set_dirty() or a header change, drops records
   marked expunged and replaces the file. Returns 0 or -1; after -1 no
   line of this write is left in the file. */
int maildir_uidlist_write(struct maildir_uidlist *ul, const char **error_r);
/* Publishing many records in slices (COPY): locked only. append_begin
   writes what the list needs (a rewrite) so that from now on every write
   is a plain append, and gives the file's end as *mark_r. After each
   write, forget_written drops the written records from memory (the list
   becomes tail-only, as after lock_append(): memory stays bounded).
   rollback cuts the file back to mark and drops the unwritten records:
   the UIDs given since were never seen by anyone. Each returns 0 or -1. */
int maildir_uidlist_append_begin(struct maildir_uidlist *ul, uint64_t *mark_r,
				 const char **error_r);
void maildir_uidlist_forget_written(struct maildir_uidlist *ul);
int maildir_uidlist_append_rollback(struct maildir_uidlist *ul, uint64_t mark,
				    const char **error_r);
/* Mark that the in-memory list differs from the file beyond added
   records (expunged ones): the next write replaces the file. */
void maildir_uidlist_set_dirty(struct maildir_uidlist *ul);
bool maildir_uidlist_is_dirty(struct maildir_uidlist *ul);

/* Locked only. Start the list over as a copy of another server's (a
   Maildir that Dovecot or Courier served, maildir-import.h): no records,
   these UIDVALIDITY and next_uid; the next write replaces the file. */
void maildir_uidlist_import_begin(struct maildir_uidlist *ul,
				  uint32_t uidvalidity, uint32_t next_uid);
/* Locked only, after import_begin(). Add base (valid for
   maildir_uidlist_base_is_valid()) with exactly this uid. Returns 0, or
   -1 (nothing added) if uid is not above the last record's. next_uid is
   raised past uid. */
int maildir_uidlist_add_uid(struct maildir_uidlist *ul, uint32_t uid,
			    const char *base, size_t base_len, uint64_t size,
			    uint64_t vsize);

/* fsync a directory (after a rename into it). Returns 0 or -1 (errno). */
int maildir_fsync_dir(const char *dir);

/* Whether base can be stored in a uidlist line. */
bool maildir_uidlist_base_is_valid(const char *base, size_t base_len);

#endif
