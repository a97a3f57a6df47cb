/* Unit tests for lmtp/lmtp-data.c: DATA transparency (RFC 5321 4.5.2),
   the end line, BDAT chunks, the size limit and sealing. */

#include "test-common.h"
#include "lmtp-data.h"

#include <fcntl.h>
#include <sys/stat.h>

/* The memfd's content after finish, as a string (test messages are small). */
static const char *contents(struct lmtp_data *data)
{
	static char buf[4096];
	int fd = lmtp_data_finish(data);

	test_assert(fd >= 0);
	if (fd < 0)
		return "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	test_assert(n >= 0);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

/* Feeds input in pieces of chunk bytes; returns how much was consumed. */
static size_t feed(struct lmtp_data *data, const char *input, size_t chunk)
{
	size_t len = strlen(input), pos = 0;

	while (pos < len && !lmtp_data_is_done(data)) {
		size_t n = MIN(chunk, len - pos);
		pos += lmtp_data_feed_dotted(data, input + pos, n);
	}
	return pos;
}

static void check_dotted(const char *input, const char *expected,
			 size_t consumed)
{
	for (size_t chunk = 1; chunk <= strlen(input) + 1; chunk++) {
		struct lmtp_data *data = lmtp_data_create(0);
		test_assert(feed(data, input, chunk) == consumed);
		test_assert(lmtp_data_is_done(data));
		test_assert_str(contents(data), expected);
		lmtp_data_destroy(&data);
	}
}

static void test_dotted(void)
{
	check_dotted("Subject: x\r\n\r\nbody\r\n.\r\n",
		     "Subject: x\r\n\r\nbody\r\n", 23);
	/* stuffed dots come out single; the end line is ".\r\n" alone */
	check_dotted("a\r\n..b\r\n...\r\n.c\r\n.\r\nQUIT\r\n",
		     "a\r\n.b\r\n..\r\nc\r\n", 20);
	/* an empty message */
	check_dotted(".\r\n", "", 3);
	/* bare LF line ends are line ends too */
	check_dotted("a\n..\n.\nNOOP\n", "a\n.\n", 7);
	/* ".\r" not followed by LF is no end: the dot was stuffing */
	check_dotted("x\r\n.\rY\r\n.\r\n", "x\r\n\rY\r\n", 11);
	/* a dot inside a line is data */
	check_dotted("a.b\r\n .\r\n.\r\n", "a.b\r\n .\r\n", 12);
	/* a long line crosses the internal buffer */
	static char big[3 * LMTP_DATA_BUFFER_SIZE];
	memset(big, 'x', sizeof(big) - 1);
	struct lmtp_data *data = lmtp_data_create(0);
	(void)lmtp_data_feed_dotted(data, big, sizeof(big) - 1);
	test_assert(lmtp_data_feed_dotted(data, "\r\n.\r\n", 5) == 5);
	test_assert(lmtp_data_size(data) == sizeof(big) + 1);
	int fd = lmtp_data_finish(data);
	struct stat st;
	test_assert(fd >= 0 && fstat(fd, &st) == 0 &&
		    (size_t)st.st_size == sizeof(big) + 1);
	lmtp_data_destroy(&data);
}

static void test_limit_and_seal(void)
{
	struct lmtp_data *data = lmtp_data_create(10);

	test_assert(feed(data, "0123456789\r\n.\r\n", 3) == 15);
	test_assert(lmtp_data_too_big(data));
	test_assert(lmtp_data_size(data) == 12);
	lmtp_data_destroy(&data);

	data = lmtp_data_create(12);
	test_assert(feed(data, "0123456789\r\n.\r\n", 100) == 15);
	test_assert(!lmtp_data_too_big(data));
	int fd = lmtp_data_finish(data);
	test_assert(fd >= 0);
	/* sealed: nobody can change it after the end */
	test_assert(write(fd, "x", 1) < 0);
	test_assert(ftruncate(fd, 1) < 0);
	int seals = fcntl(fd, F_GET_SEALS);
	test_assert(seals >= 0 && (seals & F_SEAL_WRITE) != 0 &&
		    (seals & F_SEAL_SEAL) != 0);
	lmtp_data_destroy(&data);
}

static void test_raw(void)
{
	struct lmtp_data *data = lmtp_data_create(0);

	/* BDAT: no transparency, dots and all */
	lmtp_data_feed_raw(data, "a\r\n.\r\n", 6);
	lmtp_data_feed_raw(data, "..b", 3);
	test_assert(!lmtp_data_is_done(data));
	test_assert_str(contents(data), "a\r\n.\r\n..b");
	lmtp_data_destroy(&data);
}

TEST_MAIN(TEST(test_dotted), TEST(test_limit_and_seal), TEST(test_raw))
