/* The pre-auth command table and its commands: AUTHENTICATE, CAPABILITY,
   ID, LOGIN, LOGOUT, NOOP, STARTTLS. Each command parses all its arguments first
   (a parse error is a BAD with no side effect), then acts. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-id.h"

#include <strings.h>
#include <arpa/inet.h>

/* Tags are echoed in responses and carried in the HANDOFF record; a
   longer one is a client bug or an attack on the record size. */
#define LOGIN_MAX_TAG_LEN 256

typedef void login_cmd_func_t(struct login_client *client, const char *tag,
			      const struct imap_arg *args);

struct login_cmd {
	const char *name;
	login_cmd_func_t *func;
};

#define PRIVACY_REQUIRED_TEXT "NO [PRIVACYREQUIRED] Plaintext authentication " \
	"disallowed on non-secure (SSL/TLS) connections."

static void cmd_capability(struct login_client *client, const char *tag,
			   const struct imap_arg *args)
{
	if (!imap_arg_is_eol(&args[0])) {
		login_client_send_bad(client, tag, "CAPABILITY takes no arguments");
		return;
	}
	login_client_send_tagline(client, "*", "CAPABILITY %s",
				  client->capability);
	login_client_send_tagline(client, tag, "OK Capability completed.");
}

static void cmd_noop(struct login_client *client, const char *tag,
		     const struct imap_arg *args)
{
	if (!imap_arg_is_eol(&args[0])) {
		login_client_send_bad(client, tag, "NOOP takes no arguments");
		return;
	}
	login_client_send_tagline(client, tag, "OK NOOP completed.");
}

/* RFC 9051 6.2.1, RFC 2595 3.1. */
static void cmd_starttls(struct login_client *client, const char *tag,
			 const struct imap_arg *args)
{
	if (!imap_arg_is_eol(&args[0])) {
		login_client_send_bad(client, tag, "STARTTLS takes no arguments");
		return;
	}
	if (client->ssl != NULL) {
		login_client_send_bad(client, tag, "TLS is already active.");
		return;
	}
	if (client->lp->ssl_ctx == NULL) {
		login_client_send_bad(client, tag, "TLS support isn't enabled.");
		return;
	}
	login_client_send_tagline(client, tag, "OK Begin TLS negotiation now.");
	if (!client->destroyed)
		login_client_starttls(client);
}

static void cmd_logout(struct login_client *client, const char *tag,
		       const struct imap_arg *args)
{
	if (!imap_arg_is_eol(&args[0])) {
		login_client_send_bad(client, tag, "LOGOUT takes no arguments");
		return;
	}
	login_client_send_line(client, "* BYE Logging out");
	login_client_send_tagline(client, tag, "OK Logout completed.");
	login_client_destroy(client, "Logged out");
}

/* A trusted proxy (webmail) names its client with ID x-originating-ip
   and x-originating-port: logs, penalties and the per-user+IP limit then
   use that address. Ignored from anyone else, and once authentication
   began (the address must not change under a running exchange). */
static void client_id_originating(struct login_client *client,
				  const struct imap_arg *args)
{
	const char *ip = login_id_get_field(args, "x-originating-ip");
	const char *port = login_id_get_field(args, "x-originating-port");
	unsigned char addr[16];
	char text[LOGIN_IP_STR_MAX];
	unsigned int port_num;
	int family = AF_INET;

	if (!client->trusted || client->auth_attempts > 0 || ip == NULL)
		return;
	if (inet_pton(AF_INET, ip, addr) != 1) {
		family = AF_INET6;
		if (inet_pton(AF_INET6, ip, addr) != 1) {
			i_info("ID: ignoring invalid x-originating-ip from "
			       "trusted rip=%s", client->remote_ip);
			return;
		}
	}
	if (inet_ntop(family, addr, text, sizeof(text)) == NULL)
		return;
	i_info("ID: trusted rip=%s sets rip=%s", client->remote_ip, text);
	memcpy(client->remote_ip, text, sizeof(text));
	client->ip_overridden = true;
	if (port != NULL && str_to_uint(port, &port_num) == 0 &&
	    port_num <= 65535)
		client->remote_port = port_num;
}

static void cmd_id(struct login_client *client, const char *tag,
		   const struct imap_arg *args)
{
	const char *error;

	if (login_id_args_validate(args, &error) < 0) {
		login_client_send_bad(client, tag, error);
		return;
	}
	client_id_originating(client, args);
	login_client_send_line(client, "* ID (\"name\" \"moat\")");
	login_client_send_tagline(client, tag, "OK ID completed.");
}

static void client_remember_user(struct login_client *client, const char *user)
{
	pool_t pool = pool_create("log user", 256);

	i_free(client->log_user);
	client->log_user = i_strdup(str_sanitize(pool, user, LOGIN_MAX_LOG_USER));
	pool_unref(&pool);
}

/* LOGIN user pass: sent to auth as PLAIN with "\0user\0pass" (RFC 4616
   with an empty authorization identity). */
static void cmd_login(struct login_client *client, const char *tag,
		      const struct imap_arg *args)
{
	const char *user, *pass;

	if (!imap_arg_get_astring(&args[0], &user) ||
	    !imap_arg_get_astring(&args[1], &pass) ||
	    !imap_arg_is_eol(&args[2])) {
		login_client_send_bad(client, tag, "Invalid arguments to LOGIN");
		return;
	}
	if (!client->plaintext_allowed) {
		login_client_send_tagline(client, tag, PRIVACY_REQUIRED_TEXT);
		return;
	}
	size_t ulen = strlen(user), plen = strlen(pass);
	if (ulen + plen + 2 > LOGIN_MAX_SASL_DATA) {
		login_client_send_bad(client, tag, "Credentials too long");
		return;
	}
	client_remember_user(client, user);

	pool_t pool = pool_create("login plain", 2 * LOGIN_MAX_SASL_DATA);
	unsigned char *packed = p_malloc(pool, ulen + plen + 2);
	memcpy(packed + 1, user, ulen);
	memcpy(packed + 2 + ulen, pass, plen);
	char *b64 = p_base64_encode(pool, packed, ulen + plen + 2);
	safe_memset(packed, 0, ulen + plen + 2);
	/* The password also sits in the parser's pool: wipe it there too
	   (it is our heap memory; the args are const only by convention). */
	safe_memset((char *)pass, 0, plen);
	login_client_auth_begin(client, tag, "PLAIN", b64);
	safe_memset(b64, 0, strlen(b64));
	pool_unref(&pool);
}

/* AUTHENTICATE mech [initial-response] (RFC 3501 6.2.2, RFC 4959). */
static void cmd_authenticate(struct login_client *client, const char *tag,
			     const struct imap_arg *args)
{
	const struct login_mech *mech;
	const char *mech_name, *ir = "";

	if (!imap_arg_get_atom(&args[0], &mech_name) ||
	    (!imap_arg_is_eol(&args[1]) &&
	     (!imap_arg_get_astring(&args[1], &ir) ||
	      !imap_arg_is_eol(&args[2])))) {
		login_client_send_bad(client, tag,
				      "Invalid arguments to AUTHENTICATE");
		return;
	}
	/* "=" is an empty initial response (RFC 4959); it goes to auth as
	   it is ("" there means no initial response). EXTERNAL's usual
	   message is an empty one. */
	if (strcmp(ir, "=") != 0 &&
	    !login_base64_is_valid(ir, LOGIN_MAX_SASL_DATA)) {
		login_client_send_bad(client, tag,
				      "Invalid base64 data in initial response");
		return;
	}
	mech = login_mechs_find(&client->lp->mechs, mech_name);
	if (mech == NULL) {
		login_client_send_tagline(client, tag,
			"NO Unsupported authentication mechanism.");
		return;
	}
	if (!client->auth_allowed ||
	    (mech->plaintext && !client->plaintext_allowed)) {
		login_client_send_tagline(client, tag, PRIVACY_REQUIRED_TEXT);
		return;
	}
	login_client_auth_begin(client, tag, mech->name, ir);
}

/* Sorted by name for bsearch. */
static const struct login_cmd login_cmds[] = {
	{ "AUTHENTICATE", cmd_authenticate },
	{ "CAPABILITY", cmd_capability },
	{ "ID", cmd_id },
	{ "LOGIN", cmd_login },
	{ "LOGOUT", cmd_logout },
	{ "NOOP", cmd_noop },
	{ "STARTTLS", cmd_starttls },
};

/* Commands of the authenticated and selected states (RFC 9051 and the
   extensions moat implements), answered with a state error, not as
   unknown. */
static const char *const login_postauth_cmds[] = {
	"APPEND", "CHECK", "CLOSE", "COMPRESS", "COPY", "CREATE", "DELETE",
	"ENABLE", "EXAMINE", "EXPUNGE", "FETCH", "GETMETADATA", "GETQUOTA",
	"GETQUOTAROOT", "IDLE", "LIST", "LSUB", "MOVE", "NAMESPACE", "NOTIFY",
	"RENAME", "SEARCH", "SELECT", "SETMETADATA", "SETQUOTA", "SORT",
	"STATUS", "STORE", "SUBSCRIBE", "THREAD", "UID", "UNSELECT",
	"UNSUBSCRIBE",
};

static int login_cmd_cmp(const void *key, const void *elem)
{
	const struct login_cmd *cmd = elem;
	return strcasecmp(key, cmd->name);
}

static bool login_cmd_is_postauth(const char *name)
{
	for (unsigned int i = 0; i < N_ELEMENTS(login_postauth_cmds); i++) {
		if (strcasecmp(login_postauth_cmds[i], name) == 0)
			return true;
	}
	return false;
}

void login_cmd_run(struct login_client *client, const char *tag,
		   const struct imap_arg *args)
{
	const struct login_cmd *cmd;
	const char *name;

	/* An empty line is ignored; login_timeout bounds a client that only
	   sends those. */
	if (imap_arg_is_eol(&args[0]))
		return;
	if (tag == NULL) {
		login_client_send_bad(client, NULL, "Invalid tag");
		return;
	}
	if (strlen(tag) > LOGIN_MAX_TAG_LEN) {
		login_client_send_bad(client, NULL, "Tag too long");
		return;
	}
	if (!imap_arg_get_atom(&args[1], &name)) {
		login_client_send_bad(client, tag, "Missing command name");
		return;
	}
	cmd = bsearch(name, login_cmds, N_ELEMENTS(login_cmds),
		      sizeof(login_cmds[0]), login_cmd_cmp);
	if (cmd != NULL)
		cmd->func(client, tag, &args[2]);
	else if (login_cmd_is_postauth(name))
		login_client_send_bad(client, tag,
				      "Command is not valid in this state");
	else
		login_client_send_bad(client, tag, "Unknown command");
}
