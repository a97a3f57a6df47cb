/* CRAM-MD5 (RFC 2195): the server sends a unique challenge, the client
   answers "user SP hex(HMAC-MD5(password, challenge))". Needs the
   plaintext password ({PLAIN}), so it is only offered when the admin
   lists it in auth_mechanisms. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-crypto.h"
#include "sasl-mech.h"

#include <time.h>

#define CRAM_MD5_DIGEST_SIZE 16
#define CRAM_MD5_HEX_LEN (CRAM_MD5_DIGEST_SIZE * 2)

struct cram_md5_state {
	const char *challenge;
};

static const char *cram_md5_challenge(struct sasl_exchange *ex)
{
	uint64_t rnd;

	if (ex->test != NULL && ex->test->cram_challenge != NULL)
		return ex->test->cram_challenge;
	random_fill(&rnd, sizeof(rnd));
	return p_strdup_printf(ex->pool, "<%llu.%lld@moat>",
			       (unsigned long long)rnd, (long long)time(NULL));
}

/* Look the user up and compare digests; an unknown user or a non-PLAIN
   password still costs one HMAC so timing says nothing. */
static enum sasl_result
cram_md5_verify(struct sasl_exchange *ex, const char *challenge,
		const char *hex, const char **error_r)
{
	const char *scheme = "", *data = "", *want;
	unsigned char digest[CRAM_MD5_DIGEST_SIZE];
	enum sasl_lookup_result lret;
	bool ok;

	lret = ex->lookup_password(ex->lookup_context, ex->pool, ex->authcid,
				   &scheme, &data);
	if (lret == SASL_LOOKUP_TEMPFAIL)
		return SASL_RESULT_TEMPFAIL;
	password_hmac(PASSWORD_DIGEST_MD5, data, strlen(data), challenge,
		      strlen(challenge), digest);
	want = password_hex(ex->pool, digest, sizeof(digest));
	ok = mem_equals_timing_safe(want, hex, CRAM_MD5_HEX_LEN);
	safe_memset((char *)data, 0, strlen(data));
	if (lret == SASL_LOOKUP_UNKNOWN) {
		*error_r = "unknown user";
		return SASL_RESULT_AUTHFAILED;
	}
	if (strcmp(scheme, "PLAIN") != 0) {
		*error_r = "password scheme unusable with CRAM-MD5";
		return SASL_RESULT_AUTHFAILED;
	}
	if (!ok) {
		*error_r = "password mismatch";
		return SASL_RESULT_AUTHFAILED;
	}
	ex->verified = true;
	return SASL_RESULT_DONE;
}

static enum sasl_result
cram_md5_step(struct sasl_exchange *ex, const unsigned char *data,
	      size_t size, const char **challenge_r, const char **error_r)
{
	struct cram_md5_state *st = ex->mech_state;
	const char *msg = (const char *)data, *sp;

	if (st == NULL) {
		/* the client speaks second: an initial response is an error */
		if (data != NULL) {
			*error_r = "CRAM-MD5 initial response not allowed";
			return SASL_RESULT_FAIL;
		}
		st = ex->mech_state = p_malloc(ex->pool, sizeof(*st));
		st->challenge = cram_md5_challenge(ex);
		*challenge_r = st->challenge;
		return SASL_RESULT_CONTINUE;
	}
	if (data == NULL || memchr(data, '\0', size) != NULL ||
	    (sp = strrchr(msg, ' ')) == NULL ||
	    strlen(sp + 1) != CRAM_MD5_HEX_LEN ||
	    !sasl_field_valid(data, sp - msg, SASL_MAX_USERNAME)) {
		*error_r = "malformed CRAM-MD5 response";
		return SASL_RESULT_FAIL;
	}
	ex->authcid = p_strndup(ex->pool, msg, sp - msg);
	return cram_md5_verify(ex, st->challenge, sp + 1, error_r);
}

const struct sasl_mech sasl_mech_cram_md5 = {
	.name = "CRAM-MD5",
	.step = cram_md5_step,
};
