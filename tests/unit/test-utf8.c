/* Unit tests for lib/utf8.c: RFC 3629's strict UTF-8. */
#include "test-common.h"
#include "utf8.h"

static void test_decode(void)
{
	uint32_t cp;

	test_assert(utf8_decode("a", 1, &cp) == 1 && cp == 'a');
	test_assert(utf8_decode("\xc3\xa9", 2, &cp) == 2 && cp == 0xe9);
	test_assert(utf8_decode("\xe2\x82\xac", 3, &cp) == 3 && cp == 0x20ac);
	test_assert(utf8_decode("\xf0\x9f\x98\x80", 4, &cp) == 4 &&
		    cp == 0x1f600);
	test_assert(utf8_decode("\xf4\x8f\xbf\xbf", 4, &cp) == 4 &&
		    cp == 0x10ffff);
	/* the bounds of each length */
	test_assert(utf8_decode("\xc2\x80", 2, &cp) == 2 && cp == 0x80);
	test_assert(utf8_decode("\xe0\xa0\x80", 3, &cp) == 3 && cp == 0x800);
	test_assert(utf8_decode("\xf0\x90\x80\x80", 4, &cp) == 4 &&
		    cp == 0x10000);
	/* cut short by size, even when the bytes go on */
	test_assert(utf8_decode("\xc3\xa9", 1, &cp) < 0);
	test_assert(utf8_decode("\xe2\x82\xac", 2, &cp) < 0);
	test_assert(utf8_decode("", 0, &cp) < 0);
}

static void test_invalid(void)
{
	static const char *const bad[] = {
		"\x80",                 /* lone continuation */
		"\xbf",
		"\xc0\xaf",             /* overlong "/" */
		"\xc1\xbf",
		"\xe0\x80\xaf",         /* overlong, 3 bytes */
		"\xf0\x80\x80\xaf",     /* overlong, 4 bytes */
		"\xed\xa0\x80",         /* U+D800 */
		"\xed\xbf\xbf",         /* U+DFFF */
		"\xf4\x90\x80\x80",     /* U+110000 */
		"\xf8\x88\x80\x80\x80", /* 5-byte form */
		"\xfe", "\xff",
		"\xc3\x28",             /* continuation missing */
		"\xe2\x28\xa1",
	};

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++)
		test_assert(!utf8_is_valid(bad[i], strlen(bad[i])));
	test_assert(utf8_is_valid("", 0));
	test_assert(utf8_is_valid("plain ASCII", 11));
	test_assert(utf8_is_valid("Gr\xc3\xbc\xc3\x9f" "e \xe2\x82\xac", 11));
	/* NUL is U+0000: valid; the caller decides whether it is allowed */
	test_assert(utf8_is_valid("a\0b", 3));
	/* a valid prefix does not make the rest valid */
	test_assert(!utf8_is_valid("\xc3\xa9\xc3", 3));
}

static void test_has_8bit(void)
{
	test_assert(!utf8_has_8bit("abc", 3));
	test_assert(!utf8_has_8bit("", 0));
	test_assert(utf8_has_8bit("ab\x80", 3));
	/* only size bytes are looked at */
	test_assert(!utf8_has_8bit("ab\x80", 2));
}

TEST_MAIN(TEST(test_decode), TEST(test_invalid), TEST(test_has_8bit))
