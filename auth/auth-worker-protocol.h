#ifndef AUTH_WORKER_PROTOCOL_H
#define AUTH_WORKER_PROTOCOL_H
/* Records of moat-auth-worker (auth <-> auth-worker, doc/architecture.md):
     PASSV <id> <driver> <args> <user> <b64:password> <rip>
       -> OK <id> <user> | FAIL <id> authfailed|nologin|tempfail
     USER <id> <driver> <args> <user>
       -> USER <id> <uid> <gid> <home> | NOTFOUND <id> | FAIL <id> tempfail
   Parsing only, shared by both sides and the unit test: a record that
   does not parse is malformed and closes the connection. */

#include "mempool.h"

#include <sys/types.h>

#define AUTH_WORKER_ID_MAX_LEN 10        /* a decimal unsigned int */
#define AUTH_WORKER_DRIVER_MAX_LEN 16
#define AUTH_WORKER_ARGS_MAX_LEN 256
#define AUTH_WORKER_USER_MAX_LEN 256     /* SASL_MAX_USERNAME */
/* base64 of the longest password a SASL response can carry (8 KiB) */
#define AUTH_WORKER_PASSWORD_B64_MAX_LEN (((8192 + 2) / 3) * 4)
#define AUTH_WORKER_IP_MAX_LEN 64
#define AUTH_WORKER_HOME_MAX_LEN 1024

enum auth_worker_request_type {
	AUTH_WORKER_PASSV,
	AUTH_WORKER_USER,
};

struct auth_worker_request {
	enum auth_worker_request_type type;
	unsigned int id;
	const char *driver, *args, *user;
	const char *password_b64, *rip;   /* PASSV only */
};

enum auth_worker_reply_type {
	AUTH_WORKER_REPLY_OK,         /* user */
	AUTH_WORKER_REPLY_FAIL,       /* code */
	AUTH_WORKER_REPLY_USER,       /* uid, gid, home */
	AUTH_WORKER_REPLY_NOTFOUND,
};

struct auth_worker_reply {
	enum auth_worker_reply_type type;
	unsigned int id;
	const char *user;         /* OK */
	const char *code;         /* FAIL: authfailed, nologin or tempfail */
	uid_t uid;                /* USER */
	gid_t gid;
	const char *home;
};

/* True if value fits max_len and holds no control byte (empty only if
   allow_empty): what every field of these records must be. */
bool auth_worker_field_valid(const char *value, size_t max_len,
			     bool allow_empty);

/* 0 or -1 (malformed). The results point into args. */
int auth_worker_parse_request(const char *const *args,
			      struct auth_worker_request *request_r);
int auth_worker_parse_reply(const char *const *args,
			    struct auth_worker_reply *reply_r);

#endif
