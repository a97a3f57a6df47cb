/* OAUTHBEARER (RFC 7628) and XOAUTH2 (Google's older form): the client
   sends an OAuth 2.0 bearer token, which the caller's lookup_token turns
   into a user (moat checks tokens against a local file, no network).

     OAUTHBEARER  gs2-header ^A *(key "=" value ^A) ^A
                  with gs2-header "n,[a=user]," and "auth=Bearer TOKEN"
     XOAUTH2      "user=" user ^A "auth=Bearer " TOKEN ^A ^A

   A bad token is answered with an error challenge (a JSON status, RFC
   7628 section 3.2.2); the client's reply to it ends the exchange as a
   failure. A user the client names must be the token's user. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "sasl-mech.h"

#include <strings.h>

/* Longest bearer token accepted: JWTs run to a few KiB. */
#define OAUTH_TOKEN_MAX 4096
#define OAUTH_ERROR_JSON "{\"status\":\"invalid_token\"}"

struct oauth_state {
	const char *fail_reason;   /* error challenge sent */
};

/* The value of key in "key=value^A..." pairs (kv ends at the first
   empty pair), or NULL. */
static const char *oauth_kv_get(pool_t pool, const char *kv, const char *key)
{
	size_t klen = strlen(key);
	const char *end;

	while (*kv != '\0' && *kv != '\x01') {
		end = strchr(kv, '\x01');
		if (end == NULL)
			return NULL;
		if ((size_t)(end - kv) > klen && strncmp(kv, key, klen) == 0 &&
		    kv[klen] == '=')
			return p_strndup(pool, kv + klen + 1, end - kv - klen - 1);
		kv = end + 1;
	}
	return NULL;
}

/* "auth=Bearer TOKEN" -> TOKEN */
static const char *oauth_token(pool_t pool, const char *kv)
{
	const char *auth = oauth_kv_get(pool, kv, "auth");

	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0 ||
	    auth[7] == '\0' || strlen(auth + 7) > OAUTH_TOKEN_MAX)
		return NULL;
	return auth + 7;
}

static enum sasl_result
oauth_check(struct sasl_exchange *ex, struct oauth_state *st,
	    const char *user, const char *token, const char **challenge_r,
	    const char **error_r)
{
	const char *token_user;

	switch (ex->lookup_token(ex->lookup_context, ex->pool, token,
				 &token_user)) {
	case SASL_LOOKUP_TEMPFAIL:
		return SASL_RESULT_TEMPFAIL;
	case SASL_LOOKUP_UNKNOWN:
		st->fail_reason = "invalid or expired token";
		break;
	case SASL_LOOKUP_OK:
		if (user != NULL && strcasecmp(user, token_user) != 0) {
			st->fail_reason = "token belongs to another user";
			break;
		}
		ex->authcid = token_user;
		ex->verified = true;
		return SASL_RESULT_DONE;
	}
	if (user != NULL)
		ex->authcid = user;
	*challenge_r = OAUTH_ERROR_JSON;
	return SASL_RESULT_CONTINUE;
}

/* The client's answer to our error challenge, or a missing response. */
static enum sasl_result
oauth_after_error(struct oauth_state *st, const char **error_r)
{
	*error_r = st->fail_reason;
	return SASL_RESULT_AUTHFAILED;
}

static enum sasl_result
oauthbearer_parse(struct sasl_exchange *ex, struct oauth_state *st,
		  const char *msg, const char **challenge_r, const char **error_r)
{
	const char *c1 = strchr(msg, ','), *c2, *user = NULL, *token;

	if (c1 == NULL || (c2 = strchr(c1 + 1, ',')) == NULL ||
	    c2[1] != '\x01' || !(c1 - msg == 1 && (msg[0] == 'n' ||
						   msg[0] == 'y'))) {
		*error_r = "malformed OAUTHBEARER gs2 header";
		return SASL_RESULT_FAIL;
	}
	if (c2 > c1 + 1) {
		if (strncmp(c1 + 1, "a=", 2) != 0 || c2 == c1 + 3) {
			*error_r = "malformed OAUTHBEARER authzid";
			return SASL_RESULT_FAIL;
		}
		user = p_strndup(ex->pool, c1 + 3, c2 - c1 - 3);
	}
	if ((token = oauth_token(ex->pool, c2 + 2)) == NULL) {
		*error_r = "OAUTHBEARER without a bearer token";
		return SASL_RESULT_FAIL;
	}
	return oauth_check(ex, st, user, token, challenge_r, error_r);
}

static enum sasl_result
xoauth2_parse(struct sasl_exchange *ex, struct oauth_state *st,
	      const char *msg, const char **challenge_r, const char **error_r)
{
	const char *user = oauth_kv_get(ex->pool, msg, "user");
	const char *token = oauth_token(ex->pool, msg);

	if (user == NULL || token == NULL ||
	    !sasl_field_valid((const unsigned char *)user, strlen(user),
			      SASL_MAX_USERNAME)) {
		*error_r = "malformed XOAUTH2 message";
		return SASL_RESULT_FAIL;
	}
	return oauth_check(ex, st, user, token, challenge_r, error_r);
}

static enum sasl_result
oauth_step(struct sasl_exchange *ex, const unsigned char *data, size_t size,
	   const char **challenge_r, const char **error_r, bool xoauth2)
{
	struct oauth_state *st = ex->mech_state;

	if (st == NULL)
		st = ex->mech_state = p_malloc(ex->pool, sizeof(*st));
	if (st->fail_reason != NULL)
		return oauth_after_error(st, error_r);
	if (data == NULL && ex->step == 0) {
		ex->step++;
		*challenge_r = "";
		return SASL_RESULT_CONTINUE;
	}
	if (data == NULL || memchr(data, '\0', size) != NULL) {
		*error_r = "missing or binary OAuth message";
		return SASL_RESULT_FAIL;
	}
	return xoauth2 ?
		xoauth2_parse(ex, st, (const char *)data, challenge_r, error_r) :
		oauthbearer_parse(ex, st, (const char *)data, challenge_r,
				  error_r);
}

static enum sasl_result
oauthbearer_step(struct sasl_exchange *ex, const unsigned char *data,
		 size_t size, const char **challenge_r, const char **error_r)
{
	return oauth_step(ex, data, size, challenge_r, error_r, false);
}

static enum sasl_result
xoauth2_step(struct sasl_exchange *ex, const unsigned char *data,
	     size_t size, const char **challenge_r, const char **error_r)
{
	return oauth_step(ex, data, size, challenge_r, error_r, true);
}

const struct sasl_mech sasl_mech_oauthbearer = {
	.name = "OAUTHBEARER",
	.step = oauthbearer_step,
};

const struct sasl_mech sasl_mech_xoauth2 = {
	.name = "XOAUTH2",
	.step = xoauth2_step,
};
