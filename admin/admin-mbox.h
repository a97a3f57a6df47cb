#ifndef ADMIN_MBOX_H
#define ADMIN_MBOX_H
/* mbox files for moatadm import and export (doc/moatadm.8 "MBOX"): the
   two variants that keep every message intact.
     mboxrd: a line of the message that matches ^>*From  gets one more
       '>' on writing and loses one on reading.
     mboxcl2: nothing is quoted; a Content-Length: header gives the
       body's length.
   Each message starts with a From_ line ("From sender asctime-date") and
   is followed by an empty line; lines end in LF. Flags travel in the
   headers Status: (R seen, O not new), X-Status: (A answered, F flagged,
   T draft, D deleted) and X-Keywords: (space-separated). The reader
   streams: it holds at most one message and one read chunk. */

#include "admin-common.h"
#include "buffer.h"

#include <stdio.h>
#include <time.h>

/* Bytes read from the file at a time. */
#define ADMIN_MBOX_CHUNK 65536
/* A From_ line or header line longer than this is not an mbox. */
#define ADMIN_MBOX_LINE_MAX 65536
/* The flags of one message as IMAP writes them: the system flags and
   the keywords that fit (more are dropped, logged). */
#define ADMIN_MBOX_FLAGS_MAX 1024

enum admin_mbox_format {
	ADMIN_MBOX_UNKNOWN = 0,   /* the reader decides at the first message */
	ADMIN_MBOX_RD,
	ADMIN_MBOX_CL2,
};

struct admin_mbox_meta {
	/* "\Seen \Flagged $Label1" (may be empty) */
	char flags[ADMIN_MBOX_FLAGS_MAX];
	/* "01-Jan-2020 10:00:00 +0000" from the From_ line, "" if none */
	char date[80];
};

struct admin_mbox_reader;

/* Reads fd (not closed) with messages up to max_message bytes. */
struct admin_mbox_reader *admin_mbox_reader_init(int fd, size_t max_message);
void admin_mbox_reader_deinit(struct admin_mbox_reader **reader);
/* The next message into msg (reset first; CRLF line ends, the From_ line
   and the flag headers removed, mboxrd unquoted) and its flags and date.
   Returns 1, 0 at the end of the file, -1 with *error_r (static or in
   the reader, valid until the next call): not an mbox, a message larger
   than max_message, a read error. */
int admin_mbox_read(struct admin_mbox_reader *reader, buffer_t *msg,
		    struct admin_mbox_meta *meta_r, const char **error_r);
enum admin_mbox_format admin_mbox_reader_format(struct admin_mbox_reader *reader);
/* Bytes of the file consumed so far (progress). */
uint64_t admin_mbox_reader_offset(struct admin_mbox_reader *reader);

/* Write one message (as IMAP has it: CRLF or LF lines) to f in format:
   the From_ line for internaldate, the headers without any old flag
   headers (nor Content-Length for mboxcl2), then Status:, X-Status:,
   X-Keywords: for flags (IMAP's FLAGS list contents) and, for mboxcl2,
   Content-Length:, the body, and the empty line. Returns 0, or -1 with
   errno (a write error). */
int admin_mbox_write(FILE *f, enum admin_mbox_format format,
		     time_t internaldate, const char *flags,
		     const void *msg, size_t size);

/* IMAP's date-time ("01-Jan-2020 10:00:00 +0100") as a time_t; -1 if it
   does not parse. */
time_t admin_mbox_imap_date_parse(const char *str);

/* What an export (mbox or Maildir) takes from one untagged response to
   its EXAMINE or UID FETCH (FLAGS INTERNALDATE BODY[]). Strings are from
   pool. */
struct admin_export_resp {
	bool has_uidnext, has_exists, has_uidvalidity;
	unsigned int uidnext, exists, uidvalidity;
	/* a FETCH with BODY[] (an unsolicited flag update has none) */
	bool message;
	unsigned int uid;             /* 0 when missing */
	time_t internaldate;          /* 0 when missing or unparsable */
	const char *flags;            /* the FLAGS list's contents, or "" */
	const char *body;
	size_t body_size;
};
void admin_export_resp_parse(pool_t pool, const char *resp, size_t len,
			     struct admin_export_resp *r_r);

#endif
