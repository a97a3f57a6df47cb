/* Unit tests: mailbox-objectid.c (RFC 8474 ids) */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-objectid.h"
#include "mail-sort-keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MSG_ROOT "Message-ID: <root@example.org>\r\nSubject: s\r\n\r\nb\r\n"
#define MSG_REPLY "Message-ID: <r@example.org>\r\n" \
	"References: <root@example.org>\r\n\r\nb\r\n"

static const char *root_path(const char *name)
{
	static char path[4][512];
	static unsigned int n;
	char *p = path[n++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", test_tmpdir(), name);
	return p;
}

static void append(struct mailbox *box, const char *text)
{
	struct mailbox_append_ctx *save;
	const char *error;
	uint32_t uid;

	test_assert(mailbox_append_begin(box, 0, 1000000000, &save,
					 &error) == 0);
	test_assert(mailbox_append_write(save, text, strlen(text),
					 &error) == 0);
	test_assert(mailbox_append_finish(&save, &uid, &error) == 0);
}

static void test_objectid_syntax(void)
{
	char id[MAILBOX_OBJECTID_MAX + 2];

	test_assert(mailbox_objectid_is_valid("a"));
	test_assert(mailbox_objectid_is_valid("F2212ea87-6097_Zz"));
	test_assert(!mailbox_objectid_is_valid(""));
	test_assert(!mailbox_objectid_is_valid("a.b"));
	test_assert(!mailbox_objectid_is_valid("a b"));
	test_assert(!mailbox_objectid_is_valid("\xc3\xa9"));
	memset(id, 'x', MAILBOX_OBJECTID_MAX);
	id[MAILBOX_OBJECTID_MAX] = '\0';
	test_assert(mailbox_objectid_is_valid(id));
	id[MAILBOX_OBJECTID_MAX] = 'x';
	id[MAILBOX_OBJECTID_MAX + 1] = '\0';
	test_assert(!mailbox_objectid_is_valid(id));
}

static void test_emailid_from_base(void)
{
	char a[MAILBOX_MSG_OBJECTID_LEN + 1], b[MAILBOX_MSG_OBJECTID_LEN + 1];
	const char *base = "1600000000.M1P2Q3.host,S=10,W=12";

	mailbox_emailid_from_base(base, strlen(base), a);
	test_assert_int(strlen(a), MAILBOX_MSG_OBJECTID_LEN);
	test_assert(a[0] == 'M' && mailbox_objectid_is_valid(a));
	/* only the unique part counts */
	mailbox_emailid_from_base("1600000000.M1P2Q3.host", 22, b);
	test_assert_str(a, b);
	mailbox_emailid_from_base("1600000000.M1P2Q4.host", 22, b);
	test_assert(strcmp(a, b) != 0);
	/* a copy's name carries the source's id */
	char copy[128];
	snprintf(copy, sizeof(copy), "1700000000.M9P9Q9.other,S=10"
		 MAILBOX_EMAILID_FIELD "%s", a);
	mailbox_emailid_from_base(copy, strlen(copy), b);
	test_assert_str(a, b);
	snprintf(copy, sizeof(copy), "1700000000.M9P9Q9.other"
		 MAILBOX_EMAILID_FIELD "%s,W=12", a);
	mailbox_emailid_from_base(copy, strlen(copy), b);
	test_assert_str(a, b);
	/* a field that is not one of our ids is not taken */
	const char *odd = "1700000000.M9P9Q9.other,E=Mzz,E=M12";
	mailbox_emailid_from_base(odd, strlen(odd), b);
	char own[MAILBOX_MSG_OBJECTID_LEN + 1];
	mailbox_emailid_from_base("1700000000.M9P9Q9.other", 23, own);
	test_assert_str(b, own);
}

static void test_mailbox_id_file(void)
{
	char id1[MAILBOX_ID_LEN + 1], id2[MAILBOX_ID_LEN + 1], file[600];
	const char *error, *dir = root_path("box");

	test_assert(mkdir(dir, 0700) == 0);
	/* none yet: made on the first ask, then the same */
	test_assert(mailbox_id_get(dir, id1, &error) == 0);
	test_assert(id1[0] == 'F' && strlen(id1) == MAILBOX_ID_LEN);
	test_assert(mailbox_objectid_is_valid(id1));
	test_assert(mailbox_id_get(dir, id2, &error) == 0);
	test_assert_str(id1, id2);
	/* create replaces it */
	test_assert(mailbox_id_create(dir, &error) == 0);
	test_assert(mailbox_id_get(dir, id2, &error) == 0);
	test_assert(strcmp(id1, id2) != 0);
	/* garbage (or an id with something after it) is replaced */
	snprintf(file, sizeof(file), "%s/" MAILBOX_ID_FILE, dir);
	FILE *f = fopen(file, "w");
	fprintf(f, "%s\nmore\n", id2);
	fclose(f);
	test_assert(mailbox_id_get(dir, id1, &error) == 0);
	test_assert(strcmp(id1, id2) != 0);
	test_assert(mailbox_id_get(dir, id2, &error) == 0);
	test_assert_str(id1, id2);
	/* no temporary file is left behind */
	snprintf(file, sizeof(file), "%s/" MAILBOX_ID_FILE ".%ld.tmp", dir,
		 (long)getpid());
	test_assert(access(file, F_OK) < 0);
	test_tmpdir_cleanup();
}

static void test_msg_ids(void)
{
	char e1[MAILBOX_MSG_OBJECTID_LEN + 1], e2[MAILBOX_MSG_OBJECTID_LEN + 1];
	char t1[MAILBOX_MSG_OBJECTID_LEN + 1], t2[MAILBOX_MSG_OBJECTID_LEN + 1];
	char c1[MAILBOX_MSG_OBJECTID_LEN + 1];
	struct mailbox *src, *dst;
	const char *error;

	test_assert(mailbox_open(root_path("src"), "INBOX", 0, &src,
				 &error) == 1);
	test_assert(mailbox_open(root_path("dst"), "INBOX", 0, &dst,
				 &error) == 1);
	append(src, MSG_ROOT);
	append(src, MSG_REPLY);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	struct mail_sort_keys_reader *r =
		mail_sort_keys_reader_init(src, NULL, 0);
	/* message by message, as FETCH asks (a transaction's cache values
	   of one message must be adjacent to share a record: mail-cache.c) */
	test_assert(mailbox_msg_emailid(src, 1, e1, &error) == 1);
	test_assert(mailbox_msg_threadid(r, src, 1, t1, &error) == 1);
	test_assert(mailbox_msg_emailid(src, 2, e2, &error) == 1);
	test_assert(mailbox_msg_threadid(r, src, 2, t2, &error) == 1);
	test_assert(strcmp(e1, e2) != 0);
	test_assert(t1[0] == 'T' && mailbox_objectid_is_valid(t1));
	test_assert_str(t1, t2);
	mail_sort_keys_reader_deinit(&r);
	test_assert(mailbox_cache_flush(src, &error) == 0);
	mailbox_close(&src);
	test_assert(mailbox_open(root_path("src"), "INBOX", 0, &src,
				 &error) == 1);

	/* the cached value is what is served; one garbled is not */
	const void *data;
	size_t size;
	test_assert(mailbox_msg_cache_lookup(src, 1, "emailid", &data,
					     &size) == 1);
	test_assert(size == MAILBOX_MSG_OBJECTID_LEN &&
		    memcmp(data, e1, size) == 0);
	test_assert(mailbox_msg_cache_add(src, 2, "emailid", "Mxyz", 4,
					  &error) == 0);
	test_assert(mailbox_cache_flush(src, &error) == 0);
	test_assert(mailbox_sync(src, true, NULL, NULL, &error) == 0);
	test_assert(mailbox_msg_emailid(src, 2, c1, &error) == 1);
	test_assert_str(c1, e2);

	/* a copy has its source's id, a copy of the copy too */
	struct mailbox_copy_ctx *ctx = mailbox_copy_begin(dst);
	uint32_t first_uid;
	test_assert(mailbox_copy_add(ctx, src, 1, &error) == 0);
	test_assert(mailbox_copy_add(ctx, src, 2, &error) == 0);
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert(mailbox_msg_emailid(dst, 1, c1, &error) == 1);
	test_assert_str(c1, e1);
	ctx = mailbox_copy_begin(dst);
	test_assert(mailbox_copy_add(ctx, dst, 1, &error) == 0);
	test_assert(mailbox_copy_commit(&ctx, &first_uid, &error) == 0);
	test_assert(mailbox_sync(dst, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_get_count(dst), 3);
	test_assert(mailbox_msg_emailid(dst, 3, c1, &error) == 1);
	test_assert_str(c1, e1);
	r = mail_sort_keys_reader_init(dst, NULL, 0);
	test_assert(mailbox_msg_threadid(r, dst, 2, t2, &error) == 1);
	test_assert_str(t2, t1);
	mail_sort_keys_reader_deinit(&r);
	mailbox_close(&dst);
	/* the index and its cache lost: the same ids from the file names */
	static const char *const files[] = {
		"moat.index", "moat.index.log", "moat.index.log.2",
		"moat.index.cache", "moat.index.modseq", "moat.index.changes",
		"moat.index.dirs",
	};
	char path[600];
	for (unsigned int i = 0; i < N_ELEMENTS(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", root_path("dst"),
			 files[i]);
		(void)unlink(path);
	}
	/* this process's directory watch still trusts the index it saw
	   (maildir-watch.h: a deleted index is not a change of cur/ or
	   new/); a file coming and going in new/ makes it look again, as
	   a new process would */
	snprintf(path, sizeof(path), "%s/new/x", root_path("dst"));
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	test_assert(fd >= 0 && close(fd) == 0 && unlink(path) == 0);
	test_assert(mailbox_open(root_path("dst"), "INBOX", 0, &dst,
				 &error) == 1);
	test_assert_int(mailbox_get_count(dst), 3);
	test_assert(mailbox_msg_emailid(dst, 2, c1, &error) == 1);
	test_assert_str(c1, e2);
	test_assert(mailbox_msg_emailid(dst, 3, c1, &error) == 1);
	test_assert_str(c1, e1);
	mailbox_close(&dst);
	mailbox_close(&src);
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_objectid_syntax), TEST(test_emailid_from_base),
	  TEST(test_mailbox_id_file), TEST(test_msg_ids))
