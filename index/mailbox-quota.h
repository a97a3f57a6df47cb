#ifndef MAILBOX_QUOTA_H
#define MAILBOX_QUOTA_H
/* A user's quota (one quota root over all of the user's folders), kept in
   the Maildir++ "maildirsize" file of the mail root, the format Courier
   and Dovecot read and write too:
       <bytes>S,<count>C       limits (either may be missing; none: no line
                               content, "0S,0C" is read as "no limit")
       <bytes> <count>         one line per change, negative for removals
   Every writer (the user's imap process, moat-lda, other Maildir++
   software) appends its change in one write(2) under an flock(2); the
   usage is the sum of the lines. When the file grows past
   MAILBOX_QUOTA_COMPACT_SIZE the sum is written back as one line (the
   Maildir is not walked); when it is missing or unreadable it is made by
   walking every folder once (mailbox_quota_recalc(), also moatadm's
   "quota recalc"). Usage is never exact against writers that do not know
   maildirsize; a recalc makes it so. */

#include "lib.h"

/* Maildir++'s own bound for when to rewrite the file. */
#define MAILBOX_QUOTA_COMPACT_SIZE 5120
#define MAILBOX_QUOTA_FILE "maildirsize"

struct mailbox_quota_limits {
	uint64_t storage;    /* bytes; 0 = no limit */
	uint64_t messages;   /* 0 = no limit */
};

struct mailbox_quota_usage {
	int64_t storage;     /* bytes of the message files */
	int64_t messages;
};

/* The limits and usage of the quota at root. A missing file is made by a
   recalc with limits (which are also what a file without a limits line
   reports). Returns 0, or -1 with *error_r (static). */
int mailbox_quota_get(const char *root, const struct mailbox_quota_limits *limits,
		      struct mailbox_quota_limits *limits_r,
		      struct mailbox_quota_usage *usage_r, const char **error_r);
/* Add a change (messages saved: positive; expunged: negative). A missing
   file is made by a recalc first (then the change is in it already when
   the messages are on disk; callers call this after their change).
   Returns 0 or -1. */
int mailbox_quota_update(const char *root, int64_t storage, int64_t messages,
			 const char **error_r);
/* Walk every folder of root (cur/ and new/, sizes from S= or stat) and
   write the file anew with limits and the sum. Returns 0 or -1. */
int mailbox_quota_recalc(const char *root,
			 const struct mailbox_quota_limits *limits,
			 struct mailbox_quota_usage *usage_r,
			 const char **error_r);
/* Write limits into the file's first line if they differ (the user's
   imap process does so at start, so moat-lda, which cannot read the
   userdb, finds them). Returns 0 or -1. */
int mailbox_quota_set_limits(const char *root,
			     const struct mailbox_quota_limits *limits,
			     const char **error_r);

/* The messages of the folder at path (cur/ and new/), for a DELETE: 0,
   or -1 when root has no quota file (nothing to keep in step) or the
   folder cannot be read. */
int mailbox_quota_folder_usage(const char *root, const char *path,
			       struct mailbox_quota_usage *usage_r);

/* Whether adding storage bytes and messages fits: 1 yes, 0 no. grace is
   the bytes a save may go over the storage limit when the usage is
   below the limit before it (a big message to a nearly full mailbox is
   taken, the next one refused). */
int mailbox_quota_check(const struct mailbox_quota_limits *limits,
			const struct mailbox_quota_usage *usage,
			uint64_t grace, uint64_t storage, uint64_t messages);

/* After a save took usage from before to after: for each limit whose
   percents (ascending) it crossed upwards, a warning message in root's
   INBOX (one per limit and save, naming the highest percentage crossed).
   Failures are logged. */
void mailbox_quota_warn(const char *root,
			const struct mailbox_quota_limits *limits,
			const struct mailbox_quota_usage *before,
			const struct mailbox_quota_usage *after,
			const unsigned int *percents, unsigned int count);

#endif
