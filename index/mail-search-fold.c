/* Simple case folding of UTF-8 for SEARCH (mail-search.h). Not the full
   Unicode table: the scripts whose upper and lower case letters are
   a fixed distance apart and keep their UTF-8 length, which covers
   i;unicode-casemap for the Latin, Greek and Cyrillic alphabets. */
#include "lib.h"
#include "buffer.h"
#include "mail-search-private.h"

#include <time.h>

static uint32_t fold_char(uint32_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c + 32;
	if (c < 0xc0)
		return c;
	if (c <= 0xde && c != 0xd7)
		return c + 32;                  /* Latin-1 */
	if (c >= 0x100 && c <= 0x137)
		return c | 1;                   /* Latin Extended-A pairs */
	if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
		return (c & 1) != 0 ? c + 1 : c;
	if (c >= 0x14a && c <= 0x177)
		return c | 1;
	if (c == 0x178)
		return 0xff;
	if (c >= 0x391 && c <= 0x3ab && c != 0x3a2)
		return c + 32;                  /* Greek */
	if (c == 0x3c2)
		return 0x3c3;                   /* final sigma */
	if (c >= 0x410 && c <= 0x42f)
		return c + 32;                  /* Cyrillic */
	if (c >= 0x400 && c <= 0x40f)
		return c + 80;
	return c;
}

/* Decode one 2-byte sequence (the only length fold_char changes). */
static bool utf8_two(const unsigned char *p, size_t left, uint32_t *c_r)
{
	if (left < 2 || (p[0] & 0xe0) != 0xc0 || (p[1] & 0xc0) != 0x80)
		return false;
	*c_r = ((uint32_t)(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
	return *c_r >= 0x80;
}

void mail_search_fold_utf8(const unsigned char *data, size_t size,
			   buffer_t *out)
{
	char *dest = buffer_reserve(out, size);
	size_t i = 0;
	uint32_t c;

	i_assert(dest != NULL);   /* callers size out for the text */

	/* every folded character keeps its length: out grows by size */
	while (i < size) {
		unsigned char b = data[i];
		if (b < 0x80) {
			dest[i++] = b >= 'A' && b <= 'Z' ? (char)(b + 32) :
				(char)b;
		} else if (utf8_two(data + i, size - i, &c) &&
			   (c = fold_char(c)) < 0x800) {
			dest[i++] = (char)(0xc0 | (c >> 6));
			dest[i++] = (char)(0x80 | (c & 0x3f));
		} else {
			dest[i] = (char)b;
			i++;
		}
	}
	buffer_commit(out, size);
}

size_t mail_search_utf8_partial_tail(const unsigned char *data, size_t size)
{
	/* look back at most 3 bytes for a lead byte whose sequence does
	   not fit in what is left */
	for (size_t back = 1; back <= 3 && back <= size; back++) {
		unsigned char b = data[size - back];
		if ((b & 0xc0) == 0x80)
			continue;
		size_t need = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 :
			(b & 0xf8) == 0xf0 ? 4 : 1;
		return need > back ? back : 0;
	}
	return 0;
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
