#ifndef IMAP_PARSER_H
#define IMAP_PARSER_H
/* IMAP command parser (RFC 3501 / RFC 9051 syntax), shared by imap-login
   (pre-auth) and imap (post-auth). It is fed raw bytes and builds the
   arguments of one command line into its own pool; it never reads a
   socket, so it can be fuzzed and unit-tested alone. A line may arrive
   split at any byte: all state survives between feeds, and every byte
   handed to it is copied, so the caller need not keep its input.

   Grammar accepted for each argument:
     NIL                       -> IMAP_ARG_NIL (unquoted, any case; str
                                  keeps the text as sent, since "NIL" is
                                  also a valid atom/astring)
     atom                      -> IMAP_ARG_ATOM. Any bytes except SP, CTL,
                                  '(', ')', '"', and '{' or "~{" at the
                                  start. '\' is allowed (flags: \Seen,
                                  \*), and so are '%', '*', ']' (LIST
                                  patterns, flags) and 8-bit bytes.
                                  Except in the first argument (the tag),
                                  a '[' opens a section in which SP, '('
                                  and ')' belong to the atom up to the
                                  next ']' (a ']' inside a "quoted" part of
                                  the section does not close it), so
                                  BODY[HEADER.FIELDS (A B)]<0.10> is one
                                  atom. A line end inside a section ends
                                  the atom (a mailbox name such as a[b).
     "quoted"                  -> IMAP_ARG_STRING (\" and \\ unescaped;
                                  any other escape, CR, LF or NUL is an
                                  error; 8-bit bytes are kept, and must
                                  be UTF-8 with
                                  IMAP_PARSE_FLAG_UTF8_QUOTED)
     {n}CRLF / {n+}CRLF data   -> IMAP_ARG_LITERAL (n bytes, may hold NULs
     ~{n}CRLF / ~{n+}CRLF data    except where the caller forbids them;
                                  literal8 sets arg->literal8, {n+} sets
                                  arg->literal_nonsync)
     ( args )                  -> IMAP_ARG_LIST (nesting bounded)
   Arguments are separated by exactly one SP: a space at the start or end
   of the line, after '(' or before ')', or two spaces in a row are errors.
   The line ends with CRLF (a bare LF is accepted too, also after a
   literal announcement). The returned array ends with IMAP_ARG_EOL. An
   empty line gives IMAP_PARSE_DONE with just the EOL: the caller decides
   what an empty command means. Checking that the first argument is a
   valid tag and the second a command name is the caller's job too
   (imap_parser_get_tag() helps).

   Limits: max_line_length bounds the bytes of the line outside literals
   (CR and LF not counted, literal announcements counted; an APPEND line
   continued by imap_parser_continue_line() is one line), max_literal_size
   bounds each literal, max_command_size the line and the data of all its
   literals together (so the memory one command can make the parser hold:
   a command of many small literals is refused as "Command too large"),
   max_list_depth the nesting, and max_args the total number of arguments
   of a command (a list counts as one argument besides its elements).
   Literals the caller streams itself (IMAP_PARSE_FLAG_LITERAL_SIZE) count
   toward neither literal limit. What a command made the parser allocate
   beyond small scratch buffers is freed at imap_parser_reset().

   Errors: IMAP_PARSE_ERROR does not consume the offending byte. After a
   non-fatal error the parser discards the rest of the line by itself (and
   the data of any non-synchronizing literal announced in it, whose bytes
   are already on the way; a synchronizing literal in a rejected line is
   never sent, since the client gets our BAD instead of "+"). Either keep
   feeding until IMAP_PARSE_DONE with args == NULL marks the end of the
   bad line, or call imap_parser_reset() at once: the parser then skips
   the rest of the bad line silently and parses the next one. */

#include "mempool.h"

/* Enough for FETCH/SEARCH/STORE with long lists; stops argument bombs.
   The default and the ceiling of max_args. */
#define IMAP_PARSER_MAX_ARGS 10000
/* RFC 7888 section 5: with LITERAL- a {n+} literal may hold at most this
   many bytes. */
#define IMAP_PARSER_LITERAL_MINUS_MAX 4096

enum imap_arg_type {
	IMAP_ARG_NIL = 0,
	IMAP_ARG_ATOM,
	IMAP_ARG_STRING,
	IMAP_ARG_LITERAL,
	IMAP_ARG_LIST,
	/* Only with IMAP_PARSE_FLAG_LITERAL_SIZE: the literal's data is not
	   read; the caller streams it from the connection itself. */
	IMAP_ARG_LITERAL_SIZE,
	IMAP_ARG_EOL,
};

struct imap_arg {
	enum imap_arg_type type;
	struct imap_arg *parent;         /* enclosing list, or NULL */
	/* NIL, ATOM, STRING, LITERAL: NUL-terminated, str_len bytes (a
	   literal may contain NULs). NULL for LIST, LITERAL_SIZE and EOL. */
	const char *str;
	size_t str_len;
	/* LIST: list_count args followed by an IMAP_ARG_EOL. */
	struct imap_arg *list;
	unsigned int list_count;
	/* LITERAL, LITERAL_SIZE */
	uint64_t literal_size;
	bool literal8;                   /* ~{n} */
	bool literal_nonsync;            /* {n+} */
};

struct imap_parser_settings {
	size_t max_line_length;          /* e.g. 65536; must be > 0 */
	uint64_t max_literal_size;       /* each literal, e.g. 64 KiB */
	/* The line and all its literals' data; 0 = max_line_length +
	   max_literal_size. */
	uint64_t max_command_size;
	/* Arguments per command; 0 (or more than IMAP_PARSER_MAX_ARGS) =
	   IMAP_PARSER_MAX_ARGS. */
	unsigned int max_args;
	unsigned int max_list_depth;     /* e.g. 32; 0 forbids lists */
	/* LITERAL- (RFC 7888): {n+} allowed only for
	   n <= IMAP_PARSER_LITERAL_MINUS_MAX. When false, LITERAL+ rules
	   apply (any size up to max_literal_size). */
	bool literal_minus;
};

enum imap_parser_flags {
	/* Stop at each literal of the line and return it as
	   IMAP_ARG_LITERAL_SIZE, the last argument parsed so far: last in
	   the array, or last in the innermost open list when the literal is
	   inside a list (CATENATE); such open lists hold what was parsed so
	   far. No IMAP_PARSE_NEED_CONTINUATION is returned: for a
	   synchronizing literal the caller sends "+" itself. The caller then
	   consumes literal_size bytes itself and calls
	   imap_parser_continue_line() to parse the rest of the line; several
	   literals in one line (MULTIAPPEND) are returned in turn.
	   max_literal_size does not apply to such a literal: the caller
	   checks literal_size itself (APPEND has its own limit). */
	IMAP_PARSE_FLAG_LITERAL_SIZE = 0x01,
	/* A literal may not contain NUL bytes (RFC 3501: NUL is not allowed
	   in literals except literal8). */
	IMAP_PARSE_FLAG_NO_NUL_IN_LITERAL = 0x02,
	/* A "quoted" string must be valid UTF-8 (RFC 6855 section 3, after
	   ENABLE UTF8=ACCEPT; RFC 9051 quoted): other 8-bit bytes are an
	   error ("Invalid UTF-8 in quoted string") at its closing quote.
	   Without the flag 8-bit bytes are kept unchecked. */
	IMAP_PARSE_FLAG_UTF8_QUOTED = 0x04,
};

enum imap_parse_result {
	/* All bytes given were consumed; feed more. */
	IMAP_PARSE_MORE = 0,
	/* A whole command line was parsed, up to and including its LF;
	   *args_r is set (NULL at the end of a line skipped after an error).
	   Call imap_parser_reset() before feeding the next line. */
	IMAP_PARSE_DONE,
	/* A synchronizing literal {n} was announced and its CRLF consumed:
	   the caller must send a continuation request ("+ ...") and then
	   feed its data. Returned once per such literal. */
	IMAP_PARSE_NEED_CONTINUATION,
	/* IMAP_PARSE_FLAG_LITERAL_SIZE stopped at a literal (its CRLF
	   consumed); *args_r is set as that flag describes. */
	IMAP_PARSE_LITERAL_SIZE,
	/* Syntax error or a limit hit: see imap_parser_get_error(). */
	IMAP_PARSE_ERROR,
};

struct imap_parser;

/* The parser keeps a copy of set. */
struct imap_parser *imap_parser_create(const struct imap_parser_settings *set);
void imap_parser_destroy(struct imap_parser **parser);
/* Forget the current command: free its arguments, tag and error (keeps
   settings). Where the command's bytes end is not forgotten: reset in the
   middle of a line (after a non-fatal error, or when the caller rejects a
   command early) makes the parser skip the rest of that line, and the
   data of any non-synchronizing literal in it, before parsing the next
   one. Exceptions, where the client sends nothing more for the line:
   right after IMAP_PARSE_NEED_CONTINUATION (the caller answered BAD
   instead of "+"), and right after IMAP_PARSE_LITERAL_SIZE for a
   synchronizing literal. Right after IMAP_PARSE_LITERAL_SIZE for a
   non-synchronizing literal, the literal's data (not consumed by the
   caller) is skipped too. A fatal error survives reset. */
void imap_parser_reset(struct imap_parser *parser);

/* Parse data. *consumed_r is set to the number of bytes used; bytes past
   the end of a finished line, and the byte that caused an error, are not
   consumed. *args_r is set for IMAP_PARSE_DONE and IMAP_PARSE_LITERAL_SIZE
   (else NULL). The args stay valid until the next reset. flags may change
   between calls; each call's flags apply to the bytes it parses. */
enum imap_parse_result
imap_parser_feed(struct imap_parser *parser, enum imap_parser_flags flags,
		 const unsigned char *data, size_t size, size_t *consumed_r,
		 const struct imap_arg **args_r);
/* After IMAP_PARSE_LITERAL_SIZE and the caller consumed the literal data:
   continue parsing the same line (its next arguments are appended after
   the ones already returned; the LITERAL_SIZE arg stays in place). Args
   returned earlier stay valid but do not see the new arguments: use the
   array that the next IMAP_PARSE_DONE / IMAP_PARSE_LITERAL_SIZE returns. */
void imap_parser_continue_line(struct imap_parser *parser);

/* The tag, once the first argument of the line was fully parsed and is a
   valid tag (an atom of ASTRING-CHARs except '+'); NULL otherwise. Valid
   after an error later in the line, so the error can be answered with
   the tag; cleared by reset. */
const char *imap_parser_get_tag(struct imap_parser *parser);

/* After IMAP_PARSE_ERROR: a human-readable reason (a static string, safe
   to send to the client), and whether the connection cannot be
   resynchronized (a non-synchronizing literal that is too big: its data
   is already on the way) so it must be closed. A fatal parser returns
   IMAP_PARSE_ERROR for every later feed. Returns NULL (and *fatal_r =
   false) when there was no error since the last reset. */
const char *imap_parser_get_error(struct imap_parser *parser, bool *fatal_r);

/* Bytes the parser holds now for the current command: its arguments'
   pool, argument array, scratch and literal buffers (for limits and
   tests; fixed-size parts are not counted). */
size_t imap_parser_get_memory_size(const struct imap_parser *parser);

/* ASTRING-CHAR except '+' (a tag character). */
bool imap_is_tag_char(unsigned char c);

/* ---- argument accessors (imap-arg.c) ---- */
/* The accessors that give a C string fail for literal8 and for args
   holding NUL bytes (binary data: read arg->str and arg->str_len). */
/* ATOM, or NIL (an atom spelled NIL: str is its text). */
bool imap_arg_get_atom(const struct imap_arg *arg, const char **str_r);
/* ATOM, NIL (its text), STRING or LITERAL: an astring. */
bool imap_arg_get_astring(const struct imap_arg *arg, const char **str_r);
/* STRING or LITERAL. */
bool imap_arg_get_string(const struct imap_arg *arg, const char **str_r);
/* NIL gives NULL; else as imap_arg_get_astring(). */
bool imap_arg_get_nstring(const struct imap_arg *arg, const char **str_r);
/* LIST: its args (ending in EOL) and count. */
bool imap_arg_get_list(const struct imap_arg *arg,
		       const struct imap_arg **list_r, unsigned int *count_r);
/* Case-insensitive compare of an ATOM (or NIL) with str. */
bool imap_arg_atom_equals(const struct imap_arg *arg, const char *str);
static inline bool imap_arg_is_eol(const struct imap_arg *arg)
{ return arg->type == IMAP_ARG_EOL; }

/* ---- response quoting ---- */
/* Strings shorter than this may be sent "quoted"; longer ones go as
   literals, which clients parse without scanning for escapes. */
#define IMAP_QUOTED_MAX_LEN 1024

/* imap_append_quoted() writes str as an IMAP string: "quoted" when it is
   shorter than IMAP_QUOTED_MAX_LEN and holds no CR, LF or 8-bit byte
   (inside, '"' and '\' are escaped as \" and \\), else as a {n}CRLF
   literal. imap_append_astring() writes an atom instead when str is a
   non-empty run of ASTRING-CHARs other than '[' and ']' and not "NIL" in
   any case; else as imap_append_quoted(). imap_append_nstring() writes
   NIL for NULL, else as imap_append_quoted(). Each returns 0, or -1 if
   buf reached its max_size (buf is then left as it was). */
struct buffer;
int imap_append_astring(struct buffer *buf, const char *str);
int imap_append_nstring(struct buffer *buf, const char *str);
int imap_append_quoted(struct buffer *buf, const char *str);

#endif
