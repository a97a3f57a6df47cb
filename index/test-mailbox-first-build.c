/* Unit tests: the first index of a Maildir is written straight into
   moat.index (mail_index_transaction_commit_first): the log holds none of
   its records, a handle that was reading the first log sees them all at
   its next sync, and a crash at each step of the build (the test hook of
   mail-index-private.h stops a child there) leaves either no moat.index
   or a complete one; either way the next open serves every message with
   its UID and flags. */
#include "test-common.h"
#include "mailbox.h"
#include "mail-index-private.h"
#include "maildir-uidlist.h"
#include "maildir-watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Above the mailbox layer's checkpoint threshold (1024), as a real
   first build of a big Maildir */
#define BUILD_MSGS 1100
/* mail_index_build_set_hook()'s steps */
#define BUILD_STEPS 4

static const char *root_path(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static const char *file_path(const char *root, const char *name)
{
	static char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return path;
}

static bool file_exists(const char *root, const char *name)
{
	struct stat st;

	return stat(file_path(root, name), &st) == 0;
}

static enum mail_flags expected_flags(unsigned int i)
{
	return (i % 3 == 0 ? MAIL_FLAGGED : 0) | (i % 2 == 1 ? MAIL_SEEN : 0);
}

/* A Maildir another tool wrote: no moat file at all. Message i is
   "<1000+i>.test,S=<size>:2,<flags>", so name order is uid order. */
static void make_maildir(const char *root)
{
	const char *const subs[] = { "cur", "new", "tmp" };
	char path[1024], body[64];

	test_assert(mkdir(root, 0700) == 0);
	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++)
		test_assert(mkdir(file_path(root, subs[i]), 0700) == 0);
	for (unsigned int i = 0; i < BUILD_MSGS; i++) {
		int len = snprintf(body, sizeof(body), "Subject: %u\n\nbody\n", i);
		enum mail_flags f = expected_flags(i);
		snprintf(path, sizeof(path), "%s/cur/%u.test,S=%d:2,%s%s",
			 root, 1000 + i, len, (f & MAIL_FLAGGED) ? "F" : "",
			 (f & MAIL_SEEN) ? "S" : "");
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		test_assert(fd >= 0);
		test_assert(write(fd, body, (size_t)len) == len);
		close(fd);
	}
}

static uint32_t uidlist_uidvalidity(const char *root)
{
	struct maildir_uidlist *ul = maildir_uidlist_init(root, false);
	const char *error;

	test_assert(maildir_uidlist_refresh(ul, &error) >= 0);
	uint32_t uidvalidity = maildir_uidlist_get_uidvalidity(ul);
	maildir_uidlist_deinit(&ul);
	return uidvalidity;
}

static void check_mailbox(const char *root, uint32_t uidvalidity)
{
	struct mailbox *box;
	const char *error;

	maildir_watch_deinit();
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SELECT, &box, &error), 1);
	test_assert_int(mailbox_get_count(box), BUILD_MSGS);
	test_assert_int(mailbox_get_uidvalidity(box), uidvalidity);
	test_assert_int(mailbox_get_next_uid(box), BUILD_MSGS + 1);
	unsigned int wrong = 0;
	for (unsigned int i = 0; i < mailbox_get_count(box); i++) {
		if (mailbox_msg_uid(box, i + 1) != i + 1 ||
		    (mailbox_msg_flags(box, i + 1) & ~MAIL_RECENT) !=
		    expected_flags(i))
			wrong++;
	}
	test_assert_int(wrong, 0);
	mailbox_close(&box);
}

/* The index alone, as the next open finds it: no moat.index and no
   message, or moat.index with every message. */
static void check_index_all_or_nothing(const char *root)
{
	struct mail_index *index;
	const char *error;

	bool has_index = file_exists(root, MAIL_INDEX_FILE_NAME);
	test_assert_int(mail_index_open(root, 0, &index, &error), 1);
	struct mail_index_view *view = mail_index_view_open(index);
	uint32_t count = mail_index_view_count(view);
	test_assert_int(count, has_index ? BUILD_MSGS : 0);
	unsigned int wrong = 0;
	for (uint32_t seq = 1; seq <= count; seq++) {
		const struct mail_index_record *rec =
			mail_index_view_lookup(view, seq);
		if (rec->uid != seq || rec->flags != expected_flags(seq - 1))
			wrong++;
	}
	test_assert_int(wrong, 0);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

struct counts {
	unsigned int appended, expunged;
};

static void count_appended(void *context, uint32_t seq ATTR_UNUSED,
			   uint32_t uid ATTR_UNUSED)
{
	((struct counts *)context)->appended++;
}

static void count_expunged(void *context, uint32_t seq ATTR_UNUSED,
			   uint32_t uid ATTR_UNUSED)
{
	((struct counts *)context)->expunged++;
}

static const struct mail_index_sync_callbacks count_cb = {
	.appended = count_appended, .expunge = count_expunged,
};

/* The build writes moat.index once and no record into any log; a
   handle that was at the end of the first log reloads and sees every
   message; a reopen replays nothing. */
static void test_first_build_written_once(void)
{
	const char *root = root_path("Once"), *error;
	struct mail_index *reader;
	struct mailbox *box;
	struct stat st;

	make_maildir(root);
	test_assert_int(mail_index_open(root, MAIL_INDEX_OPEN_CREATE, &reader,
					&error), 1);
	struct mail_index_view *view = mail_index_view_open(reader);
	test_assert_int(mail_index_view_count(view), 0);

	maildir_watch_deinit();
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_SELECT,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), BUILD_MSGS);
	test_assert_int(mailbox_get_recent_count(box), BUILD_MSGS);
	mailbox_close(&box);

	test_assert(file_exists(root, MAIL_INDEX_FILE_NAME));
	test_assert(!file_exists(root, MAIL_INDEX_LOG2_FILE_NAME));
	/* the log after the build: its header and at most the \Recent
	   claim (16 bytes of record header + 8 of op + 4 of payload) */
	test_assert(stat(file_path(root, MAIL_INDEX_LOG_FILE_NAME), &st) == 0);
	test_assert(test_log_used(file_path(root, MAIL_INDEX_LOG_FILE_NAME)) <=
		    (long long)sizeof(struct mail_transaction_log_header) + 32);

	struct counts counts = { 0, 0 };
	test_assert(mail_index_view_sync(view, &count_cb, &counts, &error) == 0);
	test_assert_int(counts.appended, BUILD_MSGS);
	test_assert_int(counts.expunged, 0);
	test_assert_int(mail_index_view_count(view), BUILD_MSGS);
	check_index_all_or_nothing(root);

	/* and it can commit after the build, into the new log (renaming
	   the file as moat's writers do: a scan takes flags from names) */
	struct mail_index_transaction *t = mail_index_transaction_begin(reader);
	mail_index_update_flags(t, 5, 5, MAIL_ANSWERED, 0, 0, 0);
	test_assert(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
						  NULL, &error) == 0);
	mail_index_view_close(&view);
	mail_index_close(&reader);
	char from[1024], to[1040];
	int len = (int)strlen("Subject: 4\n\nbody\n");
	snprintf(from, sizeof(from), "%s/cur/1004.test,S=%d:2,", root, len);
	snprintf(to, sizeof(to), "%sR", from);
	test_assert(rename(from, to) == 0);

	maildir_watch_deinit();
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), BUILD_MSGS);
	test_assert_int(mailbox_msg_flags(box, 5) & ~MAIL_RECENT,
			expected_flags(4) | MAIL_ANSWERED);
	test_assert_int(mailbox_get_recent_count(box), 0);
	mailbox_close(&box);
}

/* A small folder is built the same way (no log record either). */
static void test_first_build_index_exists(void)
{
	const char *root = root_path("Small"), *error;
	struct mailbox *box;
	struct mail_index *index;

	test_assert(mkdir(root, 0700) == 0);
	test_assert(mkdir(file_path(root, "cur"), 0700) == 0);
	test_assert(mkdir(file_path(root, "new"), 0700) == 0);
	test_assert(mkdir(file_path(root, "tmp"), 0700) == 0);
	int fd = open(file_path(root, "cur/1.x,S=3:2,S"), O_WRONLY | O_CREAT,
		      0600);
	test_assert(fd >= 0 && write(fd, "a\n\n", 3) == 3);
	close(fd);
	maildir_watch_deinit();
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), 1);
	mailbox_close(&box);
	test_assert(file_exists(root, MAIL_INDEX_FILE_NAME));
	test_assert_int(mail_index_open(root, 0, &index, &error), 1);
	struct mail_index_view *view = mail_index_view_open(index);
	test_assert_int(mail_index_view_count(view), 1);
	test_assert_int(mail_index_view_lookup(view, 1)->flags, MAIL_SEEN);
	mail_index_view_close(&view);
	mail_index_close(&index);
}

static unsigned int crash_at;

static void crash_hook(unsigned int step)
{
	if (step == crash_at)
		_exit(0);
}

/* A child builds the index and dies at step (no cleanup, no atexit:
   what a SIGKILL leaves). lose_index_rename: after it, moat.index goes
   as if the power cut lost its rename but not the log's. */
static void crash_build(const char *root, unsigned int step,
			bool lose_index_rename)
{
	fflush(NULL);
	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0) {
		struct mailbox *box;
		const char *error;
		crash_at = step;
		mail_index_build_set_hook(crash_hook);
		maildir_watch_deinit();
		if (mailbox_open(root, "INBOX", MAILBOX_OPEN_SELECT, &box,
				 &error) != 1)
			_exit(3);
		_exit(2);   /* the hook never ran */
	}
	int status;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (step == 1) {
		/* also a torn temporary file, as a crash while writing it */
		int fd = open(file_path(root, MAIL_INDEX_FILE_NAME ".tmp"),
			      O_WRONLY | O_CREAT | O_TRUNC, 0600);
		test_assert(fd >= 0 && write(fd, "MOIX", 4) == 4);
		close(fd);
	}
	if (lose_index_rename)
		test_assert(unlink(file_path(root, MAIL_INDEX_FILE_NAME)) == 0);
}

static void test_first_build_crash_steps(void)
{
	char name[64];

	for (unsigned int step = 1; step <= BUILD_STEPS + 1; step++) {
		/* BUILD_STEPS + 1: step 3 with moat.index's rename lost */
		bool lose = step == BUILD_STEPS + 1;
		unsigned int at = lose ? 3 : step;
		snprintf(name, sizeof(name), "Crash%u", step);
		const char *root = root_path(name);
		make_maildir(root);
		crash_build(root, at, lose);
		/* the uidlist was written before the build began */
		uint32_t uidvalidity = uidlist_uidvalidity(root);
		test_assert(uidvalidity != 0);
		test_assert_int(file_exists(root, MAIL_INDEX_FILE_NAME),
				at >= 2 && !lose);
		check_index_all_or_nothing(root);
		check_mailbox(root, uidvalidity);
		/* and the open after that one finds a complete index */
		test_assert(file_exists(root, MAIL_INDEX_FILE_NAME));
		check_index_all_or_nothing(root);
	}
}

/* Odd names, created in a random order: the uidlist written by the
   first build holds exactly the usable base names in byte order, each
   once, with the sizes of their ,S=/,W= fields, and the index has their
   flags: names without ":2,", with letters that are no flag, duplicate
   bases (renamed during a readdir), and names the scan ignores (dot
   files, a space in the base). The expectation is computed here, apart
   from the scan and its sort. */
#define ODD_MSGS 3000

struct odd_name {
	char base[96], info[16];
	int size, vsize;          /* -1: no field */
	unsigned int info_idx;
	enum mail_flags flags;
	bool usable, dupe;
};

static int odd_base_cmp(const void *p1, const void *p2)
{
	const struct odd_name *n1 = p1, *n2 = p2;

	if (n1->usable != n2->usable)
		return n1->usable ? -1 : 1;
	return strcmp(n1->base, n2->base);
}

static void odd_make(struct odd_name *names)
{
	static const char *const infos[] = {
		"", ":2,", ":2,S", ":2,FS", ":2,ZRS", ":2,Tx", ":1,S",
	};
	static const enum mail_flags info_flags[] = {
		0, 0, MAIL_SEEN, MAIL_FLAGGED | MAIL_SEEN,
		MAIL_ANSWERED | MAIL_SEEN, MAIL_DELETED, 0,
	};

	srandom(75);
	for (unsigned int i = 0; i < ODD_MSGS; i++) {
		struct odd_name *n = &names[i];
		unsigned int kind = (unsigned int)random() % 16;
		unsigned int info = (unsigned int)random() % N_ELEMENTS(infos);
		n->size = n->vsize = -1;
		n->usable = true;
		if (kind == 0 && i > 0 && names[i - 1].usable &&
		    !names[i - 1].dupe) {
			/* the previous base again, other flags */
			memcpy(n->base, names[i - 1].base, sizeof(n->base));
			n->size = names[i - 1].size;
			n->vsize = names[i - 1].vsize;
			n->dupe = names[i - 1].dupe = true;
			info = (names[i - 1].info_idx + 1) % N_ELEMENTS(infos);
		} else if (kind == 1) {
			snprintf(n->base, sizeof(n->base), ".hidden%u", i);
			n->usable = false;
		} else if (kind == 2) {
			snprintf(n->base, sizeof(n->base), "bad name %u", i);
			n->usable = false;
		} else if (kind < 6) {
			/* no size fields; a short, unshared prefix */
			snprintf(n->base, sizeof(n->base), "%lx.q%u", random(), i);
		} else {
			/* as moat and Dovecot name them: one long prefix */
			n->size = (int)(random() % 100000);
			n->vsize = kind % 2 == 0 ? n->size + 7 : -1;
			int len = snprintf(n->base, sizeof(n->base),
					   "17000%05ld.M%ldP%u.host,S=%d",
					   random() % 100000, random() % 1000,
					   i, n->size);
			if (n->vsize >= 0)
				snprintf(n->base + len, sizeof(n->base) - (size_t)len,
					 ",W=%d", n->vsize);
		}
		n->info_idx = info;
		snprintf(n->info, sizeof(n->info), "%s", infos[info]);
		n->flags = info_flags[info];
	}
}

static void odd_write_files(const char *root, const struct odd_name *names)
{
	const char *const subs[] = { "cur", "new", "tmp" };
	char path[1024];

	test_assert(mkdir(root, 0700) == 0);
	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++)
		test_assert(mkdir(file_path(root, subs[i]), 0700) == 0);
	for (unsigned int i = 0; i < ODD_MSGS; i++) {
		snprintf(path, sizeof(path), "%s/cur/%s%s", root,
			 names[i].base, names[i].info);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		test_assert(fd >= 0);
		test_assert(write(fd, "Subject: x\n\nbody\n", 17) == 17);
		close(fd);
	}
}

/* moat.uidlist as the model says, without its header line */
static char *odd_expected_uidlist(struct odd_name *sorted, unsigned int *count_r)
{
	size_t size = ODD_MSGS * 160, used = 0;
	char *text = i_malloc(size);
	unsigned int uid = 0;

	qsort(sorted, ODD_MSGS, sizeof(*sorted), odd_base_cmp);
	for (unsigned int i = 0; i < ODD_MSGS && sorted[i].usable; i++) {
		if (i > 0 && strcmp(sorted[i].base, sorted[i - 1].base) == 0)
			continue;
		used += (size_t)snprintf(text + used, size - used, "%u %s",
					 ++uid, sorted[i].base);
		if (sorted[i].size >= 0)
			used += (size_t)snprintf(text + used, size - used,
						 " S=%d", sorted[i].size);
		if (sorted[i].vsize >= 0)
			used += (size_t)snprintf(text + used, size - used,
						 " W=%d", sorted[i].vsize);
		used += (size_t)snprintf(text + used, size - used, "\n");
		sorted[uid - 1] = sorted[i];   /* uid order from here on */
	}
	*count_r = uid;
	return text;
}

static char *read_whole(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	test_assert(fd >= 0 && fstat(fd, &st) == 0);
	char *data = i_malloc((size_t)st.st_size + 1);
	test_assert(read(fd, data, (size_t)st.st_size) == st.st_size);
	close(fd);
	return data;
}

static void test_first_build_odd_names(void)
{
	const char *root = root_path("Odd"), *error;
	struct odd_name *names = i_malloc(sizeof(*names) * ODD_MSGS);
	struct mailbox *box;
	unsigned int count;

	odd_make(names);
	odd_write_files(root, names);
	char *want = odd_expected_uidlist(names, &count);

	maildir_watch_deinit();
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SELECT, &box, &error), 1);
	test_assert_int(mailbox_get_count(box), count);
	unsigned int wrong = 0;
	for (unsigned int i = 0; i < count && i < mailbox_get_count(box); i++) {
		if (mailbox_msg_uid(box, i + 1) != i + 1 ||
		    (!names[i].dupe &&
		     (mailbox_msg_flags(box, i + 1) & MAIL_FLAGS_PERMANENT) !=
		     names[i].flags))
			wrong++;
	}
	test_assert_int(wrong, 0);
	mailbox_close(&box);

	char *got = read_whole(file_path(root, MAILDIR_UIDLIST_NAME));
	char *body = strchr(got, '\n');
	test_assert(body != NULL);
	test_assert(body != NULL && strcmp(body + 1, want) == 0);
	i_free(got);
	i_free(want);
	i_free(names);
}

TEST_MAIN(TEST(test_first_build_written_once),
	  TEST(test_first_build_index_exists),
	  TEST(test_first_build_crash_steps),
	  TEST(test_first_build_odd_names))
