/* RFC 5322 date-time parsing. */
#include "lib.h"
#include "buffer.h"
#include "message-header.h"
#include "message-date.h"

#include <strings.h>

/* Longest token a date consists of ("Wednesday", "+0000"). */
#define DATE_TOKEN_MAX 32

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec"
};

static const struct {
	const char *name;
	int offset;   /* minutes */
} zone_names[] = {
	{ "ut", 0 }, { "gmt", 0 }, { "z", 0 },
	{ "est", -5 * 60 }, { "edt", -4 * 60 },
	{ "cst", -6 * 60 }, { "cdt", -5 * 60 },
	{ "mst", -7 * 60 }, { "mdt", -6 * 60 },
	{ "pst", -8 * 60 }, { "pdt", -7 * 60 },
};

struct date_lexer {
	struct rfc822_lexer lex;
	char tok[DATE_TOKEN_MAX + 1];
};

/* Next token: a run of letters, a run of digits, or one other char. */
static bool next_token(struct date_lexer *d)
{
	size_t n = 0;
	int c;

	if (!rfc822_skip_cfws(&d->lex))
		return false;
	c = rfc822_lexer_peek(&d->lex);
	bool digit = c >= '0' && c <= '9';
	bool alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
	if (!digit && !alpha) {
		d->tok[n++] = (char)c;
		d->lex.data++;
	} else {
		while ((c = rfc822_lexer_peek(&d->lex)) >= 0) {
			bool cd = c >= '0' && c <= '9';
			bool ca = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
			if ((digit && !cd) || (alpha && !ca))
				break;
			if (n < DATE_TOKEN_MAX)
				d->tok[n++] = (char)c;
			d->lex.data++;
		}
	}
	d->tok[n] = '\0';
	return true;
}

static bool tok_number(const char *tok, unsigned int max_digits, int *num_r)
{
	int n = 0;
	size_t len = strlen(tok);

	if (len == 0 || len > max_digits)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return false;
		n = n * 10 + (tok[i] - '0');
	}
	*num_r = n;
	return true;
}

static bool parse_zone(struct date_lexer *d, int *offset_r)
{
	int num;

	*offset_r = 0;
	if (!next_token(d))
		return true;   /* missing zone: treat as UTC */
	if (d->tok[0] == '+' || d->tok[0] == '-') {
		int sign = d->tok[0] == '-' ? -1 : 1;
		if (!next_token(d) || strlen(d->tok) != 4 ||
		    !tok_number(d->tok, 4, &num))
			return false;
		*offset_r = sign * ((num / 100) * 60 + num % 100);
		return true;
	}
	for (unsigned int i = 0; i < N_ELEMENTS(zone_names); i++) {
		if (strcasecmp(d->tok, zone_names[i].name) == 0) {
			*offset_r = zone_names[i].offset;
			return true;
		}
	}
	/* military and unknown zones: RFC 5322 4.3 says treat as -0000 */
	return true;
}

static bool parse_time(struct date_lexer *d, struct tm *tm)
{
	int h, m, s = 0;

	if (!next_token(d) || !tok_number(d->tok, 2, &h) ||
	    !next_token(d) || strcmp(d->tok, ":") != 0 ||
	    !next_token(d) || !tok_number(d->tok, 2, &m))
		return false;
	const unsigned char *save = d->lex.data;
	if (next_token(d) && strcmp(d->tok, ":") == 0) {
		if (!next_token(d) || !tok_number(d->tok, 2, &s))
			return false;
	} else {
		d->lex.data = save;
	}
	if (h > 23 || m > 59 || s > 60)
		return false;
	tm->tm_hour = h;
	tm->tm_min = m;
	tm->tm_sec = s;
	return true;
}

static bool parse_day_month_year(struct date_lexer *d, struct tm *tm)
{
	int day, year, month = -1;

	if (!tok_number(d->tok, 2, &day) || day < 1 || day > 31)
		return false;
	if (!next_token(d))
		return false;
	for (int i = 0; i < 12; i++) {
		if (strncasecmp(d->tok, month_names[i], 3) == 0 &&
		    strlen(d->tok) == 3)
			month = i;
	}
	if (month < 0 || !next_token(d) || !tok_number(d->tok, 4, &year))
		return false;
	/* obsolete two and three digit years (RFC 5322 4.3) */
	if (strlen(d->tok) <= 2)
		year += year < 50 ? 2000 : 1900;
	else if (strlen(d->tok) == 3)
		year += 1900;
	tm->tm_mday = day;
	tm->tm_mon = month;
	tm->tm_year = year - 1900;
	return true;
}

int message_date_parse(const char *str, size_t len, time_t *time_r,
		       int *tz_offset_r)
{
	struct date_lexer d;
	struct tm tm;
	int offset;
	time_t t;

	memset(&d, 0, sizeof(d));
	memset(&tm, 0, sizeof(tm));
	rfc822_lexer_init(&d.lex, str, len);
	if (!next_token(&d))
		return -1;
	if ((d.tok[0] | 0x20) >= 'a' && (d.tok[0] | 0x20) <= 'z') {
		/* day-of-week, optionally followed by a comma */
		if (!next_token(&d))
			return -1;
		if (strcmp(d.tok, ",") == 0 && !next_token(&d))
			return -1;
	}
	if (!parse_day_month_year(&d, &tm) || !parse_time(&d, &tm) ||
	    !parse_zone(&d, &offset))
		return -1;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*time_r = t - (time_t)offset * 60;
	*tz_offset_r = offset;
	return 0;
}
