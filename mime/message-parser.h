#ifndef MESSAGE_PARSER_H
#define MESSAGE_PARSER_H
/* Streaming MIME parser (RFC 5322, RFC 2045/2046). The caller feeds the
   message in chunks of any size; the parser keeps only the start of the
   current line, the current header field and the part tree, so memory is
   bounded by the settings and the number of parts, never by the message.

   The result is a tree of parts: the message itself is the root; a
   multipart has its subparts as children; a message/rfc822 part has one
   child, the encapsulated message. Each part knows where its header and
   body are (physical byte offsets into the message as fed) and their
   sizes both as stored and as IMAP counts them (virtual: every bare LF
   counted as CRLF, RFC 3501 sizes are of the CRLF form). */

#include "mempool.h"
#include "message-header.h"

/* Defaults: the nesting and part counts a real client ever needs, with a
   wide margin; headers up to 64 KiB per field (long References:). */
#define MESSAGE_PARSER_DEFAULT_MAX_DEPTH 100
#define MESSAGE_PARSER_DEFAULT_MAX_PARTS 10000
#define MESSAGE_PARSER_DEFAULT_MAX_FIELD_SIZE (64 * 1024)
/* RFC 2046 limits boundaries to 70 characters, but real mail has longer
   ones: any boundary a header field can hold (max_field_size) is used in
   full, and an empty one (boundary="") makes lines of "--" delimiters. */

struct message_parser_settings {
	unsigned int max_depth;       /* multipart/message nesting */
	unsigned int max_parts;       /* parts in the whole tree */
	size_t max_field_size;        /* bytes kept of one header field */
};

struct message_size {
	uint64_t physical;   /* bytes as stored */
	uint64_t virtual;    /* bytes with each bare LF counted as CRLF */
	uint64_t lines;      /* LF count */
};

enum message_part_flags {
	MESSAGE_PART_FLAG_MULTIPART = 0x01,
	MESSAGE_PART_FLAG_MESSAGE_RFC822 = 0x02,
	MESSAGE_PART_FLAG_TEXT = 0x04,
	/* A multipart whose Content-Type had no boundary parameter. */
	MESSAGE_PART_FLAG_NO_BOUNDARY = 0x08,
	/* MIME-Version or Content-Type seen, or a multipart's subpart:
	   only then do Content-* fields count (as Dovecot does). */
	MESSAGE_PART_FLAG_IS_MIME = 0x10,
};

/* Raw (unfolded, undecoded) values of the header fields IMAP reports.
   NULL when the field is missing. */
enum message_part_field {
	MPF_CONTENT_TYPE,
	MPF_CONTENT_TRANSFER_ENCODING,
	MPF_CONTENT_ID,
	MPF_CONTENT_DESCRIPTION,
	MPF_CONTENT_DISPOSITION,
	MPF_CONTENT_LANGUAGE,
	MPF_CONTENT_LOCATION,
	MPF_CONTENT_MD5,
	/* Envelope fields: kept for the root and for message/rfc822
	   children only. */
	MPF_DATE,
	MPF_SUBJECT,
	MPF_FROM,
	MPF_SENDER,
	MPF_REPLY_TO,
	MPF_TO,
	MPF_CC,
	MPF_BCC,
	MPF_IN_REPLY_TO,
	MPF_MESSAGE_ID,
	MPF_COUNT
};
#define MPF_FIRST_ENVELOPE MPF_DATE
/* Separates the values of a repeated address field (From: twice). */
#define MESSAGE_PART_FIELD_SEP '\001'

struct message_part {
	struct message_part *parent, *next, *children;
	unsigned int children_count;
	enum message_part_flags flags;

	/* Offsets of the start of the part's header (for a multipart
	   child: the MIME header after the boundary line). */
	uint64_t physical_pos, virtual_pos;
	uint64_t line_pos;   /* LFs before the part's header */
	struct message_size header_size;
	struct message_size body_size;

	/* Parsed Content-Type as written ("text", "plain" by default). */
	const char *type, *subtype;
	const char *fields[MPF_COUNT];
};

struct message_parser;

/* Called for every complete header field of every part (for SEARCH and
   header caching). part is the part whose header it is. */
typedef void message_header_callback_t(struct message_part *part,
				       const struct message_header_field *field,
				       void *context);

/* The tree and its strings are allocated from pool and live as long as
   it. set may be NULL for the defaults. */
struct message_parser *
message_parser_init(pool_t pool, const struct message_parser_settings *set);
void message_parser_set_header_callback(struct message_parser *parser,
					message_header_callback_t *callback,
					void *context);
void message_parser_feed(struct message_parser *parser,
			 const void *data, size_t size);
/* The message's own header has ended (its fields are all in the root):
   a caller that needs only those (ENVELOPE) can stop feeding and finish;
   the root's fields are then what the whole message would give. */
bool message_parser_root_header_done(const struct message_parser *parser);
/* End of input: closes every open part and returns the root. */
struct message_part *message_parser_finish(struct message_parser **parser);

/* Convenience: parse a complete message in memory. */
struct message_part *message_parse_data(pool_t pool, const void *data,
					size_t size);

/* Part lookup for BODY[section] (RFC 3501 6.4.5): "" is the message,
   "1.2" the second subpart of the first subpart. A number applied to a
   message/rfc822 part addresses the parts of the encapsulated message;
   a number applied to a part that is not multipart: 1 is the part
   itself, once (so "1" of a single-part message is the message, and
   "2.1" of a multipart's second part that is not multipart is that
   part; "1.1" of a single-part message and "2.1.1" are nothing).
   Returns the part or NULL. */
struct message_part *message_part_find_section(struct message_part *root,
					       const char *section);

/* Byte range of what a section specifier names, physical offsets into
   the stored message plus the IMAP (virtual) size. */
struct message_section_range {
	uint64_t physical_pos, physical_size;
	uint64_t virtual_size;
};
enum message_section_kind {
	MESSAGE_SECTION_FULL,    /* the part's header and body */
	MESSAGE_SECTION_ALL,     /* BODY[n]: the part's body */
	MESSAGE_SECTION_HEADER,  /* BODY[n.HEADER]: header of the message a
				    message/rfc822 part encapsulates */
	MESSAGE_SECTION_TEXT,    /* BODY[n.TEXT]: that message's body */
	MESSAGE_SECTION_MIME,    /* BODY[n.MIME]: the part's own header; for
				    the message itself (part 1 of a
				    single-part message) its header */
};
/* Returns 0, or -1 if kind does not apply to the part (HEADER/TEXT of a
   part that is not message/rfc822). */
int message_part_get_range(const struct message_part *part,
			   enum message_section_kind kind,
			   struct message_section_range *range_r);

/* The range BODY[section.kind] names: section is the part numbers ("" for
   the message itself: FULL is BODY[], HEADER and TEXT are the message's
   own header and body, RFC 3501 6.4.5). Returns 0, or -1 when there is no
   such section (IMAP answers an empty string). */
int message_section_get_range(struct message_part *root, const char *section,
			      enum message_section_kind kind,
			      struct message_section_range *range_r);

#endif
