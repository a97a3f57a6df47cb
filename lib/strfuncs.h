#ifndef STRFUNCS_H
#define STRFUNCS_H
/* String helpers shared by every process. */

#include "mempool.h"

/* Split str at each sep into a NULL-terminated array allocated from pool. */
const char **p_strsplit(pool_t pool, const char *str, char sep);
unsigned int str_array_length(const char *const *arr);

bool str_begins(const char *str, const char *prefix, const char **rest_r);
bool str_ibegins(const char *str, const char *prefix);

/* Parse a decimal number; the whole string must be the number.
   Returns 0, or -1 on syntax error or overflow. */
int str_to_uint64(const char *str, uint64_t *num_r);
int str_to_uint(const char *str, unsigned int *num_r);

/* Copy of str fit for a log line: control characters and bytes >= 0x7f
   become '?', cut at max_len with "..." appended. Client strings pass
   through this before they are logged. */
const char *str_sanitize(pool_t pool, const char *str, size_t max_len);

/* Tab escaping for IPC fields: \ -> \\, TAB -> \t, LF -> \n, CR -> \r,
   and \001 -> \1. The escaped string contains no TAB, CR or LF. */
const char *str_tabescape(pool_t pool, const char *str);
/* Unescape in place; returns -1 on an invalid escape. */
int str_tabunescape(char *str);

/* 0..15 for a hex digit of either case, -1 for anything else. */
int hex_digit_value(unsigned char c);
/* 0..63 for a character of the standard base64 alphabet (RFC 4648 4),
   -1 for anything else ('=' included). */
int base64_char_value(unsigned char c);

/* Base64 (RFC 4648, standard alphabet, with padding). decode rejects
   invalid input and returns -1; the output is NUL-terminated (not counted). */
char *p_base64_encode(pool_t pool, const void *data, size_t size);
int p_base64_decode(pool_t pool, const char *src, size_t src_len,
		    unsigned char **data_r, size_t *size_r);

#endif
