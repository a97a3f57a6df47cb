/* The user's quota (imap-quota.h). */
#include "imap-common.h"
#include "imap-quota.h"
#include "master-service.h"

#include "config-parser.h"

/* quota_warning percentages kept per process. */
#define IMAP_QUOTA_WARNINGS_MAX MOAT_SETTINGS_QUOTA_WARNINGS_MAX

/* A MOAT_QUOTA_* value: decimal, "" for the setting's default. */
static uint64_t env_limit(const char *name, uint64_t def)
{
	const char *value = getenv(name);
	uint64_t num;

	if (value == NULL || value[0] == '\0')
		return def;
	if (str_to_uint64(value, &num) < 0) {
		i_error("%s=%s is not a number: using the default", name, value);
		return def;
	}
	return num;
}

void imap_quota_init(struct imap_user *user)
{
	const char *error;

	user->quota.storage = env_limit("MOAT_QUOTA_STORAGE",
					user->set->quota_storage);
	user->quota.messages = env_limit("MOAT_QUOTA_MESSAGES",
					 user->set->quota_messages);
	/* moat-lda cannot read the userdb: it finds the limits here */
	if (mailbox_quota_set_limits(user->mail_root, &user->quota, &error) < 0)
		i_error("quota: %s", error);
}

bool imap_quota_limited(const struct imap_user *user)
{
	return user->quota.storage != 0 || user->quota.messages != 0;
}

int imap_quota_get(struct imap_user *user, struct mailbox_quota_limits *limits_r,
		   struct mailbox_quota_usage *usage_r)
{
	struct mailbox_quota_limits file_limits;
	const char *error;

	if (mailbox_quota_get(user->mail_root, &user->quota, &file_limits,
			      usage_r, &error) < 0) {
		i_error("quota: %s", error);
		return -1;
	}
	/* ours are the userdb's, whatever the file says */
	*limits_r = user->quota;
	return 0;
}

int imap_quota_allows(struct imap_user *user, uint64_t storage,
		      uint64_t messages)
{
	struct mailbox_quota_limits limits;
	struct mailbox_quota_usage usage;

	if (!imap_quota_limited(user))
		return 1;
	if (imap_quota_get(user, &limits, &usage) < 0)
		return -1;
	return mailbox_quota_check(&limits, &usage,
		moat_settings_quota_grace(user->set, limits.storage),
		storage, messages);
}

void imap_quota_saved(struct imap_user *user, uint64_t storage,
		      uint64_t messages)
{
	unsigned int percents[IMAP_QUOTA_WARNINGS_MAX];
	unsigned int count = moat_settings_quota_warnings(user->set, percents,
							  N_ELEMENTS(percents));
	struct mailbox_quota_limits limits;
	struct mailbox_quota_usage after;

	if (count == 0 || !imap_quota_limited(user))
		return;
	if (imap_quota_get(user, &limits, &after) < 0)
		return;
	struct mailbox_quota_usage before = {
		after.storage - (int64_t)storage, after.messages - (int64_t)messages
	};
	mailbox_quota_warn(user->mail_root, &limits, &before, &after, percents,
			   count);
}

int imap_quota_format(const struct mailbox_quota_limits *limits,
		      const struct mailbox_quota_usage *usage, buffer_t *buf)
{
	bool first = true;
	uint64_t storage = usage->storage < 0 ? 0 : (uint64_t)usage->storage;
	uint64_t messages = usage->messages < 0 ? 0 : (uint64_t)usage->messages;

	if (buffer_append_str(buf, "* QUOTA \"" IMAP_QUOTA_ROOT "\" (") < 0)
		return -1;
	if (limits->storage != 0) {
		/* KiB (RFC 9208 5.1): usage rounded up, the limit down */
		if (buffer_printf(buf, "STORAGE %llu %llu",
				  (unsigned long long)((storage + 1023) / 1024),
				  (unsigned long long)(limits->storage / 1024)) < 0)
			return -1;
		first = false;
	}
	if (limits->messages != 0 &&
	    buffer_printf(buf, "%sMESSAGE %llu %llu", first ? "" : " ",
			  (unsigned long long)messages,
			  (unsigned long long)limits->messages) < 0)
		return -1;
	return buffer_append_c(buf, ')');
}
