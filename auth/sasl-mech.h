#ifndef SASL_MECH_H
#define SASL_MECH_H
/* Server side of the SASL mechanisms (RFC 4422) that carry a user name
   and a password: PLAIN (RFC 4616) and LOGIN. A mechanism only turns
   client responses into credentials; checking them is auth-db's job.
   Responses here are already base64-decoded. */

#include "mempool.h"

/* Largest decoded client response: a PLAIN message is at most a user
   name, an authzid and a password; 8 KiB leaves room for long SSO-style
   user names while bounding what a client can make us hold. */
#define SASL_MAX_RESPONSE_SIZE 8192
/* Longest user name (authcid/authzid) a mechanism accepts. */
#define SASL_MAX_USERNAME 256

enum sasl_result {
	SASL_RESULT_CONTINUE,  /* send *challenge_r, wait for a response */
	SASL_RESULT_DONE,      /* ex->authcid and ex->password are set */
	SASL_RESULT_FAIL,      /* malformed response: *error_r (for the log) */
};

struct sasl_exchange;

struct sasl_mech {
	const char *name;      /* upper case, as on the wire */
	/* data == NULL: no data (the first step when the client sent no
	   initial response). data is NUL-terminated past size. */
	enum sasl_result (*step)(struct sasl_exchange *ex,
				 const unsigned char *data, size_t size,
				 const char **challenge_r, const char **error_r);
};

struct sasl_exchange {
	const struct sasl_mech *mech;
	pool_t pool;           /* the request's; holds the credentials */
	unsigned int step;
	const char *authcid;
	char *password;        /* wiped by sasl_exchange_wipe() */
};

extern const struct sasl_mech sasl_mech_plain;
extern const struct sasl_mech sasl_mech_login;

/* Case-insensitive; NULL if unsupported. */
const struct sasl_mech *sasl_mech_find(const char *name);

void sasl_exchange_init(struct sasl_exchange *ex, const struct sasl_mech *mech,
			pool_t pool);
enum sasl_result sasl_exchange_step(struct sasl_exchange *ex,
				    const unsigned char *data, size_t size,
				    const char **challenge_r,
				    const char **error_r);
/* Overwrite the password; call before the pool goes away. */
void sasl_exchange_wipe(struct sasl_exchange *ex);

/* For the mechanisms: a user name or password taken from a response
   must be non-empty, hold no NUL and fit max_len. */
bool sasl_field_valid(const unsigned char *data, size_t size, size_t max_len);

#endif
