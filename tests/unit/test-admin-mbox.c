/* Unit tests for admin/admin-mbox.c: mboxrd and mboxcl2 written and read
   back, format detection, flag headers, bounds. */

#include "test-common.h"
#include "admin-mbox.h"

#include <stdio.h>

/* 2021-02-05 07:09:10 UTC */
#define TEST_DATE ((time_t)1612508950)

static FILE *mbox_of(const char *data)
{
	FILE *f = tmpfile();

	test_assert(f != NULL);
	fputs(data, f);
	fflush(f);
	rewind(f);
	return f;
}

/* The next message as a C string (NULL at the end, "ERROR ..."). */
static const char *next(struct admin_mbox_reader *r, buffer_t *msg,
			struct admin_mbox_meta *meta)
{
	static char out[4096];
	const char *error;

	int ret = admin_mbox_read(r, msg, meta, &error);
	if (ret < 0) {
		snprintf(out, sizeof(out), "ERROR %s", error);
		return out;
	}
	if (ret == 0)
		return NULL;
	snprintf(out, sizeof(out), "%.*s", (int)msg->used, msg->data);
	return out;
}

static void test_mbox_read_rd(void)
{
	FILE *f = mbox_of(
		"\nFrom a@b Wed Jan  1 10:00:00 2020\n"
		"Subject: one\nX-Keywords: work, $x bad\\kw\nStatus: RO\n"
		"X-Status: ADT\n\n>From q\n>>From qq\nFrom: x\n\n"
		"From c Thu Jan  2 11:00:00 2020\nSubject: two\n\nlast");
	struct admin_mbox_reader *r = admin_mbox_reader_init(fileno(f), 1024);
	struct admin_mbox_meta meta;
	buffer_t msg;

	buffer_init(&msg, 1024);
	test_assert_str(next(r, &msg, &meta),
			"Subject: one\r\n\r\nFrom q\r\n>From qq\r\nFrom: x\r\n");
	test_assert_str(meta.flags, "\\Seen \\Answered \\Draft \\Deleted work $x");
	test_assert_str(meta.date, "01-Jan-2020 10:00:00 +0000");
	test_assert(admin_mbox_reader_format(r) == ADMIN_MBOX_RD);
	test_assert_str(next(r, &msg, &meta), "Subject: two\r\n\r\nlast");
	test_assert_str(meta.flags, "");
	test_assert(next(r, &msg, &meta) == NULL);
	buffer_free(&msg);
	admin_mbox_reader_deinit(&r);
	fclose(f);
}

/* write then read: the same message back in both formats */
static void test_mbox_round_trip(void)
{
	static const char *const msgs[] = {
		"Subject: a\r\nStatus: RO\r\n\r\nFrom here\r\n>From there\r\n",
		"Subject: b\r\nContent-Length: 999\r\n\r\n\r\nempty lines\r\n\r\n",
		"Subject: c\r\n\r\nno final newline",
		"Subject: only a header\r\n",
	};
	static const char *const expect[] = {
		"Subject: a\r\n\r\nFrom here\r\n>From there\r\n",
		NULL,   /* mboxrd keeps Content-Length, mboxcl2 drops it */
		"Subject: c\r\n\r\nno final newline\r\n",
		"Subject: only a header\r\n\r\n",
	};

	for (int fmt = ADMIN_MBOX_RD; fmt <= ADMIN_MBOX_CL2; fmt++) {
		FILE *f = tmpfile();
		for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++) {
			test_assert(admin_mbox_write(f, fmt, TEST_DATE,
				i == 0 ? "\\Seen \\Flagged kw1 \\Recent" : "",
				msgs[i], strlen(msgs[i])) == 0);
		}
		fflush(f);
		rewind(f);
		struct admin_mbox_reader *r = admin_mbox_reader_init(fileno(f), 4096);
		struct admin_mbox_meta meta;
		buffer_t msg;
		buffer_init(&msg, 4096);
		for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++) {
			const char *want = expect[i] != NULL ? expect[i] :
				fmt == ADMIN_MBOX_RD ? msgs[i] :
				"Subject: b\r\n\r\n\r\nempty lines\r\n\r\n";
			test_assert_str(next(r, &msg, &meta), want);
			test_assert_str(meta.date, "05-Feb-2021 07:09:10 +0000");
			if (i == 0)
				test_assert_str(meta.flags, "\\Seen \\Flagged kw1");
		}
		test_assert(next(r, &msg, &meta) == NULL);
		test_assert_int(admin_mbox_reader_format(r), fmt);
		buffer_free(&msg);
		admin_mbox_reader_deinit(&r);
		fclose(f);
	}
}

static void test_mbox_cl2_detection(void)
{
	/* a Content-Length that does not end before a From_ line: mboxrd */
	FILE *f = mbox_of("From a Wed Jan  1 10:00:00 2020\nContent-Length: 3\n\n"
			  "hello\n\nFrom b Wed Jan  1 10:00:00 2020\n\nx\n");
	struct admin_mbox_reader *r = admin_mbox_reader_init(fileno(f), 1024);
	struct admin_mbox_meta meta;
	buffer_t msg;

	buffer_init(&msg, 1024);
	test_assert_str(next(r, &msg, &meta), "Content-Length: 3\r\n\r\nhello\r\n");
	test_assert(admin_mbox_reader_format(r) == ADMIN_MBOX_RD);
	test_assert_str(next(r, &msg, &meta), "\r\nx\r\n");
	admin_mbox_reader_deinit(&r);
	fclose(f);

	/* mboxcl2: an unquoted From_ line inside the counted body */
	f = mbox_of("From a Wed Jan  1 10:00:00 2020\nContent-Length: 13\n\n"
		    "From inside\n\n\nFrom b Wed Jan  1 10:00:00 2020\n"
		    "Content-Length: 2\n\nx\n");
	r = admin_mbox_reader_init(fileno(f), 1024);
	test_assert_str(next(r, &msg, &meta), "\r\nFrom inside\r\n\r\n");
	test_assert(admin_mbox_reader_format(r) == ADMIN_MBOX_CL2);
	test_assert_str(next(r, &msg, &meta), "\r\nx\r\n");
	test_assert(next(r, &msg, &meta) == NULL);
	buffer_free(&msg);
	admin_mbox_reader_deinit(&r);
	fclose(f);
}

static void test_mbox_bounds(void)
{
	struct admin_mbox_meta meta;
	buffer_t msg;

	/* a message across many read chunks */
	FILE *f = tmpfile();
	fputs("From a Wed Jan  1 10:00:00 2020\nSubject: big\n\n", f);
	for (unsigned int i = 0; i < 20000; i++)
		fputs("0123456789012345678901234567890123456789\n", f);
	fputs("\nFrom b Wed Jan  1 10:00:00 2020\n\ntail\n", f);
	fflush(f);
	rewind(f);
	struct admin_mbox_reader *r = admin_mbox_reader_init(fileno(f), 1024 * 1024);
	buffer_init(&msg, 1024 * 1024);
	const char *error;
	test_assert_int(admin_mbox_read(r, &msg, &meta, &error), 1);
	test_assert_int(msg.used, strlen("Subject: big\r\n\r\n") + 20000 * 42);
	test_assert_str(next(r, &msg, &meta), "\r\ntail\r\n");
	admin_mbox_reader_deinit(&r);
	buffer_free(&msg);
	/* the same file with a small limit: a clear error, no growth */
	rewind(f);
	r = admin_mbox_reader_init(fileno(f), 4096);
	buffer_init(&msg, 4096);
	const char *got = next(r, &msg, &meta);
	test_assert(strstr(got, "larger than the limit") != NULL);
	admin_mbox_reader_deinit(&r);
	fclose(f);
	/* not an mbox */
	f = mbox_of("Subject: x\n\nbody\n");
	r = admin_mbox_reader_init(fileno(f), 4096);
	got = next(r, &msg, &meta);
	test_assert(strstr(got, "not an mbox") != NULL);
	buffer_free(&msg);
	admin_mbox_reader_deinit(&r);
	fclose(f);
}

static void test_mbox_dates(void)
{
	test_assert_int(admin_mbox_imap_date_parse("05-Feb-2021 08:09:10 +0100"),
			TEST_DATE);
	test_assert_int(admin_mbox_imap_date_parse(" 5-Feb-2021 02:09:10 -0500"),
			TEST_DATE);
	test_assert_int(admin_mbox_imap_date_parse("5-Foo-2021 02:09:10 -0500"), -1);
	test_assert_int(admin_mbox_imap_date_parse("garbage"), -1);
}

TEST_MAIN(TEST(test_mbox_read_rd), TEST(test_mbox_round_trip),
	  TEST(test_mbox_cl2_detection), TEST(test_mbox_bounds),
	  TEST(test_mbox_dates))
