/* RFC 5256 base subject extraction (index/imap-base-subject.c), the
   Message-ID parsing of index/mail-sort-msgid.c and the cached sort keys
   of index/mail-sort-keys.c. */
#include "test-common.h"
#include "buffer.h"
#include "mempool.h"
#include "imap-base-subject.h"
#include "mail-sort-keys.h"
#include "mailbox.h"
#include "unicode-casemap.h"

#include <stdio.h>

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
   (i;unicode-casemap titlecases). */
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

/* expect is the exact folded form */
static void check_exact(const char *subject, const char *expect,
			bool expect_reply)
{
	bool reply;

	test_assert_str(base(subject, &reply), expect);
	test_assert_int(reply, expect_reply);
}

static void test_base_subject_encoded(void)
{
	/* i;unicode-casemap: ä is A U+0308, п is П */
	check_exact("=?UTF-8?B?UmU6IEjDpGxsw7Y=?=",
		    "HA\xcc\x88LLO\xcc\x88", true);
	check_exact("=?ISO-8859-1?Q?Re:_=C4pfel?=", "A\xcc\x88PFEL", true);
	check_exact("AW: =?UTF-8?Q?=D0=9F=D1=80=D0=B8?=",
		    "AW: \xd0\x9f\xd0\xa0\xd0\x98", false);
	check_exact("=?UTF-8?Q?Caf=C3=A9?=", "CAFE\xcc\x81", false);
	check_exact("Cafe\xcc\x81", "CAFE\xcc\x81", false);
}

/* Folding comes before the steps: what folds to a space is a space,
   what folds to ":" ends a "Re:" (RFC 5256 section 7, RFC 5051). */
static void test_base_subject_casemap(void)
{
	/* U+00A0 NO-BREAK SPACE in an encoded word */
	check("=?UTF-8?Q?Re:=C2=A0hello=C2=A0=C2=A0world?=", "hello world",
	      true);
	check("=?ISO-8859-1?Q?Re:=A0=A0hello?=", "hello", true);
	/* U+3000 IDEOGRAPHIC SPACE and U+2003 EM SPACE */
	check("\xe3\x80\x80hello\xe2\x80\x83(fwd)", "hello", true);
	/* FULLWIDTH R E COLON: "Re:" */
	check("\xef\xbc\xb2\xef\xbd\x85\xef\xbc\x9a hi", "hi", true);
	/* U+FB01: "fi" in lower case (no titlecase after decomposing) */
	check_exact("\xef\xac\x81nal", "fiNAL", false);
	/* U+01C4: RFC 5051's example */
	check_exact("Re: \xc7\x84", "Dz\xcc\x8c", true);
	/* invalid UTF-8 outside encoded words becomes U+FFFD (rfc2047.h) */
	check_exact("a\xff", "A\xef\xbf\xbd", false);
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

/* The normalized id of a header value, or NULL for none. */
static const char *one_id(const char *s)
{
	const char *p = s;

	return next_id(&p, s + strlen(s));
}

/* Shapes real mail has, as RFC 5322/5256 and Dovecot 2.3 treat them. */
static void test_msgid_shapes(void)
{
	/* an empty side (Gnus sends "<87y0pmj4uc.fsf@>") */
	test_assert_str(one_id("<87y0pmj4uc.fsf@>"), "87y0pmj4uc.fsf@");
	test_assert_str(one_id("<@leftempty>"), "@leftempty");
	test_assert_str(one_id("<@>"), "@");
	test_assert_str(one_id("<\"\"@x>"), "@x");
	/* no '@', no angle brackets, unterminated: none */
	test_assert(one_id("<nodomain>") == NULL);
	test_assert(one_id("noangle@example.com") == NULL);
	test_assert(one_id("<x@y") == NULL);
	test_assert(one_id("<>") == NULL);
	/* comments and whitespace around and between the words */
	test_assert_str(one_id("(c) <cm@example.com> (d)"), "cm@example.com");
	test_assert_str(one_id("< sp @ example.com >"), "sp@example.com");
	test_assert_str(one_id("<fold@\r\n example.com>"), "fold@example.com");
	test_assert_str(one_id("<a(b).c@example.com>"), "a.c@example.com");
	test_assert_str(one_id("<id(c)@x>"), "id@x");
	test_assert_str(one_id("<ab@c(d)>"), "ab@c");
	test_assert_str(one_id("<a . b @ c . d>"), "a.b@c.d");
	/* a comment inside a word: not msg-id syntax */
	test_assert(one_id("<a(b)c@example.com>") == NULL);
	test_assert(one_id("<a (b) c@example.com>") == NULL);
	/* quoted local parts: unquoted, unescaped, their spaces kept */
	test_assert_str(one_id("<\"qq\"@example.com>"), "qq@example.com");
	test_assert_str(one_id("<\"bs\\x\"@example.com>"), "bsx@example.com");
	test_assert_str(one_id("<\"q l\"@example.com>"), "q l@example.com");
	test_assert_str(one_id("<\"a@b\"@c>"), "a@b@c");
	test_assert_str(one_id("<\"a>b\"@c>"), "a>b@c");
	test_assert_str(one_id("<a.\"b\".c@x>"), "a.b.c@x");
	test_assert(one_id("<\"q\"s@x>") == NULL);
	/* outside quotes a backslash is kept, as Dovecot keeps it */
	test_assert_str(one_id("<bs\\x@example.com>"), "bs\\x@example.com");
	/* domain literals keep their brackets, not their whitespace */
	test_assert_str(one_id("<id@[1.2. 3.4]>"), "id@[1.2.3.4]");
	test_assert(one_id("<id@[1.2[3]>") == NULL);
	/* case is kept (ids compare case-sensitively) and so is UTF-8 */
	test_assert_str(one_id("<Case@Example.COM>"), "Case@Example.COM");
	test_assert_str(one_id("<u\xc3\xa9@example.com>"), "u\xc3\xa9@example.com");
	/* the first id of In-Reply-To junk, then the next */
	const char *irt = "(Mr. X's message of \"Mon, <foo@bar>\") <id4@x>";
	const char *p = irt, *end = irt + strlen(irt);
	test_assert_str(next_id(&p, end), "foo@bar");
	test_assert_str(next_id(&p, end), "id4@x");
	test_assert(next_id(&p, end) == NULL);
	/* an invalid id does not hide the next one */
	test_assert_str(one_id("<a(b)c@d> <next@x>"), "next@x");
	test_assert_str(one_id("<\"unterminated@x> <next@x>"), "next@x");
}

/* A sort.keys value as version `version` wrote it, its subject key
   "STALE" and its other strings empty. id: the casemap id (version 4). */
static void forge_keys(buffer_t *out, unsigned int version, uint32_t id)
{
	unsigned char b[24];
	size_t n = 0;

	memset(b, 0, sizeof(b));
	b[n++] = (unsigned char)version;
	b[n++] = 0;                                /* flags */
	if (version >= 4) {
		for (unsigned int i = 0; i < 4; i++)
			b[n++] = (unsigned char)(id >> (8 * i));
	}
	n += 8 + 8 + 2;                            /* date, hash, refs */
	buffer_reset(out);
	test_assert(buffer_append(out, b, n) == 0);
	test_assert(buffer_append(out, "\x05STALE", 6) == 0);
	for (unsigned int i = 1; i < MAIL_SORT_STR_COUNT; i++)
		test_assert(buffer_append(out, "", 1) == 0);
}

/* The subject key of message 1, and whether it came from the cache. */
static const char *subject_key(struct mailbox *box, bool *hit_r)
{
	static char result[MAIL_SORT_STR_MAX + 1];
	struct mail_sort_keys keys;
	struct mail_sort_keys_stats stats;
	const char *error;
	uint32_t seq = 1;

	/* as a command does: what earlier ones cached is seen after a sync */
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	struct mail_sort_keys_reader *r =
		mail_sort_keys_reader_init(box, &seq, 1);

	test_assert(mail_sort_keys_get(r, 1, &keys, NULL, &error) == 1);
	size_t len = keys.str_len[MAIL_SORT_STR_SUBJECT];
	memcpy(result, keys.str[MAIL_SORT_STR_SUBJECT], len);
	result[len] = '\0';
	mail_sort_keys_reader_get_stats(r, &stats);
	*hit_r = stats.hits == 1;
	mail_sort_keys_reader_deinit(&r);
	return result;
}

/* Keys cached by an older moat (version 3: other folding, other
   Message-ID rules) or folded by other Unicode tables are never served:
   they are computed again and replaced. */
static void test_sort_keys_stale_cache(void)
{
	static const char msg[] = "Subject: Re: =?UTF-8?Q?Caf=C3=A9?=\r\n\r\nx\r\n";
	struct mailbox_append_ctx *save;
	struct mailbox *box;
	const char *error;
	char root[512];
	buffer_t forged;
	uint32_t uid;
	bool hit;

	snprintf(root, sizeof(root), "%s/sortkeys", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	test_assert(mailbox_append_begin(box, 0, (time_t)-1, &save, &error) == 0);
	test_assert(mailbox_append_write(save, msg, strlen(msg), &error) == 0);
	test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);

	test_assert_str(subject_key(box, &hit), "CAFE\xcc\x81");
	test_assert(!hit);
	test_assert_str(subject_key(box, &hit), "CAFE\xcc\x81");
	test_assert(hit);

	buffer_init(&forged, 256);
	const struct { unsigned int version; uint32_t id; bool served; } cases[] = {
		{ 3, 0, false },                           /* older layout */
		{ 4, unicode_casemap_id() ^ 1, false },    /* other tables */
		{ 4, unicode_casemap_id(), true },         /* the control */
	};
	for (unsigned int i = 0; i < N_ELEMENTS(cases); i++) {
		forge_keys(&forged, cases[i].version, cases[i].id);
		test_assert(mailbox_msg_cache_add(box, 1, "sort.keys", forged.data,
						  forged.used, &error) == 0);
		test_assert(mailbox_cache_flush(box, &error) == 0);
		const char *key = subject_key(box, &hit);
		test_assert_str(key, cases[i].served ? "STALE" : "CAFE\xcc\x81");
		test_assert(hit == cases[i].served);
		/* a recomputed value replaced the stale one */
		if (!cases[i].served) {
			test_assert_str(subject_key(box, &hit), "CAFE\xcc\x81");
			test_assert(hit);
		}
	}
	buffer_free(&forged);
	mailbox_close(&box);
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_base_subject_plain), TEST(test_base_subject_leaders),
	  TEST(test_base_subject_fwd_wrapper), TEST(test_base_subject_encoded),
	  TEST(test_base_subject_casemap),
	  TEST(test_base_subject_long), TEST(test_msgid_parse),
	  TEST(test_msgid_shapes), TEST(test_sort_keys_stale_cache))
