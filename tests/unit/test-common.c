#include "test-common.h"

#include <ftw.h>

unsigned int test_checks_passed, test_checks_failed;
const char *test_current;
static char tmpdir_path[256];

void test_assert_at(bool ok, const char *expr, const char *file, int line)
{
	if (ok) {
		test_checks_passed++;
		return;
	}
	test_checks_failed++;
	fprintf(stderr, "FAIL %s: %s:%d: %s\n", test_current, file, line, expr);
}

void test_assert_str_at(const char *a, const char *b, const char *file, int line)
{
	bool ok = (a == NULL && b == NULL) ||
		(a != NULL && b != NULL && strcmp(a, b) == 0);
	if (ok) {
		test_checks_passed++;
		return;
	}
	test_checks_failed++;
	fprintf(stderr, "FAIL %s: %s:%d: \"%s\" != \"%s\"\n", test_current,
		file, line, a == NULL ? "(null)" : a, b == NULL ? "(null)" : b);
}

void test_assert_int_at(long long a, long long b, const char *expr,
			const char *file, int line)
{
	if (a == b) {
		test_checks_passed++;
		return;
	}
	test_checks_failed++;
	fprintf(stderr, "FAIL %s: %s:%d: %s: %lld != %lld\n", test_current,
		file, line, expr, a, b);
}

int test_run(const struct test_case *tests, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++) {
		unsigned int failed_before = test_checks_failed;
		test_current = tests[i].name;
		tests[i].func();
		printf("%-50s %s\n", tests[i].name,
		       test_checks_failed == failed_before ? "ok" : "FAILED");
	}
	test_tmpdir_cleanup();
	printf("%u passed, %u failed\n", test_checks_passed, test_checks_failed);
	return test_checks_failed == 0 ? 0 : 1;
}

const char *test_tmpdir(void)
{
	if (tmpdir_path[0] != '\0')
		return tmpdir_path;
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir_path, sizeof(tmpdir_path), "%s/moat-unit-XXXXXX",
		 base != NULL ? base : "/tmp");
	if (mkdtemp(tmpdir_path) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
	return tmpdir_path;
}

static int rm_entry(const char *path, const struct stat *st ATTR_UNUSED,
		    int flag ATTR_UNUSED, struct FTW *ftw ATTR_UNUSED)
{
	return remove(path);
}

void test_tmpdir_cleanup(void)
{
	if (tmpdir_path[0] == '\0')
		return;
	(void)nftw(tmpdir_path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir_path[0] = '\0';
}

long long test_log_used(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char b[4];
	long long pos;

	if (f == NULL)
		return -1;
	/* header_size: the u16 at offset 6 (doc/index-format.md) */
	if (fseek(f, 6, SEEK_SET) != 0 || fread(b, 1, 2, f) != 2) {
		fclose(f);
		return -1;
	}
	pos = b[0] | (b[1] << 8);
	/* each record starts with its u32 size; 0 or the end of the file
	   ends them */
	while (fseek(f, pos, SEEK_SET) == 0 && fread(b, 1, 4, f) == 4) {
		uint32_t size = (uint32_t)b[0] | ((uint32_t)b[1] << 8) |
			((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
		if (size == 0)
			break;
		pos += size;
	}
	fclose(f);
	return pos;
}
