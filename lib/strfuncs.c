/* String helpers. */
#include "lib.h"
#include "strfuncs.h"

const char **p_strsplit(pool_t pool, const char *str, char sep)
{
	unsigned int count = 1;
	for (const char *p = str; *p != '\0'; p++) {
		if (*p == sep)
			count++;
	}
	const char **arr = p_malloc(pool, i_mul_size(count + 1, sizeof(*arr)));
	unsigned int i = 0;
	const char *start = str;
	for (const char *p = str;; p++) {
		if (*p == sep || *p == '\0') {
			arr[i++] = p_strndup(pool, start, (size_t)(p - start));
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
	arr[i] = NULL;
	return arr;
}

unsigned int str_array_length(const char *const *arr)
{
	unsigned int count = 0;
	while (arr[count] != NULL)
		count++;
	return count;
}

bool str_begins(const char *str, const char *prefix, const char **rest_r)
{
	size_t len = strlen(prefix);
	if (strncmp(str, prefix, len) != 0)
		return false;
	if (rest_r != NULL)
		*rest_r = str + len;
	return true;
}

bool str_ibegins(const char *str, const char *prefix)
{
	return strncasecmp(str, prefix, strlen(prefix)) == 0;
}

int str_to_uint64(const char *str, uint64_t *num_r)
{
	uint64_t num = 0;
	if (*str == '\0')
		return -1;
	for (; *str != '\0'; str++) {
		if (*str < '0' || *str > '9')
			return -1;
		if (num > (UINT64_MAX - (uint64_t)(*str - '0')) / 10)
			return -1;
		num = num * 10 + (uint64_t)(*str - '0');
	}
	*num_r = num;
	return 0;
}

int str_to_uint(const char *str, unsigned int *num_r)
{
	uint64_t num;
	if (str_to_uint64(str, &num) < 0 || num > UINT_MAX)
		return -1;
	*num_r = (unsigned int)num;
	return 0;
}

const char *str_sanitize(pool_t pool, const char *str, size_t max_len)
{
	if (str == NULL)
		return NULL;
	size_t len = strlen(str);
	bool cut = len > max_len;
	if (cut)
		len = max_len;
	char *out = p_malloc(pool, len + 4);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];
		out[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	if (cut)
		memcpy(out + len, "...", 3);
	return out;
}

const char *str_tabescape(pool_t pool, const char *str)
{
	size_t extra = 0;
	for (const char *p = str; *p != '\0'; p++) {
		if (strchr("\\\t\n\r\001", *p) != NULL)
			extra++;
	}
	if (extra == 0)
		return str;
	char *out = p_malloc(pool, strlen(str) + extra + 1), *o = out;
	for (const char *p = str; *p != '\0'; p++) {
		switch (*p) {
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\001': *o++ = '\\'; *o++ = '1'; break;
		default: *o++ = *p; break;
		}
	}
	*o = '\0';
	return out;
}

int str_tabunescape(char *str)
{
	char *o = str;
	for (const char *p = str; *p != '\0'; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		switch (*++p) {
		case '\\': *o++ = '\\'; break;
		case 't': *o++ = '\t'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case '1': *o++ = '\001'; break;
		default: return -1;   /* includes a trailing lone backslash */
		}
	}
	*o = '\0';
	return 0;
}

static const char b64enc[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int hex_digit_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int base64_char_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '+') return 62;
	if (c == '/') return 63;
	return -1;
}

char *p_base64_encode(pool_t pool, const void *data, size_t size)
{
	const unsigned char *in = data;
	char *out = p_malloc(pool, i_add_size(i_mul_size((size + 2) / 3, 4), 1));
	char *o = out;
	size_t i;
	for (i = 0; i + 2 < size; i += 3) {
		*o++ = b64enc[in[i] >> 2];
		*o++ = b64enc[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
		*o++ = b64enc[((in[i + 1] & 15) << 2) | (in[i + 2] >> 6)];
		*o++ = b64enc[in[i + 2] & 63];
	}
	if (i < size) {
		*o++ = b64enc[in[i] >> 2];
		if (i + 1 < size) {
			*o++ = b64enc[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
			*o++ = b64enc[(in[i + 1] & 15) << 2];
		} else {
			*o++ = b64enc[(in[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = '\0';
	return out;
}


int p_base64_decode(pool_t pool, const char *src, size_t src_len,
		    unsigned char **data_r, size_t *size_r)
{
	if (src_len % 4 != 0)
		return -1;
	unsigned char *out = p_malloc(pool, src_len / 4 * 3 + 1);
	size_t o = 0;
	for (size_t i = 0; i < src_len; i += 4) {
		int v[4];
		unsigned int pad = 0;
		for (unsigned int j = 0; j < 4; j++) {
			char c = src[i + j];
			if (c == '=' && i + 4 == src_len && j >= 2) {
				pad++;
				v[j] = 0;
				continue;
			}
			if (pad > 0 || (v[j] = base64_char_value(c)) < 0)
				return -1;
		}
		uint32_t n = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) |
			((uint32_t)v[2] << 6) | (uint32_t)v[3];
		out[o++] = (unsigned char)(n >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(n >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)n;
	}
	out[o] = '\0';
	*data_r = out;
	*size_r = o;
	return 0;
}
