/* Unit tests: a session's view over the index (mailbox.c,
   maildir-sync.c): pending expunges, hidden appends, own changes,
   \Recent across sessions; and its helpers mailbox-uidset.c and
   maildir-uidlist-lookup.c. */
#include "test-common.h"
#include "mailbox.h"
#include "mailbox-uidset.h"
#include "maildir-filename.h"
#include "maildir-uidlist-lookup.h"
#include "mail-index.h"

#include <fcntl.h>
#include <sys/stat.h>

#define VIEW_MSGS 5
/* More lines than one lookup step covers, with holes in the uids. */
#define LOOKUP_LINES 1000

struct view_log {
	uint32_t expunged[16];
	unsigned int expunges;
	uint32_t changed[16];
	unsigned int changes;
};

static void log_expunge(void *context, uint32_t seq, uint32_t uid ATTR_UNUSED)
{
	struct view_log *log = context;

	if (log->expunges < N_ELEMENTS(log->expunged))
		log->expunged[log->expunges++] = seq;
}

static void log_flags(void *context, uint32_t seq)
{
	struct view_log *log = context;

	if (log->changes < N_ELEMENTS(log->changed))
		log->changed[log->changes++] = seq;
}

static const struct mailbox_sync_callbacks view_cb = {
	.expunge = log_expunge, .flags_changed = log_flags,
};

static const char *view_root(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static struct mailbox *view_open(const char *root, enum mailbox_open_flags flags)
{
	struct mailbox *box = NULL;
	const char *error;

	test_assert_int(mailbox_open(root, "INBOX",
				     MAILBOX_OPEN_NO_FSYNC | flags, &box,
				     &error), 1);
	return box;
}

static void view_append(struct mailbox *box, unsigned int n)
{
	struct mailbox_append_ctx *ctx;
	const char *error;
	uint32_t uid;

	for (unsigned int i = 0; i < n; i++) {
		test_assert(mailbox_append_begin(box, 0, (time_t)-1, &ctx,
						 &error) == 0);
		test_assert(mailbox_append_write(ctx, "Subject: v\r\n\r\nx\r\n",
						 17, &error) == 0);
		test_assert(mailbox_append_finish(&ctx, &uid, &error) == 0);
	}
}

static void view_sync(struct mailbox *box, bool allow_expunge,
		      struct view_log *log)
{
	const char *error;

	memset(log, 0, sizeof(*log));
	test_assert(mailbox_sync(box, allow_expunge, &view_cb, log,
				 &error) == 0);
}

static void test_uidset(void)
{
	struct uidset set;

	memset(&set, 0, sizeof(set));
	uidset_add_range(&set, 10, 20);
	uidset_add_range(&set, 30, 40);
	uidset_add(&set, 5);
	test_assert_int(set.count, 3);
	uidset_add(&set, 21);           /* touches 10..20 */
	test_assert_int(set.count, 3);
	test_assert_int(set.ranges[1].hi, 21);
	uidset_add_range(&set, 15, 35); /* swallows two */
	test_assert_int(set.count, 2);
	test_assert_int(set.ranges[1].lo, 10);
	test_assert_int(set.ranges[1].hi, 40);
	test_assert(uidset_contains(&set, 5));
	test_assert(!uidset_contains(&set, 6));
	test_assert(uidset_contains(&set, 40));
	test_assert(!uidset_contains(&set, 41));
	uidset_remove(&set, 25);        /* splits */
	test_assert_int(set.count, 3);
	test_assert(!uidset_contains(&set, 25));
	test_assert(uidset_contains(&set, 24) && uidset_contains(&set, 26));
	uidset_remove(&set, 5);
	uidset_remove(&set, 10);
	uidset_remove(&set, 40);
	uidset_remove(&set, 1000);      /* not there */
	test_assert_int(set.count, 2);
	test_assert_int(set.ranges[0].lo, 11);
	test_assert_int(set.ranges[1].hi, 39);
	uidset_add_range(&set, 1, UINT32_MAX);
	test_assert_int(set.count, 1);
	test_assert(uidset_contains(&set, UINT32_MAX));
	uidset_clear(&set);
	test_assert(!uidset_contains(&set, 11));
	/* ascending single adds (a STORE 1:*) stay one range */
	for (uint32_t uid = 1; uid <= 100000; uid++)
		uidset_add(&set, uid);
	test_assert_int(set.count, 1);
	uidset_free(&set);
}

static void lookup_write(const char *dir, uint32_t first_uid, unsigned int n)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s.tmp", dir, MAILDIR_UIDLIST_NAME);
	FILE *f = fopen(path, "w");
	fprintf(f, "V1 1234 %u\n", first_uid + 2 * n);
	for (unsigned int i = 0; i < n; i++) {
		/* every other uid: holes must not be found */
		fprintf(f, "%u %u.M%uP1.host S=%u W=%u\n", first_uid + 2 * i,
			1700000000 + i, i, 100 + i, 102 + i);
	}
	fclose(f);
	char final[600];
	snprintf(final, sizeof(final), "%s/%s", dir, MAILDIR_UIDLIST_NAME);
	test_assert(rename(path, final) == 0);
}

static void test_uidlist_lookup(void)
{
	const char *dir = view_root("lookup"), *error;
	char base[MAILDIR_UIDLIST_MAX_LINE + 1], want[64];
	uint64_t size;

	test_assert(mkdir(dir, 0700) == 0);
	struct maildir_uidlist_lookup *l = maildir_uidlist_lookup_init(dir);
	test_assert_int(maildir_uidlist_lookup(l, 1, base, &size, &error), 0);
	lookup_write(dir, 1, LOOKUP_LINES);
	for (unsigned int i = 0; i < LOOKUP_LINES; i++) {
		test_assert_int(maildir_uidlist_lookup(l, 1 + 2 * i, base,
						       &size, &error), 1);
		snprintf(want, sizeof(want), "%u.M%uP1.host", 1700000000 + i, i);
		test_assert_str(base, want);
		test_assert_int(size, 100 + i);
		test_assert_int(maildir_uidlist_lookup(l, 2 + 2 * i, base,
						       &size, &error), 0);
	}
	/* sparse: one sample per step */
	test_assert_int(maildir_uidlist_lookup_samples(l),
			(LOOKUP_LINES + MAILDIR_UIDLIST_LOOKUP_STEP - 1) /
			MAILDIR_UIDLIST_LOOKUP_STEP);
	test_assert_int(maildir_uidlist_lookup(l, 5000, base, &size, &error), 0);
	/* replaced (a save): new uids are found after a re-sample */
	lookup_write(dir, 3, LOOKUP_LINES + 10);
	test_assert_int(maildir_uidlist_lookup(l, 3 + 2 * (LOOKUP_LINES + 5),
					       base, &size, &error), 1);
	snprintf(want, sizeof(want), "%u.M%uP1.host",
		 1700000000 + LOOKUP_LINES + 5, LOOKUP_LINES + 5);
	test_assert_str(base, want);
	maildir_uidlist_lookup_deinit(&l);
}

static void test_pending_expunges(void)
{
	const char *root = view_root("pending"), *error;
	struct view_log log;

	struct mailbox *a = view_open(root, 0);
	view_append(a, VIEW_MSGS);
	struct mailbox *b = view_open(root, 0);
	view_sync(a, true, &log);
	test_assert_int(mailbox_get_count(a), VIEW_MSGS);
	test_assert(mailbox_msg_set_flags(a, 2, MAIL_FLAGGED, &error) == 0);
	test_assert(mailbox_msg_expunge(b, 2, &error) == 0);
	test_assert(mailbox_msg_expunge(b, 4, &error) == 0);

	/* no expunges allowed: the numbering stays, the messages are gone */
	view_sync(a, false, &log);
	test_assert_int(log.expunges, 0);
	test_assert_int(mailbox_get_count(a), VIEW_MSGS);
	test_assert(mailbox_msg_is_expunged(a, 2));
	test_assert(mailbox_msg_is_expunged(a, 4));
	test_assert(!mailbox_msg_is_expunged(a, 3));
	test_assert_int(mailbox_msg_uid(a, 2), 2);
	test_assert_int(mailbox_msg_uid(a, 5), 5);
	test_assert_int(mailbox_msg_flags(a, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_FLAGGED);
	test_assert_int(mailbox_uid_to_seq_ge(a, 4), 4);
	test_assert(mailbox_msg_open(a, 4, &error) == -1 && errno == ENOENT);
	int fd = mailbox_msg_open(a, 5, &error);
	test_assert(fd != -1);
	if (fd != -1)
		close(fd);
	test_assert(mailbox_msg_set_flags(a, 4, MAIL_SEEN, &error) == -1);

	/* now they go, each in the numbering the one before left */
	view_sync(a, true, &log);
	test_assert_int(log.expunges, 2);
	test_assert_int(log.expunged[0], 2);
	test_assert_int(log.expunged[1], 3);
	test_assert_int(mailbox_get_count(a), VIEW_MSGS - 2);
	test_assert_int(mailbox_msg_uid(a, 2), 3);
	test_assert_int(mailbox_msg_uid(a, 3), 5);
	mailbox_close(&b);
	mailbox_close(&a);
}

static void test_hidden_appends_and_own_changes(void)
{
	const char *root = view_root("hidden"), *error;
	struct view_log log;

	struct mailbox *a = view_open(root, 0);
	view_append(a, 2);
	view_sync(a, true, &log);
	struct mailbox *b = view_open(root, 0);
	view_append(b, 1);
	test_assert(mailbox_msg_set_flags(b, 1, MAIL_ANSWERED, &error) == 0);
	/* a's own store syncs its view: b's append stays hidden */
	test_assert(mailbox_msg_set_flags(a, 2, MAIL_SEEN, &error) == 0);
	test_assert_int(mailbox_msg_flags(a, 2) & MAIL_FLAGS_PERMANENT,
			MAIL_SEEN);
	test_assert_int(mailbox_get_count(a), 2);
	/* b's flag change is already visible, reported by the next sync;
	   a's own change is not reported back */
	test_assert_int(mailbox_msg_flags(a, 1) & MAIL_FLAGS_PERMANENT,
			MAIL_ANSWERED);
	view_sync(a, true, &log);
	test_assert_int(mailbox_get_count(a), 3);
	test_assert_int(log.changes, 1);
	test_assert_int(log.changed[0], 1);
	view_sync(a, true, &log);
	test_assert_int(log.changes, 0);
	mailbox_close(&b);
	mailbox_close(&a);
}

static void test_recent_sessions(void)
{
	const char *root = view_root("recent");
	struct view_log log;

	/* a saves without selecting: takes nothing */
	struct mailbox *a = view_open(root, 0);
	view_append(a, 3);
	view_sync(a, true, &log);
	test_assert_int(mailbox_get_recent_count(a), 3);
	struct mailbox *ro = view_open(root, MAILBOX_OPEN_READONLY |
				       MAILBOX_OPEN_SELECT);
	test_assert_int(mailbox_get_recent_count(ro), 3);
	mailbox_close(&ro);
	/* the first SELECT takes them, the next one gets none */
	struct mailbox *s1 = view_open(root, MAILBOX_OPEN_SELECT);
	test_assert_int(mailbox_get_recent_count(s1), 3);
	test_assert((mailbox_msg_flags(s1, 3) & MAIL_RECENT) != 0);
	struct mailbox *s2 = view_open(root, MAILBOX_OPEN_SELECT);
	test_assert_int(mailbox_get_recent_count(s2), 0);
	/* new mail: whichever selected session syncs first */
	view_append(a, 2);
	view_sync(s2, true, &log);
	view_sync(s1, true, &log);
	test_assert_int(mailbox_get_count(s1), 5);
	test_assert_int(mailbox_get_recent_count(s2), 2);
	test_assert_int(mailbox_get_recent_count(s1), 3);
	test_assert((mailbox_msg_flags(s2, 4) & MAIL_RECENT) != 0);
	test_assert((mailbox_msg_flags(s1, 4) & MAIL_RECENT) == 0);
	/* a keeps what it saw as \Recent; later ones are taken already */
	view_sync(a, true, &log);
	test_assert_int(mailbox_get_recent_count(a), 3);
	ro = view_open(root, MAILBOX_OPEN_READONLY);
	test_assert_int(mailbox_get_recent_count(ro), 0);
	mailbox_close(&ro);
	mailbox_close(&s2);
	mailbox_close(&s1);
	mailbox_close(&a);
}

static uint32_t recent_claim(struct mail_index *index, uint32_t uid)
{
	struct mail_index_commit_result result;
	const char *error;

	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	mail_index_update_first_recent(t, uid);
	test_assert(mail_index_transaction_commit(&t, MAIL_INDEX_FSYNC_NEVER,
						  &result, &error) == 0);
	return result.prev_first_recent_uid;
}

static void test_first_recent_index(void)
{
	const char *dir = view_root("firstrecent"), *error;
	struct mail_index *h1, *h2;
	struct mail_index_status status;

	test_assert(mkdir(dir, 0700) == 0);
	test_assert_int(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &h1,
					&error), 1);
	test_assert_int(mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &h2,
					&error), 1);
	/* the first claim of 1..4 wins, the same claim again gets nothing */
	test_assert_int(recent_claim(h1, 5), 0);
	test_assert_int(recent_claim(h2, 5), 5);
	/* never lowered */
	test_assert_int(recent_claim(h2, 3), 5);
	test_assert_int(recent_claim(h2, 9), 5);
	struct mail_index_view *view = mail_index_view_open(h1);
	test_assert(mail_index_view_sync(view, NULL, NULL, &error) == 0);
	mail_index_view_get_status(view, &status);
	test_assert_int(status.first_recent_uid, 9);
	test_assert(mail_index_checkpoint(h1, &error) == 0);
	mail_index_view_close(&view);
	mail_index_close(&h1);
	mail_index_close(&h2);
	/* from moat.index after the checkpoint */
	test_assert_int(mail_index_open(dir, 0, &h1, &error), 1);
	view = mail_index_view_open(h1);
	mail_index_view_get_status(view, &status);
	test_assert_int(status.first_recent_uid, 9);
	mail_index_view_close(&view);
	mail_index_close(&h1);
}

TEST_MAIN(TEST(test_uidset), TEST(test_first_recent_index), TEST(test_uidlist_lookup),
	  TEST(test_pending_expunges),
	  TEST(test_hidden_appends_and_own_changes),
	  TEST(test_recent_sessions))
