#ifndef ADMIN_OUTPUT_H
#define ADMIN_OUTPUT_H
/* What moatadm prints: rows of (key, value) pairs, as text for people
   or as one JSON document per command (--json). Rows are printed as
   they come: memory does not grow with their number. */

#include "admin-common.h"

enum admin_output_shape {
	/* text: a header of the keys, then one TAB-separated line per row;
	   JSON: an array of objects */
	ADMIN_OUTPUT_TABLE,
	/* text: "key: value" lines, a blank line between rows; JSON: an
	   array of objects */
	ADMIN_OUTPUT_RECORDS,
	/* exactly one row. text: "key: value" lines; JSON: one object */
	ADMIN_OUTPUT_OBJECT,
};

struct admin_output;

/* numeric_keys (NULL-terminated, may be NULL): keys whose values are
   printed as JSON numbers (null when empty). */
struct admin_output *admin_output_begin(struct admin_ctx *ctx,
					enum admin_output_shape shape,
					const char *const *numeric_keys);
/* Every following row starts with the field key = value (moatadm -A:
   the user). NULL key: none. The strings must outlive the rows. */
void admin_output_set_prefix(struct admin_output *out, const char *key,
			     const char *value);
/* kv: key, value, key, value, ..., NULL. Every row of a TABLE has the
   first row's keys. */
void admin_output_row(struct admin_output *out, const char *const *kv);
void admin_output_rowv(struct admin_output *out, ...) ATTR_NULL_TERMINATED;
/* A row built field by field (values that are not C strings: message
   bodies). At most ADMIN_OUTPUT_FIELDS_MAX fields; more are dropped. */
#define ADMIN_OUTPUT_FIELDS_MAX 32
void admin_output_row_begin(struct admin_output *out);
void admin_output_field(struct admin_output *out, const char *key,
			const void *data, size_t size);
void admin_output_row_end(struct admin_output *out);
/* Close the document. With a failure code (exit_code != 0) the JSON
   error document replaces an empty result (not with -A, whose users'
   failures went to stderr); otherwise the error goes to stderr after
   the document. Returns exit_code. */
int admin_output_end(struct admin_output **out, int exit_code,
		     const char *code, const char *text);

/* Drop an output whose command failed before any row and reported it. */
void admin_output_abort(struct admin_output **out);

/* moatadm -A's workers (admin-users.c) hand their rows to the parent,
   which prints them: after admin_output_forward(out, fd) every row goes
   to fd as a frame instead of stdout. A frame is 'R', the field count
   (uint32), then per field the key's and the value's length (uint32,
   uint64) and their bytes; or 'U' and an exit code (int32): a user is
   done. Host byte order: both ends are this program. */
#define ADMIN_FRAME_KEY_MAX 64
void admin_output_forward(struct admin_output *out, int fd);
/* Send the 'U' frame of a user's exit code. Returns 0 or -1. */
int admin_output_forward_done(int fd, int exit_code);
/* Read one frame from fd (blocking): a row is printed to out, a 'U'
   frame's code goes to *exit_code_r. Returns 1 for a row, 2 for 'U',
   0 at the end, -1 for a broken frame (a value above max_value). */
int admin_output_relay(struct admin_output *out, int fd, uint64_t max_value,
		       int *exit_code_r);

/* JSON string of size bytes to stdout (quotes included); invalid UTF-8
   bytes become U+FFFD. */
void admin_json_string(const void *data, size_t size);

#endif
