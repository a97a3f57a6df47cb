/* Unit tests for lib/mempool.c: arena pools. */
#include "test-common.h"
#include "mempool.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

/* Enough allocations to force many new blocks from a small first block. */
#define TEST_POOL_ALLOC_COUNT 2000

static bool is_zero(const unsigned char *p, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		if (p[i] != 0)
			return false;
	}
	return true;
}

static void test_pool_many_allocs(void)
{
	pool_t pool = pool_create("test", 64);
	unsigned char *ptrs[TEST_POOL_ALLOC_COUNT];
	bool ok_align = true, ok_zero = true, ok_content = true;

	for (unsigned int i = 0; i < TEST_POOL_ALLOC_COUNT; i++) {
		size_t size = 1 + i % 97;
		ptrs[i] = p_malloc(pool, size);
		if (((uintptr_t)ptrs[i] & 15) != 0)
			ok_align = false;
		if (!is_zero(ptrs[i], size))
			ok_zero = false;
		/* Fill fully so overlapping allocations would show up. */
		memset(ptrs[i], (int)(i & 0xff), size);
	}
	for (unsigned int i = 0; i < TEST_POOL_ALLOC_COUNT; i++) {
		size_t size = 1 + i % 97;
		for (size_t j = 0; j < size; j++) {
			if (ptrs[i][j] != (unsigned char)(i & 0xff))
				ok_content = false;
		}
	}
	test_assert(ok_align);
	test_assert(ok_zero);
	test_assert(ok_content);
	pool_unref(&pool);
	test_assert(pool == NULL);
	pool_unref(&pool);   /* NULL is a no-op */
}

static void test_pool_used_size(void)
{
	pool_t pool = pool_create("test", 1024);
	test_assert_int(pool_get_used_size(pool), 0);
	(void)p_malloc(pool, 1);
	size_t used1 = pool_get_used_size(pool);
	test_assert(used1 >= 1);
	(void)p_malloc(pool, 100);
	test_assert(pool_get_used_size(pool) >= used1 + 100);
	/* A zero-size allocation still returns distinct usable memory. */
	void *a = p_malloc(pool, 0), *b = p_malloc(pool, 0);
	test_assert(a != NULL && b != NULL && a != b);
	pool_unref(&pool);
}

static void test_pool_big_alloc(void)
{
	pool_t pool = pool_create("test", 128);
	char *small1 = p_strdup(pool, "before");
	/* Bigger than the first block and than the maximum block size. */
	size_t big_size = 1024 * 1024;
	unsigned char *big = p_malloc(pool, big_size);
	test_assert(((uintptr_t)big & 15) == 0);
	test_assert(is_zero(big, big_size));
	memset(big, 0xaa, big_size);
	char *small2 = p_strdup(pool, "after");
	test_assert_str(small1, "before");
	test_assert_str(small2, "after");
	test_assert(big[0] == 0xaa && big[big_size - 1] == 0xaa);
	test_assert(pool_get_used_size(pool) >= big_size);
	pool_unref(&pool);
}

static void test_pool_strdup(void)
{
	pool_t pool = pool_create("test", 64);

	test_assert(p_strdup(pool, NULL) == NULL);
	test_assert_str(p_strdup(pool, ""), "");
	const char *orig = "hello world";
	char *dup = p_strdup(pool, orig);
	test_assert(dup != orig);
	test_assert_str(dup, orig);

	test_assert_str(p_strndup(pool, "abcdef", 3), "abc");
	test_assert_str(p_strndup(pool, "ab", 10), "ab");
	test_assert_str(p_strndup(pool, "abc", 0), "");
	/* Input need not be NUL-terminated within max_len. */
	const char unterminated[4] = { 'w', 'x', 'y', 'z' };
	test_assert_str(p_strndup(pool, unterminated, 4), "wxyz");

	const unsigned char bin[5] = { 1, 0, 2, 0, 3 };
	unsigned char *mdup = p_memdup(pool, bin, sizeof(bin));
	test_assert(memcmp(mdup, bin, sizeof(bin)) == 0);

	test_assert_str(p_strdup_printf(pool, "%s-%d-%05u", "x", -42, 7u),
			"x--42-00007");
	test_assert_str(p_strdup_printf(pool, "%s", ""), "");
	/* Longer than the first block. */
	char *longstr = p_strdup_printf(pool, "%0300d", 1);
	test_assert_int(strlen(longstr), 300);
	test_assert(longstr[299] == '1' && longstr[0] == '0');
	pool_unref(&pool);
}

static void test_pool_clear(void)
{
	pool_t pool = pool_create("test", 256);
	unsigned char *first = p_malloc(pool, 32);
	memset(first, 0x55, 32);
	for (unsigned int i = 0; i < 100; i++)
		memset(p_malloc(pool, 200), 0x77, 200);
	test_assert(pool_get_used_size(pool) > 256);

	pool_clear(pool);
	test_assert_int(pool_get_used_size(pool), 0);
	/* The first block is reused, and comes back zeroed. */
	unsigned char *again = p_malloc(pool, 32);
	test_assert(again == first);
	test_assert(is_zero(again, 32));
	/* Growing again after a clear works. */
	bool ok = true;
	for (unsigned int i = 0; i < 100; i++) {
		unsigned char *p = p_malloc(pool, 200);
		if (!is_zero(p, 200))
			ok = false;
		memset(p, 0x11, 200);
	}
	test_assert(ok);
	pool_clear(pool);
	pool_clear(pool);
	test_assert_int(pool_get_used_size(pool), 0);
	pool_unref(&pool);

	/* the first block used in part, then whole, then in part: every
	   byte handed out after a clear is zero (a clear zeroes what was
	   used; past it the block was never written) */
	pool = pool_create("test", 256);
	for (unsigned int round = 0; round < 4; round++) {
		size_t n = round % 2 == 0 ? 3 : 8;
		ok = true;
		for (size_t i = 0; i < n; i++) {
			unsigned char *p = p_malloc(pool, 32);
			if (!is_zero(p, 32))
				ok = false;
			memset(p, 0x99, 32);
		}
		test_assert(ok);
		pool_clear(pool);
	}
	pool_unref(&pool);
}

static void test_pool_size_overflow(void)
{
	/* A size whose rounding up would wrap must abort, not return a
	   tiny block. Run in a child since it aborts. */
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0) {
		int null_fd = open("/dev/null", O_WRONLY);
		if (null_fd >= 0)
			dup2(null_fd, STDERR_FILENO);
		pool_t pool = pool_create("overflow", 64);
		(void)p_malloc(pool, SIZE_MAX - 3);
		_exit(0);
	}
	int status = 0;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

TEST_MAIN(
	TEST(test_pool_many_allocs),
	TEST(test_pool_used_size),
	TEST(test_pool_big_alloc),
	TEST(test_pool_strdup),
	TEST(test_pool_clear),
	TEST(test_pool_size_overflow),
)
