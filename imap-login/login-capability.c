/* SASL mechanism list and pre-auth CAPABILITY strings. */
#include "lib.h"
#include "buffer.h"
#include "login-capability.h"

#include <ctype.h>
#include <strings.h>

/* What works before login (the pre-login list must not promise more);
   the imap process speaks IMAP4rev2 after ENABLE IMAP4rev2. */
#define LOGIN_BASE_CAPABILITY "IMAP4rev1 IMAP4rev2 %s SASL-IR ID"
/* Room for the base list and LOGIN_MAX_MECHS "AUTH=<20 chars>" items. */
#define LOGIN_MAX_CAPABILITY_LEN 1024

/* Mechanisms that send the password or a bearer token itself (RFC 4616,
   draft LOGIN, RFC 7628 and Google's XOAUTH2). */
static const char *const plaintext_mechs[] = {
	"PLAIN", "LOGIN", "OAUTHBEARER", "XOAUTH2"
};

static bool mech_char_is_valid(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_';
}

static bool mech_is_plaintext(const char *name)
{
	for (unsigned int i = 0; i < N_ELEMENTS(plaintext_mechs); i++) {
		if (strcmp(plaintext_mechs[i], name) == 0)
			return true;
	}
	return false;
}

/* Add one name of len bytes at word. */
static int mechs_add(struct login_mechs *mechs, const char *word, size_t len,
		     const char **error_r)
{
	struct login_mech mech;

	if (len > LOGIN_MAX_MECH_NAME) {
		*error_r = "auth_mechanisms: mechanism name too long";
		return -1;
	}
	memset(&mech, 0, sizeof(mech));
	for (size_t i = 0; i < len; i++) {
		mech.name[i] = (char)toupper((unsigned char)word[i]);
		if (!mech_char_is_valid(mech.name[i])) {
			*error_r = "auth_mechanisms: invalid mechanism name";
			return -1;
		}
	}
	if (login_mechs_find(mechs, mech.name) != NULL)
		return 0;
	if (mechs->count == LOGIN_MAX_MECHS) {
		*error_r = "auth_mechanisms: too many mechanisms";
		return -1;
	}
	mech.plaintext = mech_is_plaintext(mech.name);
	mech.channel_binding = len > 5 && strcmp(mech.name + len - 5, "-PLUS") == 0;
	mech.client_cert = strcmp(mech.name, "EXTERNAL") == 0;
	mechs->mechs[mechs->count++] = mech;
	return 0;
}

int login_mechs_parse(const char *setting, struct login_mechs *mechs_r,
		      const char **error_r)
{
	struct login_mechs mechs;
	const char *p = setting, *word;

	memset(&mechs, 0, sizeof(mechs));
	while (*p != '\0') {
		if (*p == ' ' || *p == ',' || *p == '\t') {
			p++;
			continue;
		}
		word = p;
		while (*p != '\0' && *p != ' ' && *p != ',' && *p != '\t')
			p++;
		if (mechs_add(&mechs, word, (size_t)(p - word), error_r) < 0)
			return -1;
	}
	*mechs_r = mechs;
	return 0;
}

const struct login_mech *login_mechs_find(const struct login_mechs *mechs,
					  const char *name)
{
	for (unsigned int i = 0; i < mechs->count; i++) {
		if (strcasecmp(mechs->mechs[i].name, name) == 0)
			return &mechs->mechs[i];
	}
	return NULL;
}

const char *login_capability_build(pool_t pool, const struct login_mechs *mechs,
				   unsigned int flags)
{
	bool plaintext_allowed = (flags & LOGIN_CAP_PLAINTEXT_AUTH) != 0;
	buffer_t buf;
	const char *result;
	int ret = 0;

	buffer_init(&buf, LOGIN_MAX_CAPABILITY_LEN);
	ret |= buffer_printf(&buf, LOGIN_BASE_CAPABILITY,
			     (flags & LOGIN_CAP_LITERAL_MINUS) != 0 ?
			     "LITERAL-" : "LITERAL+");
	if ((flags & LOGIN_CAP_STARTTLS) != 0)
		ret |= buffer_append_str(&buf, " STARTTLS");
	for (unsigned int i = 0; i < mechs->count; i++) {
		if ((flags & LOGIN_CAP_AUTH) == 0 ||
		    (mechs->mechs[i].plaintext && !plaintext_allowed) ||
		    (mechs->mechs[i].channel_binding &&
		     (flags & LOGIN_CAP_CHANNEL_BINDING) == 0) ||
		    (mechs->mechs[i].client_cert &&
		     (flags & LOGIN_CAP_CLIENT_CERT) == 0))
			continue;
		ret |= buffer_printf(&buf, " AUTH=%s", mechs->mechs[i].name);
	}
	if (!plaintext_allowed)
		ret |= buffer_append_str(&buf, " LOGINDISABLED");
	/* The bound covers LOGIN_MAX_MECHS names of maximum length. */
	i_assert(ret == 0);
	result = p_strdup(pool, buf.data);
	buffer_free(&buf);
	return result;
}
