/* Query words to IMAP SEARCH keys (admin-query.h). */
#include "admin-query.h"
#include "admin-imap.h"
#include "buffer.h"
#include "strfuncs.h"

#include <time.h>

#define ADMIN_SECS_PER_DAY 86400

enum admin_query_arg {
	QARG_NONE,
	QARG_DATE,      /* a date or an interval back from now */
	QARG_SIZE,
	QARG_STRING,
	QARG_HEADER,    /* a field name, then a string */
	QARG_SET,       /* a UID set */
	QARG_ATOM,      /* a keyword */
};

struct admin_query_key {
	const char *word;
	const char *imap;
	enum admin_query_arg arg;
};

static const struct admin_query_key admin_query_keys[] = {
	{ "all", "ALL", QARG_NONE },
	{ "answered", "ANSWERED", QARG_NONE },
	{ "deleted", "DELETED", QARG_NONE },
	{ "draft", "DRAFT", QARG_NONE },
	{ "flagged", "FLAGGED", QARG_NONE },
	{ "new", "NEW", QARG_NONE },
	{ "old", "OLD", QARG_NONE },
	{ "recent", "RECENT", QARG_NONE },
	{ "seen", "SEEN", QARG_NONE },
	{ "unanswered", "UNANSWERED", QARG_NONE },
	{ "undeleted", "UNDELETED", QARG_NONE },
	{ "undraft", "UNDRAFT", QARG_NONE },
	{ "unflagged", "UNFLAGGED", QARG_NONE },
	{ "unseen", "UNSEEN", QARG_NONE },
	{ "before", "BEFORE", QARG_DATE },
	{ "on", "ON", QARG_DATE },
	{ "since", "SINCE", QARG_DATE },
	{ "sentbefore", "SENTBEFORE", QARG_DATE },
	{ "senton", "SENTON", QARG_DATE },
	{ "sentsince", "SENTSINCE", QARG_DATE },
	{ "savedbefore", "SAVEDBEFORE", QARG_DATE },
	{ "savedon", "SAVEDON", QARG_DATE },
	{ "savedsince", "SAVEDSINCE", QARG_DATE },
	{ "larger", "LARGER", QARG_SIZE },
	{ "smaller", "SMALLER", QARG_SIZE },
	{ "bcc", "BCC", QARG_STRING },
	{ "body", "BODY", QARG_STRING },
	{ "cc", "CC", QARG_STRING },
	{ "from", "FROM", QARG_STRING },
	{ "subject", "SUBJECT", QARG_STRING },
	{ "text", "TEXT", QARG_STRING },
	{ "to", "TO", QARG_STRING },
	{ "header", "HEADER", QARG_HEADER },
	{ "uid", "UID", QARG_SET },
	{ "keyword", "KEYWORD", QARG_ATOM },
	{ "unkeyword", "UNKEYWORD", QARG_ATOM },
	{ "not", "NOT", QARG_NONE },
	{ "or", "OR", QARG_NONE },
};

static const char *const admin_months[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

/* "30d", "2w" (days, weeks back from now) or "2025-01-31"; the IMAP
   date (day granularity, RFC 3501 SEARCH dates). */
static int admin_query_date(pool_t pool, const char *value, time_t now,
			    const char **date_r)
{
	struct tm tm;
	unsigned int num;
	size_t len = strlen(value);

	memset(&tm, 0, sizeof(tm));
	if (len >= 2 && (value[len - 1] == 'd' || value[len - 1] == 'w')) {
		char *digits = p_strndup(pool, value, len - 1);
		if (str_to_uint(digits, &num) < 0 || num > 100000)
			return -1;
		time_t t = now - (time_t)num * ADMIN_SECS_PER_DAY *
			(value[len - 1] == 'w' ? 7 : 1);
		gmtime_r(&t, &tm);
	} else {
		int y, m, d;
		char extra;
		if (sscanf(value, "%4d-%2d-%2d%c", &y, &m, &d, &extra) != 3 ||
		    m < 1 || m > 12 || d < 1 || d > 31 || y < 1900)
			return -1;
		tm.tm_year = y - 1900;
		tm.tm_mon = m - 1;
		tm.tm_mday = d;
	}
	*date_r = p_strdup_printf(pool, "%d-%s-%04d", tm.tm_mday,
				  admin_months[tm.tm_mon], tm.tm_year + 1900);
	return 0;
}

/* "1234", "10k", "5M" to bytes. */
static int admin_query_size(pool_t pool, const char *value,
			    const char **size_r)
{
	size_t len = strlen(value);
	uint64_t num, mult = 1;

	if (len > 1 && (value[len - 1] == 'k' || value[len - 1] == 'K'))
		mult = 1024;
	else if (len > 1 && (value[len - 1] == 'm' || value[len - 1] == 'M'))
		mult = 1024 * 1024;
	char *digits = p_strndup(pool, value, mult == 1 ? len : len - 1);
	if (str_to_uint64(digits, &num) < 0 || num > UINT32_MAX / mult)
		return -1;
	*size_r = p_strdup_printf(pool, "%llu", (unsigned long long)(num * mult));
	return 0;
}

static bool admin_query_is_set(const char *value)
{
	return value[0] != '\0' &&
		strspn(value, "0123456789:,*") == strlen(value);
}

static bool admin_query_is_atom(const char *value)
{
	if (value[0] == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
		if (*p <= 0x20 || *p >= 0x7f || strchr("(){%*\"\\]", *p) != NULL)
			return false;
	}
	return true;
}

static bool admin_query_ascii(const char *value)
{
	for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
		if (*p >= 0x80)
			return false;
	}
	return true;
}

/* The key's argument(s) from argv[*i + 1...], appended to buf. */
static int admin_query_arg(pool_t pool, buffer_t *buf,
			   const struct admin_query_key *key, int argc,
			   char **argv, int *i, time_t now, bool *utf8,
			   const char **error_r)
{
	unsigned int needed = key->arg == QARG_NONE ? 0 :
		key->arg == QARG_HEADER ? 2 : 1;
	const char *value;

	if (*i + (int)needed >= argc) {
		*error_r = p_strdup_printf(pool, "query: %s needs %s", key->word,
					   needed == 2 ? "a field and a string" :
					   "a value");
		return -1;
	}
	for (unsigned int n = 0; n < needed; n++) {
		const char *arg = argv[++*i];
		int ret = 0;
		switch (key->arg) {
		case QARG_DATE:
			ret = admin_query_date(pool, arg, now, &value);
			break;
		case QARG_SIZE:
			ret = admin_query_size(pool, arg, &value);
			break;
		case QARG_SET:
			ret = admin_query_is_set(arg) ? 0 : -1;
			value = arg;
			break;
		case QARG_ATOM:
			ret = admin_query_is_atom(arg) ? 0 : -1;
			value = arg;
			break;
		default:
			if (!admin_query_ascii(arg))
				*utf8 = true;
			value = admin_imap_quote(pool, arg);
			break;
		}
		if (ret < 0) {
			*error_r = p_strdup_printf(pool, "query: invalid value "
						   "for %s", key->word);
			return -1;
		}
		if (buffer_printf(buf, " %s", value) < 0) {
			*error_r = "query: too long";
			return -1;
		}
	}
	return 0;
}

int admin_query_build(pool_t pool, int argc, char **argv, time_t now,
		      const char **program_r, const char **error_r)
{
	buffer_t buf;
	bool utf8 = false;

	if (argc == 0) {
		*error_r = "a query is needed (\"all\" for every message)";
		return -1;
	}
	buffer_init(&buf, ADMIN_QUERY_MAX);
	for (int i = 0; i < argc; i++) {
		const char *word = argv[i];
		const struct admin_query_key *key = NULL;
		for (unsigned int k = 0; k < N_ELEMENTS(admin_query_keys); k++) {
			if (strcasecmp(admin_query_keys[k].word, word) == 0)
				key = &admin_query_keys[k];
		}
		const char *imap = key != NULL ? key->imap :
			strcmp(word, "(") == 0 || strcmp(word, ")") == 0 ? word :
			NULL;
		if (imap == NULL) {
			buffer_free(&buf);
			*error_r = p_strdup_printf(pool, "query: unknown key %s",
						   str_sanitize(pool, word, 64));
			return -1;
		}
		if (buffer_printf(&buf, "%s%s", buf.used == 0 ? "" : " ", imap) < 0) {
			buffer_free(&buf);
			*error_r = "query: too long";
			return -1;
		}
		if (key != NULL && admin_query_arg(pool, &buf, key, argc, argv,
						   &i, now, &utf8, error_r) < 0) {
			buffer_free(&buf);
			return -1;
		}
	}
	*program_r = p_strdup_printf(pool, "%s%s", utf8 ? "CHARSET UTF-8 " : "",
				     buf.data);
	buffer_free(&buf);
	return 0;
}
