/* Unit tests for mime/rfc2047.c, mime/rfc2231.c and mime/message-date.c. */
#include "test-common.h"
#include "rfc2047.h"
#include "rfc2231.h"
#include "message-date.h"

static const char *dec(pool_t pool, const char *s)
{
	return rfc2047_decode(pool, s, strlen(s));
}

static void test_rfc2047_decode(void)
{
	pool_t pool = pool_create("test", 1024);

	test_assert_str(dec(pool, "plain text"), "plain text");
	test_assert_str(dec(pool, "=?iso-8859-1?q?caf=E9?="), "caf\xc3\xa9");
	test_assert_str(dec(pool, "=?UTF-8?B?w6Q=?="), "\xc3\xa4");
	test_assert_str(dec(pool, "a =?utf-8?q?x?= =?utf-8?q?y?= b"), "a xy b");
	test_assert_str(dec(pool, "=?utf-8?q?a_b?="), "a b");
	/* a UTF-8 character split over two words */
	test_assert_str(dec(pool, "=?utf-8?q?=C3?= =?utf-8?q?=A4?="), "\xc3\xa4");
	test_assert_str(dec(pool, "=?utf-8*en?q?hi?="), "hi");
	/* unknown charset and broken words stay as written */
	test_assert_str(dec(pool, "=?x-nonexistent-cs?q?a?="),
			"=?x-nonexistent-cs?q?a?=");
	test_assert_str(dec(pool, "=?utf-8?x?a?="), "=?utf-8?x?a?=");
	test_assert_str(dec(pool, "=?utf-8?q?a"), "=?utf-8?q?a");
	/* invalid UTF-8 outside words becomes U+FFFD */
	test_assert_str(dec(pool, "a\xff"), "a\xef\xbf\xbd");
	/* plain runs are copied whole: the replacement is per bad byte,
	   and a sequence cut by '=' or by the end is bad */
	test_assert_str(dec(pool, "a\xff b=c"), "a\xef\xbf\xbd b=c");
	test_assert_str(dec(pool, "\xe2\x82=?utf-8?q?x?="),
			"\xef\xbf\xbd\xef\xbf\xbdx");
	test_assert_str(dec(pool, "caf\xc3\xa9 = ok"), "caf\xc3\xa9 = ok");
	test_assert_str(dec(pool, "x=?bad"), "x=?bad");
	test_assert_str(dec(pool, "a==?utf-8?q?b?="), "a=b");
	test_assert_str(dec(pool, "ok\xc3"), "ok\xef\xbf\xbd");
	test_assert_str(dec(pool, "\xf0\x9f\x98\x80 smile"),
			"\xf0\x9f\x98\x80 smile");
	test_assert_str(dec(pool, "\xed\xa0\x80!"),
			"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!");
	test_assert_str(dec(pool, "=?utf-8?q?a?= \xff =?utf-8?q?b?="),
			"a \xef\xbf\xbd b");
	test_assert_str(charset_to_utf8(pool, "koi8-r", "\xf0", 1), "\xd0\x9f");
	test_assert(charset_to_utf8(pool, "no-such-charset", "a", 1) == NULL);
	pool_unref(&pool);
}

static void test_rfc2231(void)
{
	pool_t pool = pool_create("test", 1024);
	struct mime_value v;

	rfc2231_parse(pool, "text/plain; charset=\"us-ascii\" (c); format=flowed",
		      true, &v);
	test_assert(v.value_valid);
	test_assert_str(v.value, "text/plain");
	test_assert_int(v.params_count, 2);
	test_assert_str(mime_value_get_param(&v, "CHARSET"), "us-ascii");
	test_assert_str(mime_value_get_param(&v, "format"), "flowed");

	rfc2231_parse(pool, "attachment; filename*0*=utf-8''a%20; filename*1=b; x=y",
		      false, &v);
	test_assert_str(v.value, "attachment");
	test_assert_int(v.params_count, 2);
	test_assert_str(v.params[0].name, "x");
	test_assert_str(v.params[1].name, "filename*");
	test_assert_str(v.params[1].value, "utf-8''a%20b");
	test_assert_str(rfc2231_decode_value(pool, v.params[1].value), "a b");

	rfc2231_parse(pool, "text; charset=x", true, &v);
	test_assert(!v.value_valid);
	rfc2231_parse(pool, "a/b; name==?utf-8?q?x?= ; n*99999999=x", true, &v);
	test_assert_str(mime_value_get_param(&v, "name"), "=?utf-8?q?x?=");
	pool_unref(&pool);
}

static void test_message_date(void)
{
	time_t t;
	int tz;

	test_assert(message_date_parse("Tue, 1 Jul 2003 10:52:37 +0200", 30,
				       &t, &tz) == 0);
	test_assert_int(t, 1057049557);
	test_assert_int(tz, 120);
	test_assert(message_date_parse("1 Jul 03 10:52 EST", 18, &t, &tz) == 0);
	test_assert_int(tz, -300);
	test_assert(message_date_parse("Fri, 21 Nov 1997 09(comment):   55  :  06 -0600",
				       47, &t, &tz) == 0);
	test_assert_int(t, 880127706);
	test_assert(message_date_parse("garbage", 7, &t, &tz) < 0);
	test_assert(message_date_parse("", 0, &t, &tz) < 0);
	test_assert(message_date_parse("32 Jan 2000 10:00 +0000", 23, &t, &tz) < 0);
}

TEST_MAIN(TEST(test_rfc2047_decode), TEST(test_rfc2231), TEST(test_message_date))
