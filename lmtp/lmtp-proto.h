#ifndef LMTP_PROTO_H
#define LMTP_PROTO_H
/* LMTP command syntax (RFC 2033, which is SMTP's, RFC 5321 4.1, with the
   ESMTP parameters of SIZE RFC 1870, 8BITMIME RFC 6152, CHUNKING RFC
   3030, DSN RFC 3461, SMTPUTF8 RFC 6531): verbs, paths and parameters. Pure functions over
   one line; knows nothing of sockets or delivery (fuzzed). */

#include "lib.h"

/* A command line with its CRLF. RFC 5321 4.5.3.1.4 says 512 octets;
   parameters of real MTAs (ORCPT with long addresses, AUTH=) need more. */
#define LMTP_LINE_MAX 2048
/* A path between < and >: RFC 5321 4.5.3.1.3 allows 256 octets; a little
   more for what real MTAs send. */
#define LMTP_PATH_MAX 512
/* Parameters after a path. */
#define LMTP_PARAMS_MAX 16

enum lmtp_verb {
	LMTP_VERB_UNKNOWN = 0,
	LMTP_VERB_LHLO,
	LMTP_VERB_HELO,      /* not LMTP: refused (RFC 2033 4.1) */
	LMTP_VERB_EHLO,
	LMTP_VERB_MAIL,
	LMTP_VERB_RCPT,
	LMTP_VERB_DATA,
	LMTP_VERB_BDAT,
	LMTP_VERB_RSET,
	LMTP_VERB_NOOP,
	LMTP_VERB_QUIT,
	LMTP_VERB_VRFY,
	LMTP_VERB_HELP,
	LMTP_VERB_STARTTLS,
};

/* The verb (case-insensitive) of line; *args_r points after it and the
   spaces that follow (empty string if none). */
enum lmtp_verb lmtp_verb_parse(const char *line, const char **args_r);

enum lmtp_body {
	LMTP_BODY_7BIT = 0,
	LMTP_BODY_8BITMIME,
	LMTP_BODY_BINARYMIME,
};

struct lmtp_mail {
	char path[LMTP_PATH_MAX + 1];   /* "" for the null path <> */
	uint64_t size;                  /* SIZE=, 0 if not given */
	bool size_set;
	enum lmtp_body body;
	/* SMTPUTF8 (RFC 6531 3.4): the envelope may hold UTF-8 addresses */
	bool smtputf8;
};

struct lmtp_rcpt_addr {
	char path[LMTP_PATH_MAX + 1];   /* the address, source route removed */
};

/* A syntax error's reply, for the client as is. */
struct lmtp_error {
	const char *reply;   /* "501 5.1.7 Bad sender address syntax" */
};

/* RFC 6531 for one envelope address: a non-ASCII one needs SMTPUTF8 on
   MAIL ("553 5.6.7") and must be valid UTF-8 (a syntax error, 501
   5.1.7 for the sender, 5.1.3 for a recipient). Returns 0, or -1 with
   *error_r. */
int lmtp_address_check(const char *path, bool smtputf8, bool sender,
		       struct lmtp_error *error_r);
/* "FROM:<path> [params]" of MAIL, the path checked by
   lmtp_address_check(). Returns 0, or -1 with *error_r. */
int lmtp_parse_mail(const char *args, struct lmtp_mail *mail_r,
		    struct lmtp_error *error_r);
/* "TO:<path> [params]" of RCPT (ORCPT and NOTIFY are accepted and not
   used). Returns 0, or -1 with *error_r. */
int lmtp_parse_rcpt(const char *args, struct lmtp_rcpt_addr *rcpt_r,
		    struct lmtp_error *error_r);
/* "<size> [LAST]" of BDAT. Returns 0 or -1. */
int lmtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r);

/* The recipient address split for the userdb: local part without the
   detail (the part after the first recipient_delimiter character), the
   detail, and the domain ("" without '@'). Buffers of LMTP_PATH_MAX+1. */
void lmtp_address_split(const char *address, const char *delimiter,
			char *user_r, char *detail_r, char *domain_r);
/* The userdb key of user@domain as lmtp_username_format says (%u %n %d,
   %L lowercases, %%). Returns 0, or -1 if it would not fit dest_size. */
int lmtp_username_format(const char *format, const char *user,
			 const char *domain, char *dest, size_t dest_size);

#endif
