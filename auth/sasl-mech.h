#ifndef SASL_MECH_H
#define SASL_MECH_H
/* Server side of the SASL mechanisms (RFC 4422). PLAIN (RFC 4616) and
   LOGIN only turn client responses into a user name and a password that
   auth-db checks. SCRAM-* (RFC 5802, 7677, 9266), CRAM-MD5 (RFC 2195),
   OAUTHBEARER (RFC 7628), XOAUTH2 and EXTERNAL (RFC 4422 appendix A,
   trusting the TLS client certificate) check the credentials themselves,
   with the stored secret or token the caller's lookup functions give
   them, and end with ex->verified set. Responses here are already
   base64-decoded. */

#include "mempool.h"

/* Largest decoded client response: a PLAIN message is at most a user
   name, an authzid and a password; 8 KiB leaves room for long SSO-style
   user names while bounding what a client can make us hold. */
#define SASL_MAX_RESPONSE_SIZE 8192
/* Longest user name (authcid/authzid) a mechanism accepts. */
#define SASL_MAX_USERNAME 256

enum sasl_result {
	SASL_RESULT_CONTINUE,  /* send *challenge_r, wait for a response */
	/* ex->authcid is set, and ex->password unless ex->verified */
	SASL_RESULT_DONE,
	SASL_RESULT_FAIL,      /* malformed response: *error_r (for the log) */
	/* wrong credentials or unknown user: *error_r is the log reason */
	SASL_RESULT_AUTHFAILED,
	SASL_RESULT_TEMPFAIL,  /* the lookup failed (already logged) */
};

enum sasl_lookup_result {
	SASL_LOOKUP_OK,
	SASL_LOOKUP_UNKNOWN,
	SASL_LOOKUP_TEMPFAIL,
};

struct sasl_exchange;

/* The user's stored password for mechanisms that compute on it: its
   scheme's canonical name (password_split_scheme) and data, in pool. */
typedef enum sasl_lookup_result
sasl_lookup_password_func_t(void *context, pool_t pool, const char *user,
			    const char **scheme_r, const char **data_r);
/* The user an OAuth 2.0 bearer token belongs to, if the token is known
   and not expired. */
typedef enum sasl_lookup_result
sasl_lookup_token_func_t(void *context, pool_t pool, const char *token,
			 const char **user_r);

/* Unit tests only: fixed SCRAM values instead of random ones, so the RFC
   examples can be replayed exactly. */
struct sasl_test_params {
	const char *scram_nonce;          /* the server's part */
	const unsigned char *scram_salt;  /* used for {PLAIN} passwords */
	size_t scram_salt_size;
	unsigned int scram_iterations;
	const char *cram_challenge;
};

struct sasl_mech {
	const char *name;      /* upper case, as on the wire */
	/* data == NULL: no data (the first step when the client sent no
	   initial response). data is NUL-terminated past size. */
	enum sasl_result (*step)(struct sasl_exchange *ex,
				 const unsigned char *data, size_t size,
				 const char **challenge_r, const char **error_r);
	/* Optional: overwrite secrets in ex->mech_state. */
	void (*wipe)(struct sasl_exchange *ex);
};

/* tls-exporter output is 32 bytes (RFC 9266); anything much longer from
   imap-login is a bug. */
#define SASL_CBIND_MAX_SIZE 64

struct sasl_exchange {
	const struct sasl_mech *mech;
	pool_t pool;           /* the request's; holds the credentials */
	unsigned int step;
	const char *authcid;
	char *password;        /* wiped by sasl_exchange_wipe() */
	bool verified;         /* the mechanism checked the credentials */

	/* Set by the caller after sasl_exchange_init(): */
	sasl_lookup_password_func_t *lookup_password;
	sasl_lookup_token_func_t *lookup_token;
	void *lookup_context;
	/* The connection's tls-exporter channel binding data (RFC 9266),
	   NULL when the connection has no TLS. */
	const unsigned char *cbind_data;
	size_t cbind_size;
	/* True if a -PLUS mechanism was offered on this connection: a SCRAM
	   client that says "y" (it could bind but thinks we cannot) is then
	   a downgrade (RFC 5802 section 6). */
	bool cbind_offered;
	/* The user named by the connection's verified TLS client
	   certificate (imap-login's cert_user=), NULL without one. */
	const char *cert_user;
	const struct sasl_test_params *test;

	void *mech_state;      /* the mechanism's, from pool */
};

extern const struct sasl_mech sasl_mech_plain;
extern const struct sasl_mech sasl_mech_login;
extern const struct sasl_mech sasl_mech_scram_sha1;
extern const struct sasl_mech sasl_mech_scram_sha1_plus;
extern const struct sasl_mech sasl_mech_scram_sha256;
extern const struct sasl_mech sasl_mech_scram_sha256_plus;
extern const struct sasl_mech sasl_mech_cram_md5;
extern const struct sasl_mech sasl_mech_oauthbearer;
extern const struct sasl_mech sasl_mech_xoauth2;
extern const struct sasl_mech sasl_mech_external;

/* Case-insensitive; NULL if unsupported. */
const struct sasl_mech *sasl_mech_find(const char *name);
/* True for the mechanisms that send a reusable secret in the clear
   (PLAIN, LOGIN, and bearer tokens: OAUTHBEARER, XOAUTH2), which
   disable_plaintext_auth refuses without TLS. */
bool sasl_mech_is_plaintext(const struct sasl_mech *mech);
/* True for the mechanisms that need channel binding data (-PLUS). */
bool sasl_mech_is_plus(const struct sasl_mech *mech);

void sasl_exchange_init(struct sasl_exchange *ex, const struct sasl_mech *mech,
			pool_t pool);
enum sasl_result sasl_exchange_step(struct sasl_exchange *ex,
				    const unsigned char *data, size_t size,
				    const char **challenge_r,
				    const char **error_r);
/* Overwrite the password and the mechanism's secrets; call before the
   pool goes away. */
void sasl_exchange_wipe(struct sasl_exchange *ex);

/* For the mechanisms: a user name or password taken from a response
   must be non-empty, hold no NUL and fit max_len. */
bool sasl_field_valid(const unsigned char *data, size_t size, size_t max_len);

#endif
