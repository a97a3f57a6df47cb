#ifndef IMAP_FETCH_BODY_H
#define IMAP_FETCH_BODY_H
/* The message-structure side of FETCH: section specifiers
   (BODY[1.2.HEADER.FIELDS (A B)], BINARY[1.2]), the parsed part tree of
   a message (ENVELOPE, BODYSTRUCTURE, section offsets), and a streaming
   reader of one section's bytes in the CRLF form IMAP counts, optionally
   filtered (HEADER.FIELDS) or content-transfer-decoded (BINARY, RFC
   3516). Nothing holds a message body in memory: the part tree keeps
   offsets and the reader works in chunks. */

#include "mailbox.h"
#include "mailbox-read-ahead.h"
#include "mail-crlf.h"

struct message_part;
struct message_size;

/* Header names in one HEADER.FIELDS list; more is a client error. */
#define IMAP_SECTION_MAX_FIELDS 256
/* A header name longer than this cannot match any listed name. */
#define IMAP_SECTION_FIELD_NAME_MAX 256
/* Source bytes filtered per read step. */
#define IMAP_BODY_STREAM_CHUNK 8192
/* Whitespace held back by the quoted-printable decoder (it is dropped at
   a line end, RFC 2045 6.7 rule 3); a longer run is passed on. */
#define IMAP_BODY_QP_WS_MAX 256

enum imap_section_text {
	IMAP_SECTION_BODY,    /* "": the message; "1.2": the part's body */
	IMAP_SECTION_HEADER,
	IMAP_SECTION_HEADER_FIELDS,
	IMAP_SECTION_HEADER_FIELDS_NOT,
	IMAP_SECTION_TEXT,
	IMAP_SECTION_MIME,
};

struct imap_section {
	const char *part;            /* "" or "1.2" */
	enum imap_section_text text;
	const char *const *fields;   /* HEADER.FIELDS names */
	unsigned int field_count;
	bool binary;                 /* BINARY[]: decode the part */
};

/* Parse the text between the brackets of BODY[...] (binary: of
   BINARY[...], which takes part numbers only). *echo_r is the section as
   the reply names it: header names upper-cased as Dovecot does. Returns
   0, or -1 for a syntax error (BAD). */
int imap_section_parse(pool_t pool, const char *spec, bool binary,
		       struct imap_section *sec_r, const char **echo_r);
/* False only for BODY[] (the whole message needs no parsing). */
bool imap_section_needs_structure(const struct imap_section *sec);
/* The message's own HEADER, HEADER.FIELDS[.NOT] or TEXT: where its header
   ends is all that these need, so a parse of the header alone
   (imap_msg_header_get()) serves them. */
bool imap_section_header_only(const struct imap_section *sec);

/* A message's parsed part tree. The one place that produces it: it
   parses the file. ENVELOPE, BODY and BODYSTRUCTURE come from the mail
   cache when they can (imap-fetch-cache.h), which parses only on a miss.
   FETCH keeps one, so a message is parsed at most once per command
   whatever items need it. */
struct imap_msg_structure {
	pool_t pool;                 /* NULL while nothing is held */
	uint32_t seq;
	struct message_part *root;
	/* only the message's own header was parsed (imap_msg_header_get):
	   root's fields are right, its size and parts are not */
	bool header_only;
	/* the file it was parsed from, open while ms holds seq, so FETCH
	   reads its sections without opening it again (imap_msg_structure_fd) */
	bool has_fd;
	int fd;
	/* cache values this FETCH queued since its last flush (not reset
	   by imap_msg_structure_clear()) */
	unsigned int cache_pending;
	/* the texts (1 << enum imap_msg_text) queued for message queued_seq,
	   which a lookup does not see before the flush */
	uint32_t queued_seq;
	unsigned int queued_texts;
	/* the next messages' files, read ahead in a cold folder (not reset
	   by imap_msg_structure_clear()) */
	struct mailbox_read_ahead read_ahead;
};
/* Returns 0 with ms->root set for seq (parsed unless ms holds it), or
   -1 with *error_r. */
int imap_msg_structure_get(struct imap_msg_structure *ms,
			   struct mailbox *box, uint32_t seq,
			   const char **error_r);
/* The same, but the file is read only up to the end of the message's
   header, enough for ENVELOPE (root->fields): a message with big
   attachments costs one read. A full parse already held serves too. */
int imap_msg_header_get(struct imap_msg_structure *ms,
			struct mailbox *box, uint32_t seq,
			const char **error_r);
/* Parse seq's header (as imap_msg_header_get) from fd, which another
   reader opened and keeps (ms does not take it). Returns 0 or -1. */
int imap_msg_header_parse_fd(struct imap_msg_structure *ms, uint32_t seq,
			      int fd);
void imap_msg_structure_clear(struct imap_msg_structure *ms);
/* The open file of seq if ms holds it, else -1. Owned by ms: valid until
   the next parse or clear. */
int imap_msg_structure_fd(const struct imap_msg_structure *ms, uint32_t seq);

enum imap_body_filter {
	IMAP_BODY_FILTER_NONE,
	IMAP_BODY_FILTER_HEADER_FIELDS,
	IMAP_BODY_FILTER_HEADER_FIELDS_NOT,
	IMAP_BODY_FILTER_BASE64,
	IMAP_BODY_FILTER_QP,
};

/* Where a section's bytes are. */
struct imap_body_source {
	bool found;                 /* false: the section is empty */
	uint64_t phys_pos;          /* in the stored file */
	uint64_t virt_size;         /* bytes of its CRLF form */
	enum imap_body_filter filter;
};
/* Returns 0, or -1 when a BINARY section's Content-Transfer-Encoding is
   unknown (NO [UNKNOWN-CTE]). root may be NULL for BODY[]; then size is
   the message's size. */
int imap_body_source_get(const struct message_part *root,
			 const struct imap_section *sec, uint64_t msg_vsize,
			 struct imap_body_source *src_r);
/* A section imap_section_header_only() accepts, from where the message's
   header ends (hdr: its size, physical and with CRLF line ends): the
   header, or for TEXT what follows it, msg_vsize (RFC822.SIZE) less the
   header. No part tree needed. */
void imap_body_source_header(const struct message_size *hdr,
			     const struct imap_section *sec,
			     uint64_t msg_vsize, struct imap_body_source *src_r);

struct imap_body_stream {
	struct mail_crlf crlf;
	const struct imap_section *sec;
	struct imap_body_source src;
	uint64_t in_left;           /* CRLF bytes of the source not read */
	bool finished;              /* the filter's tail was produced */

	size_t out_pos, out_len;

	/* filter state */
	unsigned int state;
	bool include;
	size_t name_len;
	uint32_t b64_bits;
	unsigned int b64_count;
	unsigned char qp_hi;
	size_t ws_len;

	/* Buffers last: init clears only what comes before them (a
	   BODY[] per message should not pay for zeroing 16 KiB). */
	char name[IMAP_SECTION_FIELD_NAME_MAX + 1];
	unsigned char ws[IMAP_BODY_QP_WS_MAX];
	/* produced, not yet returned */
	unsigned char out[2 * IMAP_BODY_STREAM_CHUNK];
};

/* Start reading src of the file fd (not owned); convert: the file has
   bare LF line ends. */
void imap_body_stream_init(struct imap_body_stream *s, int fd, bool convert,
			   const struct imap_section *sec,
			   const struct imap_body_source *src);
/* Up to size bytes of the section; 0 at the end, -1 on error (errno). */
ssize_t imap_body_stream_read(struct imap_body_stream *s, unsigned char *buf,
			      size_t size);
/* Skip count bytes (for <partial>). Returns 0 or -1. */
int imap_body_stream_skip(struct imap_body_stream *s, uint64_t count);
/* Size of the section's output and whether it holds a NUL: a full pass
   for filtered sources, free otherwise. Leaves s at the start. */
int imap_body_stream_measure(struct imap_body_stream *s, uint64_t *size_r,
			     bool *has_nul_r);

#endif
