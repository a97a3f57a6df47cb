#ifndef ADMIN_BACKUP_H
#define ADMIN_BACKUP_H
/* moatadm backup and restore of one user (admin-cmd-backup.c; format in
   doc/moatadm.8, BACKUP FORMAT).

   A backup is a directory: the user's folders as a Maildir++ tree with a
   dovecot-uidlist and dovecot-keywords per folder (so moat, or Dovecot,
   opening it keeps every UIDVALIDITY, UID and keyword), the
   subscriptions, and last a manifest, MANIFEST_NAME, that lists every
   directory and every file with its size and SHA-256. A backup without
   its manifest, or whose files do not match it, is refused by restore.

   The manifest, one record per line:
     moat-backup 1
     user <name>
     created <unix time>
     dir <path>
     file <sha256 hex> <size> <mtime> <path>
     end <number of dir and file records>
   Paths are relative to the backup directory, '/'-separated, without
   empty, "." or ".." components or control characters (and may hold
   spaces: a path runs to the end of its line). mtime is the file's
   modification time in seconds: a Maildir message's internal date. */

#include "admin-common.h"

#include <stdint.h>
#include <stdio.h>

#define ADMIN_BACKUP_MANIFEST_NAME "moat-backup.manifest"
#define ADMIN_BACKUP_VERSION 1
/* A manifest line: a path is bounded by PATH_MAX. */
#define ADMIN_BACKUP_LINE_MAX (4096 + 128)
/* Records one manifest may hold: a bound on what restore trusts. */
#define ADMIN_BACKUP_RECORDS_MAX 50000000u
/* A directory walk of a Maildir++ tree: root, .folder, cur|new|tmp. */
#define ADMIN_BACKUP_DEPTH_MAX 3
#define ADMIN_BACKUP_SHA256_HEX 64

struct admin_backup_record {
	bool dir;
	char sha256[ADMIN_BACKUP_SHA256_HEX + 1];
	uint64_t size;
	int64_t mtime;
	char path[ADMIN_BACKUP_LINE_MAX];
};

/* Write dir's manifest (every directory and file below it, read back and
   hashed), fsync'ed and renamed into place. 0, or -1 with *error_r. */
int admin_backup_manifest_write(const char *dir, const char *user,
				pool_t pool, unsigned int *files_r,
				const char **error_r);

/* Reading a manifest: the header, then one record at a time. */
struct admin_backup_manifest {
	FILE *f;
	char user[ADMIN_BACKUP_LINE_MAX];
	uint64_t created;
	unsigned int records;
	bool ended;
};
int admin_backup_manifest_open(const char *dir, pool_t pool,
			       struct admin_backup_manifest *m_r,
			       const char **error_r);
/* 1 and the next record, 0 at a correct end, -1 with *error_r. */
int admin_backup_manifest_next(struct admin_backup_manifest *m,
			       struct admin_backup_record *r_r,
			       pool_t pool, const char **error_r);
void admin_backup_manifest_close(struct admin_backup_manifest *m);

/* Whether path is a manifest path (see above). */
bool admin_backup_path_is_valid(const char *path);

/* A digest of md_len bytes as lowercase hex (at most the SHA-256's). */
void admin_backup_hex(const unsigned char *md, unsigned int md_len,
		      char hex[ADMIN_BACKUP_SHA256_HEX + 1]);
/* SHA-256 of what fd holds from its offset on, as hex, and its size; 0 or
   -1 (errno). */
int admin_backup_hash_fd(int fd, char hex[ADMIN_BACKUP_SHA256_HEX + 1],
			 uint64_t *size_r);

#endif
