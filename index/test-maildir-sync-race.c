/* Unit tests: a directory scan racing another process's STORE or EXPUNGE
   (maildir-sync.c). A sync reads cur/ before it takes the uidlist lock;
   a writer that renames (or unlinks) a file and commits that to the index
   in between must not be undone by the names the scan read.

   The race is made deterministic with two processes: the child has a
   mailbox handle and syncs when told; the parent holds the uidlist lock,
   learns (inotify) that the child opened the lock file, which a sync does
   only after its readdir, stops the child there (SIGSTOP), lets go of the
   lock, makes its change through the mailbox API and lets the child go
   on. The child then reports what its view shows. */
#include "test-common.h"
#include "mailbox.h"
#include "maildir-uidlist.h"
#include "maildir-watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>

/* Messages the child reports at most (the tests use a few). */
#define RACE_REPORT_MAX 16
/* How long the parent waits for the child to reach the lock: a sync of
   a few messages takes milliseconds, a slow sanitizer build seconds. */
#define RACE_WAIT_MS 30000

struct race_report {
	uint32_t count;
	uint32_t uids[RACE_REPORT_MAX];
	uint32_t flags[RACE_REPORT_MAX];
};

struct race {
	const char *root;
	pid_t child;
	int to_child, from_child;
	struct mailbox *box;
};

static void race_child_report(struct mailbox *box, struct race_report *r)
{
	memset(r, 0, sizeof(*r));
	r->count = mailbox_get_count(box);
	for (uint32_t seq = 1; seq <= r->count && seq <= RACE_REPORT_MAX; seq++) {
		r->uids[seq - 1] = mailbox_msg_uid(box, seq);
		r->flags[seq - 1] = mailbox_msg_flags(box, seq) &
			MAIL_FLAGS_PERMANENT;
	}
}

/* The child: on each byte from the parent, sync (reporting expunges) and
   write the view back; EOF ends it. Failures are a count of ~0. */
static void ATTR_NORETURN race_child(const char *root, int in, int out)
{
	struct mailbox *box = NULL;
	struct race_report r;
	const char *error;
	char c;

	while (read(in, &c, 1) == 1) {
		memset(&r, 0, sizeof(r));
		r.count = UINT32_MAX;
		if ((box != NULL ||
		     mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				  &box, &error) == 1) &&
		    mailbox_sync(box, true, NULL, NULL, &error) == 0)
			race_child_report(box, &r);
		if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
			break;
	}
	_exit(0);
}

/* Fork the child before the parent opens anything: it must share no
   watch (one inotify instance per process) or kept file with the
   parent's handles. race_stop() leaves none behind for the next test. */
static void race_start(struct race *race, const char *name)
{
	static char root[512];
	int down[2], up[2];

	snprintf(root, sizeof(root), "%s/%s", test_tmpdir(), name);
	race->root = root;
	test_assert(pipe(down) == 0 && pipe(up) == 0);
	race->child = fork();
	test_assert(race->child >= 0);
	if (race->child == 0) {
		close(down[1]);
		close(up[0]);
		race_child(root, down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	race->to_child = down[1];
	race->from_child = up[0];
	const char *error;
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC |
				     MAILBOX_OPEN_SESSION, &race->box, &error), 1);
}

static void race_stop(struct race *race)
{
	int status;

	close(race->to_child);
	close(race->from_child);
	test_assert(waitpid(race->child, &status, 0) == race->child);
	test_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	mailbox_close(&race->box);
	maildir_watch_deinit();
}

static void race_append(struct race *race, unsigned int n)
{
	struct mailbox_append_ctx *ctx;
	const char *error;
	char text[64];
	uint32_t uid;

	int len = snprintf(text, sizeof(text), "Subject: %u\r\n\r\nbody\r\n", n);
	test_assert(mailbox_append_begin(race->box, 0, (time_t)-1, &ctx,
					 &error) == 0);
	test_assert(mailbox_append_write(ctx, text, (size_t)len, &error) == 0);
	test_assert(mailbox_append_finish(&ctx, &uid, &error) == 0);
	test_assert(mailbox_sync(race->box, true, NULL, NULL, &error) == 0);
}

static bool race_read_report(struct race *race, struct race_report *r)
{
	return read(race->from_child, r, sizeof(*r)) == (ssize_t)sizeof(*r) &&
		r->count != UINT32_MAX && r->count <= RACE_REPORT_MAX;
}

/* Tell the child to sync and wait for its report. */
static bool race_child_sync(struct race *race, struct race_report *r)
{
	return write(race->to_child, "s", 1) == 1 && race_read_report(race, r);
}

/* Whether fd (inotify) gets an event within RACE_WAIT_MS. */
static bool race_wait_event(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[sizeof(struct inotify_event) + 256];

	return poll(&pfd, 1, RACE_WAIT_MS) == 1 && read(fd, buf, sizeof(buf)) > 0;
}

/* Start a child sync and stop the child between its readdir and its
   taking the lock. Returns false if it never got there. */
static bool race_stop_child_at_lock(struct race *race)
{
	char lock_path[600];
	const char *error;
	int status;
	bool ok = false;

	snprintf(lock_path, sizeof(lock_path), "%s/%s", race->root,
		 MAILDIR_UIDLIST_LOCK_NAME);
	struct maildir_uidlist *ul = maildir_uidlist_init(race->root, false);
	int ifd = inotify_init1(IN_CLOEXEC);
	if (ifd != -1 && maildir_uidlist_lock_append(ul, &error) == 0) {
		/* added after our own open of the lock file */
		if (inotify_add_watch(ifd, lock_path, IN_OPEN) != -1 &&
		    write(race->to_child, "s", 1) == 1 && race_wait_event(ifd) &&
		    kill(race->child, SIGSTOP) == 0 &&
		    waitpid(race->child, &status, WUNTRACED) == race->child)
			ok = WIFSTOPPED(status);
		maildir_uidlist_unlock(ul);
	}
	if (ifd != -1)
		close(ifd);
	maildir_uidlist_deinit(&ul);
	return ok;
}

static void race_continue_child(struct race *race)
{
	test_assert(kill(race->child, SIGCONT) == 0);
}

static int report_find(const struct race_report *r, uint32_t uid)
{
	for (uint32_t i = 0; i < r->count; i++) {
		if (r->uids[i] == uid)
			return (int)i;
	}
	return -1;
}

/* The STORE of another process between the child's readdir and its lock:
   the child's scan read the old name, its index has the new flags. */
static void test_race_store_after_readdir(void)
{
	struct race race;
	struct race_report r;
	const char *error;

	race_start(&race, "store");
	race_append(&race, 1);
	race_append(&race, 2);
	test_assert(race_child_sync(&race, &r) && r.count == 2);

	for (unsigned int round = 0; round < 2; round++) {
		/* a new file: the child must scan cur/ again */
		race_append(&race, 3 + round);
		enum mail_flags flag = round == 0 ? MAIL_DELETED : MAIL_SEEN;
		test_assert(race_stop_child_at_lock(&race));
		test_assert(mailbox_msg_change_flags(race.box, 1,
						     MAILBOX_FLAGS_ADD, flag,
						     0, &error) == 0);
		race_continue_child(&race);
		test_assert(race_read_report(&race, &r));
		int i = report_find(&r, mailbox_msg_uid(race.box, 1));
		test_assert(i >= 0 && (r.flags[i] & flag) != 0);
		test_assert_int(r.count, 3 + round);
	}
	/* and it stays so for the writer too */
	test_assert(mailbox_sync(race.box, true, NULL, NULL, &error) == 0);
	test_assert_int(mailbox_msg_flags(race.box, 1) &
			(MAIL_DELETED | MAIL_SEEN), MAIL_DELETED | MAIL_SEEN);
	race_stop(&race);
}

/* The EXPUNGE of another process between the child's readdir and its
   lock: the child's scan read the file's name, the index has it expunged;
   it must neither come back nor make the child rebuild the index. */
static void test_race_expunge_after_readdir(void)
{
	struct race race;
	struct race_report r;
	const char *error;

	race_start(&race, "expunge");
	race_append(&race, 1);
	race_append(&race, 2);
	test_assert(race_child_sync(&race, &r) && r.count == 2);
	uint32_t uid1 = mailbox_msg_uid(race.box, 1);
	uint32_t uid2 = mailbox_msg_uid(race.box, 2);

	race_append(&race, 3);
	test_assert(race_stop_child_at_lock(&race));
	test_assert(mailbox_msg_expunge(race.box, 2, &error) == 0);
	test_assert(mailbox_expunge_sync(race.box, &error) == 0);
	race_continue_child(&race);
	test_assert(race_read_report(&race, &r));
	test_assert_int(r.count, 2);
	test_assert(report_find(&r, uid1) == 0 && report_find(&r, uid2) == -1);
	/* a later scan agrees */
	race_append(&race, 4);
	test_assert(race_child_sync(&race, &r));
	test_assert_int(r.count, 3);
	test_assert(report_find(&r, uid2) == -1);
	race_stop(&race);
}

TEST_MAIN(TEST(test_race_store_after_readdir),
	  TEST(test_race_expunge_after_readdir))
