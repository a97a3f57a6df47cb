/* One SASL exchange with an imap-login process: see auth-request.h. */
#include "auth-common.h"
#include "auth-db.h"
#include "auth-penalty.h"
#include "auth-token.h"
#include "auth-client.h"
#include "auth-request.h"
#include "auth-stats.h"
#include "latency-histogram.h"
#include "auth-worker-client.h"

#include <strings.h>

/* Longest client string (a user name) written to a log line. */
#define AUTH_LOG_USER_MAX 64
/* Base64 of the largest response SASL accepts. */
#define AUTH_RESPONSE_B64_MAX (((SASL_MAX_RESPONSE_SIZE + 2) / 3) * 4)
/* Time a client has for the whole exchange beyond login_timeout, which
   imap-login enforces itself; this only frees abandoned requests. */
#define AUTH_REQUEST_TIMEOUT_SLACK_MSECS (30 * 1000)

#define AUTH_FAILED_TEXT "Authentication failed."
#define AUTH_TEMPFAIL_TEXT "Temporary authentication failure."
#define AUTH_ABORTED_TEXT "Authentication aborted."
#define AUTH_LIMIT_TEXT "Too many authentications in progress from your address."

static void auth_request_idle_timeout(void *context);

static enum sasl_lookup_result
auth_request_lookup_password(void *context, pool_t pool, const char *user,
			     const char **scheme_r, const char **data_r)
{
	struct auth_request *request = context;
	int ret = auth_db_lookup_password(request->auth->db, pool, user,
					  scheme_r, data_r);

	return ret > 0 ? SASL_LOOKUP_OK :
		(ret == 0 ? SASL_LOOKUP_UNKNOWN : SASL_LOOKUP_TEMPFAIL);
}

static enum sasl_lookup_result
auth_request_lookup_token(void *context, pool_t pool, const char *token,
			  const char **user_r)
{
	struct auth_request *request = context;
	int ret = auth_db_lookup_token(request->auth->db, pool, token, user_r);

	return ret > 0 ? SASL_LOOKUP_OK :
		(ret == 0 ? SASL_LOOKUP_UNKNOWN : SASL_LOOKUP_TEMPFAIL);
}

struct auth_request *
auth_request_create(struct auth *auth, struct auth_client *client,
		    const char *id, const struct sasl_mech *mech,
		    const char *rip, const char *lip, bool secured)
{
	pool_t pool = pool_create("auth request", 1024);
	struct auth_request *request = p_malloc(pool, sizeof(*request));
	uint64_t msecs = (uint64_t)auth->set->login_timeout * 1000 +
		AUTH_REQUEST_TIMEOUT_SLACK_MSECS;

	request->pool = pool;
	request->auth = auth;
	request->client = client;
	request->id = p_strdup(pool, id);
	request->mech_name = mech->name;
	request->created_us = time_monotonic_us();
	request->rip = p_strdup(pool, rip);
	request->lip = p_strdup(pool, lip);
	request->secured = secured;
	sasl_exchange_init(&request->sasl, mech, pool);
	request->sasl.lookup_password = auth_request_lookup_password;
	request->sasl.lookup_token = auth_request_lookup_token;
	request->sasl.lookup_context = request;
	request->to_idle = timeout_add(auth->ioloop,
				       (unsigned int)MIN(msecs, UINT_MAX),
				       auth_request_idle_timeout, request);
	return request;
}

static void auth_request_penalty_kick(struct auth *auth);

static void auth_request_wipe_pending(struct auth_request *request)
{
	if (request->pending_b64 != NULL) {
		safe_memset(request->pending_b64, 0,
			    strlen(request->pending_b64));
		request->pending_b64 = NULL;
	}
}

void auth_request_free(struct auth_request **_request)
{
	struct auth_request *request = *_request;
	pool_t pool = request->pool;

	*_request = NULL;
	if (request->penalty_slot.state != AUTH_PENALTY_SLOT_NONE) {
		/* Its place goes to the next one of the address, from the
		   loop (not from inside whatever freed this request). */
		auth_penalty_end(request->auth->penalty, &request->penalty_slot,
				 io_loop_time_ms(request->auth->ioloop));
		auth_request_penalty_kick(request->auth);
	}
	auth_request_wipe_pending(request);
	if (request->to_idle != NULL)
		timeout_remove(&request->to_idle);
	if (request->to_delay != NULL)
		timeout_remove(&request->to_delay);
	if (request->worker_job != NULL)
		auth_worker_job_abort(&request->worker_job);
	sasl_exchange_wipe(&request->sasl);
	pool_unref(&pool);
}

static void auth_request_send(struct auth_request *request,
			      const char *name, const char *arg1,
			      const char *arg2)
{
	const char *args[] = { name, request->id, arg1, arg2, NULL };

	auth_client_send(request->client, args);
}

/* The decision's counters (auth-stats.h), once per request. */
static void auth_request_count(struct auth_request *request, bool ok)
{
	if (request->stats_counted)
		return;
	request->stats_counted = true;
	auth_stats_done(request->auth, request->mech_name, ok,
			time_monotonic_us() - request->created_us);
}

static void auth_request_log_failure(struct auth_request *request,
				     const char *reason)
{
	const char *user = request->sasl.authcid;

	auth_request_count(request, false);

	i_info("auth failed: user=%s, method=%s, rip=%s, reason=%s",
	       user == NULL ? "" : str_sanitize(request->pool, user,
						AUTH_LOG_USER_MAX),
	       request->mech_name,
	       str_sanitize(request->pool, request->rip, AUTH_REQUEST_IP_MAX_LEN),
	       reason);
}

void auth_request_fail_now(struct auth_request *request, const char *code,
			   const char *text)
{
	auth_request_send(request, "FAIL", code, text);
	auth_client_request_done(request->client, request);
}

static void auth_request_delay_timeout(void *context)
{
	struct auth_request *request = context;

	request->to_delay = NULL;
	auth_request_fail_now(request, request->fail_code, request->fail_text);
}

/* A credential failure: counted for the address, and answered after
   the address's penalty delay, with the loop serving other requests
   meanwhile. */
static void auth_request_fail_delayed(struct auth_request *request,
				      const char *reason)
{
	unsigned int delay = 0;

	auth_request_log_failure(request, reason);
	/* No slot: a trusted address, or no penalty configured. */
	if (request->penalty_slot.state == AUTH_PENALTY_SLOT_ACTIVE) {
		delay = auth_penalty_failure(request->auth->penalty,
					     &request->penalty_slot,
					     io_loop_time_ms(request->auth->ioloop));
	}
	request->fail_code = "authfailed";
	request->fail_text = AUTH_FAILED_TEXT;
	request->waiting_response = false;
	if (request->to_idle != NULL)
		timeout_remove(&request->to_idle);
	if (delay == 0) {
		auth_request_fail_now(request, "authfailed", AUTH_FAILED_TEXT);
		return;
	}
	request->to_delay = timeout_add(request->auth->ioloop, delay,
					auth_request_delay_timeout, request);
}

static void auth_request_success(struct auth_request *request,
				 const struct auth_user_info *info)
{
	struct auth *auth = request->auth;
	char token[AUTH_TOKEN_HEX_LEN + 1];

	auth_request_count(request, true);
	/* A success forgets no failure of the address (auth-penalty.h). */
	auth_token_issue(auth->tokens, info, auth_client_get_pid(request->client),
			 io_loop_time_ms(auth->ioloop), token);
	i_debug("auth ok: user=%s, method=%s, rip=%s", info->user,
		request->mech_name,
		str_sanitize(request->pool, request->rip, AUTH_REQUEST_IP_MAX_LEN));
	auth_request_send(request, "OK", info->user, token);
	safe_memset(token, 0, sizeof(token));
	auth_client_request_done(request->client, request);
}

static void auth_request_worker_userdb(struct auth_request *request);

static void auth_request_finish(struct auth_request *request,
				enum auth_db_result result,
				const struct auth_user_info *info,
				const char *reason)
{
	sasl_exchange_wipe(&request->sasl);
	switch (result) {
	case AUTH_DB_WORKER_USERDB:
		request->worker_user = p_strdup(request->pool, info->user);
		request->worker_idx = 0;
		auth_request_worker_userdb(request);
		return;
	case AUTH_DB_OK:
		auth_request_success(request, info);
		return;
	case AUTH_DB_UNKNOWN_USER:
	case AUTH_DB_PASSWORD_MISMATCH:
		auth_request_fail_delayed(request, auth_db_result_reason(result));
		return;
	case AUTH_DB_NOLOGIN:
		/* The password was right, so telling why is no oracle. */
		auth_request_log_failure(request, "nologin");
		auth_request_fail_now(request, "nologin", reason);
		return;
	case AUTH_DB_UID_OUT_OF_RANGE:
		auth_request_log_failure(request, "uid out of range");
		auth_request_fail_now(request, "authfailed", AUTH_FAILED_TEXT);
		return;
	case AUTH_DB_TEMPFAIL:
		auth_request_log_failure(request, "internal error");
		auth_request_fail_now(request, "tempfail", AUTH_TEMPFAIL_TEXT);
		return;
	}
	i_unreached();
}

/* ---- lookups in auth-worker ---- */

static void auth_request_worker_tempfail(struct auth_request *request,
					 const char *why)
{
	struct auth_user_info info;

	i_error("auth-worker: %s", why);
	memset(&info, 0, sizeof(info));
	auth_request_finish(request, AUTH_DB_TEMPFAIL, &info, NULL);
}

static void auth_request_user_done(const struct auth_worker_reply *reply,
				   void *context)
{
	struct auth_request *request = context;
	struct auth_user_info info;
	enum auth_db_result result;

	request->worker_job = NULL;
	memset(&info, 0, sizeof(info));
	if (reply == NULL || reply->type == AUTH_WORKER_REPLY_FAIL) {
		auth_request_worker_tempfail(request, "userdb lookup failed");
		return;
	}
	if (reply->type == AUTH_WORKER_REPLY_NOTFOUND) {
		request->worker_idx++;
		auth_request_worker_userdb(request);
		return;
	}
	result = auth_db_worker_user(request->auth->db, request->pool,
				     request->worker_user, request->worker_idx,
				     reply->uid, reply->gid, reply->home, &info);
	auth_request_finish(request, result, &info, NULL);
}

/* The userdb step in worker userdb worker_idx, and the next ones. */
static void auth_request_worker_userdb(struct auth_request *request)
{
	const struct auth_db_worker_db *wdb =
		auth_db_worker_userdb(request->auth->db, request->worker_idx);

	if (wdb == NULL || !auth_worker_field_valid(request->worker_user,
						    AUTH_WORKER_USER_MAX_LEN,
						    false)) {
		i_error("user %s is in a passdb but in no userdb",
			str_sanitize(request->pool, request->worker_user,
				     AUTH_LOG_USER_MAX));
		auth_request_worker_tempfail(request, "no userdb knows the user");
		return;
	}
	request->worker_job = auth_worker_user(request->auth, wdb->driver,
					       wdb->args, request->worker_user,
					       auth_request_user_done, request);
	if (request->worker_job == NULL)
		auth_request_worker_tempfail(request, "no worker available "
					     "(none running or queue full)");
}

static void auth_request_worker_passdb(struct auth_request *request);

static void auth_request_passv_done(const struct auth_worker_reply *reply,
				    void *context)
{
	struct auth_request *request = context;
	struct auth_user_info info;
	enum auth_db_result result;

	request->worker_job = NULL;
	memset(&info, 0, sizeof(info));
	if (reply == NULL) {
		auth_request_worker_tempfail(request, "passdb lookup failed");
		return;
	}
	if (reply->type == AUTH_WORKER_REPLY_OK) {
		sasl_exchange_wipe(&request->sasl);
		result = auth_db_login_worker_passdb(request->auth->db,
						     request->pool, reply->user,
						     &info);
		auth_request_finish(request, result, &info, NULL);
	} else if (strcmp(reply->code, "authfailed") == 0) {
		request->worker_idx++;
		auth_request_worker_passdb(request);
	} else if (strcmp(reply->code, "nologin") == 0) {
		auth_request_finish(request, AUTH_DB_NOLOGIN, &info,
				    "Login disabled.");
	} else {
		auth_request_finish(request, AUTH_DB_TEMPFAIL, &info, NULL);
	}
}

/* The password check in worker passdb worker_idx (pam, shadow). */
static void auth_request_worker_passdb(struct auth_request *request)
{
	const struct auth_db_worker_db *wdb =
		auth_db_worker_passdb(request->auth->db, request->worker_idx);
	struct auth_user_info info;

	/* A name the record cannot carry (control bytes) is no system
	   user: refused here rather than breaking the worker's channel. */
	if (wdb == NULL || !auth_worker_field_valid(request->sasl.authcid,
						    AUTH_WORKER_USER_MAX_LEN,
						    false)) {
		/* No passdb accepted it: which one failed is not told. */
		memset(&info, 0, sizeof(info));
		auth_request_finish(request, AUTH_DB_PASSWORD_MISMATCH, &info,
				    NULL);
		return;
	}
	request->worker_job = auth_worker_passv(request->auth, wdb->driver,
						wdb->args, request->sasl.authcid,
						request->sasl.password,
						request->rip,
						auth_request_passv_done, request);
	if (request->worker_job == NULL)
		auth_request_worker_tempfail(request, "no worker available "
					     "(none running or queue full)");
}

static void auth_request_verify(struct auth_request *request)
{
	struct auth_user_info info;
	const char *reason = NULL;
	enum auth_db_result result;

	memset(&info, 0, sizeof(info));
	if (request->sasl.verified) {
		result = auth_db_login_verified(request->auth->db,
						request->pool,
						request->sasl.authcid,
						&info, &reason);
	} else {
		result = auth_db_login(request->auth->db, request->pool,
				       request->sasl.authcid,
				       request->sasl.password, &info, &reason);
		/* passwd-files do not know the user: the worker passdbs
		   (pam, shadow) get the password, asynchronously. */
		if (result == AUTH_DB_UNKNOWN_USER &&
		    auth_db_worker_passdb(request->auth->db, 0) != NULL) {
			request->worker_idx = 0;
			auth_request_worker_passdb(request);
			return;
		}
	}
	auth_request_finish(request, result, &info, reason);
}

static void auth_request_step(struct auth_request *request,
			      const unsigned char *data, size_t size)
{
	const char *challenge = NULL, *error = NULL;

	switch (sasl_exchange_step(&request->sasl, data, size,
				   &challenge, &error)) {
	case SASL_RESULT_CONTINUE:
		request->waiting_response = true;
		auth_request_send(request, "CONT",
				  p_base64_encode(request->pool, challenge,
						  strlen(challenge)), NULL);
		return;
	case SASL_RESULT_DONE:
		request->waiting_response = false;
		auth_request_verify(request);
		return;
	case SASL_RESULT_FAIL:
		/* error is a fixed text of the mechanism, never client data */
		auth_request_fail_delayed(request,
			p_strdup_printf(request->pool, "malformed response (%s)",
					error));
		return;
	case SASL_RESULT_AUTHFAILED:
		request->waiting_response = false;
		auth_request_fail_delayed(request, error);
		return;
	case SASL_RESULT_TEMPFAIL:
		request->waiting_response = false;
		auth_request_log_failure(request, "internal error");
		auth_request_fail_now(request, "tempfail", AUTH_TEMPFAIL_TEXT);
		return;
	}
	i_unreached();
}

/* Decode a base64 response; a bad one is the client's fault. */
static void auth_request_input(struct auth_request *request, const char *b64)
{
	unsigned char *data, *copy;
	size_t len = strlen(b64), size;

	if (len > AUTH_RESPONSE_B64_MAX) {
		auth_request_fail_delayed(request, "response too long");
		return;
	}
	if (p_base64_decode(request->pool, b64, len, &data, &size) < 0) {
		auth_request_fail_delayed(request, "invalid base64");
		return;
	}
	/* The step may answer and free the request with its pool; a heap
	   copy lets the credentials be wiped afterwards either way. */
	copy = i_malloc(size + 1);
	memcpy(copy, data, size);
	safe_memset(data, 0, size);
	auth_request_step(request, copy, size);
	safe_memset(copy, 0, size);
	free(copy);
}

static bool ip_is_loopback(const char *ip)
{
	return strncmp(ip, "127.", 4) == 0 || strcmp(ip, "::1") == 0 ||
		strncasecmp(ip, "::ffff:127.", 11) == 0;
}

void auth_request_set_cbind(struct auth_request *request,
			    const unsigned char *data, size_t size,
			    bool plus_offered)
{
	request->sasl.cbind_data = p_memdup(request->pool, data, size);
	request->sasl.cbind_size = size;
	request->sasl.cbind_offered = plus_offered;
}

void auth_request_set_cert_user(struct auth_request *request,
				const char *user)
{
	request->sasl.cert_user = p_strdup(request->pool, user);
}

/* The mechanism's first step, once the request's turn came. */
static void auth_request_first_step(struct auth_request *request,
				    const char *b64)
{
	if (b64[0] == '\0')
		auth_request_step(request, NULL, 0);
	else if (strcmp(b64, "=") == 0)   /* an empty initial response */
		auth_request_input(request, "");
	else
		auth_request_input(request, b64);
}

/* ---- the penalty queue ---- */

static void auth_request_penalty_run(void *context);

/* Run the queue from the loop soon: something ended or failed. */
static void auth_request_penalty_kick(struct auth *auth)
{
	if (auth->to_penalty != NULL)
		timeout_remove(&auth->to_penalty);
	auth->to_penalty = io_loop_defer(auth->ioloop, auth_request_penalty_run,
					 auth);
}

/* Nothing can start now: wake up when the next address's delay ends. */
static void auth_request_penalty_arm(struct auth *auth)
{
	uint64_t wakeup = auth_penalty_next_wakeup(auth->penalty);
	uint64_t now = io_loop_time_ms(auth->ioloop);

	if (auth->to_penalty != NULL || wakeup == UINT64_MAX)
		return;
	if (wakeup <= now) {
		auth_request_penalty_kick(auth);
		return;
	}
	auth->to_penalty = timeout_add(auth->ioloop,
				       (unsigned int)MIN(wakeup - now, UINT_MAX),
				       auth_request_penalty_run, auth);
}

static void auth_request_started(struct auth_request *request)
{
	char *b64 = request->pending_b64;

	/* auth_request_first_step() may answer and free the request with
	   its pool: wipe a heap copy afterwards. */
	request->pending_b64 = NULL;
	char *copy = i_strdup(b64);
	safe_memset(b64, 0, strlen(b64));
	auth_request_first_step(request, copy);
	safe_memset(copy, 0, strlen(copy));
	free(copy);
}

static void auth_request_penalty_run(void *context)
{
	struct auth *auth = context;
	struct auth_penalty_slot *slot;

	auth->to_penalty = NULL;
	while ((slot = auth_penalty_next_ready(auth->penalty,
					       io_loop_time_ms(auth->ioloop))) != NULL)
		auth_request_started(slot->context);
	auth_request_penalty_arm(auth);
}

void auth_request_penalty_deinit(struct auth *auth)
{
	if (auth->to_penalty != NULL)
		timeout_remove(&auth->to_penalty);
}

/* Take a place in the address's queue. Returns true if the request may
   run now; false if it waits or was refused (answered). */
static bool auth_request_penalty_begin(struct auth_request *request,
				       const char *b64)
{
	struct auth *auth = request->auth;
	int ret;

	/* A trusted proxy stands for many users; when it names its client
	   (ID x-originating-ip) rip is that client's and is penalised. */
	if (auth->penalty == NULL ||
	    moat_settings_net_match(auth->set->login_trusted_networks,
				    request->rip))
		return true;
	ret = auth_penalty_begin(auth->penalty, &request->penalty_slot,
				 request->rip, request,
				 io_loop_time_ms(auth->ioloop));
	if (ret > 0)
		return true;
	if (ret < 0) {
		/* Not a guess: nothing was checked. */
		i_info("auth refused: too many authentications in progress: "
		       "method=%s, rip=%s", request->mech_name,
		       str_sanitize(request->pool, request->rip,
				    AUTH_REQUEST_IP_MAX_LEN));
		auth_request_fail_now(request, "limit", AUTH_LIMIT_TEXT);
		return false;
	}
	request->pending_b64 = p_strdup(request->pool, b64);
	/* The wait may end by time alone, maybe before the timer that is
	   set for another address: let the queue run set it again. */
	auth_request_penalty_kick(auth);
	return false;
}

void auth_request_start(struct auth_request *request, const char *b64)
{
	const struct moat_settings *set = request->auth->set;

	/* imap-login should not offer these; this is the second lock. */
	if (set->disable_plaintext_auth && !request->secured &&
	    sasl_mech_is_plaintext(request->sasl.mech) &&
	    !ip_is_loopback(request->rip)) {
		auth_request_log_failure(request, "plaintext disallowed");
		auth_request_fail_now(request, "authfailed",
			"Plaintext authentication disallowed on non-secure "
			"(SSL/TLS) connections.");
		return;
	}
	/* Before the mechanism sees anything: a right password waits for
	   the address's penalty like a wrong one. */
	if (auth_request_penalty_begin(request, b64))
		auth_request_first_step(request, b64);
}

void auth_request_continue(struct auth_request *request, const char *b64)
{
	request->waiting_response = false;
	if (strcmp(b64, "*") == 0) {
		auth_request_fail_now(request, "aborted", AUTH_ABORTED_TEXT);
		return;
	}
	auth_request_input(request, b64);
}

static void auth_request_idle_timeout(void *context)
{
	struct auth_request *request = context;

	request->to_idle = NULL;
	auth_request_log_failure(request, "timeout");
	auth_request_fail_now(request, "aborted", "Authentication timed out.");
}
