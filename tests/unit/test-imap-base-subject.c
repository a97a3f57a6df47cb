/* RFC 5256 base subject extraction (index/imap-base-subject.c) and the
   Message-ID parsing of index/mail-sort-keys.c. */
#include "test-common.h"
#include "buffer.h"
#include "mempool.h"
#include "imap-base-subject.h"
#include "mail-sort-keys.h"

#include <string.h>

static const char *base(const char *subject, bool *reply_r)
{
	static char result[IMAP_BASE_SUBJECT_MAX + 1];
	pool_t pool = pool_create("test", 1024);
	buffer_t out;

	buffer_init(&out, IMAP_BASE_SUBJECT_MAX);
	imap_base_subject_get(pool, subject, strlen(subject), &out, reply_r);
	memcpy(result, out.data, out.used + 1);
	buffer_free(&out);
	pool_unref(&pool);
	return result;
}

/* Expectations are written in lower case; keys have ASCII in upper case
   (imap_sort_fold_utf8()). */
static void check(const char *subject, const char *expect, bool expect_reply)
{
	char upper[IMAP_BASE_SUBJECT_MAX + 1];
	bool reply;
	size_t i;

	for (i = 0; expect[i] != '\0' && i < IMAP_BASE_SUBJECT_MAX; i++) {
		upper[i] = expect[i] >= 'a' && expect[i] <= 'z' ?
			(char)(expect[i] - 32) : expect[i];
	}
	upper[i] = '\0';
	test_assert_str(base(subject, &reply), upper);
	test_assert_int(reply, expect_reply);
}

static void test_base_subject_plain(void)
{
	check("", "", false);
	check("Hello", "hello", false);
	check("  Hello   World  ", "hello world", false);
	check("Hello\tWorld\n Again", "hello world again", false);
	check("re", "re", false);
	check("Re:", "", true);
	check("[foo]", "[foo]", false);
	check("[foo] ", "[foo]", false);
}

static void test_base_subject_leaders(void)
{
	check("Re: hello", "hello", true);
	check("RE: Re: re: hello", "hello", true);
	check("Fwd: hello", "hello", true);
	check("FW: hello", "hello", true);
	check("Re [2]: hello", "hello", true);
	check("Re:hello", "hello", true);
	check("[list] Re: hello", "hello", true);
	check("[list] hello", "hello", false);
	check("[a] [b] hello", "hello", false);
	check("Re: [foo] Fwd: subject (fwd)", "subject", true);
	check("Refresh: not a reply", "refresh: not a reply", false);
	check("hello (fwd)", "hello", true);
	check("hello (fwd) (fwd)  ", "hello", true);
	check("Reply", "reply", false);
}

static void test_base_subject_fwd_wrapper(void)
{
	check("[fwd: hello]", "hello", true);
	check("[Fwd: Re: hello]", "hello", true);
	check("[fwd: [list] hello]", "hello", true);
	/* a whole "[fwd: ...]" is also a subj-blob (step 4) */
	check("[fwd: hello] tail", "tail", false);
	check("Re: [fwd: hello (fwd)]", "hello", true);
	check("[fwd:]", "", true);
}

static void test_base_subject_encoded(void)
{
	check("=?UTF-8?B?UmU6IEjDpGxsw7Y=?=", "h\xc3\xa4ll\xc3\xb6", true);
	check("=?ISO-8859-1?Q?Re:_=C4pfel?=", "\xc3\xa4pfel", true);
	check("AW: =?UTF-8?Q?=D0=9F=D1=80=D0=B8?=", "aw: \xd0\xbf\xd1\x80\xd0\xb8",
	      false);
}

static void test_base_subject_long(void)
{
	char subject[IMAP_BASE_SUBJECT_MAX * 2 + 1];
	bool reply;

	memset(subject, 'a', sizeof(subject) - 1);
	subject[sizeof(subject) - 1] = '\0';
	test_assert_int(strlen(base(subject, &reply)), IMAP_BASE_SUBJECT_MAX);
}

static const char *next_id(const char **p, const char *end)
{
	static char result[256];
	buffer_t out;

	buffer_init(&out, sizeof(result) - 1);
	if (!mail_thread_msgid_next(p, end, &out)) {
		buffer_free(&out);
		return NULL;
	}
	memcpy(result, out.data, out.used + 1);
	buffer_free(&out);
	return result;
}

static void test_msgid_parse(void)
{
	const char *s = "<a@b> junk <\"01KF\"@x.y> <no-at> < c @ d >"
		" <x(comment)@y> <bad<e@f>";
	const char *p = s, *end = s + strlen(s);

	test_assert_str(next_id(&p, end), "a@b");
	test_assert_str(next_id(&p, end), "01KF@x.y");
	test_assert_str(next_id(&p, end), "c@d");
	test_assert_str(next_id(&p, end), "x@y");
	test_assert_str(next_id(&p, end), "e@f");
	test_assert(next_id(&p, end) == NULL);
	test_assert(mail_thread_msgid_hash("a@b", 3) ==
		    mail_thread_msgid_hash("a@b", 3));
	test_assert(mail_thread_msgid_hash("a@b", 3) !=
		    mail_thread_msgid_hash("a@c", 3));
	test_assert(mail_thread_msgid_hash("", 0) != 0);
}

TEST_MAIN(TEST(test_base_subject_plain), TEST(test_base_subject_leaders),
	  TEST(test_base_subject_fwd_wrapper), TEST(test_base_subject_encoded),
	  TEST(test_base_subject_long), TEST(test_msgid_parse))
