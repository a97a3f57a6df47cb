/* Unit tests for imap/imap-preview.c: the preview text (plain and HTML),
   choosing the text part, decoding, and the cache (a value under an
   older version's field name or a garbled one is never served). */
#include "test-common.h"
#include "imap-common.h"
#include "imap-preview.h"
#include "imap-fetch-cache.h"

#include <fcntl.h>

static const char *make(const char *text, bool html)
{
	static char out[IMAP_PREVIEW_BYTES_MAX + 1];

	size_t len = imap_preview_make(text, strlen(text), html, out);
	test_assert_int(len, strlen(out));
	return out;
}

static unsigned int utf8_chars(const char *s)
{
	unsigned int n = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

static void test_preview_plain(void)
{
	test_assert_str(make("Hello,\r\n\r\n  this  is\ta   test.\r\n", false),
			"Hello, this is a test.");
	test_assert_str(make("", false), "");
	test_assert_str(make(" \r\n\t \r\n", false), "");
	/* quoted lines and the signature are left out */
	test_assert_str(make("Yes.\r\n> Will you come?\r\n>> old\r\nBye\r\n"
			     "-- \r\nJohn, CEO\r\n", false), "Yes. Bye");
	/* U+00A0 is whitespace, other UTF-8 is kept */
	test_assert_str(make("caf\xc3\xa9\xc2\xa0\xc2\xa0ol\xc3\xa9", false),
			"caf\xc3\xa9 ol\xc3\xa9");
	/* controls are whitespace */
	test_assert_str(make("a\x01\x02" "b\x7f" "c", false), "a b c");
}

static void test_preview_length(void)
{
	char text[4096], *p = text;

	/* 300 three-byte characters: cut at 200, on a character boundary */
	for (unsigned int i = 0; i < 300; i++) {
		memcpy(p, "\xe2\x82\xac", 3);
		p += 3;
	}
	*p = '\0';
	const char *out = make(text, false);
	test_assert_int(utf8_chars(out), IMAP_PREVIEW_CHARS);
	test_assert_int(strlen(out), IMAP_PREVIEW_CHARS * 3);
	/* four-byte characters: the buffer holds the maximum */
	p = text;
	for (unsigned int i = 0; i < 300; i++) {
		memcpy(p, "\xf0\x9f\x98\x80", 4);
		p += 4;
	}
	*p = '\0';
	out = make(text, false);
	test_assert_int(strlen(out), IMAP_PREVIEW_BYTES_MAX);
	/* words: 200 characters, the spaces counted */
	p = text;
	for (unsigned int i = 0; i < 100; i++)
		p += sprintf(p, "word%u   ", i);
	out = make(text, false);
	test_assert(utf8_chars(out) <= IMAP_PREVIEW_CHARS &&
		    utf8_chars(out) > IMAP_PREVIEW_CHARS - 8);
	test_assert(strncmp(out, "word0 word1 word2 ", 18) == 0);
	/* never a space at the end, where the cut falls before a word */
	test_assert(out[strlen(out) - 1] != ' ');
	memset(text, 'x', 199);
	strcpy(text + 199, " y");
	out = make(text, false);
	test_assert_int(strlen(out), 199);
}

static void test_preview_html(void)
{
	test_assert_str(make("<html><head><title>T</title><style>p{x:y}"
			     "</style></head><body><p>Hi <b>there</b>,</p>"
			     "<p>line&nbsp;two &amp; &lt;three&gt; &#8364;"
			     "&#x41;</p><!-- a <p> comment --><script>var x"
			     "</script>end</body></html>", true),
			"Hi there, line two & <three> \xe2\x82\xac" "A end");
	/* unknown or broken references stay as written */
	test_assert_str(make("a &bogus; b & c &#xZZ;", true),
			"a &bogus; b & c &#xZZ;");
	/* a tag that never ends, an element that never closes */
	test_assert_str(make("text <a href=", true), "text");
	test_assert_str(make("x<style>never closed", true), "x");
	test_assert_str(make("a<br>b<br/>c", true), "a b c");
}

/* A Maildir with one message per test message. */
static struct mailbox *open_box(const char *name, const char *const *msgs,
				unsigned int count)
{
	char root[1024], path[1200];
	struct mailbox *box;
	const char *error;

	snprintf(root, sizeof(root), "%s/%s", test_tmpdir(), name);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	mailbox_close(&box);
	for (unsigned int i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/cur/%u.test:2,", root, i + 1);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		test_assert(fd >= 0 && write(fd, msgs[i], strlen(msgs[i])) ==
			    (ssize_t)strlen(msgs[i]));
		i_close_fd(&fd);
	}
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), count);
	return box;
}

static const char *fetch_preview(struct mailbox *box, uint32_t seq,
				 bool lazy, buffer_t *out)
{
	struct imap_msg_structure ms;
	const char *error;

	memset(&ms, 0, sizeof(ms));
	buffer_reset(out);
	test_assert(imap_preview_append(&ms, box, seq, lazy, NULL, out, &error) == 0);
	imap_fetch_cache_flush(&ms, box);
	imap_msg_structure_clear(&ms);
	test_assert(buffer_append_c(out, '\0') == 0);
	return out->data;
}

static void test_preview_messages(void)
{
	static const char *const msgs[] = {
		/* 1: not MIME */
		"Subject: a\r\n\r\nPlain body\r\n",
		/* 2: alternative: the plain part, quoted-printable latin-1 */
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; "
		"boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; "
		"charset=iso-8859-1\r\nContent-Transfer-Encoding: "
		"quoted-printable\r\n\r\nCaf=E9 au =\r\nlait\r\n--b\r\n"
		"Content-Type: text/html\r\n\r\n<p>html</p>\r\n--b--\r\n",
		/* 3: HTML only, base64 */
		"MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8"
		"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
		"PHA+SGVsbG8gPGk+d29ybGQ8L2k+PC9wPg==\r\n",
		/* 4: only an attachment and an image: empty */
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
		"boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n"
		"Content-Disposition: attachment; filename=a.txt\r\n\r\n"
		"attached\r\n--x\r\nContent-Type: image/png\r\n\r\nPNG\r\n"
		"--x--\r\n",
		/* 5: an unknown charset: the ASCII survives */
		"MIME-Version: 1.0\r\nContent-Type: text/plain; "
		"charset=x-no-such\r\n\r\nok \"quoted\" \\ text\r\n",
		/* 6: a forwarded message's text is not this one's */
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
		"boundary=y\r\n\r\n--y\r\nContent-Type: message/rfc822\r\n\r\n"
		"Subject: inner\r\n\r\ninner text\r\n--y\r\n"
		"Content-Type: text/plain\r\n\r\nouter text\r\n--y--\r\n",
	};
	buffer_t out;
	struct mailbox *box = open_box("Messages", msgs, N_ELEMENTS(msgs));

	buffer_init(&out, 4096);
	/* LAZY before anything is cached: NIL */
	test_assert_str(fetch_preview(box, 1, true, &out), "PREVIEW NIL");
	test_assert_str(fetch_preview(box, 1, false, &out),
			"PREVIEW \"Plain body\"");
	test_assert_str(fetch_preview(box, 2, false, &out),
			"PREVIEW {13}\r\nCaf\xc3\xa9 au lait");
	test_assert_str(fetch_preview(box, 3, false, &out),
			"PREVIEW \"Hello world\"");
	/* no text part: the empty string (RFC 8970 3.2), cached too */
	test_assert_str(fetch_preview(box, 4, false, &out), "PREVIEW \"\"");
	/* quoting specials go in a literal */
	test_assert_str(fetch_preview(box, 5, false, &out),
			"PREVIEW {18}\r\nok \"quoted\" \\ text");
	test_assert_str(fetch_preview(box, 6, false, &out),
			"PREVIEW \"outer text\"");
	mailbox_close(&box);
	/* computed once (the empty one too): now LAZY has them */
	box = open_box("Messages", msgs, N_ELEMENTS(msgs));
	test_assert_str(fetch_preview(box, 1, true, &out),
			"PREVIEW \"Plain body\"");
	test_assert_str(fetch_preview(box, 4, true, &out), "PREVIEW \"\"");
	buffer_free(&out);
	mailbox_close(&box);
}

/* A preview cached by a moat whose previews differed (an older field
   name) is never served, nor is a garbled value under the current one. */
static void test_preview_cache_version(void)
{
	static const char *const msgs[] = {
		"Subject: a\r\n\r\nfresh text\r\n",
		"Subject: b\r\n\r\nsecond\r\n",
	};
	struct mailbox *box = open_box("Version", msgs, N_ELEMENTS(msgs));
	const char *error;
	buffer_t out;

	test_assert(mailbox_msg_cache_add(box, 1, "imap.preview.0", "Pstale",
					  6, &error) == 0);
	test_assert(mailbox_msg_cache_add(box, 2, "imap.preview."
					  IMAP_PREVIEW_VERSION, "Xbad\x01",
					  5, &error) == 0);
	test_assert(mailbox_cache_flush(box, &error) == 0);
	mailbox_close(&box);
	box = open_box("Version", msgs, N_ELEMENTS(msgs));

	buffer_init(&out, 4096);
	test_assert_str(fetch_preview(box, 1, true, &out), "PREVIEW NIL");
	test_assert_str(fetch_preview(box, 2, true, &out), "PREVIEW NIL");
	uint64_t misses = imap_fetch_counters.text_misses;
	test_assert_str(fetch_preview(box, 1, false, &out),
			"PREVIEW \"fresh text\"");
	test_assert_str(fetch_preview(box, 2, false, &out),
			"PREVIEW \"second\"");
	test_assert_int(imap_fetch_counters.text_misses, misses + 2);
	mailbox_close(&box);

	/* the fresh values are served from the cache after a reopen */
	box = open_box("Version", msgs, N_ELEMENTS(msgs));
	uint64_t hits = imap_fetch_counters.text_hits;
	uint64_t opened = imap_fetch_counters.files_opened;
	test_assert_str(fetch_preview(box, 1, true, &out),
			"PREVIEW \"fresh text\"");
	test_assert_str(fetch_preview(box, 2, false, &out),
			"PREVIEW \"second\"");
	test_assert_int(imap_fetch_counters.text_hits, hits + 2);
	test_assert_int(imap_fetch_counters.files_opened, opened);
	buffer_free(&out);
	mailbox_close(&box);
}

/* RFC 8970 4.1: a LAZY miss is reported to the caller, and
   imap_preview_precompute() fills the cache so that LAZY then finds the
   same text a FETCH without LAZY gives; a cached one is left alone. */
static void test_preview_precompute(void)
{
	static const char *const msgs[] = {
		"Subject: a\r\n\r\nlater text\r\n",
		"Subject: b\r\n\r\nother\r\n",
	};
	struct mailbox *box = open_box("Precompute", msgs, N_ELEMENTS(msgs));
	struct imap_msg_structure ms;
	const char *error;
	bool missed = false;
	buffer_t out;

	buffer_init(&out, 4096);
	memset(&ms, 0, sizeof(ms));
	test_assert(imap_preview_append(&ms, box, 1, true, &missed, &out,
					&error) == 0);
	test_assert(missed);
	imap_msg_structure_clear(&ms);
	test_assert(imap_preview_precompute(box, 1, &error) == 0);
	mailbox_close(&box);
	box = open_box("Precompute", msgs, N_ELEMENTS(msgs));
	uint64_t opened = imap_fetch_counters.files_opened;
	test_assert(imap_preview_precompute(box, 1, &error) == 0);
	test_assert_int(imap_fetch_counters.files_opened, opened);
	buffer_reset(&out);
	missed = false;
	test_assert(imap_preview_append(&ms, box, 1, true, &missed, &out,
					&error) == 0);
	test_assert(!missed);
	test_assert(buffer_append_c(&out, '\0') == 0);
	test_assert_str(out.data, "PREVIEW \"later text\"");
	/* the other one was never computed */
	test_assert_str(fetch_preview(box, 2, true, &out), "PREVIEW NIL");
	imap_msg_structure_clear(&ms);
	buffer_free(&out);
	mailbox_close(&box);
}

static void test_cleanup(void)
{
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_preview_plain), TEST(test_preview_length),
	  TEST(test_preview_html), TEST(test_preview_messages),
	  TEST(test_preview_cache_version), TEST(test_preview_precompute),
	  TEST(test_cleanup))
