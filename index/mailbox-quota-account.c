/* Counting a folder's changes in its quota root (mailbox-private.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "mailbox-quota.h"

void mailbox_set_quota_root(struct mailbox *box, const char *root)
{
	i_free(box->quota_root);
	box->quota_root = root == NULL ? NULL : i_strdup(root);
}

void mailbox_quota_account(struct mailbox *box, int64_t storage,
			   int64_t messages)
{
	const char *error;

	if (box->quota_root == NULL)
		return;
	if (mailbox_quota_update(box->quota_root, storage, messages, &error) < 0)
		i_error("quota: %s", error);
}
