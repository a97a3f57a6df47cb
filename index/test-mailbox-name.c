/* Unit tests: mailbox-name.c */
#include "test-common.h"
#include "mailbox-name.h"

static const char *decode(const char *src)
{
	static char out[MAILBOX_NAME_WIRE_MAX + 1];
	buffer_t buf;

	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	int ret = mailbox_name_mutf7_to_utf8(src, &buf);
	snprintf(out, sizeof(out), "%s", ret < 0 ? "(invalid)" : buf.data);
	buffer_free(&buf);
	return out;
}

static const char *encode(const char *src)
{
	static char out[MAILBOX_NAME_WIRE_MAX + 1];
	buffer_t buf;

	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	int ret = mailbox_name_utf8_to_mutf7(src, &buf);
	snprintf(out, sizeof(out), "%s", ret < 0 ? "(invalid)" : buf.data);
	buffer_free(&buf);
	return out;
}

static const struct {
	const char *mutf7, *utf8;
} mutf7_vectors[] = {
	{ "INBOX", "INBOX" },
	{ "&-", "&" },
	{ "a&-b&-", "a&b&" },
	/* RFC 3501 5.1.3 */
	{ "~peter/mail/&U,BTFw-/&ZeVnLIqe-",
	  "~peter/mail/\xe5\x8f\xb0\xe5\x8c\x97/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e" },
	{ "Entw&APw-rfe", "Entw\xc3\xbcrfe" },
	{ "&AOk-t&AOk-", "\xc3\xa9t\xc3\xa9" },
	/* a surrogate pair: U+1F600 */
	{ "&2D3eAA-", "\xf0\x9f\x98\x80" },
	{ "&2D3eAA-&-", "\xf0\x9f\x98\x80&" },
	{ "", "" },
};

static void test_mutf7_vectors(void)
{
	for (unsigned int i = 0; i < N_ELEMENTS(mutf7_vectors); i++) {
		test_assert_str(decode(mutf7_vectors[i].mutf7),
				mutf7_vectors[i].utf8);
		test_assert_str(encode(mutf7_vectors[i].utf8),
				mutf7_vectors[i].mutf7);
	}
}

static void test_mutf7_invalid(void)
{
	static const char *const invalid[] = {
		"&",             /* unterminated */
		"a&U,BTFw",      /* unterminated */
		"&U,BTFw",       /* unterminated */
		"&AGE-",         /* 'a' must represent itself */
		"&ACY-",         /* '&' must be "&-" */
		"&AOk-&AOk-",    /* two runs in a row: not the shortest form */
		"&AOl-",         /* padding bits not zero */
		"&AOkA-",        /* six bits too many */
		"&A-",           /* fewer than 16 bits */
		"&2D0-",         /* high surrogate alone */
		"&3AA-",         /* low surrogate alone */
		"&2D0AYQ-",      /* high surrogate + non-surrogate */
		"&AAA-",         /* U+0000 */
		"&AO/-",         /* '/' is not modified base64 */
		"&AO=-",         /* padding */
		"\xc3\xa9",      /* 8-bit */
		"a\tb",          /* control character */
		"\x7f",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(invalid); i++)
		test_assert_str(decode(invalid[i]), "(invalid)");
}

static void test_utf8_invalid(void)
{
	static const char *const invalid[] = {
		"\xc0\xaf",          /* overlong '/' */
		"\xe0\x80\xaf",      /* overlong */
		"\xed\xa0\x80",      /* surrogate */
		"\xf4\x90\x80\x80",  /* > U+10FFFF */
		"\xc3",              /* truncated */
		"\x80",
		"\xff",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(invalid); i++) {
		test_assert_str(encode(invalid[i]), "(invalid)");
		test_assert(!mailbox_name_is_utf8(invalid[i]));
	}
	test_assert(mailbox_name_is_utf8("Entw\xc3\xbcrfe"));
}

static void test_normalize(void)
{
	char norm[MAILBOX_NAME_MAX + 1];
	const char *error;
	char longname[MAILBOX_NAME_MAX + 2];

	test_assert_int(mailbox_name_normalize("inbox", norm, &error),
			MAILBOX_NAME_OK);
	test_assert_str(norm, "INBOX");
	test_assert_int(mailbox_name_normalize("InBoX/Sub", norm, &error),
			MAILBOX_NAME_OK);
	test_assert_str(norm, "INBOX/Sub");
	test_assert_int(mailbox_name_normalize("inboxes", norm, &error),
			MAILBOX_NAME_OK);
	test_assert_str(norm, "inboxes");
	test_assert_int(mailbox_name_normalize("a.b/~c", norm, &error),
			MAILBOX_NAME_OK);

	static const char *const invalid[] = {
		"", "/", "a/", "/a", "a//b", "..", ".", "a/../b", "../a", "a/..",
		"a/./b", "a\nb", "a\rb", "a\x01", "a\x7f", "a\xc2\x85",
		"a*", "a%b", "\xc0\xaf", "\xed\xa0\x80",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(invalid); i++) {
		test_assert_int(mailbox_name_normalize(invalid[i], norm, &error),
				MAILBOX_NAME_INVALID);
	}
	/* over NAME_MAX on disk */
	memset(longname, 'x', 300);
	longname[300] = '\0';
	test_assert_int(mailbox_name_normalize(longname, norm, &error),
			MAILBOX_NAME_TOO_LONG);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	test_assert_int(mailbox_name_normalize(longname, norm, &error),
			MAILBOX_NAME_TOO_LONG);
	/* too deep */
	char deep[128] = "";
	for (unsigned int i = 0; i <= MAILBOX_NAME_LEVELS_MAX; i++)
		strcat(deep, i == 0 ? "a" : "/a");
	test_assert_int(mailbox_name_normalize(deep, norm, &error),
			MAILBOX_NAME_TOO_LONG);
}

static const struct {
	const char *name, *dir;
} dir_vectors[] = {
	{ "INBOX", "" },
	{ "Sent", ".Sent" },
	{ "a/b/c", ".a.b.c" },
	{ "INBOX/x", ".INBOX.x" },
	{ "a.b", ".a~2eb" },
	{ "~x~", ".~7ex~7e" },
	{ "..a", ".~2e~2ea" },
	{ "a&b", ".a&-b" },
	{ "Entw\xc3\xbcrfe/x.y", ".Entw&APw-rfe.x~2ey" },
	{ "a b", ".a b" },
};

static void test_dir_round_trip(void)
{
	char dir[MAILBOX_NAME_DISK_MAX + 1], name[MAILBOX_NAME_MAX + 1];

	for (unsigned int i = 0; i < N_ELEMENTS(dir_vectors); i++) {
		test_assert(mailbox_name_to_dir(dir_vectors[i].name, dir) == 0);
		test_assert_str(dir, dir_vectors[i].dir);
		if (dir[0] == '\0')
			continue;
		test_assert(mailbox_name_from_dir(dir, name) == 0);
		test_assert_str(name, dir_vectors[i].name);
		/* never a path, never "." or ".." */
		test_assert(strchr(dir, '/') == NULL);
		test_assert(strcmp(dir, "..") != 0);
	}
}

static void test_dir_foreign(void)
{
	char name[MAILBOX_NAME_MAX + 1];
	static const char *const foreign[] = {
		".", "..", "...", ".a..b", ".a.", "cur", "tmp", "moat.uidlist",
		".~2", ".~41", ".~2E", ".a&AGE-", ".INBOX", ".inbox.x", ".a*",
		".\x01", ".a&AOk",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(foreign); i++)
		test_assert(mailbox_name_from_dir(foreign[i], name) < 0);
}

static void test_path(void)
{
	char path[256];

	test_assert(mailbox_name_to_path("/m", "inbox", path, sizeof(path)) == 0);
	test_assert_str(path, "/m");
	test_assert(mailbox_name_to_path("/m", "a/b", path, sizeof(path)) == 0);
	test_assert_str(path, "/m/.a.b");
	test_assert(mailbox_name_to_path("/m", "../etc", path, sizeof(path)) < 0);
	test_assert(mailbox_name_to_path("/m", "a/../../x", path,
					 sizeof(path)) < 0);
	test_assert(mailbox_name_to_path("/m", "..", path, sizeof(path)) < 0);
	test_assert(mailbox_name_to_path("/m", "a/b", path, 5) < 0);
	test_assert(mailbox_name_to_path("/m", "../..", path, sizeof(path)) < 0);
	/* ".." inside a component is just characters, escaped */
	test_assert(mailbox_name_to_path("/m", "..x", path, sizeof(path)) == 0);
	test_assert_str(path, "/m/.~2e~2ex");
}

static void test_is_child(void)
{
	test_assert(mailbox_name_is_child("a/b", "a"));
	test_assert(mailbox_name_is_child("a/b/c", "a"));
	test_assert(!mailbox_name_is_child("ab", "a"));
	test_assert(!mailbox_name_is_child("a", "a"));
	test_assert(!mailbox_name_is_child("b/a", "a"));
}

TEST_MAIN(TEST(test_mutf7_vectors), TEST(test_mutf7_invalid),
	  TEST(test_utf8_invalid), TEST(test_normalize),
	  TEST(test_dir_round_trip), TEST(test_dir_foreign), TEST(test_path),
	  TEST(test_is_child))
