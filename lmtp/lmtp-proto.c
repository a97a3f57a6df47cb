/* LMTP command syntax (lmtp-proto.h). */
#include "lib.h"
#include "strfuncs.h"
#include "lmtp-proto.h"
#include "utf8.h"

#include <ctype.h>
#include <strings.h>

static const struct {
	const char *name;
	enum lmtp_verb verb;
} verbs[] = {
	{ "LHLO", LMTP_VERB_LHLO }, { "HELO", LMTP_VERB_HELO },
	{ "EHLO", LMTP_VERB_EHLO }, { "MAIL", LMTP_VERB_MAIL },
	{ "RCPT", LMTP_VERB_RCPT }, { "DATA", LMTP_VERB_DATA },
	{ "BDAT", LMTP_VERB_BDAT }, { "RSET", LMTP_VERB_RSET },
	{ "NOOP", LMTP_VERB_NOOP }, { "QUIT", LMTP_VERB_QUIT },
	{ "VRFY", LMTP_VERB_VRFY }, { "HELP", LMTP_VERB_HELP },
	{ "STARTTLS", LMTP_VERB_STARTTLS },
};

enum lmtp_verb lmtp_verb_parse(const char *line, const char **args_r)
{
	size_t len = strcspn(line, " ");

	*args_r = line + len;
	while (**args_r == ' ')
		(*args_r)++;
	for (unsigned int i = 0; i < N_ELEMENTS(verbs); i++) {
		if (strlen(verbs[i].name) == len &&
		    strncasecmp(line, verbs[i].name, len) == 0)
			return verbs[i].verb;
	}
	return LMTP_VERB_UNKNOWN;
}

static bool path_char_ok(unsigned char c)
{
	/* printable ASCII and UTF-8 (RFC 6531 addresses arrive as bytes) */
	return c > ' ' && c != 0x7f;
}

/* "<path>" (or a bare address, as lenient MTAs send) at *pp into out.
   A source route "@a,@b:" before the mailbox is dropped (RFC 5321 4.1.2:
   it MUST be accepted and SHOULD be ignored). Returns 0 or -1. */
static int parse_path(const char **pp, char *out)
{
	const char *p = *pp;
	size_t len = 0;
	bool bracket = *p == '<', quoted = false, route = false;

	if (bracket)
		p++;
	if (bracket && *p == '@') {
		const char *colon = strchr(p, ':');
		const char *end = strchr(p, '>');
		if (colon == NULL || (end != NULL && colon > end))
			return -1;
		p = colon + 1;
		route = true;
	}
	for (;; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\0')
			break;
		if (quoted) {
			if (c == '\\' && p[1] != '\0') {
				if (len + 2 > LMTP_PATH_MAX)
					return -1;
				out[len++] = *p++;
				out[len++] = *p;
				continue;
			}
			if (c == '"')
				quoted = false;
			else if (c < ' ' || c == 0x7f)
				return -1;
		} else if (c == '"') {
			quoted = true;
		} else if (bracket && c == '>') {
			break;
		} else if (!bracket && c == ' ') {
			break;
		} else if (!path_char_ok(c) || c == '<' || c == '>') {
			return -1;
		}
		if (len == LMTP_PATH_MAX)
			return -1;
		out[len++] = (char)c;
	}
	if (quoted || (bracket && *p != '>') || (route && len == 0))
		return -1;
	if (bracket)
		p++;
	if (*p != '\0' && *p != ' ')
		return -1;
	out[len] = '\0';
	*pp = p;
	return 0;
}

/* The next " KEY[=VALUE]" parameter: key and value (or NULL) into the
   buffers. Returns 1, 0 at the end, -1 on bad syntax. */
static int next_param(const char **pp, char *key, size_t key_size,
		      char *value, size_t value_size, bool *has_value_r)
{
	const char *p = *pp;

	while (*p == ' ')
		p++;
	if (*p == '\0')
		return 0;
	size_t len = strcspn(p, " ");
	const char *eq = memchr(p, '=', len);
	size_t klen = eq == NULL ? len : (size_t)(eq - p);
	size_t vlen = eq == NULL ? 0 : len - klen - 1;

	if (klen == 0 || klen >= key_size || vlen >= value_size)
		return -1;
	for (size_t i = 0; i < klen; i++) {
		if (!isalnum((unsigned char)p[i]) && p[i] != '-')
			return -1;
	}
	memcpy(key, p, klen);
	key[klen] = '\0';
	memcpy(value, eq == NULL ? "" : eq + 1, vlen);
	value[vlen] = '\0';
	*has_value_r = eq != NULL;
	*pp = p + len;
	return 1;
}

static int parse_prefix(const char **pp, const char *prefix)
{
	size_t len = strlen(prefix);

	if (strncasecmp(*pp, prefix, len) != 0)
		return -1;
	*pp += len;
	/* "MAIL FROM: <a@b>": a space after the colon is common */
	while (**pp == ' ')
		(*pp)++;
	return 0;
}

int lmtp_address_check(const char *path, bool smtputf8, bool sender,
		       struct lmtp_error *error_r)
{
	size_t len = strlen(path);

	if (!utf8_has_8bit(path, len))
		return 0;
	if (!smtputf8) {
		error_r->reply = "553 5.6.7 Must declare SMTPUTF8 to send "
			"unicode address";
		return -1;
	}
	if (!utf8_is_valid(path, len)) {
		error_r->reply = sender ? "501 5.1.7 Bad sender address syntax" :
			"501 5.1.3 Bad recipient address syntax";
		return -1;
	}
	return 0;
}

int lmtp_parse_mail(const char *args, struct lmtp_mail *mail_r,
		    struct lmtp_error *error_r)
{
	char key[32], value[LMTP_PATH_MAX + 1];
	bool has_value;
	unsigned int count = 0;
	int ret;

	memset(mail_r, 0, sizeof(*mail_r));
	if (parse_prefix(&args, "FROM:") < 0) {
		error_r->reply = "501 5.5.4 Syntax: MAIL FROM:<address>";
		return -1;
	}
	if (parse_path(&args, mail_r->path) < 0) {
		error_r->reply = "501 5.1.7 Bad sender address syntax";
		return -1;
	}
	while ((ret = next_param(&args, key, sizeof(key), value, sizeof(value),
				 &has_value)) > 0) {
		if (++count > LMTP_PARAMS_MAX)
			break;
		if (strcasecmp(key, "SIZE") == 0) {
			if (!has_value || value[0] < '0' || value[0] > '9' ||
			    str_to_uint64(value, &mail_r->size) < 0) {
				error_r->reply = "501 5.5.4 Invalid SIZE parameter";
				return -1;
			}
			mail_r->size_set = true;
		} else if (strcasecmp(key, "BODY") == 0) {
			if (strcasecmp(value, "7BIT") == 0)
				mail_r->body = LMTP_BODY_7BIT;
			else if (strcasecmp(value, "8BITMIME") == 0)
				mail_r->body = LMTP_BODY_8BITMIME;
			else if (strcasecmp(value, "BINARYMIME") == 0)
				mail_r->body = LMTP_BODY_BINARYMIME;
			else {
				error_r->reply = "501 5.5.4 Invalid BODY parameter";
				return -1;
			}
		} else if (strcasecmp(key, "SMTPUTF8") == 0) {
			/* RFC 6531 3.4: a keyword without a value */
			if (has_value) {
				error_r->reply = "501 5.5.4 SMTPUTF8 takes no value";
				return -1;
			}
			mail_r->smtputf8 = true;
		} else if (strcasecmp(key, "RET") == 0 ||
			   strcasecmp(key, "ENVID") == 0 ||
			   strcasecmp(key, "AUTH") == 0) {
			/* DSN and AUTH: this is the final delivery, there is
			   nothing to relay them to */
		} else {
			error_r->reply = "555 5.5.4 Unsupported parameter";
			return -1;
		}
	}
	if (ret < 0 || count > LMTP_PARAMS_MAX) {
		error_r->reply = "501 5.5.4 Invalid parameters";
		return -1;
	}
	return lmtp_address_check(mail_r->path, mail_r->smtputf8, true,
				  error_r);
}

int lmtp_parse_rcpt(const char *args, struct lmtp_rcpt_addr *rcpt_r,
		    struct lmtp_error *error_r)
{
	char key[32], value[LMTP_PATH_MAX + 1];
	bool has_value;
	unsigned int count = 0;
	int ret;

	memset(rcpt_r, 0, sizeof(*rcpt_r));
	if (parse_prefix(&args, "TO:") < 0) {
		error_r->reply = "501 5.5.4 Syntax: RCPT TO:<address>";
		return -1;
	}
	if (parse_path(&args, rcpt_r->path) < 0 || rcpt_r->path[0] == '\0') {
		error_r->reply = "501 5.1.3 Bad recipient address syntax";
		return -1;
	}
	while ((ret = next_param(&args, key, sizeof(key), value, sizeof(value),
				 &has_value)) > 0) {
		if (++count > LMTP_PARAMS_MAX)
			break;
		if (strcasecmp(key, "ORCPT") != 0 &&
		    strcasecmp(key, "NOTIFY") != 0) {
			error_r->reply = "555 5.5.4 Unsupported parameter";
			return -1;
		}
	}
	if (ret < 0 || count > LMTP_PARAMS_MAX) {
		error_r->reply = "501 5.5.4 Invalid parameters";
		return -1;
	}
	return 0;
}

int lmtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r)
{
	size_t len = strcspn(args, " ");
	char num[21];

	if (len == 0 || len >= sizeof(num) || args[0] < '0' || args[0] > '9')
		return -1;
	memcpy(num, args, len);
	num[len] = '\0';
	if (str_to_uint64(num, size_r) < 0)
		return -1;
	args += len;
	while (*args == ' ')
		args++;
	*last_r = false;
	if (strcasecmp(args, "LAST") == 0)
		*last_r = true;
	else if (*args != '\0')
		return -1;
	return 0;
}

void lmtp_address_split(const char *address, const char *delimiter,
			char *user_r, char *detail_r, char *domain_r)
{
	/* the domain starts after the last '@' (a quoted local part may
	   hold one) */
	const char *at = strrchr(address, '@');
	size_t local_len = at == NULL ? strlen(address) : (size_t)(at - address);
	size_t user_len = local_len;

	i_assert(local_len <= LMTP_PATH_MAX);
	if (delimiter[0] != '\0') {
		const char *d = memchr(address, delimiter[0], local_len);
		if (d != NULL)
			user_len = (size_t)(d - address);
	}
	memcpy(user_r, address, user_len);
	user_r[user_len] = '\0';
	if (user_len < local_len) {
		memcpy(detail_r, address + user_len + 1, local_len - user_len - 1);
		detail_r[local_len - user_len - 1] = '\0';
	} else {
		detail_r[0] = '\0';
	}
	strcpy(domain_r, at == NULL ? "" : at + 1);
}

static int append_str(char *dest, size_t dest_size, size_t *pos,
		      const char *str, bool lower)
{
	for (; *str != '\0'; str++) {
		if (*pos + 1 >= dest_size)
			return -1;
		dest[(*pos)++] = lower ? (char)tolower((unsigned char)*str) : *str;
	}
	return 0;
}

int lmtp_username_format(const char *format, const char *user,
			 const char *domain, char *dest, size_t dest_size)
{
	size_t pos = 0;

	for (const char *p = format; *p != '\0'; p++) {
		bool lower = false;
		int ret = 0;
		if (*p != '%') {
			char c[2] = { *p, '\0' };
			ret = append_str(dest, dest_size, &pos, c, false);
		} else {
			if (p[1] == 'L') {
				lower = true;
				p++;
			}
			switch (p[1]) {
			case 'u':
				ret = append_str(dest, dest_size, &pos, user, lower);
				if (ret == 0 && domain[0] != '\0') {
					ret = append_str(dest, dest_size, &pos, "@", false);
					if (ret == 0)
						ret = append_str(dest, dest_size, &pos,
								 domain, lower);
				}
				break;
			case 'n':
				ret = append_str(dest, dest_size, &pos, user, lower);
				break;
			case 'd':
				ret = append_str(dest, dest_size, &pos, domain, lower);
				break;
			case '%':
				ret = append_str(dest, dest_size, &pos, "%", false);
				break;
			default:
				/* the setting was checked: unreachable for it */
				return -1;
			}
			p++;
		}
		if (ret < 0)
			return -1;
	}
	dest[pos] = '\0';
	return 0;
}
