/* SCRAM-SHA-1, SCRAM-SHA-256 and their -PLUS variants (RFC 5802, RFC
   7677; tls-exporter channel binding per RFC 9266):

     client-first  gs2-header client-first-bare
                   gs2-header = ("n" | "y" | "p=" cb-name) "," [authzid] ","
                   client-first-bare = "n=" user ",r=" c-nonce [,ext]
     server-first  "r=" c-nonce s-nonce ",s=" b64(salt) ",i=" iterations
     client-final  "c=" b64(gs2-header [cbind-data]) ",r=" nonce [,ext]
                   ",p=" b64(ClientProof)
     server-final  "v=" b64(ServerSignature), then an empty response.

   The credentials are a {SCRAM-SHA-*} stored key of the same hash or a
   {PLAIN} password (salted with fresh random bytes each time). An
   unknown user, or one whose password cannot be used, gets made-up
   credentials and fails only at the proof, so the exchange does not
   tell whether the user exists. */
#include "lib.h"
#include "mempool.h"
#include "strfuncs.h"
#include "password-scheme.h"
#include "password-scram.h"
#include "sasl-mech.h"

/* Random bytes of our nonce part (24 base64 characters). */
#define SCRAM_NONCE_BYTES 18
/* Longest client nonce accepted: real clients send 24-32 characters. */
#define SCRAM_CLIENT_NONCE_MAX 256
#define SCRAM_CBIND_NAME "tls-exporter"

enum scram_step {
	SCRAM_STEP_FIRST = 0,
	SCRAM_STEP_FINAL,
	SCRAM_STEP_ACK,
};

struct scram_state {
	enum password_digest digest;
	bool plus;
	const char *gs2_header;          /* up to and with the second ',' */
	const char *client_first_bare;
	const char *server_first;
	const char *nonce;               /* client's + ours */
	struct password_scram_creds creds;
	const char *fail_reason;         /* set: fail at the proof */
	bool asked;                      /* sent the empty first challenge */
};

/* saslname (RFC 5802 section 5.1): "=2C" is ',', "=3D" is '='; any other
   '=' is invalid. Returns NULL if invalid. */
static const char *scram_decode_name(pool_t pool, const char *in, size_t len)
{
	char *out = p_malloc(pool, len + 1), *o = out;

	for (size_t i = 0; i < len; i++) {
		if (in[i] != '=') {
			*o++ = in[i];
		} else if (len - i >= 3 && strncmp(in + i, "=2C", 3) == 0) {
			*o++ = ',';
			i += 2;
		} else if (len - i >= 3 && strncmp(in + i, "=3D", 3) == 0) {
			*o++ = '=';
			i += 2;
		} else {
			return NULL;
		}
	}
	*o = '\0';
	return out;
}

/* The gs2 header's channel binding flag, checked against the mechanism
   and the connection. */
static int scram_check_cbind(struct sasl_exchange *ex, struct scram_state *st,
			     const char *flag, size_t len, const char **error_r)
{
	if (st->plus) {
		if (len != 2 + strlen(SCRAM_CBIND_NAME) ||
		    strncmp(flag, "p=" SCRAM_CBIND_NAME, len) != 0) {
			*error_r = "-PLUS without p=tls-exporter";
			return -1;
		}
		if (ex->cbind_data == NULL) {
			*error_r = "-PLUS on a connection without TLS";
			return -1;
		}
		return 0;
	}
	if (len == 1 && flag[0] == 'n')
		return 0;
	if (len == 1 && flag[0] == 'y') {
		if (!ex->cbind_offered)
			return 0;
		*error_r = "client says y although -PLUS was offered "
			"(downgrade?)";
		return -1;
	}
	*error_r = "channel binding requested with a non-PLUS mechanism";
	return -1;
}

/* gs2-header: sets st->gs2_header, returns the rest (client-first-bare)
   and the authzid (NULL if none). */
static const char *
scram_parse_gs2(struct sasl_exchange *ex, struct scram_state *st,
		const char *msg, const char **authzid_r, const char **error_r)
{
	const char *c1 = strchr(msg, ','), *c2;

	if (c1 == NULL || (c2 = strchr(c1 + 1, ',')) == NULL) {
		*error_r = "malformed gs2 header";
		return NULL;
	}
	if (scram_check_cbind(ex, st, msg, c1 - msg, error_r) < 0)
		return NULL;
	*authzid_r = NULL;
	if (c2 > c1 + 1) {
		if (strncmp(c1 + 1, "a=", 2) != 0 ||
		    (*authzid_r = scram_decode_name(ex->pool, c1 + 3,
						    c2 - c1 - 3)) == NULL) {
			*error_r = "malformed authzid";
			return NULL;
		}
	}
	st->gs2_header = p_strndup(ex->pool, msg, c2 + 1 - msg);
	return c2 + 1;
}

static bool scram_nonce_valid(const char *nonce, size_t len)
{
	if (len == 0 || len > SCRAM_CLIENT_NONCE_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (nonce[i] < 0x21 || nonce[i] > 0x7e || nonce[i] == ',')
			return false;
	}
	return true;
}

/* client-first-bare: "n=user,r=nonce[,ext]" */
static int scram_parse_bare(struct sasl_exchange *ex, const char *bare,
			    const char **user_r, const char **cnonce_r,
			    const char **error_r)
{
	const char *comma, *nonce, *end;

	if (strncmp(bare, "m=", 2) == 0) {
		*error_r = "mandatory extension not supported";
		return -1;
	}
	if (strncmp(bare, "n=", 2) != 0 ||
	    (comma = strchr(bare + 2, ',')) == NULL ||
	    strncmp(comma, ",r=", 3) != 0) {
		*error_r = "malformed client-first-message";
		return -1;
	}
	*user_r = scram_decode_name(ex->pool, bare + 2, comma - bare - 2);
	if (*user_r == NULL ||
	    !sasl_field_valid((const unsigned char *)*user_r, strlen(*user_r),
			      SASL_MAX_USERNAME)) {
		*error_r = "invalid user name";
		return -1;
	}
	nonce = comma + 3;
	end = strchr(nonce, ',');
	if (end == NULL)
		end = nonce + strlen(nonce);
	if (!scram_nonce_valid(nonce, end - nonce)) {
		*error_r = "invalid client nonce";
		return -1;
	}
	*cnonce_r = p_strndup(ex->pool, nonce, end - nonce);
	return 0;
}

/* Credentials nobody can match: the exchange goes on and fails at the
   proof, as it would with a wrong password. They are derived from a
   random password with the same PBKDF2 work as a {PLAIN} user's, so the
   answer's timing does not tell an unknown user from a known one. */
static void scram_fake_creds(pool_t pool, struct scram_state *st,
			     const char *reason)
{
	unsigned char rnd[PASSWORD_SCRAM_SALT_SIZE * 2];
	const char *fake;

	random_fill(rnd, sizeof(rnd));
	fake = password_hex(pool, rnd, PASSWORD_SCRAM_SALT_SIZE);
	password_scram_creds_from_plain(st->digest, fake,
		rnd + PASSWORD_SCRAM_SALT_SIZE, PASSWORD_SCRAM_SALT_SIZE,
		PASSWORD_SCRAM_DEFAULT_ITERATIONS, &st->creds);
	st->fail_reason = reason;
}

static void scram_creds_from_plain(struct sasl_exchange *ex,
				   struct scram_state *st, const char *plain)
{
	const struct sasl_test_params *test = ex->test;
	unsigned char salt[PASSWORD_SCRAM_SALT_SIZE];

	if (test != NULL && test->scram_salt != NULL) {
		password_scram_creds_from_plain(st->digest, plain,
			test->scram_salt, test->scram_salt_size,
			test->scram_iterations, &st->creds);
		return;
	}
	random_fill(salt, sizeof(salt));
	password_scram_creds_from_plain(st->digest, plain, salt, sizeof(salt),
		PASSWORD_SCRAM_DEFAULT_ITERATIONS, &st->creds);
}

static enum sasl_result scram_get_creds(struct sasl_exchange *ex,
					struct scram_state *st)
{
	const char *scheme, *data, *error;
	const char *own = st->digest == PASSWORD_DIGEST_SHA1 ?
		"SCRAM-SHA-1" : "SCRAM-SHA-256";

	switch (ex->lookup_password(ex->lookup_context, ex->pool, ex->authcid,
				    &scheme, &data)) {
	case SASL_LOOKUP_TEMPFAIL:
		return SASL_RESULT_TEMPFAIL;
	case SASL_LOOKUP_UNKNOWN:
		scram_fake_creds(ex->pool, st, "unknown user");
		return SASL_RESULT_CONTINUE;
	case SASL_LOOKUP_OK:
		break;
	}
	if (strcmp(scheme, "PLAIN") == 0) {
		scram_creds_from_plain(ex, st, data);
	} else if (strcmp(scheme, own) != 0) {
		scram_fake_creds(ex->pool, st,
				 "password scheme unusable with SCRAM");
	} else if (password_scram_parse(st->digest, data, &st->creds,
					&error) < 0) {
		scram_fake_creds(ex->pool, st, "malformed SCRAM credentials");
	}
	safe_memset((char *)data, 0, strlen(data));
	return SASL_RESULT_CONTINUE;
}

static enum sasl_result
scram_first(struct sasl_exchange *ex, struct scram_state *st, const char *msg,
	    const char **challenge_r, const char **error_r)
{
	const char *bare, *authzid, *user, *cnonce, *snonce;
	unsigned char rnd[SCRAM_NONCE_BYTES];
	enum sasl_result ret;

	if ((bare = scram_parse_gs2(ex, st, msg, &authzid, error_r)) == NULL ||
	    scram_parse_bare(ex, bare, &user, &cnonce, error_r) < 0)
		return SASL_RESULT_FAIL;
	if (authzid != NULL && strcmp(authzid, user) != 0) {
		*error_r = "authzid differs from authcid (not supported)";
		return SASL_RESULT_FAIL;
	}
	ex->authcid = user;
	st->client_first_bare = p_strdup(ex->pool, bare);
	if ((ret = scram_get_creds(ex, st)) != SASL_RESULT_CONTINUE)
		return ret;
	if (ex->test != NULL && ex->test->scram_nonce != NULL) {
		snonce = ex->test->scram_nonce;
	} else {
		random_fill(rnd, sizeof(rnd));
		snonce = p_base64_encode(ex->pool, rnd, sizeof(rnd));
	}
	st->nonce = p_strdup_printf(ex->pool, "%s%s", cnonce, snonce);
	st->server_first = p_strdup_printf(ex->pool, "r=%s,s=%s,i=%u",
		st->nonce, p_base64_encode(ex->pool, st->creds.salt,
					   st->creds.salt_size),
		st->creds.iterations);
	ex->step = SCRAM_STEP_FINAL;
	*challenge_r = st->server_first;
	return SASL_RESULT_CONTINUE;
}

/* "c=" must carry our gs2 header and, for -PLUS, the binding data. */
static bool scram_cbind_matches(struct sasl_exchange *ex,
				struct scram_state *st, const char *b64,
				size_t len)
{
	size_t hlen = strlen(st->gs2_header), size;
	size_t want = hlen + (st->plus ? ex->cbind_size : 0);
	unsigned char *data;

	if (p_base64_decode(ex->pool, b64, len, &data, &size) < 0 ||
	    size != want || memcmp(data, st->gs2_header, hlen) != 0)
		return false;
	return !st->plus ||
		mem_equals_timing_safe(data + hlen, ex->cbind_data,
				       ex->cbind_size);
}

/* Checks "c=...,r=...," of client-final-without-proof. */
static int scram_parse_final(struct sasl_exchange *ex, struct scram_state *st,
			     const char *msg, size_t without_proof_len,
			     const char **error_r)
{
	const char *comma = strchr(msg, ','), *r, *rend;
	size_t nlen = strlen(st->nonce);

	if (strncmp(msg, "c=", 2) != 0 || comma == NULL ||
	    strncmp(comma, ",r=", 3) != 0) {
		*error_r = "malformed client-final-message";
		return -1;
	}
	if (!scram_cbind_matches(ex, st, msg + 2, comma - msg - 2)) {
		*error_r = "channel binding mismatch";
		return -1;
	}
	r = comma + 3;
	rend = strchr(r, ',');
	if (rend == NULL || (size_t)(rend - msg) > without_proof_len ||
	    (size_t)(rend - r) != nlen || memcmp(r, st->nonce, nlen) != 0) {
		*error_r = "nonce mismatch";
		return -1;
	}
	return 0;
}

/* H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey */
static bool scram_proof_ok(struct scram_state *st, const char *auth_message,
			   const unsigned char *proof)
{
	unsigned char sig[PASSWORD_CRYPTO_MAX_DIGEST];
	unsigned char key[PASSWORD_CRYPTO_MAX_DIGEST];
	size_t size = st->creds.key_size;
	bool ok;

	password_hmac(st->digest, st->creds.stored_key, size, auth_message,
		      strlen(auth_message), sig);
	for (size_t i = 0; i < size; i++)
		key[i] = proof[i] ^ sig[i];
	password_hash2(st->digest, key, size, "", 0, sig);
	ok = mem_equals_timing_safe(sig, st->creds.stored_key, size);
	safe_memset(key, 0, sizeof(key));
	return ok;
}

static enum sasl_result
scram_final(struct sasl_exchange *ex, struct scram_state *st, const char *msg,
	    const char **challenge_r, const char **error_r)
{
	const char *p = strstr(msg, ",p="), *auth_message;
	unsigned char *proof, sig[PASSWORD_CRYPTO_MAX_DIGEST];
	size_t proof_size;

	/* the proof is the last attribute */
	while (p != NULL && strstr(p + 1, ",p=") != NULL)
		p = strstr(p + 1, ",p=");
	if (p == NULL) {
		*error_r = "client-final-message without proof";
		return SASL_RESULT_FAIL;
	}
	if (scram_parse_final(ex, st, msg, p - msg, error_r) < 0)
		return SASL_RESULT_FAIL;
	if (p_base64_decode(ex->pool, p + 3, strlen(p + 3), &proof,
			    &proof_size) < 0 || proof_size != st->creds.key_size) {
		*error_r = "malformed proof";
		return SASL_RESULT_FAIL;
	}
	auth_message = p_strdup_printf(ex->pool, "%s,%s,%.*s",
		st->client_first_bare, st->server_first, (int)(p - msg), msg);
	if (!scram_proof_ok(st, auth_message, proof) ||
	    st->fail_reason != NULL) {
		*error_r = st->fail_reason != NULL ? st->fail_reason :
			"password mismatch";
		return SASL_RESULT_AUTHFAILED;
	}
	password_hmac(st->digest, st->creds.server_key, st->creds.key_size,
		      auth_message, strlen(auth_message), sig);
	*challenge_r = p_strdup_printf(ex->pool, "v=%s",
		p_base64_encode(ex->pool, sig, st->creds.key_size));
	ex->step = SCRAM_STEP_ACK;
	return SASL_RESULT_CONTINUE;
}

static enum sasl_result
scram_step(struct sasl_exchange *ex, const unsigned char *data, size_t size,
	   const char **challenge_r, const char **error_r,
	   enum password_digest digest, bool plus)
{
	struct scram_state *st = ex->mech_state;
	const char *msg = (const char *)data;

	if (st == NULL) {
		st = ex->mech_state = p_malloc(ex->pool, sizeof(*st));
		st->digest = digest;
		st->plus = plus;
	}
	if (data == NULL && ex->step == SCRAM_STEP_FIRST && !st->asked) {
		/* no initial response: ask for client-first */
		st->asked = true;
		*challenge_r = "";
		return SASL_RESULT_CONTINUE;
	}
	if (data == NULL || memchr(data, '\0', size) != NULL) {
		*error_r = "missing or binary SCRAM message";
		return SASL_RESULT_FAIL;
	}
	switch ((enum scram_step)ex->step) {
	case SCRAM_STEP_FIRST:
		return scram_first(ex, st, msg, challenge_r, error_r);
	case SCRAM_STEP_FINAL:
		return scram_final(ex, st, msg, challenge_r, error_r);
	case SCRAM_STEP_ACK:
		if (size != 0) {
			*error_r = "unexpected data after server-final";
			return SASL_RESULT_FAIL;
		}
		ex->verified = true;
		return SASL_RESULT_DONE;
	}
	i_unreached();
}

/* StoredKey and ServerKey are password equivalents for this server. */
static void scram_wipe(struct sasl_exchange *ex)
{
	struct scram_state *st = ex->mech_state;

	safe_memset(&st->creds, 0, sizeof(st->creds));
}

#define SCRAM_MECH(sym, mname, digest, plus) \
	static enum sasl_result \
	sym##_step(struct sasl_exchange *ex, const unsigned char *data, \
		   size_t size, const char **challenge_r, const char **error_r) \
	{ \
		return scram_step(ex, data, size, challenge_r, error_r, \
				  digest, plus); \
	} \
	const struct sasl_mech sym = { \
		.name = mname, .step = sym##_step, .wipe = scram_wipe \
	}

SCRAM_MECH(sasl_mech_scram_sha1, "SCRAM-SHA-1", PASSWORD_DIGEST_SHA1, false);
SCRAM_MECH(sasl_mech_scram_sha1_plus, "SCRAM-SHA-1-PLUS",
	   PASSWORD_DIGEST_SHA1, true);
SCRAM_MECH(sasl_mech_scram_sha256, "SCRAM-SHA-256",
	   PASSWORD_DIGEST_SHA256, false);
SCRAM_MECH(sasl_mech_scram_sha256_plus, "SCRAM-SHA-256-PLUS",
	   PASSWORD_DIGEST_SHA256, true);
