/* Base subject extraction, RFC 5256 section 2.1 (imap-base-subject.h).
   The steps work on the folded text between two offsets: removing a
   leader moves the start, removing a trailer moves the end. */
#include "lib.h"
#include "imap-base-subject.h"
#include "unicode-casemap.h"
#include "rfc2047.h"

#include <string.h>

struct subj {
	const char *p;
	size_t start, end;
	bool reply;
};

/* subj-blob at i: "[" *BLOBCHAR "]" *WSP. Returns the offset after it,
   or 0 if there is none (a blob never ends at offset 0). */
static size_t match_blob(const struct subj *s, size_t i)
{
	if (i >= s->end || s->p[i] != '[')
		return 0;
	for (i++; i < s->end && s->p[i] != ']'; i++) {
		if (s->p[i] == '[')
			return 0;
	}
	if (i >= s->end)
		return 0;
	for (i++; i < s->end && s->p[i] == ' '; i++) ;
	return i;
}

/* subj-refwd at i: ("re" / "fw" / "fwd") *WSP [subj-blob] ":". The text
   is folded (titlecase), so upper case is enough. Returns the offset
   after it or 0. */
static size_t match_refwd(const struct subj *s, size_t i)
{
	size_t left = s->end - i, blob;

	if (left >= 2 && memcmp(s->p + i, "RE", 2) == 0)
		i += 2;
	else if (left >= 3 && memcmp(s->p + i, "FWD", 3) == 0)
		i += 3;
	else if (left >= 2 && memcmp(s->p + i, "FW", 2) == 0)
		i += 2;
	else
		return 0;
	for (; i < s->end && s->p[i] == ' '; i++) ;
	if ((blob = match_blob(s, i)) != 0)
		i = blob;
	return i < s->end && s->p[i] == ':' ? i + 1 : 0;
}

/* Step 2: trailing WSP and "(fwd)". */
static void strip_trailers(struct subj *s)
{
	for (;;) {
		size_t len = s->end - s->start;
		if (len > 0 && s->p[s->end - 1] == ' ') {
			s->end--;
		} else if (len >= 5 && memcmp(s->p + s->end - 5, "(FWD)", 5) == 0) {
			s->end -= 5;
			s->reply = true;
		} else {
			return;
		}
	}
}

/* Step 3: one subj-leader, (*subj-blob subj-refwd) / WSP. Blobs cannot
   start a refwd, so taking them greedily needs no backtracking. */
static bool strip_leader(struct subj *s)
{
	size_t i = s->start, next;

	if (i < s->end && s->p[i] == ' ') {
		s->start++;
		return true;
	}
	for (;;) {
		if ((next = match_refwd(s, i)) != 0) {
			s->start = next;
			s->reply = true;
			return true;
		}
		if ((next = match_blob(s, i)) == 0)
			return false;
		i = next;
	}
}

/* Steps 3-5: leaders, then one blob if something follows it, until
   neither applies. */
static void strip_leaders_blobs(struct subj *s)
{
	bool changed;

	do {
		changed = false;
		while (strip_leader(s))
			changed = true;
		size_t next = match_blob(s, s->start);
		if (next != 0 && next < s->end) {
			s->start = next;
			changed = true;
		}
	} while (changed);
}

/* Step 6: "[fwd:" ... "]" around the whole text. */
static bool strip_fwd_wrapper(struct subj *s)
{
	size_t len = s->end - s->start;

	if (len < 6 || memcmp(s->p + s->start, "[FWD:", 5) != 0 ||
	    s->p[s->end - 1] != ']')
		return false;
	s->start += 5;
	s->end--;
	s->reply = true;
	return true;
}

/* Step 1's whitespace part: tabs and line breaks become spaces, runs of
   spaces one space. In place; returns the new length. */
static size_t collapse_wsp(char *p, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < len; i++) {
		char c = p[i];
		if (c == '\t' || c == '\r' || c == '\n')
			c = ' ';
		if (c == ' ' && j > 0 && p[j - 1] == ' ')
			continue;
		p[j++] = c;
	}
	return j;
}

/* Cut to at most max bytes, not inside a UTF-8 sequence. */
static size_t utf8_cut(const char *p, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)p[max] & 0xc0) == 0x80)
		max--;
	return max;
}

void imap_base_subject_from_utf8(const char *text, size_t len, buffer_t *out,
				 bool *is_reply_r)
{
	buffer_t folded;
	struct subj s;

	/* fold first: U+00A0 and other spaces become " " (RFC 5256 section
	   7: the steps see the collation's form). A folding longer than
	   IMAP_BASE_SUBJECT_FOLD_MAX (hostile) is cut there. */
	buffer_init(&folded, MIN(i_mul_size(len, UNICODE_CASEMAP_GROWTH_MAX),
				 IMAP_BASE_SUBJECT_FOLD_MAX));
	(void)unicode_casemap_append(&folded, text, len);
	memset(&s, 0, sizeof(s));
	s.p = folded.data;
	s.end = collapse_wsp(folded.data, folded.used);
	do {
		strip_trailers(&s);
		strip_leaders_blobs(&s);
	} while (strip_fwd_wrapper(&s));

	size_t n = utf8_cut(s.p + s.start, s.end - s.start,
			    IMAP_BASE_SUBJECT_MAX);
	buffer_reset(out);
	if (buffer_append(out, s.p + s.start, n) < 0)
		i_panic("base subject buffer too small");
	buffer_free(&folded);
	*is_reply_r = s.reply;
}

void imap_base_subject_get(pool_t scratch, const char *value, size_t len,
			   buffer_t *out, bool *is_reply_r)
{
	const char *text = rfc2047_decode(scratch, value, len);

	imap_base_subject_from_utf8(text, strlen(text), out, is_reply_r);
}
