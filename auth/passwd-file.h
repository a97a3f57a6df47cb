#ifndef PASSWD_FILE_H
#define PASSWD_FILE_H
/* A Dovecot-format passwd-file, used as passdb and/or userdb:
       user:password:uid:gid:gecos:home:shell:extra_fields
   Trailing fields may be left out. '#' starts a comment line; blank lines
   are skipped; a malformed line is skipped with a warning naming
   file:line. extra_fields is everything after the seventh ':' (it may
   itself contain ':'), as "key=value flag ..." (auth-fields.h).
   User names are matched case-insensitively; the name in the file is the
   canonical one. The file is re-read when its inode, size or mtime
   changes, checked at each lookup. */

/* A line longer than this is skipped with a warning: 64 KiB fits any sane
   entry (hash, paths, a handful of extra fields) with a wide margin. */
#define PASSWD_FILE_MAX_LINE (64 * 1024)
/* Longest user name accepted in the file or in a lookup. */
#define PASSWD_FILE_MAX_USER 256

struct passwd_file_entry {
	/* Never NULL; "" when the field is missing or empty. */
	const char *user;
	const char *password;
	const char *uid;
	const char *gid;
	const char *home;
	const char *extra_fields;
	unsigned int line;
};

struct passwd_file;

/* Nothing is read until the first refresh/lookup. */
struct passwd_file *passwd_file_create(const char *path);
void passwd_file_destroy(struct passwd_file **pf);
const char *passwd_file_get_path(const struct passwd_file *pf);

/* Re-read the file if it changed. Returns 0, or -1 if it cannot be read
   (logged once until it can be read again); the old entries are then
   not used. */
int passwd_file_refresh(struct passwd_file *pf);
/* Returns 1 and *entry_r (valid until the next refresh or lookup), 0 if
   there is no such user, -1 if the file cannot be read. */
int passwd_file_lookup(struct passwd_file *pf, const char *user,
		       const struct passwd_file_entry **entry_r);
unsigned int passwd_file_get_count(const struct passwd_file *pf);

#endif
