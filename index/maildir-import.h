#ifndef MAILDIR_IMPORT_H
#define MAILDIR_IMPORT_H
/* Taking over a Maildir folder that another IMAP server served, in place
   (doc/migration.md). When moat opens a folder it has never indexed (no
   moat.uidlist, an empty index), it reads the other server's files and
   writes its own beside them, so that clients keep their caches:

   - Dovecot: dovecot-uidlist ("3 V<uidvalidity> N<nextuid> [G<guid>...]",
     then "<uid> [<ext>...] :<base name>" lines; version 1 is Courier's
     format) and dovecot-keywords ("<index> <name>", letter 'a' + index in
     the file names: the same meaning as moat-keywords, copied as it is).
   - Courier: courierimapuiddb ("1 <uidvalidity> <nextuid>", then
     "<uid> <file name>") and courierimapkeywords/ (":list": the names, an
     empty line, then "<base name>:<index> <index>..."; a newer file per
     message, "<base name>" or ".<n>.<base name>", lists its names). Courier
     keeps keywords out of the file names, moat keeps them in: the files
     are renamed to carry the letters.
   - Neither (mutt, getmail, procmail): the ordinary first scan numbers
     the files by name (Maildir unique names start with the time).

   UIDVALIDITY, every UID and the next UID are kept exactly. The other
   server's files are only read, except that dovecot-uidlist and
   dovecot-keywords are kept in step while they share moat's UIDVALIDITY
   (new UIDs and keyword names are appended in Dovecot's format), so that
   a switch back to Dovecot keeps the UIDs as well. */

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct maildir_uidlist;
struct maildir_keywords;

#define MAILDIR_DOVECOT_UIDLIST_NAME "dovecot-uidlist"
#define MAILDIR_DOVECOT_KEYWORDS_NAME "dovecot-keywords"
#define MAILDIR_COURIER_UIDLIST_NAME "courierimapuiddb"
#define MAILDIR_COURIER_KEYWORDS_DIR "courierimapkeywords"
#define MAILDIR_COURIER_KEYWORDS_LIST ":list"
/* A record line: a 255-byte file name plus Dovecot's extension fields
   (sizes, a 32-digit GUID, a POP3 UIDL of up to a few hundred bytes).
   A longer line is corruption. */
#define MAILDIR_IMPORT_LINE_MAX 2048
/* The modseq a folder Dovecot served starts at in moat: above any that
   Dovecot gave it (one per change: 2^32 changes of one folder do not
   happen), so a client's cached HIGHESTMODSEQ is always below moat's and
   its first CONDSTORE/QRESYNC resync sees every message (and, for
   expunges, the RFC 7162 fallback). Below 2^53: clients that keep
   modseqs in a double (JavaScript) still compare them exactly. */
#define MAILDIR_IMPORT_MODSEQ_FLOOR (1ULL << 32)
/* Courier keeps one small file per recently changed message; past this
   many the rest are ignored (logged), so an import stays bounded. */
#define MAILDIR_IMPORT_COURIER_UPDATES_MAX 100000

enum maildir_import_source {
	MAILDIR_IMPORT_NONE = 0,
	MAILDIR_IMPORT_DOVECOT,
	MAILDIR_IMPORT_COURIER,
};

/* The header line (no LF) of a dovecot-uidlist or courierimapuiddb.
   Returns its version (1 or 3) with the UIDVALIDITY and next UID, or -1
   if it is not one we know. */
int maildir_foreign_uidlist_header(const char *line, uint32_t *uidvalidity_r,
				   uint32_t *next_uid_r);
/* One record line (no LF) of that version: the uid and the base name
   (inside line, without any ":2," info part). Returns 0 or -1. */
int maildir_foreign_uidlist_record(int version, const char *line,
				   uint32_t *uid_r, const char **base_r,
				   size_t *base_len_r);

/* Read the folder's foreign uidlist (Dovecot's, else Courier's) into ul,
   which the caller holds locked with no file of its own yet. Returns 1
   when imported (*source_r says whose), 0 when the folder has none, -1
   when the one it has is corrupt (logged; ul is left empty, and
   *foreign_uidvalidity_r is the UIDVALIDITY its header named, else 0). */
int maildir_import_uidlist(struct maildir_uidlist *ul, const char *dir,
			   enum maildir_import_source *source_r,
			   uint32_t *foreign_uidvalidity_r);

/* dovecot-keywords -> moat-keywords with the same letters. Returns 1 if
   written, 0 if there was none, -1 on error. */
int maildir_import_dovecot_keywords(struct maildir_keywords *kw,
				    const char *dir, const char **error_r);
/* courierimapkeywords/ -> moat-keywords, and each file in cur/ renamed to
   carry its keywords' letters. Returns 1 if imported, 0 if there were
   none, -1 on error (logged; what was renamed stays right). */
int maildir_import_courier_keywords(struct maildir_keywords *kw,
				    const char *dir, const char **error_r);

/* Open path (a dovecot-uidlist) for appending records, if its header
   names this UIDVALIDITY. A last line without its LF (a torn write) is
   ended first. Returns 1 with *fd_r, 0 if it is missing or numbers the
   messages differently, -1 on error (logged). */
int maildir_dovecot_uidlist_open_append(const char *path, uint32_t uidvalidity,
					int *fd_r);
/* After moat defined a keyword: write dovecot-keywords as moat-keywords
   is, if the folder's dovecot-uidlist has this UIDVALIDITY. Failures are
   logged only. */
void maildir_dovecot_keywords_mirror(const char *dir, uint32_t uidvalidity,
				     struct maildir_keywords *kw);

#endif
