/* Unit tests: expunged messages stay readable in the other session views
   of the process until they report the expunge (maildir-ghost.c and its
   use in mailbox.c, maildir-sync.c, maildir-copy.c). */
#include "test-common.h"
#include "mailbox.h"
#include "maildir-ghost.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* More than the process keeps, so that the oldest must be dropped. */
#define GHOST_MANY (MAILDIR_GHOST_MAX_FILES + 8)

static unsigned int expunges_seen;

static void count_expunge(void *context ATTR_UNUSED, uint32_t seq ATTR_UNUSED)
{
	expunges_seen++;
}

static const struct mailbox_sync_callbacks ghost_cb = {
	.expunge = count_expunge,
};

static const char *ghost_root(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static struct mailbox *ghost_open(const char *root, const char *name,
				  enum mailbox_open_flags flags)
{
	struct mailbox *box = NULL;
	const char *error;

	test_assert_int(mailbox_open(root, name, MAILBOX_OPEN_NO_FSYNC | flags,
				     &box, &error), 1);
	return box;
}

/* Message n: "Subject: n\r\n\r\nbody n\r\n", INTERNALDATE 1000000 + n. */
static void ghost_append(struct mailbox *box, unsigned int first,
			 unsigned int count)
{
	struct mailbox_append_ctx *ctx;
	const char *error;
	char text[64];
	uint32_t uid;

	for (unsigned int n = first; n < first + count; n++) {
		int len = snprintf(text, sizeof(text),
				   "Subject: %u\r\n\r\nbody %u\r\n", n, n);
		test_assert(mailbox_append_begin(box, MAIL_FLAGGED,
						 (time_t)(1000000 + n), &ctx,
						 &error) == 0);
		test_assert(mailbox_append_write(ctx, text, (size_t)len,
						 &error) == 0);
		test_assert(mailbox_append_finish(&ctx, &uid, &error) == 0);
	}
}

static void ghost_sync(struct mailbox *box, bool allow_expunge)
{
	const char *error;

	expunges_seen = 0;
	test_assert(mailbox_sync(box, allow_expunge, &ghost_cb, NULL,
				 &error) == 0);
}

/* Whether message seq of box reads as message n. */
static bool ghost_reads_as(struct mailbox *box, uint32_t seq, unsigned int n)
{
	char buf[128], want[64];
	const char *error;
	int fd = mailbox_msg_open(box, seq, &error);

	if (fd == -1)
		return false;
	ssize_t ret = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (ret < 0)
		return false;
	buf[ret] = '\0';
	snprintf(want, sizeof(want), "Subject: %u\r\n\r\nbody %u\r\n", n, n);
	return strcmp(buf, want) == 0;
}

static unsigned int cur_files(const char *root)
{
	char path[600];
	unsigned int n = 0;
	struct dirent *d;

	snprintf(path, sizeof(path), "%s/cur", root);
	DIR *dir = opendir(path);
	if (dir == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.')
			n++;
	}
	closedir(dir);
	return n;
}

static void test_ghost_read_until_told(void)
{
	const char *root = ghost_root("told"), *error;
	uint64_t vsize;
	time_t date;

	struct mailbox *a = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 1, 3);
	ghost_sync(a, true);
	struct mailbox *b = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	test_assert_int(mailbox_get_count(b), 3);
	test_assert(mailbox_msg_expunge(a, 2, &error) == 0);
	test_assert(mailbox_expunge_sync(a, &error) == 0);
	/* gone from the Maildir at once, kept for b only */
	test_assert_int(cur_files(root), 2);
	test_assert_int(maildir_ghosts_count(), 1);
	test_assert(ghost_reads_as(b, 2, 2));

	/* b syncs without expunges: the message stays and stays readable */
	ghost_sync(b, false);
	test_assert_int(expunges_seen, 0);
	test_assert(mailbox_msg_is_expunged(b, 2));
	test_assert(ghost_reads_as(b, 2, 2));
	test_assert(mailbox_msg_vsize(b, 2, &vsize, &error) == 0);
	test_assert_int(vsize, strlen("Subject: 2\r\n\r\nbody 2\r\n"));
	test_assert(mailbox_msg_internaldate(b, 2, &date, &error) == 0);
	test_assert_int(date, 1000002);
	test_assert_int(mailbox_msg_flags(b, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	/* its flags can no longer change */
	test_assert(mailbox_msg_set_flags(b, 2, MAIL_SEEN, &error) == -1 &&
		    errno == ENOENT);

	/* a's own view needs no kept file: it reports the expunge next */
	ghost_sync(a, true);
	test_assert_int(expunges_seen, 1);
	test_assert_int(maildir_ghosts_count(), 1);

	/* b is told: the file goes */
	ghost_sync(b, true);
	test_assert_int(expunges_seen, 1);
	test_assert_int(maildir_ghosts_count(), 0);
	test_assert_int(mailbox_get_count(b), 2);
	test_assert(ghost_reads_as(b, 2, 3));
	mailbox_close(&b);
	mailbox_close(&a);
}

static void test_ghost_copy(void)
{
	const char *root = ghost_root("copy"), *error;
	uint32_t first_uid;

	struct mailbox *a = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 1, 2);
	ghost_sync(a, true);
	struct mailbox *b = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	test_assert(mailbox_msg_expunge(a, 1, &error) == 0);
	ghost_sync(b, false);
	test_assert(mailbox_msg_is_expunged(b, 1));

	/* RFC 2180 4.4.2: what b numbers is copied, data and all */
	struct mailbox *dest = ghost_open(root, "INBOX", 0);
	struct mailbox_copy_ctx *copy = mailbox_copy_begin(dest);
	test_assert(mailbox_copy_add(copy, b, 1, &error) == 0);
	test_assert(mailbox_copy_commit(&copy, &first_uid, &error) == 0);
	test_assert_int(first_uid, 3);
	ghost_sync(dest, true);
	test_assert_int(mailbox_get_count(dest), 2);
	test_assert(ghost_reads_as(dest, 2, 1));
	test_assert_int(mailbox_msg_flags(dest, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	time_t date;
	test_assert(mailbox_msg_internaldate(dest, 2, &date, &error) == 0);
	test_assert_int(date, 1000001);
	mailbox_close(&dest);
	mailbox_close(&b);
	test_assert_int(maildir_ghosts_count(), 0);
	mailbox_close(&a);
}

static void test_ghost_who_holds(void)
{
	const char *root = ghost_root("holders"), *error;

	struct mailbox *a = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 1, 2);
	ghost_sync(a, true);
	/* not a session view (STATUS, APPEND, COPY targets): nothing kept */
	struct mailbox *plain = ghost_open(root, "INBOX", 0);
	/* a session view that was not shown message 3 yet */
	struct mailbox *b = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 3, 1);
	ghost_sync(a, true);
	test_assert(mailbox_msg_expunge(a, 3, &error) == 0);
	test_assert_int(maildir_ghosts_count(), 0);
	ghost_sync(b, true);
	test_assert_int(mailbox_get_count(b), 2);

	/* closing without being told lets go too */
	test_assert(mailbox_msg_expunge(a, 1, &error) == 0);
	test_assert_int(maildir_ghosts_count(), 1);
	test_assert(mailbox_msg_open(plain, 1, &error) == -1 &&
		    errno == ENOENT);
	mailbox_close(&b);
	test_assert_int(maildir_ghosts_count(), 0);
	mailbox_close(&plain);
	mailbox_close(&a);
}

static void test_ghost_external_delete(void)
{
	const char *root = ghost_root("external"), *error;
	char path[600], file[1024];
	struct dirent *d;

	struct mailbox *a = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 1, 1);
	ghost_sync(a, true);
	/* another program deletes the file: nothing can be kept */
	snprintf(path, sizeof(path), "%s/cur", root);
	DIR *dir = opendir(path);
	test_assert(dir != NULL);
	while (dir != NULL && (d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, d->d_name);
		test_assert(unlink(file) == 0);
	}
	if (dir != NULL)
		closedir(dir);
	test_assert(mailbox_msg_open(a, 1, &error) == -1 && errno == ENOENT);
	ghost_sync(a, false);
	test_assert(mailbox_msg_is_expunged(a, 1));
	test_assert(mailbox_msg_open(a, 1, &error) == -1 && errno == ENOENT);
	ghost_sync(a, true);
	test_assert_int(mailbox_get_count(a), 0);
	mailbox_close(&a);
}

static void test_ghost_limit(void)
{
	const char *root = ghost_root("limit"), *error;

	struct mailbox *a = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	ghost_append(a, 1, GHOST_MANY);
	ghost_sync(a, true);
	struct mailbox *b = ghost_open(root, "INBOX", MAILBOX_OPEN_SESSION);
	for (uint32_t seq = 1; seq <= GHOST_MANY; seq++)
		test_assert(mailbox_msg_expunge(a, seq, &error) == 0);
	test_assert(maildir_ghosts_count() <= MAILDIR_GHOST_MAX_FILES);
	test_assert_int(cur_files(root), 0);
	/* the oldest were dropped: b gets "expunged" for them only */
	test_assert(mailbox_msg_open(b, 1, &error) == -1 && errno == ENOENT);
	test_assert(ghost_reads_as(b, GHOST_MANY, GHOST_MANY));
	ghost_sync(b, true);
	test_assert_int(expunges_seen, GHOST_MANY);
	test_assert_int(maildir_ghosts_count(), 0);
	mailbox_close(&b);
	mailbox_close(&a);
}

TEST_MAIN(TEST(test_ghost_read_until_told), TEST(test_ghost_copy),
	  TEST(test_ghost_who_holds), TEST(test_ghost_external_delete),
	  TEST(test_ghost_limit))
