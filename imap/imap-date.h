#ifndef IMAP_DATE_H
#define IMAP_DATE_H
/* IMAP date-time (RFC 3501 9): "dd-Mon-yyyy hh:mm:ss +zzzz". */

#include <time.h>

/* Length of the formatted string, without quotes. */
#define IMAP_DATETIME_LEN 26

/* Format t in the server's local time zone into buf (at least
   IMAP_DATETIME_LEN + 1 bytes). */
void imap_datetime_format(time_t t, char *buf, size_t size);
/* Parse the date-time (the day may be " d", "d" or "dd"). Returns false
   on syntax errors. */
bool imap_datetime_parse(const char *str, time_t *t_r);

#endif
