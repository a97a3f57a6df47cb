/* PLAIN (RFC 4616): message = [authzid] NUL authcid NUL passwd.
   IMAP's LOGIN command reaches auth in this form too ("\0user\0pass").
   Acting as another user (an authzid that differs from the authcid)
   needs master-user support, which moat does not have yet: refused. */
#include "lib.h"
#include "password-scheme.h"
#include "sasl-mech.h"

static enum sasl_result
sasl_plain_parse(struct sasl_exchange *ex, const unsigned char *data,
		 size_t size, const char **error_r)
{
	const unsigned char *nul1, *nul2, *end = data + size;
	const unsigned char *authcid, *passwd;

	nul1 = memchr(data, '\0', size);
	nul2 = nul1 == NULL ? NULL : memchr(nul1 + 1, '\0', end - nul1 - 1);
	if (nul2 == NULL) {
		*error_r = "PLAIN message without two NULs";
		return SASL_RESULT_FAIL;
	}
	authcid = nul1 + 1;
	passwd = nul2 + 1;
	if (!sasl_field_valid(authcid, nul2 - authcid, SASL_MAX_USERNAME) ||
	    (nul1 > data && nul1 - data > SASL_MAX_USERNAME)) {
		*error_r = "PLAIN message with an empty or invalid user name";
		return SASL_RESULT_FAIL;
	}
	if (!sasl_field_valid(passwd, end - passwd, PASSWORD_MAX_LENGTH)) {
		*error_r = "PLAIN message with an empty or invalid password";
		return SASL_RESULT_FAIL;
	}
	if (nul1 > data && ((size_t)(nul1 - data) != (size_t)(nul2 - authcid) ||
			    memcmp(data, authcid, nul1 - data) != 0)) {
		*error_r = "PLAIN authzid differs from authcid (not supported)";
		return SASL_RESULT_FAIL;
	}
	ex->authcid = p_strndup(ex->pool, authcid, nul2 - authcid);
	ex->password = p_strndup(ex->pool, passwd, end - passwd);
	return SASL_RESULT_DONE;
}

static enum sasl_result
sasl_plain_step(struct sasl_exchange *ex, const unsigned char *data,
		size_t size, const char **challenge_r, const char **error_r)
{
	if (data == NULL) {
		if (ex->step > 0) {
			*error_r = "PLAIN response missing";
			return SASL_RESULT_FAIL;
		}
		/* No initial response: an empty challenge asks for it. */
		ex->step++;
		*challenge_r = "";
		return SASL_RESULT_CONTINUE;
	}
	return sasl_plain_parse(ex, data, size, error_r);
}

const struct sasl_mech sasl_mech_plain = {
	.name = "PLAIN",
	.step = sasl_plain_step,
};
