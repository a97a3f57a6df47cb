/* Unit tests for imap/imap-date.c: the date-time FETCH writes is the
   layout RFC 3501 9 gives ("dd-Mon-yyyy hh:mm:ss +zzzz", the day with a
   leading zero), the same as strftime's in every zone and at the edges,
   and parses back to the same time. */
#include "test-common.h"
#include "imap-date.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void expect_strftime(time_t t)
{
	char got[IMAP_DATETIME_LEN + 1], want[64];
	struct tm tm;
	time_t back;

	imap_datetime_format(t, got, sizeof(got));
	localtime_r(&t, &tm);
	test_assert(strftime(want, sizeof(want), "%d-%b-%Y %H:%M:%S %z",
			     &tm) > 0);
	test_assert_str(got, want);
	test_assert_int(strlen(got), IMAP_DATETIME_LEN);
	/* (the parser takes no date before 1970 in the zone's own time) */
	if (t >= 2 * 86400) {
		test_assert(imap_datetime_parse(got, &back));
		test_assert_int(back, t);
	}
}

static void test_zones(void)
{
	static const char *const zones[] = {
		"UTC", "Europe/Helsinki", "America/St_Johns",
		"Asia/Kathmandu", "Pacific/Chatham", "America/Los_Angeles",
	};
	static const time_t times[] = {
		0, 1, 59, 86399, 2 * 86400, 951782400 /* 29 Feb 2000 */,
		1711846800 /* a DST change in Europe */, 2147483647,
		4102444799 /* 31 Dec 2099 */,
	};
	const char *old = getenv("TZ");
	char *saved = old != NULL ? strdup(old) : NULL;

	for (unsigned int z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		setenv("TZ", zones[z], 1);
		tzset();
		for (unsigned int i = 0; i < sizeof(times) / sizeof(times[0]); i++)
			expect_strftime(times[i]);
		srand(z + 1);
		for (unsigned int i = 0; i < 2000; i++)
			expect_strftime((time_t)(((unsigned long)rand() << 16 ^
						  (unsigned long)rand()) %
						 4102444800UL));
	}
	if (saved != NULL) {
		setenv("TZ", saved, 1);
		free(saved);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

static void test_small_buffer(void)
{
	char buf[10];

	/* cut, never past the buffer */
	memset(buf, 'x', sizeof(buf));
	imap_datetime_format(0, buf, sizeof(buf));
	test_assert_int(strlen(buf), sizeof(buf) - 1);
}

TEST_MAIN(TEST(test_zones), TEST(test_small_buffer))
