#ifndef AUTH_CLIENT_PROTOCOL_H
#define AUTH_CLIENT_PROTOCOL_H
/* The records of moat-auth-client (doc/architecture.md), over lib/ipc:
   imap-login asks auth with

     AUTH <id> <mech> <remote_ip> <local_ip> <secured 0|1> <b64 initial>
          [cbind=<b64>] [cert_user=<user>]
     CONT <id> <b64 response, or "*" to cancel>

   and auth answers, for the request's id,

     CONT <id> <b64 challenge>
     OK <id> <user> <token: AUTH_TOKEN_BYTES in hex>
     FAIL <id> <code> [<text>]

   Both ends take the records apart here, so the checks are the same on
   both sides and fuzzed together (tests/fuzz/fuzz-auth-client.c). Only
   the form is checked: what a mechanism, a code or a user means is the
   caller's. Every string of a parsed record points into args. */

#include <stdbool.h>

/* Request ids: imap-login sends decimal unsigned ints, auth takes any
   short string. */
#define AUTH_PROTO_ID_MAX_LEN 32
/* An IPv6 address with scope, with room. */
#define AUTH_PROTO_IP_MAX_LEN 64
/* cert_user= (auth's SASL_MAX_USERNAME). */
#define AUTH_PROTO_USER_MAX_LEN 256
/* AUTH's optional fields: cbind= and cert_user=, each at most once. */
#define AUTH_PROTO_MAX_OPTIONAL 2

enum auth_proto_request_type {
	AUTH_PROTO_REQUEST_AUTH = 0,
	AUTH_PROTO_REQUEST_CONT,
};

struct auth_proto_request {
	enum auth_proto_request_type type;
	const char *id;
	/* AUTH */
	const char *mech, *remote_ip, *local_ip, *initial_b64;
	bool secured;
	const char *cbind_b64;         /* after "cbind=", or NULL */
	const char *cert_user;         /* after "cert_user=", or NULL */
	/* CONT */
	const char *response;          /* base64, or "*" */
};

/* A record imap-login sent auth. Returns 0, or -1 with *error_r (static
   text for auth's log: imap-login's bug, or a compromised imap-login). */
int auth_proto_parse_request(const char *const *args,
			     struct auth_proto_request *req_r,
			     const char **error_r);

enum auth_proto_reply_type {
	AUTH_PROTO_REPLY_CONT = 0,
	AUTH_PROTO_REPLY_OK,
	AUTH_PROTO_REPLY_FAIL,
};

struct auth_proto_reply {
	enum auth_proto_reply_type type;
	unsigned int id;               /* never 0 */
	const char *challenge;         /* CONT */
	const char *user, *token;      /* OK: user non-empty, token hex */
	const char *code, *text;       /* FAIL: text may be NULL */
};

/* A record auth sent imap-login. Returns 0, or -1 if it is malformed
   (imap-login then drops the auth connection). */
int auth_proto_parse_reply(const char *const *args,
			   struct auth_proto_reply *reply_r);

/* AUTH_TOKEN_BYTES (lib/master-service.h) in hex, either case. */
bool auth_proto_token_valid(const char *token);

#endif
