/* PAM, shadow and passwd lookups for auth-worker: see auth-worker-db.h.
   Each call blocks; the worker serves one request at a time. */
#include "lib.h"
#include "log.h"
#include "strfuncs.h"
#include "auth-worker-db.h"

#include <crypt.h>
#include <pwd.h>
#include <shadow.h>
#include <time.h>
#ifdef HAVE_PAM
#  include <security/pam_appl.h>
#endif

/* Hashed when the user is unknown or locked, so such answers cost about
   as much as a wrong password: SHA512-CRYPT of a random string. */
#define WORKER_DUMMY_HASH "$6$Rw3qZ8sXpL1vK0aT$mrURTEwRU/.bzJOZShsNL5N9" \
	"/wHfDyX3/CF1ZiHxsyngIDNrQOZwQ5Azb5pxV3pQLLlBwxc2MHQsPtIhtZ0jN0"
/* A PAM conversation asks a handful of questions at most. */
#define WORKER_PAM_MAX_MESSAGES 16
#define SECONDS_PER_DAY 86400

/* crypt_rn() of password with hash's setting, compared in constant
   time. true if they match. */
static bool shadow_hash_matches(const char *password, const char *hash)
{
	struct crypt_data *data = i_malloc(sizeof(*data));
	const char *result = crypt_rn(password, hash, data, sizeof(*data));
	size_t len = strlen(hash);
	bool match = result != NULL && result[0] != '*' &&
		strlen(result) == len && mem_equals_timing_safe(result, hash, len);

	safe_memset(data, 0, sizeof(*data));
	free(data);
	return match;
}

static bool shadow_expired(const struct spwd *sp)
{
	long today = (long)(time(NULL) / SECONDS_PER_DAY);

	return sp->sp_expire > 0 && today >= sp->sp_expire;
}

static enum auth_worker_verdict
shadow_passv(pool_t pool, const char *user, const char *password,
	     const char **user_r)
{
	struct spwd *sp;
	const char *hash;

	errno = 0;
	sp = getspnam(user);
	if (sp == NULL && errno != 0 && errno != ENOENT && errno != ESRCH) {
		i_error("shadow: getspnam() failed: %s", strerror(errno));
		return AUTH_WORKER_VERDICT_TEMPFAIL;
	}
	/* Locked ("!..."), disabled ("*") or passwordless accounts never
	   log in: hash the dummy anyway so timing says nothing. */
	hash = sp == NULL || sp->sp_pwdp == NULL || sp->sp_pwdp[0] == '\0' ||
		sp->sp_pwdp[0] == '!' || sp->sp_pwdp[0] == '*' ?
		NULL : sp->sp_pwdp;
	if (hash == NULL) {
		(void)shadow_hash_matches(password, WORKER_DUMMY_HASH);
		return AUTH_WORKER_VERDICT_AUTHFAILED;
	}
	if (!shadow_hash_matches(password, hash))
		return AUTH_WORKER_VERDICT_AUTHFAILED;
	if (shadow_expired(sp))
		return AUTH_WORKER_VERDICT_NOLOGIN;
	*user_r = p_strdup(pool, sp->sp_namp);
	return AUTH_WORKER_VERDICT_OK;
}

#ifdef HAVE_PAM
struct pam_conv_context {
	const char *user, *password;
};

static void pam_free_replies(struct pam_response *replies, int count)
{
	for (int i = 0; i < count; i++) {
		if (replies[i].resp != NULL) {
			safe_memset(replies[i].resp, 0, strlen(replies[i].resp));
			free(replies[i].resp);
		}
	}
	free(replies);
}

/* Answers the password to hidden prompts and the user name to echoed
   ones; informational messages are ignored. */
static int pam_conversation(int count, const struct pam_message **msgs,
			    struct pam_response **replies_r, void *appdata)
{
	const struct pam_conv_context *ctx = appdata;
	struct pam_response *replies;

	if (count <= 0 || count > WORKER_PAM_MAX_MESSAGES)
		return PAM_CONV_ERR;
	replies = calloc((size_t)count, sizeof(*replies));
	if (replies == NULL)
		return PAM_BUF_ERR;
	for (int i = 0; i < count; i++) {
		const char *answer = NULL;

		switch (msgs[i]->msg_style) {
		case PAM_PROMPT_ECHO_OFF:
			answer = ctx->password;
			break;
		case PAM_PROMPT_ECHO_ON:
			answer = ctx->user;
			break;
		case PAM_ERROR_MSG:
		case PAM_TEXT_INFO:
			continue;
		default:
			pam_free_replies(replies, count);
			return PAM_CONV_ERR;
		}
		replies[i].resp = strdup(answer);
		if (replies[i].resp == NULL) {
			pam_free_replies(replies, count);
			return PAM_BUF_ERR;
		}
	}
	*replies_r = replies;
	return PAM_SUCCESS;
}

static enum auth_worker_verdict pam_verdict(pam_handle_t *pamh, int ret,
					    const char *service, bool account)
{
	switch (ret) {
	case PAM_SUCCESS:
		return AUTH_WORKER_VERDICT_OK;
	case PAM_AUTH_ERR:
	case PAM_USER_UNKNOWN:
	case PAM_CRED_INSUFFICIENT:
	case PAM_MAXTRIES:
		return AUTH_WORKER_VERDICT_AUTHFAILED;
	case PAM_ACCT_EXPIRED:
	case PAM_NEW_AUTHTOK_REQD:
	case PAM_PERM_DENIED:
		return account ? AUTH_WORKER_VERDICT_NOLOGIN :
			AUTH_WORKER_VERDICT_AUTHFAILED;
	default:
		i_error("pam(%s): %s failed: %s", service,
			account ? "pam_acct_mgmt()" : "pam_authenticate()",
			pam_strerror(pamh, ret));
		return AUTH_WORKER_VERDICT_TEMPFAIL;
	}
}

static enum auth_worker_verdict
pam_passv(pool_t pool, const char *service, const char *user,
	  const char *password, const char *rip, const char **user_r)
{
	struct pam_conv_context ctx = { .user = user, .password = password };
	struct pam_conv conv = { .conv = pam_conversation, .appdata_ptr = &ctx };
	enum auth_worker_verdict verdict;
	pam_handle_t *pamh = NULL;
	const void *item = NULL;
	int ret;

	ret = pam_start(service, user, &conv, &pamh);
	if (ret != PAM_SUCCESS) {
		i_error("pam(%s): pam_start() failed: %s", service,
			pam_strerror(pamh, ret));
		return AUTH_WORKER_VERDICT_TEMPFAIL;
	}
	if (rip[0] != '\0')
		(void)pam_set_item(pamh, PAM_RHOST, rip);
	ret = pam_authenticate(pamh, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
	verdict = pam_verdict(pamh, ret, service, false);
	if (verdict == AUTH_WORKER_VERDICT_OK) {
		ret = pam_acct_mgmt(pamh, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
		verdict = pam_verdict(pamh, ret, service, true);
	}
	/* A module may have mapped the login name to another one. */
	if (verdict == AUTH_WORKER_VERDICT_OK &&
	    pam_get_item(pamh, PAM_USER, &item) == PAM_SUCCESS && item != NULL)
		*user_r = p_strdup(pool, item);
	else
		*user_r = p_strdup(pool, user);
	(void)pam_end(pamh, ret);
	return verdict;
}
#endif

enum auth_worker_verdict
auth_worker_db_passv(pool_t pool, const char *driver, const char *args,
		     const char *user, const char *password, const char *rip,
		     const char **user_r)
{
	if (strcmp(driver, "shadow") == 0)
		return shadow_passv(pool, user, password, user_r);
#ifdef HAVE_PAM
	if (strcmp(driver, "pam") == 0) {
		return pam_passv(pool, args[0] == '\0' ?
				 AUTH_WORKER_PAM_DEFAULT_SERVICE : args,
				 user, password, rip, user_r);
	}
#else
	(void)args; (void)rip;
#endif
	i_error("passdb driver '%s' is not supported here",
		str_sanitize(pool, driver, 32));
	return AUTH_WORKER_VERDICT_TEMPFAIL;
}

int auth_worker_db_user(pool_t pool, const char *driver, const char *user,
			uid_t *uid_r, gid_t *gid_r, const char **home_r)
{
	struct passwd *pw;

	if (strcmp(driver, "passwd") != 0) {
		i_error("userdb driver '%s' is not supported here",
			str_sanitize(pool, driver, 32));
		return -1;
	}
	errno = 0;
	pw = getpwnam(user);
	if (pw == NULL) {
		if (errno == 0 || errno == ENOENT || errno == ESRCH)
			return 0;
		i_error("passwd: getpwnam() failed: %s", strerror(errno));
		return -1;
	}
	*uid_r = pw->pw_uid;
	*gid_r = pw->pw_gid;
	*home_r = p_strdup(pool, pw->pw_dir == NULL ? "" : pw->pw_dir);
	return 1;
}

const char *auth_worker_verdict_code(enum auth_worker_verdict verdict)
{
	switch (verdict) {
	case AUTH_WORKER_VERDICT_OK:
		return "ok";
	case AUTH_WORKER_VERDICT_AUTHFAILED:
		return "authfailed";
	case AUTH_WORKER_VERDICT_NOLOGIN:
		return "nologin";
	case AUTH_WORKER_VERDICT_TEMPFAIL:
		return "tempfail";
	}
	i_unreached();
}
