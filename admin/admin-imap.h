#ifndef ADMIN_IMAP_H
#define ADMIN_IMAP_H
/* A small blocking IMAP client over the session master hands moatadm
   (MAIL-OK): commands go to the user's imap process, which stays the one
   writer of the user's index. One response is held at a time, bounded
   by max_response (the largest message the server stores, plus room). */

#include "admin-common.h"

/* Longest wait for the server's next bytes. */
#define ADMIN_IMAP_TIMEOUT_MSECS 60000
/* Room for a response's own text around its largest literal. */
#define ADMIN_IMAP_RESPONSE_SLACK (1024 * 1024)

struct admin_imap;

/* resp: one whole untagged response without its final CRLF, literals
   inline ("{N}\r\n" and the N bytes); valid during the call. */
typedef void admin_imap_untagged_t(void *context, const char *resp,
				   size_t len);

/* Takes fd; waits for the session's "a0 OK". NULL with *error_r. */
struct admin_imap *admin_imap_open(int fd, uint64_t max_response,
				   pool_t pool, const char **error_r);
/* LOGOUT and close. */
void admin_imap_close(struct admin_imap **imap);
/* Send "tag command" (command may hold LITERAL+ literals) and read up to
   its tagged answer, giving each untagged response to cb (may be NULL).
   Returns 0 for OK, 1 for NO, -1 for BAD or a broken session; *text_r
   is the answer's text ("[NONEXISTENT] No such mailbox") or the error. */
int admin_imap_run(struct admin_imap *imap, const char *command,
		   admin_imap_untagged_t *cb, void *context,
		   const char **text_r);

/* The same with size bytes of data sent right after command (the bytes
   of a LITERAL+ literal that command announces: APPEND). */
int admin_imap_run_data(struct admin_imap *imap, const char *command,
			const void *data, size_t size,
			admin_imap_untagged_t *cb, void *context,
			const char **text_r);

/* Parsing a response's values, left to right. */
enum admin_imap_value_type {
	ADMIN_IMAP_VALUE_END = 0,
	ADMIN_IMAP_VALUE_ATOM,     /* also numbers, flags, BODY[...] */
	ADMIN_IMAP_VALUE_STRING,   /* quoted or literal, decoded */
	ADMIN_IMAP_VALUE_NIL,
	ADMIN_IMAP_VALUE_LIST,     /* data: inside the parentheses */
	ADMIN_IMAP_VALUE_ERROR,
};

struct admin_imap_value {
	enum admin_imap_value_type type;
	const char *data;          /* NUL-terminated for atoms and strings */
	size_t size;
};

/* The value at *pos (skipping a space), moving *pos past it. Strings
   are unescaped into pool; the rest point into the response. */
void admin_imap_value_next(pool_t pool, const char **pos, const char *end,
			   struct admin_imap_value *value_r);
/* The "KEY value KEY value ..." pairs of list (a FETCH or a STATUS
   response's list; nothing if it is not a list): values_r[i] becomes
   the value of the last pair whose key is keys[i] (any case), the
   others keep what the caller put there. The walk ends at the list's
   end or at a pair that does not parse. */
void admin_imap_list_pairs(pool_t pool, const struct admin_imap_value *list,
			   const char *const *keys, unsigned int key_count,
			   struct admin_imap_value *values_r);
/* "NAME" quoted for a command, or a LITERAL+ literal when it is not
   plain printable ASCII. */
const char *admin_imap_quote(pool_t pool, const char *str);
/* A UTF-8 mailbox name as IMAP writes it (modified UTF-7, quoted); NULL
   if it is not UTF-8. */
const char *admin_imap_mailbox(pool_t pool, const char *utf8);
/* Modified UTF-7 back to UTF-8 (the name as is if it does not decode). */
const char *admin_imap_mailbox_utf8(pool_t pool, const char *mutf7);

#endif
