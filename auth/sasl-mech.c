/* Mechanism table and the exchange state shared by all mechanisms. */
#include "lib.h"
#include "sasl-mech.h"

#include <strings.h>

static const struct sasl_mech *const sasl_mechs[] = {
	&sasl_mech_plain,
	&sasl_mech_login,
	&sasl_mech_scram_sha1,
	&sasl_mech_scram_sha1_plus,
	&sasl_mech_scram_sha256,
	&sasl_mech_scram_sha256_plus,
	&sasl_mech_cram_md5,
	&sasl_mech_oauthbearer,
	&sasl_mech_xoauth2,
	&sasl_mech_external,
};

const struct sasl_mech *sasl_mech_find(const char *name)
{
	for (unsigned int i = 0; i < N_ELEMENTS(sasl_mechs); i++) {
		if (strcasecmp(sasl_mechs[i]->name, name) == 0)
			return sasl_mechs[i];
	}
	return NULL;
}

bool sasl_mech_is_plaintext(const struct sasl_mech *mech)
{
	return mech == &sasl_mech_plain || mech == &sasl_mech_login ||
		mech == &sasl_mech_oauthbearer || mech == &sasl_mech_xoauth2;
}

bool sasl_mech_is_plus(const struct sasl_mech *mech)
{
	size_t len = strlen(mech->name);

	return len > 5 && strcmp(mech->name + len - 5, "-PLUS") == 0;
}

void sasl_exchange_init(struct sasl_exchange *ex, const struct sasl_mech *mech,
			pool_t pool)
{
	memset(ex, 0, sizeof(*ex));
	ex->mech = mech;
	ex->pool = pool;
}

enum sasl_result sasl_exchange_step(struct sasl_exchange *ex,
				    const unsigned char *data, size_t size,
				    const char **challenge_r,
				    const char **error_r)
{
	if (data != NULL && size > SASL_MAX_RESPONSE_SIZE) {
		*error_r = "response too long";
		return SASL_RESULT_FAIL;
	}
	return ex->mech->step(ex, data, size, challenge_r, error_r);
}

void sasl_exchange_wipe(struct sasl_exchange *ex)
{
	if (ex->mech_state != NULL && ex->mech->wipe != NULL)
		ex->mech->wipe(ex);
	if (ex->password != NULL) {
		safe_memset(ex->password, 0, strlen(ex->password));
		ex->password = NULL;
	}
}

bool sasl_field_valid(const unsigned char *data, size_t size, size_t max_len)
{
	return size > 0 && size <= max_len && memchr(data, '\0', size) == NULL;
}
