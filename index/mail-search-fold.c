/* Folding of SEARCH strings and text (mail-search.h): i;unicode-casemap
   (lib/unicode-casemap.h), which Dovecot uses for SEARCH too, so that
   keys and text compare as bytes; and the civil day arithmetic. */
#include "lib.h"
#include "buffer.h"
#include "unicode-casemap.h"
#include "mail-search-private.h"

#include <time.h>

void mail_search_fold_utf8(const unsigned char *data, size_t size,
			   buffer_t *out)
{
	/* callers make room for UNICODE_CASEMAP_GROWTH_MAX per byte */
	if (unicode_casemap_append(out, data, size) < 0)
		i_panic("search: folded text does not fit its buffer");
}

size_t mail_search_fold_max(size_t size)
{
	return i_add_size(i_mul_size(size, UNICODE_CASEMAP_GROWTH_MAX), 1);
}

int64_t mail_search_civil_day(int year, int month, int day)
{
	struct tm tm = {
		.tm_year = year - 1900, .tm_mon = month - 1, .tm_mday = day,
		.tm_hour = 12,
	};
	time_t t = timegm(&tm);

	/* noon keeps the division away from day boundaries */
	return ((int64_t)t - 12 * 3600) / 86400 -
		(((int64_t)t - 12 * 3600) % 86400 < 0 ? 1 : 0);
}
