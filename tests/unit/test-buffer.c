/* Unit tests for lib/buffer.c: bounded growable byte strings. */
#include "test-common.h"
#include "buffer.h"

/* The invariants buffer.h promises after every operation. */
static bool buffer_ok(const buffer_t *buf)
{
	return buf->data != NULL && buf->used <= buf->max_size &&
		buf->used < buf->alloc && buf->data[buf->used] == '\0';
}

static void test_buffer_append(void)
{
	buffer_t buf;
	buffer_init(&buf, 1000);
	test_assert(buffer_ok(&buf));
	test_assert_int(buf.used, 0);
	test_assert_str(buf.data, "");

	test_assert(buffer_append_str(&buf, "hello") == 0);
	test_assert(buffer_append_c(&buf, ' ') == 0);
	test_assert(buffer_append(&buf, "world!!", 5) == 0);
	test_assert(buffer_append(&buf, NULL, 0) == 0);
	test_assert_str(buf.data, "hello world");
	test_assert_int(buf.used, 11);
	test_assert(buffer_ok(&buf));

	/* Binary data with NULs, and growth across several reallocations. */
	buffer_reset(&buf);
	test_assert(buffer_ok(&buf));
	bool ok = true;
	for (unsigned int i = 0; i < 900; i++) {
		if (buffer_append_c(&buf, (char)(i % 7)) < 0 || !buffer_ok(&buf))
			ok = false;
	}
	test_assert(ok);
	test_assert_int(buf.used, 900);
	for (unsigned int i = 0; i < 900; i++) {
		if (buf.data[i] != (char)(i % 7))
			ok = false;
	}
	test_assert(ok);
	buffer_free(&buf);
	test_assert(buf.data == NULL);
}

static void test_buffer_max_size(void)
{
	buffer_t buf;
	buffer_init(&buf, 10);
	test_assert(buffer_append_str(&buf, "0123456") == 0);
	/* Past the maximum: fails and leaves the buffer as it was. */
	test_assert(buffer_append_str(&buf, "7890") < 0);
	test_assert_int(buf.used, 7);
	test_assert_str(buf.data, "0123456");
	test_assert(buffer_ok(&buf));
	test_assert(buffer_printf(&buf, "%d", 1234) < 0);
	test_assert_str(buf.data, "0123456");
	test_assert(buffer_reserve(&buf, 4) == NULL);
	test_assert_int(buf.used, 7);
	/* Exactly up to the maximum is fine. */
	test_assert(buffer_append_str(&buf, "789") == 0);
	test_assert_str(buf.data, "0123456789");
	test_assert(buffer_ok(&buf));
	test_assert(buffer_append_c(&buf, 'x') < 0);
	test_assert(buffer_append(&buf, "", 0) == 0);
	test_assert_str(buf.data, "0123456789");
	test_assert(buffer_reserve(&buf, 0) != NULL);
	buffer_free(&buf);

	/* A zero maximum allows nothing but stays a valid empty string. */
	buffer_init(&buf, 0);
	test_assert(buffer_ok(&buf));
	test_assert(buffer_append_c(&buf, 'a') < 0);
	test_assert_str(buf.data, "");
	buffer_free(&buf);

	/* No practical limit: growing must not wrap max_size + 1. */
	buffer_init(&buf, SIZE_MAX);
	char chunk[100];
	memset(chunk, 'u', sizeof(chunk));
	bool ok = true;
	for (unsigned int i = 0; i < 50; i++) {
		if (buffer_append(&buf, chunk, sizeof(chunk)) < 0 || !buffer_ok(&buf))
			ok = false;
	}
	test_assert(ok);
	test_assert_int(buf.used, 5000);
	test_assert(buf.alloc > 5000);
	buffer_free(&buf);

	/* A huge size must not wrap around the check. */
	buffer_init(&buf, 100);
	test_assert(buffer_append_str(&buf, "abc") == 0);
	test_assert(buffer_reserve(&buf, SIZE_MAX) == NULL);
	test_assert(buffer_reserve(&buf, SIZE_MAX - 2) == NULL);
	test_assert_str(buf.data, "abc");
	buffer_free(&buf);
}

static void test_buffer_printf(void)
{
	buffer_t buf;
	buffer_init(&buf, 4096);
	test_assert(buffer_printf(&buf, "%s=%d", "a", 1) == 0);
	test_assert(buffer_printf(&buf, ",%s=%u", "bb", 22u) == 0);
	test_assert_str(buf.data, "a=1,bb=22");
	test_assert_int(buf.used, 9);
	/* Longer than the initial allocation. */
	test_assert(buffer_printf(&buf, "%0200d", 5) == 0);
	test_assert_int(buf.used, 209);
	test_assert(buf.data[208] == '5');
	test_assert(buffer_ok(&buf));
	test_assert(buffer_printf(&buf, "%s", "") == 0);
	test_assert_int(buf.used, 209);
	buffer_free(&buf);
}

static void test_buffer_delete_head_truncate(void)
{
	buffer_t buf;
	buffer_init(&buf, 100);
	test_assert(buffer_append_str(&buf, "abcdefghij") == 0);
	buffer_delete_head(&buf, 3);
	test_assert_str(buf.data, "defghij");
	test_assert_int(buf.used, 7);
	test_assert(buffer_ok(&buf));
	buffer_delete_head(&buf, 0);
	test_assert_str(buf.data, "defghij");
	buffer_truncate(&buf, 4);
	test_assert_str(buf.data, "defg");
	test_assert_int(buf.used, 4);
	/* Truncating to a bigger size changes nothing. */
	buffer_truncate(&buf, 50);
	test_assert_str(buf.data, "defg");
	test_assert_int(buf.used, 4);
	buffer_delete_head(&buf, 4);
	test_assert_str(buf.data, "");
	test_assert_int(buf.used, 0);
	test_assert(buffer_append_str(&buf, "xy") == 0);
	buffer_delete_head(&buf, 1000);
	test_assert_int(buf.used, 0);
	test_assert(buffer_ok(&buf));
	/* After deleting, the freed room can be used up to max again. */
	char full[100];
	memset(full, 'z', sizeof(full));
	test_assert(buffer_append(&buf, full, sizeof(full)) == 0);
	buffer_delete_head(&buf, 10);
	test_assert(buffer_append(&buf, full, 10) == 0);
	test_assert_int(buf.used, 100);
	test_assert(buffer_ok(&buf));
	buffer_free(&buf);
}

static void test_buffer_reserve_commit(void)
{
	buffer_t buf;
	buffer_init(&buf, 1000);
	test_assert(buffer_append_str(&buf, "head:") == 0);
	char *p = buffer_reserve(&buf, 300);
	test_assert(p == buf.data + 5);
	/* Reserving does not change the content. */
	test_assert_int(buf.used, 5);
	test_assert_str(buf.data, "head:");
	memset(p, 'q', 300);
	buffer_commit(&buf, 3);
	test_assert_int(buf.used, 8);
	test_assert_str(buf.data, "head:qqq");
	test_assert(buffer_ok(&buf));
	buffer_commit(&buf, 0);
	test_assert_str(buf.data, "head:qqq");

	p = buffer_reserve(&buf, 992);
	test_assert(p != NULL);
	memset(p, 'r', 992);
	buffer_commit(&buf, 992);
	test_assert_int(buf.used, 1000);
	test_assert(buffer_ok(&buf));
	test_assert(buffer_reserve(&buf, 1) == NULL);
	buffer_free(&buf);
}

static void test_buffer_detach(void)
{
	buffer_t buf;
	buffer_init(&buf, 50);
	test_assert(buffer_append_str(&buf, "owned by caller") == 0);
	char *data = buffer_detach(&buf);
	test_assert_str(data, "owned by caller");
	/* The buffer is usable again, empty, with the same maximum. */
	test_assert(buffer_ok(&buf));
	test_assert_int(buf.used, 0);
	test_assert_int(buf.max_size, 50);
	test_assert(buf.data != data);
	test_assert(buffer_append_str(&buf, "new") == 0);
	test_assert_str(buf.data, "new");
	test_assert_str(data, "owned by caller");
	free(data);
	buffer_free(&buf);
}

static void test_buffer_append_u32(void)
{
	static const uint32_t nums[] = {
		0, 1, 9, 10, 99, 100, 12345, 999999999, 1000000000,
		4294967295u,
	};
	buffer_t buf;
	char want[16];

	for (unsigned int i = 0; i < N_ELEMENTS(nums); i++) {
		buffer_init(&buf, 64);
		test_assert(buffer_append_str(&buf, "x") == 0);
		test_assert(buffer_append_u32(&buf, nums[i]) == 0);
		snprintf(want, sizeof(want), "x%u", nums[i]);
		test_assert_str(buf.data, want);
		buffer_free(&buf);
	}
	/* no room: refused, unchanged */
	buffer_init(&buf, 4);
	test_assert(buffer_append_str(&buf, "ab") == 0);
	test_assert(buffer_append_u32(&buf, 123) == -1);
	test_assert_str(buf.data, "ab");
	test_assert(buffer_append_u32(&buf, 12) == 0);
	test_assert_str(buf.data, "ab12");
	buffer_free(&buf);
}

TEST_MAIN(
	TEST(test_buffer_append_u32),
	TEST(test_buffer_append),
	TEST(test_buffer_max_size),
	TEST(test_buffer_printf),
	TEST(test_buffer_delete_head_truncate),
	TEST(test_buffer_reserve_commit),
	TEST(test_buffer_detach),
)
