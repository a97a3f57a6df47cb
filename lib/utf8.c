/* Strict UTF-8 validation (utf8.h). */
#include "utf8.h"

int utf8_decode(const void *data, size_t size, uint32_t *cp_r)
{
	const unsigned char *p = data;
	uint32_t cp, min;
	size_t extra;

	if (size == 0)
		return -1;
	if (p[0] < 0x80) {
		*cp_r = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		cp = p[0] & 0x1f; extra = 1; min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		cp = p[0] & 0x0f; extra = 2; min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		cp = p[0] & 0x07; extra = 3; min = 0x10000;
	} else {
		return -1;
	}
	if (extra >= size)
		return -1;
	for (size_t i = 1; i <= extra; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*cp_r = cp;
	return (int)extra + 1;
}

bool utf8_is_valid(const void *data, size_t size)
{
	const unsigned char *p = data;
	uint32_t cp;

	while (size > 0) {
		int len = utf8_decode(p, size, &cp);
		if (len < 0)
			return false;
		p += len;
		size -= (size_t)len;
	}
	return true;
}

bool utf8_has_8bit(const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++) {
		if (p[i] >= 0x80)
			return true;
	}
	return false;
}
