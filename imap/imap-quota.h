#ifndef IMAP_QUOTA_H
#define IMAP_QUOTA_H
/* The user's quota (RFC 9208): one quota root, "", over all of the user's
   mailboxes, with the resources STORAGE (KiB) and MESSAGE. Limits come
   from the userdb (quota_storage, quota_messages; master hands them over
   as MOAT_QUOTA_*) or the quota_* settings; usage from the Maildir++
   maildirsize file (mailbox-quota.h), which every mailbox this process
   opens with MAILBOX_OPEN_QUOTA keeps in step. */

#include "imap-common.h"
#include "mailbox-quota.h"

/* The quota root's name in QUOTAROOT and QUOTA responses. */
#define IMAP_QUOTA_ROOT ""

/* At start (before the privilege drop is fine, after is too): the limits,
   written into maildirsize's first line for moat-lda. */
void imap_quota_init(struct imap_user *user);

/* Whether storage more bytes and messages more messages fit (with the
   grace): 1 yes, 0 over quota, -1 when the usage cannot be read (logged;
   then the save goes ahead: the limit is a policy, losing mail is not). */
int imap_quota_allows(struct imap_user *user, uint64_t storage,
		      uint64_t messages);
/* After a save of storage bytes: warn the user if that crossed one of
   quota_warning's percentages (a message in INBOX, once per crossing). */
void imap_quota_saved(struct imap_user *user, uint64_t storage,
		      uint64_t messages);
/* The limits and current usage, for GETQUOTA/GETQUOTAROOT. 0 or -1. */
int imap_quota_get(struct imap_user *user, struct mailbox_quota_limits *limits_r,
		   struct mailbox_quota_usage *usage_r);
/* The QUOTA response of the root: '* QUOTA "" (STORAGE u l MESSAGE u l)'
   with the limited resources, into buf. -1 if buf is full. */
int imap_quota_format(const struct mailbox_quota_limits *limits,
		      const struct mailbox_quota_usage *usage, buffer_t *buf);
/* True if the user has any limit (only then is there a quota root). */
bool imap_quota_limited(const struct imap_user *user);

#endif
