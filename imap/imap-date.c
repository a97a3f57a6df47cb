/* IMAP date-time formatting and parsing (imap-date.h). */
#include "imap-common.h"
#include "imap-date.h"

static const char *const month_names[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

static char *put_digits(char *p, unsigned int v, unsigned int n)
{
	for (unsigned int i = n; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + n;
}

void imap_datetime_format(time_t t, char *buf, size_t size)
{
	struct tm tm;

	localtime_r(&t, &tm);
	long off = tm.tm_gmtoff / 60;
	char sign = off < 0 ? '-' : '+';
	if (off < 0)
		off = -off;
	int year = tm.tm_year + 1900;
	if (size < IMAP_DATETIME_LEN + 1 || year < 0 || year > 9999 ||
	    off >= 100 * 60) {
		/* what the fixed layout below cannot hold */
		snprintf(buf, size, "%02d-%s-%04d %02d:%02d:%02d %c%02ld%02ld",
			 tm.tm_mday, month_names[tm.tm_mon], year, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, sign, off / 60, off % 60);
		return;
	}
	/* FETCH writes one per message: no snprintf */
	char *p = put_digits(buf, (unsigned int)tm.tm_mday, 2);
	*p++ = '-';
	memcpy(p, month_names[tm.tm_mon], 3);
	p += 3;
	*p++ = '-';
	p = put_digits(p, (unsigned int)year, 4);
	*p++ = ' ';
	p = put_digits(p, (unsigned int)tm.tm_hour, 2);
	*p++ = ':';
	p = put_digits(p, (unsigned int)tm.tm_min, 2);
	*p++ = ':';
	p = put_digits(p, (unsigned int)tm.tm_sec, 2);
	*p++ = ' ';
	*p++ = sign;
	p = put_digits(p, (unsigned int)(off / 60), 2);
	p = put_digits(p, (unsigned int)(off % 60), 2);
	*p = '\0';
}

static bool parse_digits(const char **p, unsigned int n, int *num_r)
{
	int num = 0;

	for (unsigned int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		num = num * 10 + (c - '0');
	}
	*p += n;
	*num_r = num;
	return true;
}

static bool parse_day_month(const char **p, struct tm *tm)
{
	const char *s = *p;
	int day;

	if (*s == ' ')
		s++;
	if (!parse_digits(&s, 1, &day))
		return false;
	if (*s >= '0' && *s <= '9')
		day = day * 10 + (*s++ - '0');
	if (*s++ != '-' || day < 1 || day > 31)
		return false;
	tm->tm_mday = day;
	for (tm->tm_mon = 0; tm->tm_mon < 12; tm->tm_mon++) {
		if (strncasecmp(s, month_names[tm->tm_mon], 3) == 0)
			break;
	}
	if (tm->tm_mon == 12 || s[3] != '-')
		return false;
	*p = s + 4;
	return true;
}

bool imap_datetime_parse(const char *str, time_t *t_r)
{
	struct tm tm;
	int year, hour, min, sec, zh, zm;
	const char *p = str;

	memset(&tm, 0, sizeof(tm));
	if (!parse_day_month(&p, &tm) || !parse_digits(&p, 4, &year) ||
	    *p++ != ' ' || !parse_digits(&p, 2, &hour) || *p++ != ':' ||
	    !parse_digits(&p, 2, &min) || *p++ != ':' ||
	    !parse_digits(&p, 2, &sec) || *p++ != ' ')
		return false;
	char sign = *p++;
	if ((sign != '+' && sign != '-') || !parse_digits(&p, 2, &zh) ||
	    !parse_digits(&p, 2, &zm) || *p != '\0')
		return false;
	if (hour > 23 || min > 59 || sec > 60 || zm > 59 || year < 1970)
		return false;
	tm.tm_year = year - 1900;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	long offset = (zh * 60L + zm) * 60L;
	*t_r = sign == '+' ? t - offset : t + offset;
	return true;
}
