/* EXTERNAL (RFC 4422 appendix A): the client was authenticated outside
   SASL, by the TLS client certificate imap-login verified against
   ssl_ca; imap-login passes the user the certificate names (cert_user).
   The client's only message is the authorization identity: empty means
   "the user the certificate names". Acting as another user would need
   master-user support, which moat does not have yet: an identity that
   differs from the certificate's user is refused. Whether the user
   exists and may log in is checked afterwards, as for any verified
   exchange (auth_db_login_verified: passdb entry, nologin, userdb). */
#include "lib.h"
#include "sasl-mech.h"

static enum sasl_result
sasl_external_step(struct sasl_exchange *ex, const unsigned char *data,
		   size_t size, const char **challenge_r, const char **error_r)
{
	if (ex->cert_user == NULL) {
		*error_r = "EXTERNAL without a verified client certificate";
		return SASL_RESULT_AUTHFAILED;
	}
	/* Logged as the user of a failure from here on. */
	ex->authcid = ex->cert_user;
	if (data == NULL) {
		if (ex->step > 0) {
			*error_r = "EXTERNAL response missing";
			return SASL_RESULT_FAIL;
		}
		/* No initial response: an empty challenge asks for it. */
		ex->step++;
		*challenge_r = "";
		return SASL_RESULT_CONTINUE;
	}
	if (size > SASL_MAX_USERNAME || memchr(data, '\0', size) != NULL) {
		*error_r = "EXTERNAL authzid too long or binary";
		return SASL_RESULT_FAIL;
	}
	if (size > 0 && (size != strlen(ex->cert_user) ||
			 memcmp(data, ex->cert_user, size) != 0)) {
		*error_r = "EXTERNAL authzid differs from the certificate's user "
			"(not supported)";
		return SASL_RESULT_AUTHFAILED;
	}
	ex->verified = true;
	return SASL_RESULT_DONE;
}

const struct sasl_mech sasl_mech_external = {
	.name = "EXTERNAL",
	.step = sasl_external_step,
};
