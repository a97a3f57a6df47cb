/* Unit tests for lib/strfuncs.c: splitting, numbers, sanitizing, tab
   escaping and base64. */
#include "test-common.h"
#include "strfuncs.h"

static void test_strsplit(void)
{
	pool_t pool = pool_create("test", 256);
	const char **arr;

	arr = p_strsplit(pool, "a,b,c", ',');
	test_assert_int(str_array_length(arr), 3);
	test_assert_str(arr[0], "a");
	test_assert_str(arr[1], "b");
	test_assert_str(arr[2], "c");
	test_assert(arr[3] == NULL);

	/* An empty string is one empty field. */
	arr = p_strsplit(pool, "", ',');
	test_assert_int(str_array_length(arr), 1);
	test_assert_str(arr[0], "");

	/* Empty fields at both ends and in the middle are kept. */
	arr = p_strsplit(pool, ",a,,b,", ',');
	test_assert_int(str_array_length(arr), 5);
	test_assert_str(arr[0], "");
	test_assert_str(arr[1], "a");
	test_assert_str(arr[2], "");
	test_assert_str(arr[3], "b");
	test_assert_str(arr[4], "");

	arr = p_strsplit(pool, ",", ',');
	test_assert_int(str_array_length(arr), 2);
	test_assert_str(arr[0], "");
	test_assert_str(arr[1], "");

	arr = p_strsplit(pool, "no separator", ',');
	test_assert_int(str_array_length(arr), 1);
	test_assert_str(arr[0], "no separator");

	arr = p_strsplit(pool, "x\ty\t", '\t');
	test_assert_int(str_array_length(arr), 3);
	test_assert_str(arr[1], "y");
	test_assert_str(arr[2], "");

	/* The fields are copies: changing the source does not change them. */
	char src[] = "k=v";
	arr = p_strsplit(pool, src, '=');
	src[0] = 'X';
	test_assert_str(arr[0], "k");

	const char *empty[] = { NULL };
	test_assert_int(str_array_length(empty), 0);
	pool_unref(&pool);
}

static void test_str_begins(void)
{
	const char *rest = NULL;
	test_assert(str_begins("LOGIN user", "LOGIN ", &rest));
	test_assert_str(rest, "user");
	test_assert(str_begins("abc", "", &rest));
	test_assert_str(rest, "abc");
	test_assert(str_begins("abc", "abc", &rest));
	test_assert_str(rest, "");
	rest = "unchanged";
	test_assert(!str_begins("ab", "abc", &rest));
	test_assert(!str_begins("login", "LOGIN", &rest));
	test_assert_str(rest, "unchanged");
	test_assert(str_begins("abc", "a", NULL));

	test_assert(str_ibegins("login x", "LOGIN"));
	test_assert(str_ibegins("LoGiN", "lOgIn"));
	test_assert(!str_ibegins("LOG", "LOGIN"));
	test_assert(str_ibegins("x", ""));
}

static void test_str_to_uint64(void)
{
	uint64_t num;

	test_assert(str_to_uint64("0", &num) == 0 && num == 0);
	test_assert(str_to_uint64("12345", &num) == 0 && num == 12345);
	test_assert(str_to_uint64("007", &num) == 0 && num == 7);
	test_assert(str_to_uint64("18446744073709551615", &num) == 0 &&
		    num == UINT64_MAX);
	test_assert(str_to_uint64("18446744073709551610", &num) == 0 &&
		    num == UINT64_MAX - 5);

	num = 4242;
	/* Overflow, by one and by a lot. */
	test_assert(str_to_uint64("18446744073709551616", &num) < 0);
	test_assert(str_to_uint64("18446744073709551620", &num) < 0);
	test_assert(str_to_uint64("99999999999999999999", &num) < 0);
	test_assert(str_to_uint64("184467440737095516150", &num) < 0);
	/* Junk. */
	test_assert(str_to_uint64("", &num) < 0);
	test_assert(str_to_uint64("-1", &num) < 0);
	test_assert(str_to_uint64("+1", &num) < 0);
	test_assert(str_to_uint64(" 1", &num) < 0);
	test_assert(str_to_uint64("1 ", &num) < 0);
	test_assert(str_to_uint64("12a", &num) < 0);
	test_assert(str_to_uint64("0x10", &num) < 0);
	test_assert(str_to_uint64("1.5", &num) < 0);
	/* Outputs are written only on success. */
	test_assert(num == 4242);

	unsigned int u = 99;
	test_assert(str_to_uint("4294967295", &u) == 0 && u == UINT_MAX);
	test_assert(str_to_uint("4294967296", &u) < 0);
	test_assert(u == UINT_MAX);
	test_assert(str_to_uint("x", &u) < 0);
	test_assert(str_to_uint("10", &u) == 0 && u == 10);
}

static void test_str_sanitize(void)
{
	pool_t pool = pool_create("test", 256);

	test_assert(str_sanitize(pool, NULL, 10) == NULL);
	test_assert_str(str_sanitize(pool, "", 10), "");
	test_assert_str(str_sanitize(pool, "plain text", 100), "plain text");
	test_assert_str(str_sanitize(pool, "a\tb\r\nc\001d\x7f" "e", 100),
			"a?b??c?d?e");
	/* Each 8-bit byte (e.g. UTF-8 sequences) becomes one '?'. */
	test_assert_str(str_sanitize(pool, "caf\xc3\xa9!", 100), "caf?" "?!");
	test_assert_str(str_sanitize(pool, "\xff\x80", 100), "??");
	/* Exactly max_len is not cut; longer is cut with "...". */
	test_assert_str(str_sanitize(pool, "12345", 5), "12345");
	test_assert_str(str_sanitize(pool, "123456", 5), "12345...");
	test_assert_str(str_sanitize(pool, "\n23456", 2), "?2...");
	test_assert_str(str_sanitize(pool, "abc", 0), "...");

	/* Every byte value 1..255 maps to itself or '?'. */
	char all[256];
	for (unsigned int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	const char *out = str_sanitize(pool, all, 1000);
	test_assert_int(strlen(out), 255);
	bool ok = true;
	for (unsigned int i = 1; i < 256; i++) {
		char expect = (i < 0x20 || i >= 0x7f) ? '?' : (char)i;
		if (out[i - 1] != expect)
			ok = false;
	}
	test_assert(ok);
	pool_unref(&pool);
}

static void test_tabescape_roundtrip(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(str_tabescape(pool, ""), "");
	test_assert_str(str_tabescape(pool, "plain"), "plain");
	test_assert_str(str_tabescape(pool, "a\tb"), "a\\tb");
	test_assert_str(str_tabescape(pool, "\\"), "\\\\");
	test_assert_str(str_tabescape(pool, "\r\n"), "\\r\\n");
	test_assert_str(str_tabescape(pool, "\001x"), "\\1x");
	test_assert_str(str_tabescape(pool, "\\t"), "\\\\t");

	/* Every byte value, alone and in one long string. */
	char all[256];
	bool ok = true;
	for (unsigned int i = 1; i < 256; i++) {
		char one[4] = { 'x', (char)i, 'y', '\0' };
		const char *esc = str_tabescape(pool, one);
		if (strpbrk(esc, "\t\r\n") != NULL)
			ok = false;
		char *copy = p_strdup(pool, esc);
		if (str_tabunescape(copy) < 0 || strcmp(copy, one) != 0)
			ok = false;
		all[i - 1] = (char)i;
	}
	test_assert(ok);
	all[255] = '\0';
	const char *esc = str_tabescape(pool, all);
	test_assert(strpbrk(esc, "\t\r\n") == NULL);
	/* \001 must be escaped too: it is used as a separator elsewhere. */
	test_assert(strchr(esc, '\001') == NULL);
	char *copy = p_strdup(pool, esc);
	test_assert(str_tabunescape(copy) == 0);
	test_assert_str(copy, all);

	/* Runs of specials. */
	const char *specials = "\\\\\t\t\n\r\001\\";
	copy = p_strdup(pool, str_tabescape(pool, specials));
	test_assert(str_tabunescape(copy) == 0);
	test_assert_str(copy, specials);
	pool_unref(&pool);
}

static void test_tabunescape_invalid(void)
{
	static const char *const invalid[] = {
		"\\", "abc\\", "\\x", "a\\0b", "\\T", "\\N", "\\ ", "\\\\\\",
		"\\2", "ok\\\\then\\q",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(invalid); i++) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s", invalid[i]);
		if (str_tabunescape(buf) != -1) {
			test_assert_str(invalid[i], "(expected to be rejected)");
		} else {
			test_assert(true);
		}
	}
	char valid[] = "a\\\\b\\tc\\nd\\re\\1f";
	test_assert(str_tabunescape(valid) == 0);
	test_assert_str(valid, "a\\b\tc\nd\re\001f");
	char empty[] = "";
	test_assert(str_tabunescape(empty) == 0);
	test_assert_str(empty, "");
}

struct b64_vector {
	const char *plain, *encoded;
};

/* RFC 4648 section 10. */
static const struct b64_vector rfc4648_vectors[] = {
	{ "", "" },
	{ "f", "Zg==" },
	{ "fo", "Zm8=" },
	{ "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

static void test_base64_vectors(void)
{
	pool_t pool = pool_create("test", 256);
	for (unsigned int i = 0; i < N_ELEMENTS(rfc4648_vectors); i++) {
		const struct b64_vector *v = &rfc4648_vectors[i];
		test_assert_str(p_base64_encode(pool, v->plain, strlen(v->plain)),
				v->encoded);
		unsigned char *data = NULL;
		size_t size = 9999;
		int ret = p_base64_decode(pool, v->encoded, strlen(v->encoded),
					  &data, &size);
		test_assert(ret == 0);
		if (ret == 0) {
			test_assert_int(size, strlen(v->plain));
			test_assert(memcmp(data, v->plain, size) == 0);
			test_assert(data[size] == '\0');
		}
	}
	pool_unref(&pool);
}

static void test_base64_binary(void)
{
	pool_t pool = pool_create("test", 1024);
	unsigned char bin[256];
	for (unsigned int i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof(bin); len += 1 + len / 8) {
		const char *enc = p_base64_encode(pool, bin, len);
		test_assert_int(strlen(enc), (len + 2) / 3 * 4);
		unsigned char *data;
		size_t size;
		test_assert(p_base64_decode(pool, enc, strlen(enc), &data, &size) == 0);
		test_assert_int(size, len);
		test_assert(memcmp(data, bin, len) == 0);
	}
	/* Both non-letter characters of the alphabet. */
	const unsigned char pm[3] = { 0xfb, 0xff, 0xbf };
	test_assert_str(p_base64_encode(pool, pm, 3), "+/+/");
	/* A NUL in the data survives (AUTHENTICATE PLAIN uses it). */
	unsigned char *data;
	size_t size;
	test_assert(p_base64_decode(pool, "AHVzZXIAcGFzcw==", 16, &data, &size) == 0);
	test_assert_int(size, 10);
	test_assert(size == 10 && memcmp(data, "\0user\0pass", 10) == 0);
	pool_unref(&pool);
}

static void test_base64_invalid(void)
{
	static const char *const invalid[] = {
		"Z", "Zg", "Zg=", "Zm9vY", "Zm9vYg=",       /* wrong length */
		"Zg=a", "Z===", "====", "=Zg=",              /* bad padding */
		"Zg==Zg==", "Zm8=Zm9v", "Zg=\x3dZm9v",       /* '=' in the middle */
		"Zm9v!mFy", "Zm9 YmFy", "Zm9v\nYmFy", "Zm-v", "Zm_v",
		"Zm9v\xc3\xa9mFy", "Zg\t=",                  /* bad characters */
	};
	pool_t pool = pool_create("test", 256);
	for (unsigned int i = 0; i < N_ELEMENTS(invalid); i++) {
		unsigned char *data = (unsigned char *)"untouched";
		size_t size = 4242;
		if (p_base64_decode(pool, invalid[i], strlen(invalid[i]),
				    &data, &size) != -1) {
			test_assert_str(invalid[i], "(expected to be rejected)");
		} else {
			test_assert(size == 4242 &&
				    strcmp((const char *)data, "untouched") == 0);
		}
	}
	/* A NUL inside the given length is not silently accepted. */
	unsigned char *data;
	size_t size;
	test_assert(p_base64_decode(pool, "Zm\0v", 4, &data, &size) == -1);
	/* src_len is honoured: trailing bytes past it are not read. */
	test_assert(p_base64_decode(pool, "Zm9vJUNK", 4, &data, &size) == 0);
	test_assert(size == 3 && memcmp(data, "foo", 3) == 0);
	pool_unref(&pool);
}

TEST_MAIN(
	TEST(test_strsplit),
	TEST(test_str_begins),
	TEST(test_str_to_uint64),
	TEST(test_str_sanitize),
	TEST(test_tabescape_roundtrip),
	TEST(test_tabunescape_invalid),
	TEST(test_base64_vectors),
	TEST(test_base64_binary),
	TEST(test_base64_invalid),
)
