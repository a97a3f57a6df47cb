#ifndef MAILBOX_OBJECTID_H
#define MAILBOX_OBJECTID_H
/* RFC 8474 object ids (doc/extensions.md, "OBJECTID"):

   MAILBOXID  "F" and 32 hex digits (128 random bits), kept in the file
              MAILBOX_ID_FILE of the folder (INBOX: of the mail root),
              so it moves with the folder on RENAME and outlives any
              rebuild of the index. CREATE writes one; a folder without
              one (made by another Maildir writer, imported) gets one the
              first time its id is asked for.
   EMAILID    "M" and 16 hex digits: a 64-bit hash of the message's
              Maildir unique name (its base name up to the first ','),
              or, for a copy, the id its source had, which the copy's
              base name carries as ",E=<id>". A file keeps its base name
              for life, so the id survives index and cache rebuilds; it
              is cached per message (field MAILBOX_CACHE_EMAILID) so a
              FETCH of a range reads neither message files nor the
              uidlist a second time.
   THREADID   "T" and 16 hex digits: the Message-ID hash of the thread's
              root as REFERENCES threading (RFC 5256) sees it from this
              message: the first id of References (else In-Reply-To),
              else the message's own Message-ID; a message with neither
              is a thread of its own (the hash of its EMAILID). Taken
              from the SORT/THREAD keys (mail-sort-keys.h), so computed
              once per message and cached with them. */

#include "mailbox.h"

#include <stdbool.h>
#include <stddef.h>

struct mail_sort_keys_reader;

/* objectid = 1*255(ALPHA / DIGIT / "_" / "-") (RFC 8474 7) */
#define MAILBOX_OBJECTID_MAX 255
/* The folder's MAILBOXID; INBOX's moves with its messages on RENAME
   INBOX (a "moat." file of the root: mailbox-list-ops.c). */
#define MAILBOX_ID_FILE "moat.mailboxid"
#define MAILBOX_ID_RANDOM_BYTES 16
#define MAILBOX_ID_LEN (1 + 2 * MAILBOX_ID_RANDOM_BYTES)
/* EMAILID and THREADID: a letter and 16 hex digits */
#define MAILBOX_MSG_OBJECTID_LEN 17
/* The base name field in which a copy carries its source's EMAILID. */
#define MAILBOX_EMAILID_FIELD ",E="

bool mailbox_objectid_is_valid(const char *id);

/* Give the folder at path a new MAILBOXID (replacing any), fsynced: for a
   folder being made. Returns 0 or -1 with *error_r. */
int mailbox_id_create(const char *path, const char **error_r);
/* The folder's MAILBOXID into id_r; a folder without a (valid) one gets
   one first. Returns 0 or -1 with *error_r. */
int mailbox_id_get(const char *path, char id_r[MAILBOX_ID_LEN + 1],
		   const char **error_r);

/* The EMAILID a message with this base name (base_len bytes) has. */
void mailbox_emailid_from_base(const char *base, size_t base_len,
			       char id_r[MAILBOX_MSG_OBJECTID_LEN + 1]);
/* The message's EMAILID: from the cache, else from its base name in the
   uidlist (then queued for the cache). Also for an expunged message the
   session still shows, while the uidlist has its line. Returns 1, 0 if
   the message is not known any more, -1 on I/O error (*error_r). */
int mailbox_msg_emailid(struct mailbox *box, uint32_t seq,
			char id_r[MAILBOX_MSG_OBJECTID_LEN + 1],
			const char **error_r);
/* The message's THREADID, its header read through reader (a reader of
   box, created by the caller: mail_sort_keys_reader_init()). Returns
   1, 0 if the message is gone, -1 on I/O error (*error_r). */
int mailbox_msg_threadid(struct mail_sort_keys_reader *reader,
			 struct mailbox *box, uint32_t seq,
			 char id_r[MAILBOX_MSG_OBJECTID_LEN + 1],
			 const char **error_r);

/* ---- pieces, exposed for tests ---- */

/* The 64-bit hash EMAILIDs are made of (FNV-1a with a final mix). */
uint64_t mailbox_objectid_hash(const void *data, size_t size);

#endif
