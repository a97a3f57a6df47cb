#ifndef MAILDIR_KEYWORDS_H
#define MAILDIR_KEYWORDS_H
/* moat-keywords: the IMAP keyword names of one Maildir folder. The
   lowercase letters a-z in a file name's flag part stand for keywords:
   letter 'a' + i is the keyword on line "<i> <name>".

     <index> <name>\n        (index 0..25, any order, each at most once)

   Names are never removed or renumbered (a letter in a file name keeps
   its meaning). The file is replaced atomically (tmp file, fsync,
   rename) by writers holding the folder's uidlist lock; readers need no
   lock. Unknown or broken lines are ignored. */

#include <stdint.h>
#include <stdbool.h>

#define MAILDIR_KEYWORDS_NAME "moat-keywords"
/* One letter per keyword: a-z. */
#define MAILDIR_KEYWORDS_MAX 26
/* Longer names are refused (they live in a short line of the file). */
#define MAILDIR_KEYWORD_NAME_MAX 128
/* "<index> <name>\n" lines: 26 of at most ~135 bytes. */
#define MAILDIR_KEYWORDS_FILE_MAX 8192

struct maildir_keywords;

struct maildir_keywords *maildir_keywords_init(const char *dir, bool fsync);
/* The same for a file of this format with another name in dir (Dovecot's
   dovecot-keywords has it too: maildir-import.h). */
struct maildir_keywords *
maildir_keywords_init_file(const char *dir, const char *file_name, bool fsync);
void maildir_keywords_deinit(struct maildir_keywords **kw);

/* Re-read the file if it changed. Returns 1 if the names changed, 0 if
   not, -1 on I/O error (*error_r valid until the next call). */
int maildir_keywords_refresh(struct maildir_keywords *kw,
			     const char **error_r);

/* Case-insensitive lookup: index, or -1 if not defined. */
int maildir_keywords_lookup(struct maildir_keywords *kw, const char *name);
/* The name of index idx, or NULL if not defined. Valid until the next
   refresh or add. */
const char *maildir_keywords_name(struct maildir_keywords *kw,
				  unsigned int idx);
/* Bitmask of the defined indexes (bit i = letter 'a' + i). */
uint32_t maildir_keywords_defined(struct maildir_keywords *kw);

/* Define name (the caller holds the uidlist lock, so the file is current
   and no one else writes it). Returns 1 and *idx_r (also when it existed
   already), 0 when all MAILDIR_KEYWORDS_MAX letters are taken, -1 on
   error. */
int maildir_keywords_add(struct maildir_keywords *kw, const char *name,
			 unsigned int *idx_r, const char **error_r);

/* Make the names exactly these (names[i] is letter 'a' + i; NULL, invalid
   and repeated ones are left out) and replace the file. The caller holds
   the uidlist lock. Returns 0 or -1. */
int maildir_keywords_replace(struct maildir_keywords *kw,
			     const char *const names[MAILDIR_KEYWORDS_MAX],
			     const char **error_r);

/* RFC 9051 flag-keyword: a non-empty atom (no SP, CTL, 8-bit, "(){%*\"\\]")
   of at most MAILDIR_KEYWORD_NAME_MAX bytes. */
bool maildir_keyword_is_valid(const char *name);

/* Keyword bits <-> flag letters ("ac" <-> 0x5). */
uint32_t maildir_keywords_from_letters(const char *letters);
void maildir_keywords_to_letters(uint32_t keywords,
				 char buf[MAILDIR_KEYWORDS_MAX + 1]);

#endif
