/* Unit tests for lib/imap-seqset-parse.c: sequence-set syntax (RFC 9051 9). */

#include "test-common.h"
#include "imap-seqset-parse.h"

/* Parses str and writes its ranges as "a-b,..." ("*" for SEQSET_STAR). */
static const char *parse(pool_t pool, const char *str)
{
	static char out[256];
	struct seq_range *ranges;
	unsigned int count;
	size_t len = 0;

	if (imap_seqset_parse(pool, str, &ranges, &count) < 0)
		return "error";
	out[0] = '\0';
	for (unsigned int i = 0; i < count; i++) {
		char a[16], b[16];
		if (ranges[i].seq1 == SEQSET_STAR)
			strcpy(a, "*");
		else
			snprintf(a, sizeof(a), "%u", ranges[i].seq1);
		if (ranges[i].seq2 == SEQSET_STAR)
			strcpy(b, "*");
		else
			snprintf(b, sizeof(b), "%u", ranges[i].seq2);
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s-%s",
					i == 0 ? "" : ",", a, b);
		i_assert(len < sizeof(out));
	}
	return out;
}

static void test_numbers(void)
{
	pool_t pool = pool_create("seqset", 1024);

	test_assert_str(parse(pool, "1"), "1-1");
	test_assert_str(parse(pool, "3:1"), "1-3");
	test_assert_str(parse(pool, "1,5:7,9"), "1-1,5-7,9-9");
	/* every 32-bit value is a number, distinct from "*" */
	test_assert_str(parse(pool, "4294967295"), "4294967295-4294967295");
	test_assert_str(parse(pool, "1:4294967295"), "1-4294967295");
	test_assert_str(parse(pool, "4294967295:*"), "*-4294967295");
	test_assert_str(parse(pool, "*"), "*-*");
	test_assert_str(parse(pool, "7:*"), "*-7");
	test_assert_str(parse(pool, "*:7"), "*-7");
	test_assert_str(parse(pool, "4294967294"), "4294967294-4294967294");
	pool_unref(&pool);
}

static void test_errors(void)
{
	pool_t pool = pool_create("seqset", 1024);
	static const char *const bad[] = {
		"", "0", "0:5", "5:0", "01", "4294967296", "1:4294967296",
		"18446744073709551617", "99999999999999999999999", "1,", ",1",
		"1::2", "1:", ":1", "**", "1 2", "-1", "+1", "1,,2", "a", "$",
	};

	for (unsigned int i = 0; i < N_ELEMENTS(bad); i++)
		test_assert_str(parse(pool, bad[i]), "error");
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_numbers), TEST(test_errors))
