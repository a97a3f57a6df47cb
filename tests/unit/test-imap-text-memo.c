/* Unit tests for imap/imap-text-memo.c: hits give back exactly the text
   that was put for those stored bytes, whatever was overwritten, wrapped
   or collided since; a miss leaves out unchanged; the memory is the
   configured arena; off means off. */
#include "test-common.h"
#include "imap-text-memo.h"
#include "buffer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX 65536

static bool get_text(const void *stored, size_t size, const char *expect,
		     size_t expect_len)
{
	buffer_t out;
	bool hit;

	buffer_init(&out, OUT_MAX);
	test_assert(buffer_append_str(&out, "prefix ") == 0);
	hit = imap_text_memo_get(stored, size, &out);
	if (hit) {
		test_assert_int(out.used, 7 + expect_len);
		test_assert(memcmp(out.data, "prefix ", 7) == 0);
		test_assert(memcmp(out.data + 7, expect, expect_len) == 0);
	} else {
		test_assert_int(out.used, 7);
	}
	buffer_free(&out);
	return hit;
}

static void test_off(void)
{
	imap_text_memo_init(0);
	imap_text_memo_put("stored", 6, "text", 4);
	test_assert(!get_text("stored", 6, "text", 4));
	imap_text_memo_deinit();
}

static void test_hits_and_misses(void)
{
	uint64_t hits = imap_text_memo_hits;

	imap_text_memo_init(64 * 1024);
	test_assert(!get_text("stored-a", 8, "", 0));
	imap_text_memo_put("stored-a", 8, "the text of a", 13);
	imap_text_memo_put("stored-b", 8, "the text of b", 13);
	imap_text_memo_put("", 0, "from nothing", 12);
	test_assert(get_text("stored-a", 8, "the text of a", 13));
	test_assert(get_text("stored-b", 8, "the text of b", 13));
	test_assert(get_text("", 0, "from nothing", 12));
	test_assert_int(imap_text_memo_hits - hits, 3);
	/* one byte off, one byte shorter, one longer: misses */
	test_assert(!get_text("stored-c", 8, "", 0));
	test_assert(!get_text("stored-", 7, "", 0));
	test_assert(!get_text("stored-a!", 9, "", 0));
	/* an empty text and binary bytes */
	imap_text_memo_put("\0\xff\x01", 3, "", 0);
	test_assert(get_text("\0\xff\x01", 3, "", 0));
	imap_text_memo_put("nul", 3, "a\0b", 3);
	test_assert(get_text("nul", 3, "a\0b", 3));
	/* the same stored bytes put again: still that text */
	imap_text_memo_put("stored-a", 8, "the text of a", 13);
	test_assert(get_text("stored-a", 8, "the text of a", 13));

	/* a text that does not fit out: a miss, out unchanged */
	buffer_t small;
	buffer_init(&small, 20);
	test_assert(buffer_append_str(&small, "0123456789") == 0);
	test_assert(!imap_text_memo_get("stored-a", 8, &small));
	test_assert_int(small.used, 10);
	buffer_free(&small);
	imap_text_memo_deinit();
	/* deinit forgets everything */
	test_assert(!get_text("stored-a", 8, "", 0));
}

static void test_too_big(void)
{
	char text[1024];

	memset(text, 'x', sizeof(text));
	imap_text_memo_init(4096);
	/* an eighth of the arena at most, header and stored bytes included */
	imap_text_memo_put("big", 3, text, 600);
	test_assert(!get_text("big", 3, text, 600));
	imap_text_memo_put("fits", 4, text, 400);
	test_assert(get_text("fits", 4, text, 400));
	imap_text_memo_deinit();
}

/* Entry i: stored bytes "s<i>", its text a few hundred bytes made from
   i, so that every text differs. */
static size_t entry_text(unsigned int i, char *text, size_t max)
{
	size_t len = 1 + (i * 7919u) % (max - 1);

	for (size_t j = 0; j < len; j++)
		text[j] = (char)('a' + (i + j) % 26);
	return len;
}

static void test_overwrite_and_wrap(void)
{
	char stored[32], text[300];
	const unsigned int count = 2000;
	unsigned int hits = 0, newest_missed = 0;

	/* 16 KiB: each entry is up to 8 + 6 + 300 bytes, so a few dozen
	   stay, and the arena wraps many times over */
	imap_text_memo_init(16 * 1024);
	for (unsigned int i = 0; i < count; i++) {
		int n = snprintf(stored, sizeof(stored), "s%u", i);
		size_t len = entry_text(i, text, sizeof(text));
		imap_text_memo_put(stored, (size_t)n, text, len);
		/* the entry just put is always there */
		if (!get_text(stored, (size_t)n, text, len))
			newest_missed++;
	}
	test_assert_int(newest_missed, 0);
	/* every entry: a miss, or exactly its own text */
	for (unsigned int i = 0; i < count; i++) {
		int n = snprintf(stored, sizeof(stored), "s%u", i);
		size_t len = entry_text(i, text, sizeof(text));
		if (get_text(stored, (size_t)n, text, len))
			hits++;
	}
	/* the oldest are gone, some recent ones are still there */
	test_assert(hits > 10);
	test_assert(hits < 200);
	int n = snprintf(stored, sizeof(stored), "s%u", 0u);
	test_assert(!get_text(stored, (size_t)n, "", 0));
	imap_text_memo_deinit();
}

/* An entry overwritten by a later one is gone even when its slot still
   points at it and the bytes there now look like it: the later text is
   made to hold a copy of the old entry's header (white box: 4 bytes of
   stored size, 4 of text length, the stored bytes, the text; 8-byte
   aligned entries). Several trials, because a collision may have
   emptied the old slot anyway. */
static void test_overwritten_lookalike(void)
{
	char btext[400], ctext[503];
	char stored[8];

	memset(btext, 'b', sizeof(btext));
	for (unsigned int t = 0; t < 20; t++) {
		imap_text_memo_init(4096);
		/* nine entries of 8 + 5 + 400 -> 416 bytes: the arena is full */
		for (unsigned int i = 0; i < 9; i++) {
			snprintf(stored, sizeof(stored), "B%02u%02u", i, t);
			imap_text_memo_put(stored, 5, btext, sizeof(btext));
		}
		/* the next one wraps to offset 0; its text begins at 9 and
		   covers offset 416, where entry 1 began */
		snprintf(stored, sizeof(stored), "B%02u%02u", 1u, t);
		memset(ctext, 'c', sizeof(ctext));
		uint32_t fake[2] = { 5, 4 };
		memcpy(ctext + 416 - 9, fake, sizeof(fake));
		memcpy(ctext + 416 - 9 + 8, stored, 5);
		memcpy(ctext + 416 - 9 + 13, "EVIL", 4);
		imap_text_memo_put("C", 1, ctext, sizeof(ctext));
		test_assert(get_text("C", 1, ctext, sizeof(ctext)));
		/* a miss, never "EVIL" */
		test_assert(!get_text(stored, 5, btext, sizeof(btext)));
		imap_text_memo_deinit();
	}
}

/* Random stored forms of random sizes, many sharing a prefix, against a
   model that knows each one's text: a hit is always the right text. */
static void test_random_model(void)
{
	enum { KEYS = 500 };
	static char stored[KEYS][64], texts[KEYS][512];
	static size_t stored_len[KEYS], text_len[KEYS];
	unsigned int seed = 12345, hits = 0;

	srand(seed);
	for (unsigned int k = 0; k < KEYS; k++) {
		stored_len[k] = (size_t)(rand() % 64);
		/* a common prefix: only the tail tells them apart */
		memset(stored[k], 'Y', sizeof(stored[k]));
		for (size_t j = stored_len[k] / 2; j < stored_len[k]; j++)
			stored[k][j] = (char)(rand() % 4);
		text_len[k] = (size_t)(rand() % 512);
		for (size_t j = 0; j < text_len[k]; j++)
			texts[k][j] = (char)rand();
	}
	/* identical stored bytes must mean identical texts: give equal
	   keys the text of the first */
	for (unsigned int k = 0; k < KEYS; k++) {
		for (unsigned int o = 0; o < k; o++) {
			if (stored_len[o] == stored_len[k] &&
			    memcmp(stored[o], stored[k], stored_len[k]) == 0) {
				text_len[k] = text_len[o];
				memcpy(texts[k], texts[o], text_len[o]);
				break;
			}
		}
	}
	imap_text_memo_init(32 * 1024);
	for (unsigned int step = 0; step < 20000; step++) {
		unsigned int k = (unsigned int)rand() % KEYS;
		if (rand() % 3 == 0)
			imap_text_memo_put(stored[k], stored_len[k], texts[k],
					   text_len[k]);
		else if (get_text(stored[k], stored_len[k], texts[k],
				  text_len[k]))
			hits++;
	}
	test_assert(hits > 100);
	imap_text_memo_deinit();
}

TEST_MAIN(TEST(test_off), TEST(test_hits_and_misses), TEST(test_too_big),
	  TEST(test_overwrite_and_wrap), TEST(test_overwritten_lookalike),
	  TEST(test_random_model))
