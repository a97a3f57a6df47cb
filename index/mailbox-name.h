#ifndef MAILBOX_NAME_H
#define MAILBOX_NAME_H
/* Mailbox names: the three forms and the checks between them.

   - Inside moat a name is UTF-8 with "/" as the hierarchy separator, and
     "INBOX" (any case) as its first component is always written "INBOX".
   - On the wire (IMAP4rev1) it is modified UTF-7 (RFC 3501 5.1.3). The
     decoder is strict: one encoding per name, so two wire names never
     reach the same mailbox.
   - On disk a mailbox is the Maildir++ folder ".<c1>.<c2>..." under the
     mail root (INBOX is the root itself). Each component is written in
     modified UTF-7 (as Courier and Dovecot do), then "." and "~" are
     escaped as "~2e" and "~7e". A disk name therefore never holds "/",
     never is "." or "..", and always starts with ".": no name can reach
     outside the mail root. See doc/mail-storage.md. */

#include "buffer.h"
#include "mailbox.h"

#include <limits.h>

/* Sizes of the buffers used for the wire and disk forms. A name must
   also fit one directory entry on disk (NAME_MAX), which is what limits
   names in practice; the UTF-8 form is at most MAILBOX_NAME_MAX bytes
   (mailbox.h). */
#define MAILBOX_NAME_WIRE_MAX (MAILBOX_NAME_MAX * 3)
#define MAILBOX_NAME_DISK_MAX NAME_MAX
/* Hierarchy depth: deeper names are refused (a name of 1-byte components
   fits NAME_MAX anyway; this keeps loops over components small). */
#define MAILBOX_NAME_LEVELS_MAX 32
/* The hierarchy separator on the wire and inside moat. */
#define MAILBOX_NAME_SEP '/'
#define MAILBOX_NAME_SEP_STR "/"

enum mailbox_name_status {
	MAILBOX_NAME_OK = 0,
	MAILBOX_NAME_INVALID,     /* bad characters, empty component, ... */
	MAILBOX_NAME_TOO_LONG,    /* over a length or depth limit */
};

/* Modified UTF-7 -> UTF-8. Rejects bytes outside printable ASCII, an
   unterminated or malformed shift sequence, base64 padding bits that are
   not zero, a shift sequence that encodes printable ASCII or is empty
   ("&-" is the only way to write "&"), two shift sequences in a row,
   unpaired surrogates and U+0000. Returns 0, or -1 (dest then holds
   garbage) if invalid or if dest is full. */
int mailbox_name_mutf7_to_utf8(const char *src, buffer_t *dest);
/* UTF-8 -> modified UTF-7. Returns 0, or -1 if src is not valid UTF-8
   (overlong forms, surrogates, > U+10FFFF) or dest is full. */
int mailbox_name_utf8_to_mutf7(const char *src, buffer_t *dest);
/* Strict UTF-8 check of a NUL-terminated string. */
bool mailbox_name_is_utf8(const char *str);

/* Check a UTF-8 name and write its canonical form (INBOX upper-cased)
   to dest (MAILBOX_NAME_MAX + 1 bytes). Refused: empty names and empty
   components (leading, trailing or double "/"), "." and ".." components,
   control characters (C0, DEL, C1), U+2028 and U+2029 (RFC 6855 3),
   "*" and "%" (LIST wildcards), invalid
   UTF-8, and names whose disk form would not fit NAME_MAX. On failure
   *error_r is a static sentence fit for a NO. */
enum mailbox_name_status
mailbox_name_normalize(const char *name, char dest[MAILBOX_NAME_MAX + 1],
		       const char **error_r);

/* INBOX, any case, exactly. */
bool mailbox_name_is_inbox_name(const char *name);

/* The Maildir++ directory of a normalized name: "" for INBOX, ".a.b"
   for "a/b". Returns 0, or -1 if the name is not valid. */
int mailbox_name_to_dir(const char *name,
			char dir_r[MAILBOX_NAME_DISK_MAX + 1]);
/* The name of a Maildir++ directory (".a.b"). Returns 0, or -1 if the
   directory is not one moat would have written for a valid name (not a
   mailbox: other files, foreign encodings). */
int mailbox_name_from_dir(const char *dir, char name_r[MAILBOX_NAME_MAX + 1]);

/* Full path of the mailbox's folder: root for INBOX, root/.a.b else.
   Returns 0, or -1 if invalid or too long. */
int mailbox_name_to_path(const char *root, const char *name,
			 char *path_r, size_t size);

/* Whether child is strictly below parent in the hierarchy. */
bool mailbox_name_is_child(const char *child, const char *parent);

#endif
