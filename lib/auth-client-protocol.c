/* moat-auth-client records; see auth-client-protocol.h. */
#include "lib.h"
#include "strfuncs.h"
#include "master-service.h"
#include "auth-client-protocol.h"

static unsigned int args_count(const char *const *args)
{
	unsigned int count = 0;

	while (args[count] != NULL)
		count++;
	return count;
}

bool auth_proto_token_valid(const char *token)
{
	size_t len = strlen(token);

	if (len != AUTH_TOKEN_BYTES * 2)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = token[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* Non-empty, at most AUTH_PROTO_USER_MAX_LEN, no control characters:
   imap-login refused those in the certificate's name already. */
static bool cert_user_valid(const char *user)
{
	size_t len = strlen(user);

	if (len == 0 || len > AUTH_PROTO_USER_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)user[i] < 0x20 || user[i] == 0x7f)
			return false;
	}
	return true;
}

static int parse_optional(const char *const *args,
			  struct auth_proto_request *req, const char **error_r)
{
	const char *value;

	for (; *args != NULL; args++) {
		if (str_begins(*args, "cbind=", &value) &&
		    req->cbind_b64 == NULL) {
			if (value[0] == '\0') {
				*error_r = "AUTH with a bad cbind=";
				return -1;
			}
			req->cbind_b64 = value;
		} else if (str_begins(*args, "cert_user=", &value) &&
			   req->cert_user == NULL) {
			if (!cert_user_valid(value)) {
				*error_r = "AUTH with a bad cert_user=";
				return -1;
			}
			req->cert_user = value;
		} else {
			*error_r = "AUTH with an unknown or repeated optional field";
			return -1;
		}
	}
	return 0;
}

static int parse_auth(const char *const *args, unsigned int count,
		      struct auth_proto_request *req, const char **error_r)
{
	if (count < 7 || count > 7 + AUTH_PROTO_MAX_OPTIONAL) {
		*error_r = "AUTH needs 6 arguments and optional fields";
		return -1;
	}
	if (args[1][0] == '\0' || strlen(args[1]) > AUTH_PROTO_ID_MAX_LEN) {
		*error_r = "AUTH with an empty or too long id";
		return -1;
	}
	if (strlen(args[3]) > AUTH_PROTO_IP_MAX_LEN ||
	    strlen(args[4]) > AUTH_PROTO_IP_MAX_LEN) {
		*error_r = "AUTH with a too long IP address";
		return -1;
	}
	if (strcmp(args[5], "0") != 0 && strcmp(args[5], "1") != 0) {
		*error_r = "AUTH secured flag is not 0 or 1";
		return -1;
	}
	req->type = AUTH_PROTO_REQUEST_AUTH;
	req->id = args[1];
	req->mech = args[2];
	req->remote_ip = args[3];
	req->local_ip = args[4];
	req->secured = args[5][0] == '1';
	req->initial_b64 = args[6];
	return parse_optional(args + 7, req, error_r);
}

int auth_proto_parse_request(const char *const *args,
			     struct auth_proto_request *req_r,
			     const char **error_r)
{
	unsigned int count = args_count(args);
	struct auth_proto_request req;

	memset(&req, 0, sizeof(req));
	if (count > 0 && strcmp(args[0], "AUTH") == 0) {
		if (parse_auth(args, count, &req, error_r) < 0)
			return -1;
	} else if (count > 0 && strcmp(args[0], "CONT") == 0) {
		if (count != 3) {
			*error_r = "CONT needs 2 arguments";
			return -1;
		}
		req.type = AUTH_PROTO_REQUEST_CONT;
		req.id = args[1];
		req.response = args[2];
	} else {
		*error_r = "unknown record";
		return -1;
	}
	*req_r = req;
	return 0;
}

int auth_proto_parse_reply(const char *const *args,
			   struct auth_proto_reply *reply_r)
{
	unsigned int count = args_count(args);
	struct auth_proto_reply reply;

	memset(&reply, 0, sizeof(reply));
	/* ids are ours: decimal, never 0 */
	if (count < 2 || str_to_uint(args[1], &reply.id) < 0 || reply.id == 0)
		return -1;
	if (strcmp(args[0], "CONT") == 0 && count == 3) {
		reply.type = AUTH_PROTO_REPLY_CONT;
		reply.challenge = args[2];
	} else if (strcmp(args[0], "OK") == 0 && count == 4) {
		if (args[2][0] == '\0' || !auth_proto_token_valid(args[3]))
			return -1;
		reply.type = AUTH_PROTO_REPLY_OK;
		reply.user = args[2];
		reply.token = args[3];
	} else if (strcmp(args[0], "FAIL") == 0 && (count == 3 || count == 4)) {
		reply.type = AUTH_PROTO_REPLY_FAIL;
		reply.code = args[2];
		reply.text = count == 4 ? args[3] : NULL;
	} else {
		return -1;
	}
	*reply_r = reply;
	return 0;
}
