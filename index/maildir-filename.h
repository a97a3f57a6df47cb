#ifndef MAILDIR_FILENAME_H
#define MAILDIR_FILENAME_H
/* Maildir file names (Maildir++ conventions):
     <base>[:2,<flags>]
   where base is a unique name that may carry ",S=<size>" (bytes on disk)
   and ",W=<vsize>" (size with CRLF line ends, what IMAP reports), and
   flags are single characters in ASCII order: D(raft) F(lagged)
   P(assed) R(eplied) S(een) T(rashed), lowercase letters are keywords.
   Letters moat does not interpret yet are kept as they are. */

#include "mail-flags.h"

/* NAME_MAX of the file systems we run on. */
#define MAILDIR_FILENAME_MAX 255
/* Flag letters we keep without interpreting (P, keywords a-z, others). */
#define MAILDIR_OTHER_FLAGS_MAX 64
#define MAILDIR_INFO_PREFIX ":2,"
/* Host names longer than this are cut: names must fit MAILDIR_FILENAME_MAX
   with the size fields and the flags. */
#define MAILDIR_HOSTNAME_MAX 64
#define MAILDIR_SIZE_UNKNOWN ((uint64_t)-1)

struct maildir_filename {
	size_t len;               /* strlen(fname) */
	size_t base_len;          /* bytes of fname before ':' */
	uint64_t size;            /* ,S= or MAILDIR_SIZE_UNKNOWN */
	uint64_t vsize;           /* ,W= or MAILDIR_SIZE_UNKNOWN */
	enum mail_flags flags;    /* never MAIL_RECENT */
	bool have_info;           /* ":2," was present */
	/* Flag letters not mapped to flags, ASCII order, NUL-terminated. */
	char other_flags[MAILDIR_OTHER_FLAGS_MAX + 1];
};

/* Parse fname. Returns false for names that are not messages: empty,
   starting with '.', containing '/', or longer than MAILDIR_FILENAME_MAX. */
bool maildir_filename_parse(const char *fname, struct maildir_filename *fn_r);

/* Write "<base>:2,<flags>" (flags and other_flags merged in ASCII order)
   into buf. Returns 0, or -1 if it does not fit size or
   MAILDIR_FILENAME_MAX. */
int maildir_filename_make(char *buf, size_t size, const char *base,
			  size_t base_len, enum mail_flags flags,
			  const char *other_flags);

/* Generator of unique base names. One per process is enough; it is plain
   data owned by whoever holds it. */
struct maildir_unique {
	unsigned int counter;
	pid_t pid;
	char hostname[MAILDIR_HOSTNAME_MAX * 4 + 1]; /* after escaping */
};

void maildir_unique_init(struct maildir_unique *u);
/* Sanitize a host name for a file name: '/' -> "\057", ':' -> "\072",
   cut to MAILDIR_HOSTNAME_MAX input bytes. */
void maildir_hostname_sanitize(const char *host, char *buf, size_t size);
/* "<sec>.M<usec>P<pid>Q<counter>.<host>" into buf. Returns 0 or -1 if it
   does not fit. */
int maildir_unique_next(struct maildir_unique *u, char *buf, size_t size);
/* The same with "D<id>" after the counter, for a delivery whose id
   (lowercase hex, MAILDIR_DELIVERY_ID_LEN) names it, so that the name
   itself, committed with the file, says it was delivered. */
#define MAILDIR_DELIVERY_ID_LEN 32
int maildir_unique_next_delivery(struct maildir_unique *u, const char *id,
				 char *buf, size_t size);
/* The delivery id base carries into id_r (MAILDIR_DELIVERY_ID_LEN + 1
   bytes): true, or false if it has none. */
bool maildir_base_get_delivery(const char *base, char *id_r);

/* Flag letter <-> flag. */
char maildir_flag_char(enum mail_flags flag);

#endif
