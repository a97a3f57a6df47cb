#ifndef MESSAGE_DATE_H
#define MESSAGE_DATE_H
/* RFC 5322 section 3.3 date-time, with the obsolete forms of section 4.3
   (two-digit years, named and military zones, comments, missing seconds),
   for INTERNALDATE fallback and SORT DATE. */

#include <time.h>

/* Parse str (a Date: header value). On success returns 0 with *time_r
   the UTC time and *tz_offset_r the zone in minutes east of UTC; returns
   -1 if it is not a date. */
int message_date_parse(const char *str, size_t len, time_t *time_r,
		       int *tz_offset_r);

#endif
