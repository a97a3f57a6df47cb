/* moat-auth-worker record parsing: see auth-worker-protocol.h. */
#include "lib.h"
#include "strfuncs.h"
#include "auth-worker-protocol.h"

/* A field must be present, within max_len and free of control bytes. */
bool auth_worker_field_valid(const char *value, size_t max_len,
			     bool allow_empty)
{
	size_t len;

	if (value == NULL)
		return false;
	len = strlen(value);
	if (len > max_len || (len == 0 && !allow_empty))
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f)
			return false;
	}
	return true;
}

static int parse_id(const char *str, unsigned int *id_r)
{
	if (!auth_worker_field_valid(str, AUTH_WORKER_ID_MAX_LEN, false))
		return -1;
	return str_to_uint(str, id_r);
}

int auth_worker_parse_request(const char *const *args,
			      struct auth_worker_request *request_r)
{
	unsigned int count = str_array_length(args);

	memset(request_r, 0, sizeof(*request_r));
	if (count == 7 && strcmp(args[0], "PASSV") == 0)
		request_r->type = AUTH_WORKER_PASSV;
	else if (count == 5 && strcmp(args[0], "USER") == 0)
		request_r->type = AUTH_WORKER_USER;
	else
		return -1;
	if (parse_id(args[1], &request_r->id) < 0 ||
	    !auth_worker_field_valid(args[2], AUTH_WORKER_DRIVER_MAX_LEN, false) ||
	    !auth_worker_field_valid(args[3], AUTH_WORKER_ARGS_MAX_LEN, true) ||
	    !auth_worker_field_valid(args[4], AUTH_WORKER_USER_MAX_LEN, false))
		return -1;
	request_r->driver = args[2];
	request_r->args = args[3];
	request_r->user = args[4];
	if (request_r->type == AUTH_WORKER_USER)
		return 0;
	if (!auth_worker_field_valid(args[5], AUTH_WORKER_PASSWORD_B64_MAX_LEN, false) ||
	    !auth_worker_field_valid(args[6], AUTH_WORKER_IP_MAX_LEN, true))
		return -1;
	request_r->password_b64 = args[5];
	request_r->rip = args[6];
	return 0;
}

static int parse_fail_code(const char *code)
{
	return strcmp(code, "authfailed") == 0 || strcmp(code, "nologin") == 0 ||
		strcmp(code, "tempfail") == 0 ? 0 : -1;
}

int auth_worker_parse_reply(const char *const *args,
			    struct auth_worker_reply *reply_r)
{
	unsigned int count = str_array_length(args), uid, gid;

	memset(reply_r, 0, sizeof(*reply_r));
	if (count < 2 || parse_id(args[1], &reply_r->id) < 0)
		return -1;
	if (count == 3 && strcmp(args[0], "OK") == 0 &&
	    auth_worker_field_valid(args[2], AUTH_WORKER_USER_MAX_LEN, false)) {
		reply_r->type = AUTH_WORKER_REPLY_OK;
		reply_r->user = args[2];
	} else if (count == 3 && strcmp(args[0], "FAIL") == 0 &&
		   parse_fail_code(args[2]) == 0) {
		reply_r->type = AUTH_WORKER_REPLY_FAIL;
		reply_r->code = args[2];
	} else if (count == 5 && strcmp(args[0], "USER") == 0 &&
		   str_to_uint(args[2], &uid) == 0 &&
		   str_to_uint(args[3], &gid) == 0 &&
		   auth_worker_field_valid(args[4], AUTH_WORKER_HOME_MAX_LEN, true)) {
		reply_r->type = AUTH_WORKER_REPLY_USER;
		reply_r->uid = uid;
		reply_r->gid = gid;
		reply_r->home = args[4];
	} else if (count == 2 && strcmp(args[0], "NOTFOUND") == 0) {
		reply_r->type = AUTH_WORKER_REPLY_NOTFOUND;
	} else {
		return -1;
	}
	return 0;
}
