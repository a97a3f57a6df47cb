#ifndef TEST_COMMON_H
#define TEST_COMMON_H
/* A minimal unit test harness. Each test program runs its test functions
   with test_run() and exits non-zero if any check failed. Output ends with
   "N passed, N failed" for the checks, as CI reads it. */

#include "lib.h"

extern unsigned int test_checks_passed, test_checks_failed;
extern const char *test_current;

#define test_assert(expr) test_assert_at((expr), #expr, __FILE__, __LINE__)
#define test_assert_str(a, b) test_assert_str_at((a), (b), __FILE__, __LINE__)
#define test_assert_int(a, b) test_assert_int_at((long long)(a), (long long)(b), #a, __FILE__, __LINE__)

void test_assert_at(bool ok, const char *expr, const char *file, int line);
void test_assert_str_at(const char *a, const char *b, const char *file, int line);
void test_assert_int_at(long long a, long long b, const char *expr,
			const char *file, int line);

struct test_case {
	const char *name;
	void (*func)(void);
};
#define TEST(f) { #f, f }

/* Runs each test; returns the process exit code. */
int test_run(const struct test_case *tests, unsigned int count);
#define TEST_MAIN(...) \
	int main(void) { \
		static const struct test_case tests_[] = { __VA_ARGS__ }; \
		return test_run(tests_, N_ELEMENTS(tests_)); \
	}

/* A fresh empty directory under $TMPDIR; removed by test_tmpdir_cleanup. */
const char *test_tmpdir(void);
/* The bytes of the index log at path that hold its header and records
   (the file is longer: zeros are written ahead of the end), or -1. */
long long test_log_used(const char *path);
void test_tmpdir_cleanup(void);

#endif
