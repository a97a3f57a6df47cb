#ifndef RFC2231_H
#define RFC2231_H
/* MIME header values with parameters (RFC 2045 section 5.1, RFC 2183)
   and RFC 2231 parameter continuations.

   Continuations are merged: name*0, name*1 become "name"; if any piece
   was extended (name*0*=charset'lang'...) the result is "name*" whose
   value keeps the charset'language' prefix and the %XX escapes, as IMAP
   BODYSTRUCTURE reports it. rfc2231_decode_value() decodes such a value
   to UTF-8. */

#include "mempool.h"

/* Parameters kept per header value; more are ignored (a bound on the
   work and memory one crafted header can cause). */
#define RFC2231_MAX_PARAMS 256
/* Continuation index cap: "name*999999" must not allocate 999999 slots. */
#define RFC2231_MAX_CONTINUATION 1000

struct mime_param {
	const char *name;   /* lowercase */
	const char *value;
};

struct mime_value {
	const char *value;          /* "type/subtype" lowercase, or token */
	bool value_valid;           /* the syntax of value was right */
	bool trailing_garbage;      /* something after the value that is
				       not a parameter list */
	bool type_only;             /* content_type: the whole value is one
				       token without "/subtype" (value is
				       that token) */
	const struct mime_param *params;
	unsigned int params_count;
};

/* Parse "type/subtype *(; param)" (content_type=true) or
   "token *(; param)". Never fails: whatever does not parse is skipped.
   Strings come from pool. */
void rfc2231_parse(pool_t pool, const char *str, bool content_type,
		   struct mime_value *result_r);

/* Value of parameter name (lowercase) or NULL. */
const char *mime_value_get_param(const struct mime_value *value,
				 const char *name);

/* Decode "charset'lang'%XX..." to UTF-8. Returns NULL if the charset is
   unknown to iconv. */
const char *rfc2231_decode_value(pool_t pool, const char *value);

#endif
