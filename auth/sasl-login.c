/* LOGIN (draft-murchison-sasl-login): the server asks "Username:", then
   "Password:", each answered with the plain string. An initial response
   is taken as the user name (clients such as Outlook send one). */
#include "lib.h"
#include "password-scheme.h"
#include "sasl-mech.h"

enum sasl_login_step {
	LOGIN_STEP_START = 0,
	LOGIN_STEP_USERNAME,
	LOGIN_STEP_PASSWORD,
};

static enum sasl_result
sasl_login_username(struct sasl_exchange *ex, const unsigned char *data,
		    size_t size, const char **challenge_r, const char **error_r)
{
	if (!sasl_field_valid(data, size, SASL_MAX_USERNAME)) {
		*error_r = "LOGIN with an empty or invalid user name";
		return SASL_RESULT_FAIL;
	}
	ex->authcid = p_strndup(ex->pool, data, size);
	ex->step = LOGIN_STEP_PASSWORD;
	*challenge_r = "Password:";
	return SASL_RESULT_CONTINUE;
}

static enum sasl_result
sasl_login_step(struct sasl_exchange *ex, const unsigned char *data,
		size_t size, const char **challenge_r, const char **error_r)
{
	switch ((enum sasl_login_step)ex->step) {
	case LOGIN_STEP_START:
		if (data != NULL)
			return sasl_login_username(ex, data, size,
						   challenge_r, error_r);
		ex->step = LOGIN_STEP_USERNAME;
		*challenge_r = "Username:";
		return SASL_RESULT_CONTINUE;
	case LOGIN_STEP_USERNAME:
		if (data == NULL)
			break;
		return sasl_login_username(ex, data, size, challenge_r, error_r);
	case LOGIN_STEP_PASSWORD:
		if (data == NULL)
			break;
		if (!sasl_field_valid(data, size, PASSWORD_MAX_LENGTH)) {
			*error_r = "LOGIN with an empty or invalid password";
			return SASL_RESULT_FAIL;
		}
		ex->password = p_strndup(ex->pool, data, size);
		return SASL_RESULT_DONE;
	}
	*error_r = "LOGIN response missing";
	return SASL_RESULT_FAIL;
}

const struct sasl_mech sasl_mech_login = {
	.name = "LOGIN",
	.step = sasl_login_step,
};
