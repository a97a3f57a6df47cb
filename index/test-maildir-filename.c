/* Unit tests: maildir-filename.c and mail-crlf.c */
#include "test-common.h"
#include "maildir-filename.h"
#include "mail-crlf.h"

#include <fcntl.h>

static void test_parse(void)
{
	struct maildir_filename fn;

	test_assert(maildir_filename_parse("123.M1P2Q3.host,S=1234,W=1250:2,FRS", &fn));
	test_assert_int(fn.base_len, strlen("123.M1P2Q3.host,S=1234,W=1250"));
	test_assert_int(fn.size, 1234);
	test_assert_int(fn.vsize, 1250);
	test_assert(fn.have_info);
	test_assert_int(fn.flags, MAIL_FLAGGED | MAIL_ANSWERED | MAIL_SEEN);
	test_assert_str(fn.other_flags, "");

	test_assert(maildir_filename_parse("abc", &fn));
	test_assert_int(fn.base_len, 3);
	test_assert(fn.size == MAILDIR_SIZE_UNKNOWN);
	test_assert(!fn.have_info);

	test_assert(maildir_filename_parse("x,S=12x,S=7:2,TaDP", &fn));
	test_assert_int(fn.size, 7);
	test_assert_int(fn.flags, MAIL_DELETED | MAIL_DRAFT);
	test_assert_str(fn.other_flags, "Pa");

	test_assert(maildir_filename_parse("a,W=6,X=1,S=5,S=9:2,zSazRS", &fn));
	test_assert_int(fn.size, 5);
	test_assert_int(fn.vsize, 6);
	test_assert_int(fn.flags, MAIL_SEEN | MAIL_ANSWERED);
	test_assert_str(fn.other_flags, "az");
	test_assert(maildir_filename_parse("a,S=,W=x1,S=:2,", &fn));
	test_assert(fn.size == MAILDIR_SIZE_UNKNOWN);
	test_assert(fn.vsize == MAILDIR_SIZE_UNKNOWN);
	test_assert(fn.have_info && fn.flags == 0);
	test_assert(maildir_filename_parse("a,S=99999999999999999999999", &fn));
	test_assert(fn.size == MAILDIR_SIZE_UNKNOWN);
	/* an unknown info version: no flags */
	test_assert(maildir_filename_parse("a,S=3:1,S", &fn));
	test_assert(!fn.have_info && fn.flags == 0 && fn.size == 3);
	test_assert_int(fn.base_len, 5);

	test_assert(!maildir_filename_parse("", &fn));
	test_assert(!maildir_filename_parse(".hidden", &fn));
	test_assert(!maildir_filename_parse("a/b", &fn));
	test_assert(!maildir_filename_parse(":2,S", &fn));
}

static void test_make(void)
{
	char buf[MAILDIR_FILENAME_MAX + 1];

	test_assert(maildir_filename_make(buf, sizeof(buf), "base:junk", 4,
		MAIL_SEEN | MAIL_DRAFT | MAIL_DELETED | MAIL_ANSWERED |
		MAIL_FLAGGED | MAIL_RECENT, "aP") == 0);
	test_assert_str(buf, "base:2,DFPRSTa");
	test_assert(maildir_filename_make(buf, sizeof(buf), "b", 1, 0, NULL) == 0);
	test_assert_str(buf, "b:2,");
	test_assert(maildir_filename_make(buf, 4, "base", 4, 0, NULL) < 0);
	/* round trip */
	struct maildir_filename fn;
	test_assert(maildir_filename_parse("m,S=5:2,ST", &fn));
	test_assert(maildir_filename_make(buf, sizeof(buf), "m,S=5", fn.base_len,
					  fn.flags & ~MAIL_DELETED,
					  fn.other_flags) == 0);
	test_assert_str(buf, "m,S=5:2,S");
}

static void test_unique(void)
{
	struct maildir_unique u;
	char a[MAILDIR_FILENAME_MAX], b[MAILDIR_FILENAME_MAX], host[64];

	maildir_unique_init(&u);
	test_assert(maildir_unique_next(&u, a, sizeof(a)) == 0);
	test_assert(maildir_unique_next(&u, b, sizeof(b)) == 0);
	test_assert(strcmp(a, b) != 0);
	test_assert(strchr(a, '/') == NULL && strchr(a, ':') == NULL);
	test_assert(strstr(a, ".M") != NULL && strstr(a, "Q1.") != NULL);
	test_assert(strstr(b, "Q2.") != NULL);
	test_assert(maildir_unique_next(&u, a, 8) < 0);

	maildir_hostname_sanitize("a/b:c", host, sizeof(host));
	test_assert_str(host, "a\\057b\\072c");
}

static void test_delivery_id(void)
{
	struct maildir_unique u;
	char a[MAILDIR_FILENAME_MAX], id[MAILDIR_DELIVERY_ID_LEN + 1];
	const char *want = "0123456789abcdef0123456789abcdef";

	maildir_unique_init(&u);
	test_assert(maildir_unique_next_delivery(&u, want, a, sizeof(a)) == 0);
	test_assert(strstr(a, "Q1D0123456789abcdef") != NULL);
	test_assert(maildir_base_get_delivery(a, id));
	test_assert_str(id, want);
	test_assert(maildir_unique_next(&u, a, sizeof(a)) == 0);
	test_assert(!maildir_base_get_delivery(a, id));
	/* other writers' names: no id, whatever they look like */
	test_assert(!maildir_base_get_delivery("1234.M1P2Q3.host", id));
	test_assert(!maildir_base_get_delivery("1234", id));
	test_assert(!maildir_base_get_delivery("1234.xD0123456789abcdef0123456789abcdeX.h", id));
	test_assert(!maildir_base_get_delivery("1.D0123456789ABCDEF0123456789ABCDEF.h", id));
	test_assert(maildir_base_get_delivery("1.D0123456789abcdef0123456789abcdef", id));
}

static int write_file(const char *path, const char *data)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		return -1;
	return fd;
}

static void test_crlf(void)
{
	char path[512];
	unsigned char buf[64];
	struct mail_crlf r;

	snprintf(path, sizeof(path), "%s/crlf", test_tmpdir());
	int fd = write_file(path, "a\nb\r\n\nc");
	test_assert(fd >= 0);
	mail_crlf_init(&r, fd, true);
	ssize_t n = mail_crlf_read(&r, buf, sizeof(buf));
	test_assert_int(n, 9);
	test_assert(memcmp(buf, "a\r\nb\r\n\r\nc", 9) == 0);
	test_assert_int(mail_crlf_read(&r, buf, sizeof(buf)), 0);

	/* one byte at a time splits the inserted CRLF */
	mail_crlf_init(&r, fd, true);
	char out[16];
	size_t total = 0;
	while ((n = mail_crlf_read(&r, buf, 1)) > 0)
		out[total++] = (char)buf[0];
	test_assert_int(total, 9);
	test_assert(memcmp(out, "a\r\nb\r\n\r\nc", 9) == 0);

	/* skip into the middle of an inserted CRLF */
	mail_crlf_init(&r, fd, true);
	test_assert(mail_crlf_skip(&r, 2) == 0);
	n = mail_crlf_read(&r, buf, sizeof(buf));
	test_assert_int(n, 7);
	test_assert(memcmp(buf, "\nb\r\n\r\nc", 7) == 0);
	close(fd);
}

TEST_MAIN(TEST(test_parse), TEST(test_make), TEST(test_unique),
	  TEST(test_delivery_id),
	  TEST(test_crlf))
