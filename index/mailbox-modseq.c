/* Modseqs of a session's messages and the expunge history (mailbox.h,
   RFC 7162). The view's records carry each message's modseq; the
   expunges come from the index's history (mail-index-modseq.c). */
#include "lib.h"
#include "mailbox-private.h"

uint64_t mailbox_msg_modseq(struct mailbox *box, uint32_t seq)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);
	uint64_t modseq = rec != NULL ? rec->modseq : exp->modseq;

	/* mod-sequence-value is positive (RFC 7162 7) */
	return MAX(modseq, 1);
}

uint64_t mailbox_get_highest_modseq(struct mailbox *box)
{
	struct mail_index_status status;

	mail_index_view_get_status(box->view, &status);
	return status.highest_modseq;
}

uint64_t mailbox_get_numbering_stamp(struct mailbox *box)
{
	uint64_t h = ((uint64_t)box->visible_next_uid << 32) ^
		box->pending_count;

	for (unsigned int i = 0; i < box->pending_count; i++)
		h = (h ^ box->pending[i].uid) * 0x100000001b3ULL;
	return h;
}

uint64_t mailbox_get_reported_modseq(struct mailbox *box)
{
	uint64_t modseq = mailbox_get_highest_modseq(box);

	for (unsigned int i = 0; i < box->pending_count; i++) {
		if (box->pending[i].expunge_modseq <= modseq)
			modseq = box->pending[i].expunge_modseq - 1;
	}
	return modseq;
}

uint64_t mailbox_get_history_base(struct mailbox *box)
{
	return mail_index_view_history_base(box->view);
}

struct expunged_filter {
	struct mailbox *box;
	mailbox_expunged_func_t *cb;
	void *context;
};

/* One run of the history, without the uids the session still shows. */
static void expunged_filter_run(void *context, uint32_t uid1, uint32_t uid2)
{
	struct expunged_filter *f = context;
	struct mailbox *box = f->box;
	unsigned int i = mailbox_pending_below(box, uid1);

	for (; i < box->pending_count && box->pending[i].uid <= uid2; i++) {
		uint32_t uid = box->pending[i].uid;
		if (uid > uid1)
			f->cb(f->context, uid1, uid - 1);
		if (uid == uid2)
			return;
		uid1 = uid + 1;
	}
	f->cb(f->context, uid1, uid2);
}

int mailbox_expunged_since(struct mailbox *box, uint64_t since,
			   mailbox_expunged_func_t *cb, void *context,
			   const char **error_r)
{
	struct expunged_filter f = { box, cb, context };
	int ret = mail_index_view_expunged_since(box->view, since,
						 expunged_filter_run, &f,
						 error_r);

	if (ret < 0)
		*error_r = mailbox_set_error(box, "index %s: %s", box->path,
					     *error_r);
	return ret;
}

int mailbox_changed_since(struct mailbox *box, uint64_t since,
			  mailbox_expunged_func_t *cb, void *context,
			  const char **error_r)
{
	int ret = mail_index_view_changed_since(box->view, since, cb, context,
						error_r);

	if (ret < 0)
		*error_r = mailbox_set_error(box, "index %s: %s", box->path,
					     *error_r);
	return ret;
}
