/* The message that tells a user a quota_warning percentage was crossed
   (mailbox-quota.h). */
#include "lib.h"
#include "log.h"
#include "mailbox.h"
#include "mailbox-quota.h"

#include <stdio.h>
#include <time.h>

/* The first percentage usage crossed going from before to after bytes,
   the highest if several: 0 if none. */
static unsigned int crossed(uint64_t limit, int64_t before, int64_t after,
			    const unsigned int *percents, unsigned int count)
{
	unsigned int hit = 0;

	if (limit == 0 || after <= before)
		return 0;
	for (unsigned int i = 0; i < count; i++) {
		/* the threshold in bytes, without overflow for any limit */
		uint64_t t = limit / 100 * percents[i] + limit % 100 * percents[i] / 100;
		if (before < (int64_t)t && after >= (int64_t)t)
			hit = percents[i];
	}
	return hit;
}

static void warning_write(const char *root, const char *what, unsigned int pct,
			  const struct mailbox_quota_limits *limits,
			  const struct mailbox_quota_usage *after)
{
	struct mailbox *box;
	struct mailbox_append_ctx *save;
	const char *error;
	char date[64], text[1024];
	time_t now = time(NULL);
	struct tm tm;
	uint32_t uid;

	(void)strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S %z",
		       localtime_r(&now, &tm));
	int len = snprintf(text, sizeof(text),
		"From: Mail system <MAILER-DAEMON>\r\n"
		"To: You\r\n"
		"Date: %s\r\n"
		"Subject: Your mailbox is %u%% full\r\n"
		"Auto-Submitted: auto-generated\r\n"
		"MIME-Version: 1.0\r\n"
		"Content-Type: text/plain; charset=us-ascii\r\n"
		"\r\n"
		"Your mailbox now uses %u%% of its %s limit:\r\n"
		"%llu of %llu %s.\r\n"
		"\r\n"
		"When it is full, new mail is refused. Delete messages (and\r\n"
		"empty the Trash) to make room.\r\n",
		date, pct, pct, what,
		(unsigned long long)(strcmp(what, "storage") == 0 ?
			(after->storage < 0 ? 0 : (uint64_t)after->storage) / 1024 :
			(uint64_t)(after->messages < 0 ? 0 : after->messages)),
		(unsigned long long)(strcmp(what, "storage") == 0 ?
			limits->storage / 1024 : limits->messages),
		strcmp(what, "storage") == 0 ? "KiB" : "messages");
	i_assert(len > 0 && (size_t)len < sizeof(text));
	if (mailbox_open(root, "INBOX", MAILBOX_OPEN_QUOTA, &box, &error) <= 0) {
		i_error("quota warning: opening INBOX failed: %s", error);
		return;
	}
	int ret = mailbox_append_begin(box, 0, (time_t)-1, &save, &error);
	if (ret == 0 && mailbox_append_write(save, text, (size_t)len, &error) < 0) {
		mailbox_append_abort(&save);
		ret = -1;
	}
	/* finish frees the context, also when it fails */
	if (ret == 0)
		ret = mailbox_append_finish(&save, &uid, &error);
	if (ret < 0) {
		i_error("quota warning: saving it failed: %s", error);
	} else {
		i_info("quota warning: %s at %u%%, told the user (uid %u)",
		       what, pct, uid);
	}
	mailbox_close(&box);
}

void mailbox_quota_warn(const char *root,
			const struct mailbox_quota_limits *limits,
			const struct mailbox_quota_usage *before,
			const struct mailbox_quota_usage *after,
			const unsigned int *percents, unsigned int count)
{
	unsigned int pct = crossed(limits->storage, before->storage,
				   after->storage, percents, count);
	if (pct != 0)
		warning_write(root, "storage", pct, limits, after);
	pct = crossed(limits->messages, before->messages, after->messages,
		      percents, count);
	if (pct != 0)
		warning_write(root, "message count", pct, limits, after);
}
