/* Unit tests for lib/unicode-casemap.c, i;unicode-casemap (RFC 5051).

   test-unicode-casemap --dump prints the folding of every code point
   that changes ("XXXX: " and the UTF-8 in hex), for
   check-unicode-casemap-ucd.sh to compare with an implementation of its
   own (Python's unicodedata). */
#include "test-common.h"
#include "buffer.h"
#include "unicode-casemap.h"

#include <stdio.h>
#include <string.h>

/* The folding of a NUL-terminated string, in a static buffer. */
static const char *fold(const char *in)
{
	static char out[1024];
	size_t used, n;

	n = unicode_casemap(in, strlen(in), &used, out, sizeof(out) - 1);
	test_assert_int(used, strlen(in));
	out[n] = '\0';
	return out;
}

static void check(const char *in, const char *expect)
{
	test_assert_str(fold(in), expect);
}

static void test_casemap_ascii(void)
{
	check("", "");
	check("Hello, World! az AZ 09", "HELLO, WORLD! AZ AZ 09");
	/* titlecase orders "_" (0x5f) after the letters, as RFC 5256 wants */
	check("a_b[c]^`{|}~\x7f\t\r\n", "A_B[C]^`{|}~\x7f\t\r\n");

	/* every ASCII byte, at every offset of the 8-byte fast path, and
	   runs that end in other characters */
	char in[40], out[40];
	size_t used, n;
	bool ok = true;
	for (unsigned int c = 0; c < 0x80; c++) {
		for (size_t at = 0; at < 20; at++) {
			memset(in, 'x', sizeof(in));
			in[at] = (char)c;
			memcpy(in + 30, "\xc3\xa9", 2);
			n = unicode_casemap(in, 32, &used, out, sizeof(out));
			char want = c >= 'a' && c <= 'z' ? (char)(c - 32) : (char)c;
			ok = ok && n == 33 && used == 32 && out[at] == want &&
				out[at == 0 ? 1 : 0] == 'X' &&
				memcmp(out + 30, "E\xcc\x81", 3) == 0;
		}
	}
	test_assert(ok);
	/* out full inside a run of ASCII */
	n = unicode_casemap("abcdefghijklmnop", 16, &used, out, 11);
	test_assert_int(n, 11);
	test_assert_int(used, 11);
	test_assert(memcmp(out, "ABCDEFGHIJK", 11) == 0);
}

/* RFC 5051 section 2's example: U+01C4 titlecases to U+01C5, which
   decomposes to U+0044 U+017E, and U+017E to U+007A U+030C. */
static void test_casemap_rfc5051_example(void)
{
	check("\xc7\x84", "Dz\xcc\x8c");
	check("\xc7\x85", "Dz\xcc\x8c");
	check("\xc7\x86", "Dz\xcc\x8c");
	/* the decomposed form of the same text folds to the same */
	/* but typed decomposed, the z is titlecased: RFC 5051 titlecases
	   before it decomposes, so U+01C4 and "DŽ" differ */
	check("D\xc5\xbe", "DZ\xcc\x8c");
	check("dz\xcc\x8c", "DZ\xcc\x8c");
}

/* Titlecase, not upper or lower case, and no full (SpecialCasing)
   mappings: RFC 5051 uses the simple titlecase property only. */
static void test_casemap_titlecase(void)
{
	check("\xc7\x89", "Lj");             /* U+01C9 lj -> U+01C8 Lj */
	check("\xc7\x87", "Lj");             /* U+01C7 LJ too */
	check("\xc7\x8c", "Nj");             /* U+01CC nj */
	check("\xc3\x9f", "\xc3\x9f");       /* ß has no simple titlecase */
	check("\xe1\xba\x9e", "\xe1\xba\x9e"); /* U+1E9E capital sharp s */
	check("\xcf\x82\xcf\x83\xce\xa3", "\xce\xa3\xce\xa3\xce\xa3"); /* ς σ Σ */
	check("\xcd\x85", "\xce\x99");       /* U+0345 ypogegrammeni -> Ι */
	check("\xc5\xbf", "S");              /* U+017F long s */
	check("\xd0\xb6\xd0\x96", "\xd0\x96\xd0\x96"); /* ж Ж */
	check("\xe2\x84\xaa", "K");          /* U+212A KELVIN SIGN */
	/* decomposition results are not titlecased again: "fi" stays */
	check("\xef\xac\x81", "fi");         /* U+FB01 LIGATURE FI */
	check("\xc5\x89", "\xca\xbcn");      /* U+0149 'n */
}

/* Turkish dotted and dotless i: not locale sensitive (RFC 5051). */
static void test_casemap_turkish(void)
{
	check("i", "I");
	check("\xc4\xb1", "I");              /* U+0131 dotless i */
	check("\xc4\xb0", "I\xcc\x87");      /* U+0130 -> I U+0307 */
	check("\xc4\xb0stanbul", "I\xcc\x87STANBUL");
}

static void test_casemap_nfkd(void)
{
	check("\xc2\xa0", " ");              /* NO-BREAK SPACE */
	check("\xe3\x80\x80", " ");          /* IDEOGRAPHIC SPACE */
	check("\xef\xbc\xa1\xef\xbd\x81", "AA"); /* fullwidth A a */
	check("\xe2\x91\xa0", "1");          /* circled digit one */
	check("\xc2\xbd", "1\xe2\x81\x84" "2"); /* ½ -> 1 U+2044 2 */
	check("\xe2\x84\xa6", "\xce\xa9");   /* OHM SIGN -> Ω */
	check("\xf0\x9d\x90\x80", "A");      /* U+1D400 bold A */
	check("\xe3\x8f\x82", "a.m.");       /* U+33C2 square am */
	/* recursion: U+212B -> U+00C5 -> A U+030A */
	check("\xe2\x84\xab", "A\xcc\x8a");
	/* U+1E09 -> U+1E08 -> U+00C7 U+0301 -> C U+0327 U+0301 */
	check("\xe1\xb8\x89", "C\xcc\xa7\xcc\x81");
	check("\xc3\x87\xcc\x81", "C\xcc\xa7\xcc\x81");
	/* Vietnamese U+1EBF -> U+1EBE -> U+00CA U+0301 -> E U+0302 U+0301 */
	check("\xe1\xba\xbf", "E\xcc\x82\xcc\x81");
	/* the longest: U+FDFA, 18 code points */
	test_assert_int(strlen(fold("\xef\xb7\xba")), 33);
}

static void test_casemap_combining(void)
{
	check("\xc3\xa9", "E\xcc\x81");      /* é */
	check("e\xcc\x81", "E\xcc\x81");
	check("\xc3\x89", "E\xcc\x81");
	check("caf\xc3\xa9", "CAFE\xcc\x81");
	/* marks keep their order: no canonical reordering */
	check("a\xcc\xa3\xcc\x82", "A\xcc\xa3\xcc\x82");
	check("a\xcc\x82\xcc\xa3", "A\xcc\x82\xcc\xa3");
	check("\xcc\x81", "\xcc\x81");       /* a lone mark stays */
}

static void test_casemap_hangul(void)
{
	check("\xea\xb0\x80", "\xe1\x84\x80\xe1\x85\xa1");   /* U+AC00 */
	check("\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8");
	check("\xed\x9e\xa3", "\xe1\x84\x92\xe1\x85\xb5\xe1\x87\x82"); /* U+D7A3 */
	check("\xe1\x84\x80\xe1\x85\xa1", "\xe1\x84\x80\xe1\x85\xa1");
}

/* Invalid UTF-8: every byte that is not part of a valid character is
   copied as it is, and the text after it folds normally. */
static void test_casemap_invalid(void)
{
	check("a\xff" "b", "A\xff" "B");
	check("\x80z", "\x80Z");                     /* lone continuation */
	check("\xc0\x81z", "\xc0\x81Z");             /* overlong 'A' */
	check("\xe0\x80\xaf", "\xe0\x80\xaf");       /* overlong '/' */
	check("\xed\xa0\x80", "\xed\xa0\x80");       /* surrogate */
	check("\xf4\x90\x80\x80", "\xf4\x90\x80\x80"); /* above U+10FFFF */
	check("\xc3z", "\xc3Z");                     /* cut sequence */
	check("\xe2\x82", "\xe2\x82");               /* cut at the end */
	check("\xc3\xa9\xc3", "E\xcc\x81\xc3");
	check("\xf5\x80\x80\x80", "\xf5\x80\x80\x80");
	check("\xc2\xa0\xc2", " \xc2");
}

static void test_casemap_bounded(void)
{
	char out[8];
	size_t used, n;

	/* whole characters only: é needs 3 bytes, 2 are left */
	n = unicode_casemap("abc\xc3\xa9", 5, &used, out, 4);
	test_assert_int(n, 3);
	test_assert_int(used, 3);
	n = unicode_casemap("abc\xc3\xa9", 5, &used, out, 6);
	test_assert_int(n, 6);
	test_assert_int(used, 5);
	test_assert(memcmp(out, "ABCE\xcc\x81", 6) == 0);
	n = unicode_casemap("abc", 3, &used, out, 0);
	test_assert_int(n, 0);
	test_assert_int(used, 0);
	n = unicode_casemap("\xea\xb0\x81", 3, &used, out, 8);
	test_assert_int(n, 0);   /* 9 bytes of jamo do not fit in 8 */
	test_assert_int(used, 0);

	buffer_t buf;
	buffer_init(&buf, 10);
	test_assert(unicode_casemap_append(&buf, "abc", 3) == 0);
	test_assert_str(buf.data, "ABC");
	/* 3 + 5 bytes fit, the second ½ (5 more) does not */
	test_assert(unicode_casemap_append(&buf, "\xc2\xbd\xc2\xbd", 4) < 0);
	test_assert_str(buf.data, "ABC1\xe2\x81\x84" "2");
	buffer_reset(&buf);
	test_assert(unicode_casemap_append(&buf, "0123456789", 10) == 0);
	test_assert(unicode_casemap_append(&buf, "x", 1) < 0);
	test_assert(unicode_casemap_append(&buf, "", 0) == 0);
	buffer_free(&buf);

	/* output never exceeds UNICODE_CASEMAP_GROWTH_MAX per input byte */
	buffer_init(&buf, 3 * UNICODE_CASEMAP_GROWTH_MAX);
	test_assert(unicode_casemap_append(&buf, "\xef\xb7\xba", 3) == 0);
	buffer_free(&buf);
}

static void test_casemap_partial_tail(void)
{
	test_assert_int(unicode_utf8_partial_tail("ab\xc3", 3), 1);
	test_assert_int(unicode_utf8_partial_tail("ab\xe2\x82", 4), 2);
	test_assert_int(unicode_utf8_partial_tail("ab\xf0\x9f\x98", 5), 3);
	test_assert_int(unicode_utf8_partial_tail("ab\xe2\x82\xac", 5), 0);
	test_assert_int(unicode_utf8_partial_tail("abc", 3), 0);
	test_assert_int(unicode_utf8_partial_tail("", 0), 0);
	test_assert_int(unicode_utf8_partial_tail("\x80\x80\x80\x80", 4), 0);
}

/* xorshift: reproducible input for the property tests */
static uint32_t rnd(uint32_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 17;
	*state ^= *state << 5;
	return *state;
}

/* Random text (valid and invalid UTF-8) folded in pieces cut anywhere,
   keeping back the partial tail as a stream reader does, gives the
   folding of the whole text. */
static void test_casemap_streaming(void)
{
	static const char *const pieces[] = {
		"a", "Z", " ", "\xc3\xa9", "\xc2\xa0", "\xef\xac\x81",
		"\xea\xb0\x81", "\xef\xb7\xba", "\xf0\x9d\x90\x80", "\xff",
		"\xc3", "\xe2\x82", "\x80", "\xc7\x84", "\xe1\xb8\x89",
	};
	uint32_t state = 12345;
	bool ok = true;

	for (unsigned int round = 0; round < 300 && ok; round++) {
		char text[400], whole[400 * UNICODE_CASEMAP_GROWTH_MAX];
		char parts[sizeof(whole)], carry[8];
		size_t len = 0, used, n_whole, n_parts = 0, carry_len = 0;

		while (len < sizeof(text) - 8) {
			const char *p = pieces[rnd(&state) % N_ELEMENTS(pieces)];
			memcpy(text + len, p, strlen(p));
			len += strlen(p);
		}
		n_whole = unicode_casemap(text, len, &used, whole, sizeof(whole));
		for (size_t pos = 0; pos < len;) {
			char chunk[64];
			size_t want = 1 + rnd(&state) % 40;   /* MIN() twice */
			size_t step = MIN(len - pos, want);
			memcpy(chunk, carry, carry_len);
			memcpy(chunk + carry_len, text + pos, step);
			size_t clen = carry_len + step;
			pos += step;
			size_t keep = pos < len ?
				unicode_utf8_partial_tail(chunk, clen) : 0;
			n_parts += unicode_casemap(chunk, clen - keep, &used,
						   parts + n_parts,
						   sizeof(parts) - n_parts);
			memcpy(carry, chunk + clen - keep, keep);
			carry_len = keep;
		}
		ok = n_parts == n_whole && memcmp(parts, whole, n_whole) == 0;
	}
	test_assert(ok);
}

/* The UTF-8 of cp into out (4 bytes of room); returns its length. */
static size_t utf8_encode(uint32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Whether data is well-formed UTF-8 (a decoder of the test's own). */
static bool utf8_valid(const unsigned char *p, size_t size)
{
	for (size_t i = 0; i < size;) {
		size_t len = p[i] < 0x80 ? 1 : p[i] < 0xc2 ? 0 : p[i] < 0xe0 ? 2 :
			p[i] < 0xf0 ? 3 : p[i] < 0xf5 ? 4 : 0;
		uint32_t cp = p[i] & (0x7f >> (len > 1 ? len : 0));
		if (len == 0 || len > size - i)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* Every valid code point folds, whole, into valid UTF-8 within the
   promised bounds (invalid bytes only come from invalid input). */
static void test_casemap_all_code_points(void)
{
	unsigned int bad = 0;

	for (uint32_t cp = 0; cp < 0x110000; cp++) {
		unsigned char in[4], out[UNICODE_CASEMAP_CHAR_MAX];
		size_t len, used, n;
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		len = utf8_encode(cp, in);
		n = unicode_casemap(in, len, &used, out, sizeof(out));
		if (used != len || n == 0 || n > len * UNICODE_CASEMAP_GROWTH_MAX ||
		    !utf8_valid(out, n))
			bad++;
	}
	test_assert_int(bad, 0);
}

/* "XXXX: hex UTF-8" for every code point whose folding is not itself. */
static int dump(void)
{
	for (uint32_t cp = 0; cp < 0x110000; cp++) {
		unsigned char in[4], out[UNICODE_CASEMAP_CHAR_MAX];
		size_t len, used, n;
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		len = utf8_encode(cp, in);
		n = unicode_casemap(in, len, &used, out, sizeof(out));
		if (n == len && memcmp(in, out, n) == 0)
			continue;
		printf("%04X: ", (unsigned int)cp);
		for (size_t i = 0; i < n; i++)
			printf("%02X", out[i]);
		printf("\n");
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST(test_casemap_ascii),
		TEST(test_casemap_rfc5051_example),
		TEST(test_casemap_titlecase),
		TEST(test_casemap_turkish),
		TEST(test_casemap_nfkd),
		TEST(test_casemap_combining),
		TEST(test_casemap_hangul),
		TEST(test_casemap_invalid),
		TEST(test_casemap_bounded),
		TEST(test_casemap_partial_tail),
		TEST(test_casemap_streaming),
		TEST(test_casemap_all_code_points),
	};

	if (argc == 2 && strcmp(argv[1], "--dump") == 0)
		return dump();
	return test_run(tests, N_ELEMENTS(tests));
}
