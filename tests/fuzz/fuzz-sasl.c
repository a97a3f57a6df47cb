/* libFuzzer target for the SASL mechanisms of auth/ (PLAIN, LOGIN,
   SCRAM-*, CRAM-MD5, OAUTHBEARER, XOAUTH2): client responses are
   attacker-controlled and parsed by hand. Build: see tests/fuzz/run.sh.

   Input layout: byte 0 picks the mechanism, byte 1 the situation (TLS
   binding data present, -PLUS offered, what the passdb answers); then
   steps, each a length byte (times 4) and that many bytes, fed to the
   exchange until it ends. Checks: an exchange never ends DONE without a
   user, and a non-PLAIN/LOGIN one never DONE without verifying. */

#include "lib.h"
#include "mempool.h"
#include "password-scheme.h"
#include "sasl-mech.h"

#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_mechs[] = {
	"PLAIN", "LOGIN", "SCRAM-SHA-1", "SCRAM-SHA-1-PLUS", "SCRAM-SHA-256",
	"SCRAM-SHA-256-PLUS", "CRAM-MD5", "OAUTHBEARER", "XOAUTH2",
};

/* RFC 7677's keys for "pencil". */
#define FUZZ_SCRAM_STORED "4096,W22ZaJ0SNY7soEsUEjb6gQ==," \
	"WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=," \
	"wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="

static enum sasl_lookup_result
fuzz_lookup(void *context, pool_t pool, const char *user,
	    const char **scheme_r, const char **data_r)
{
	unsigned int mode = *(const uint8_t *)context;

	(void)user;
	switch ((mode >> 2) & 3) {
	case 0:
		*scheme_r = "PLAIN";
		*data_r = p_strdup(pool, "pencil");
		return SASL_LOOKUP_OK;
	case 1:
		*scheme_r = "SCRAM-SHA-256";
		*data_r = p_strdup(pool, FUZZ_SCRAM_STORED);
		return SASL_LOOKUP_OK;
	case 2:
		return SASL_LOOKUP_UNKNOWN;
	}
	return SASL_LOOKUP_TEMPFAIL;
}

static enum sasl_lookup_result
fuzz_lookup_token(void *context, pool_t pool, const char *token,
		  const char **user_r)
{
	(void)context;
	if (strcmp(token, "good") != 0)
		return SASL_LOOKUP_UNKNOWN;
	*user_r = p_strdup(pool, "user");
	return SASL_LOOKUP_OK;
}

static void fuzz_check_done(const struct sasl_exchange *ex)
{
	if (ex->authcid == NULL)
		abort();
	if (!ex->verified && ex->mech != &sasl_mech_plain &&
	    ex->mech != &sasl_mech_login)
		abort();
	if (!ex->verified && ex->password == NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char cbind[32] = { 7 };
	pool_t pool;
	struct sasl_exchange ex;
	const char *challenge, *error;
	enum sasl_result ret = SASL_RESULT_CONTINUE;
	uint8_t mode;
	size_t pos = 2;

	if (size < 2)
		return 0;
	mode = data[1];
	pool = pool_create("fuzz", 1024);
	sasl_exchange_init(&ex, sasl_mech_find(
		fuzz_mechs[data[0] % N_ELEMENTS(fuzz_mechs)]), pool);
	ex.lookup_password = fuzz_lookup;
	ex.lookup_token = fuzz_lookup_token;
	ex.lookup_context = &mode;
	if ((mode & 1) != 0) {
		ex.cbind_data = cbind;
		ex.cbind_size = sizeof(cbind);
	}
	ex.cbind_offered = (mode & 2) != 0;
	if ((mode & 0x80) != 0)
		ret = sasl_exchange_step(&ex, NULL, 0, &challenge, &error);
	while (ret == SASL_RESULT_CONTINUE && pos < size) {
		size_t len = MIN((size_t)data[pos] * 4, size - pos - 1);
		/* the mechanisms get a NUL-terminated copy, as from base64 */
		unsigned char *step = p_malloc(pool, len + 1);

		memcpy(step, data + pos + 1, len);
		pos += len + 1;
		ret = sasl_exchange_step(&ex, step, len, &challenge, &error);
	}
	if (ret == SASL_RESULT_DONE)
		fuzz_check_done(&ex);
	sasl_exchange_wipe(&ex);
	pool_unref(&pool);
	return 0;
}
