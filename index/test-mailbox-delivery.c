/* Unit tests: mailbox-delivery.c (mailbox_scan_deliveries) */
#include "test-common.h"
#include "mailbox.h"
#include "maildir-filename.h"

#define DELIVERY_MSG "Subject: delivered\r\n\r\nbody\r\n"

struct found {
	char ids[8][MAILDIR_DELIVERY_ID_LEN + 1];
	uint32_t uids[8];
	unsigned int count;
};

static void found_cb(const char *id, uint32_t uid, void *context)
{
	struct found *f = context;

	if (f->count < 8) {
		memcpy(f->ids[f->count], id, sizeof(f->ids[0]));
		f->uids[f->count] = uid;
	}
	f->count++;
}

/* A message saved by APPEND (no id), or as delivery number n. */
static uint32_t save(struct mailbox *box, int n)
{
	struct mailbox_append_ctx *ctx;
	const char *error;
	uint32_t uid = 0;

	if (n < 0) {
		test_assert(mailbox_append_begin(box, 0, (time_t)-1, &ctx,
						 &error) == 0);
	} else {
		char id[MAILDIR_DELIVERY_ID_LEN + 1];
		snprintf(id, sizeof(id), "%032x", n);
		test_assert(mailbox_append_begin_delivery(box, id, &ctx,
							  &error) == 0);
	}
	test_assert(mailbox_append_write(ctx, DELIVERY_MSG,
					 strlen(DELIVERY_MSG), &error) == 0);
	test_assert(mailbox_append_finish(&ctx, &uid, &error) == 0);
	return uid;
}

static void scan(struct mailbox *box, unsigned int max_ids,
		 unsigned int max_messages, struct found *f)
{
	const char *error;

	memset(f, 0, sizeof(*f));
	test_assert(mailbox_sync(box, true, NULL, NULL, &error) == 0);
	test_assert(mailbox_scan_deliveries(box, max_ids, max_messages,
					    found_cb, f, &error) == 0);
}

/* The window counts deliveries: appended messages after them are read
   past, up to max_messages; newest first. */
static void test_scan_counts_deliveries(void)
{
	char root[512];
	struct mailbox *box;
	const char *error;
	struct found f;

	snprintf(root, sizeof(root), "%s/box", test_tmpdir());
	test_assert(mailbox_open(root, "INBOX", 0, &box, &error) == 1);
	uint32_t uid0 = save(box, 0);
	uint32_t uid1 = save(box, 1);
	for (int i = 0; i < 20; i++)
		(void)save(box, -1);
	uint32_t uid2 = save(box, 2);
	(void)save(box, -1);

	/* two ids wanted: the newest two, though 21 messages lie between */
	scan(box, 2, 1000, &f);
	test_assert_int(f.count, 2);
	test_assert_int(f.uids[0], uid2);
	test_assert_int(f.uids[1], uid1);
	test_assert_str(f.ids[0], "00000000000000000000000000000002");
	test_assert_str(f.ids[1], "00000000000000000000000000000001");
	/* all of them */
	scan(box, 100, 1000, &f);
	test_assert_int(f.count, 3);
	test_assert_int(f.uids[2], uid0);
	/* the message bound: the newest 3 messages hold one delivery */
	scan(box, 100, 3, &f);
	test_assert_int(f.count, 1);
	test_assert_int(f.uids[0], uid2);
	/* exactly reaching the first delivery */
	scan(box, 100, 24, &f);
	test_assert_int(f.count, 3);
	scan(box, 100, 23, &f);
	test_assert_int(f.count, 2);
	mailbox_close(&box);
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_scan_counts_deliveries))
