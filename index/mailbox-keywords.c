/* Keywords of a mailbox and changing a message's flags and keywords
   together (mailbox.h). The names live in maildir-keywords; a message's
   keywords are the letters a-z of its file name. */
#include "lib.h"
#include "log.h"
#include "mailbox-private.h"
#include "maildir-import.h"

#include <sys/stat.h>

int mailbox_keywords_refresh(struct mailbox *box, const char **error_r)
{
	return maildir_keywords_refresh(box->keywords, error_r);
}

uint32_t mailbox_keywords_defined(struct mailbox *box)
{
	return maildir_keywords_defined(box->keywords);
}

const char *mailbox_keyword_name(struct mailbox *box, unsigned int idx)
{
	return maildir_keywords_name(box->keywords, idx);
}

bool mailbox_keyword_is_valid(const char *name)
{
	return maildir_keyword_is_valid(name);
}

int mailbox_keyword_get(struct mailbox *box, const char *name, bool create,
			unsigned int *idx_r, const char **error_r)
{
	int idx = maildir_keywords_lookup(box->keywords, name);

	if (idx >= 0) {
		*idx_r = (unsigned int)idx;
		return 1;
	}
	if (!create)
		return 0;
	/* the names file is written under the folder's uidlist lock */
	/* the lock only: nothing here reads the uidlist's records */
	if (maildir_uidlist_lock_append(box->uidlist, error_r) < 0)
		return -1;
	int ret = maildir_keywords_add(box->keywords, name, idx_r, error_r);
	if (ret > 0) {
		/* a folder that came from Dovecot: its letters stay Dovecot's
		   too (maildir-import.h) */
		maildir_dovecot_keywords_mirror(box->path,
			maildir_uidlist_get_uidvalidity(box->uidlist),
			box->keywords);
	}
	maildir_uidlist_unlock(box->uidlist);
	return ret;
}

/* The letters of other_flags that are not keywords (P, foreign ones),
   followed by the letters of keywords. */
static void kw_merge_letters(const char *other, uint32_t keywords,
			     char *buf, size_t size)
{
	size_t n = 0;

	for (; *other != '\0' && n + 1 < size; other++) {
		if (*other < 'a' || *other > 'z')
			buf[n++] = *other;
	}
	char letters[MAILDIR_KEYWORDS_MAX + 1];
	maildir_keywords_to_letters(keywords, letters);
	for (const char *p = letters; *p != '\0' && n + 1 < size; p++)
		buf[n++] = *p;
	buf[n] = '\0';
}

struct kw_change {
	enum mailbox_flags_change mode;
	enum mail_flags flags;
	uint32_t keywords;
	/* the result, from the file name that was renamed */
	enum mail_flags new_flags;
	uint32_t new_keywords;
};

static void kw_change_apply(struct kw_change *change, enum mail_flags cur,
			    uint32_t cur_kw)
{
	switch (change->mode) {
	case MAILBOX_FLAGS_REPLACE:
		change->new_flags = change->flags;
		change->new_keywords = change->keywords;
		break;
	case MAILBOX_FLAGS_ADD:
		change->new_flags = cur | change->flags;
		change->new_keywords = cur_kw | change->keywords;
		break;
	case MAILBOX_FLAGS_REMOVE:
		change->new_flags = cur & ~change->flags;
		change->new_keywords = cur_kw & ~change->keywords;
		break;
	}
}

/* Rename the file to carry the changed flags and keywords (keeping
   foreign letters). The change applies to the flags in fname: if the
   rename succeeds, fname was the file's name at that moment, so nothing
   another writer did to it is lost. The renames are announced to the
   watch; the caller settles it (once for a batch). Returns 0 or -1
   (errno ENOENT: the guessed name was not there). */
static int kw_rename(struct mailbox *box, const char *fname,
		     struct kw_change *change,
		     char *new_name, size_t new_size, const char **error_r)
{
	struct maildir_filename fn;
	char old_path[PATH_MAX], new_path[PATH_MAX];
	char other[MAILDIR_OTHER_FLAGS_MAX + MAILDIR_KEYWORDS_MAX + 1];
	struct stat st;

	if (!maildir_filename_parse(fname, &fn)) {
		errno = EINVAL;
		*error_r = mailbox_set_error(box, "Bad file name %s", fname);
		return -1;
	}
	kw_change_apply(change, fn.flags & MAIL_FLAGS_PERMANENT,
			maildir_keywords_from_letters(fn.other_flags));
	kw_merge_letters(fn.other_flags, change->new_keywords, other,
			 sizeof(other));
	if (maildir_filename_make(new_name, new_size, fname, fn.base_len,
				  change->new_flags, other) < 0 ||
	    snprintf(old_path, sizeof(old_path), "%s/%s", box->cur_dir,
		     fname) >= (int)sizeof(old_path) ||
	    snprintf(new_path, sizeof(new_path), "%s/%s", box->cur_dir,
		     new_name) >= (int)sizeof(new_path)) {
		errno = ENAMETOOLONG;
		*error_r = mailbox_set_error(box, "Can't rename %s", fname);
		return -1;
	}
	if (strcmp(fname, new_name) == 0) {
		/* Nothing to rename, but the name must still be the file's
		   (not one another writer renamed away) for the answer to
		   be true. */
		if (stat(old_path, &st) == 0)
			return 0;
	} else {
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, fname);
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, new_name);
		if (rename(old_path, new_path) == 0)
			return 0;
		/* settled now: the announcement without its event tells the
		   watch that the folder changed under us */
		int saved_errno = errno;
		maildir_watch_settle(box->watch);
		errno = saved_errno;
	}
	*error_r = errno == ENOENT ? "Message was expunged" :
		mailbox_set_error(box, "rename(%s, %s) failed: %m",
				  old_path, new_path);
	return -1;
}

/* Locked: rename seq's file (retrying with the name read from cur/).
   Returns 0 with change->new_* set, or -1 (errno ENOENT: the message is
   gone). */
static int kw_rename_msg(struct mailbox *box, uint32_t seq,
			 struct kw_change *change, const char **error_r)
{
	uint32_t uid = mailbox_msg_uid(box, seq);
	char new_name[MAILDIR_FILENAME_MAX + 1];
	const char *fname;
	int ret = -1;

	for (unsigned int attempt = 0; attempt < MAILBOX_FNAME_ATTEMPTS &&
	     ret < 0; attempt++) {
		if (mailbox_msg_get_fname(box, seq, attempt > 0, &fname,
					  error_r) < 0)
			return -1;
		ret = kw_rename(box, fname, change, new_name,
				sizeof(new_name), error_r);
		if (ret < 0 && errno != ENOENT)
			return -1;
	}
	if (ret < 0) {
		mailbox_msg_forget_fname(box, seq);
		return -1;
	}
	mailbox_msg_set_fname(box, uid, new_name);
	return 0;
}

/* The index already says what the rename made of seq. */
static bool kw_index_has(struct mailbox *box, uint32_t seq,
			 const struct kw_change *change)
{
	const struct mailbox_expunged *exp;
	const struct mail_index_record *rec = mailbox_seq_lookup(box, seq, &exp);

	return rec != NULL &&
		(rec->flags & MAIL_FLAGS_PERMANENT) == change->new_flags &&
		rec->keywords == change->new_keywords;
}

/* Locked: rename each message's file, then commit every change as one
   transaction (one log append, one fdatasync unless batch->defer_sync)
   and bring the view up to it. On an I/O error the changes made so far
   are still committed. */
static int kw_store_batch_locked(struct mailbox *box,
				 const struct mailbox_flags_batch *batch,
				 const uint32_t *seqs, unsigned int count,
				 enum mailbox_change_result *results,
				 const char **error_r)
{
	struct mail_index_transaction *t =
		mail_index_transaction_begin(box->index);
	const struct mailbox_expunged *exp;
	const char *commit_error;
	unsigned int i, changes = 0;
	int ret = 0;

	/* every change of this layer is committed under this lock: after
	   this sync the view has each message's latest modseq, and the
	   flags that name its file now (another session of the process may
	   have renamed it since this one's last sync: a name guessed from
	   older flags fails and costs a readdir of cur/ and a rescan) */
	if (mailbox_view_refresh_own(box, 0, error_r) < 0)
		ret = -1;
	for (i = 0; i < count && ret == 0; i++) {
		const struct mail_index_record *rec =
			mailbox_seq_lookup(box, seqs[i], &exp);
		struct kw_change change = {
			.mode = batch->mode,
			.flags = batch->flags & MAIL_FLAGS_PERMANENT,
			.keywords = batch->keywords,
		};

		if (rec == NULL) {
			results[i] = MAILBOX_CHANGE_EXPUNGED;
		} else if (batch->conditional &&
			   rec->modseq > batch->unchanged_since) {
			results[i] = MAILBOX_CHANGE_MODIFIED;
		} else if (kw_rename_msg(box, seqs[i], &change, error_r) < 0) {
			if (errno != ENOENT)
				ret = -1;
			results[i] = MAILBOX_CHANGE_EXPUNGED;
		} else if (kw_index_has(box, seqs[i], &change)) {
			results[i] = MAILBOX_CHANGE_UNCHANGED;
		} else {
			mailbox_index_replace_flags(t,
						    mailbox_msg_uid(box, seqs[i]),
						    change.new_flags,
						    change.new_keywords);
			results[i] = MAILBOX_CHANGE_DONE;
			changes++;
		}
	}
	/* the renames' inotify events, read once for the batch */
	maildir_watch_settle(box->watch);
	if (changes == 0) {
		mail_index_transaction_rollback(&t);
	} else if ((batch->defer_sync ?
		    mailbox_index_commit_unsynced(box, &t, &commit_error) :
		    mailbox_index_commit(box, &t, &commit_error)) < 0 ||
		   /* the session sees its own changes at once, as STORE
		      answers them */
		   mailbox_view_refresh_own(box, 0, &commit_error) < 0) {
		*error_r = commit_error;
		return -1;
	}
	if (changes == 0 && !batch->conditional)
		return ret;
	/* the caller reports these itself (STORE's FETCH): not again as
	   changes found by a sync */
	for (unsigned int j = 0; j < i; j++) {
		if (results[j] == MAILBOX_CHANGE_DONE ||
		    (batch->conditional && results[j] != MAILBOX_CHANGE_EXPUNGED))
			uidset_remove(&box->ev_changed,
				      mailbox_msg_uid(box, seqs[j]));
	}
	return ret;
}

_Static_assert(MAILBOX_CHANGE_BATCH_MAX * 2 <= MAILDIR_WATCH_MAX_EXPECTED,
	       "a batch's renames must fit the watch's announcements");

int mailbox_msgs_change_flags(struct mailbox *box,
			      const struct mailbox_flags_batch *batch,
			      const uint32_t *seqs, unsigned int count,
			      enum mailbox_change_result *results,
			      const char **error_r)
{
	i_assert(!mailbox_is_readonly(box));
	i_assert(count <= MAILBOX_CHANGE_BATCH_MAX);
	if (count == 0)
		return 0;
	/* the lock only: nothing here reads the uidlist's records */
	if (maildir_uidlist_lock_append(box->uidlist, error_r) < 0)
		return -1;
	int ret = kw_store_batch_locked(box, batch, seqs, count, results,
					error_r);
	maildir_uidlist_unlock(box->uidlist);
	return ret;
}

/* One message: a batch of one, its result as errno ENOENT or 1. */
static int kw_change_one(struct mailbox *box,
			 const struct mailbox_flags_batch *batch, uint32_t seq,
			 const char **error_r)
{
	enum mailbox_change_result result;

	if (mailbox_msgs_change_flags(box, batch, &seq, 1, &result,
				      error_r) < 0)
		return -1;
	switch (result) {
	case MAILBOX_CHANGE_EXPUNGED:
		errno = ENOENT;
		*error_r = "Message was expunged";
		return -1;
	case MAILBOX_CHANGE_MODIFIED:
		return 1;
	case MAILBOX_CHANGE_DONE:
	case MAILBOX_CHANGE_UNCHANGED:
		break;
	}
	return 0;
}

int mailbox_msg_change_flags(struct mailbox *box, uint32_t seq,
			     enum mailbox_flags_change mode,
			     enum mail_flags flags, uint32_t keywords,
			     const char **error_r)
{
	const struct mailbox_flags_batch batch = {
		.mode = mode, .flags = flags, .keywords = keywords,
	};

	return kw_change_one(box, &batch, seq, error_r) < 0 ? -1 : 0;
}

int mailbox_msg_change_flags_cond(struct mailbox *box, uint32_t seq,
				  enum mailbox_flags_change mode,
				  enum mail_flags flags, uint32_t keywords,
				  uint64_t unchanged_since,
				  const char **error_r)
{
	const struct mailbox_flags_batch batch = {
		.mode = mode, .flags = flags, .keywords = keywords,
		.conditional = true, .unchanged_since = unchanged_since,
	};

	return kw_change_one(box, &batch, seq, error_r);
}

int mailbox_msg_set_flags_keywords(struct mailbox *box, uint32_t seq,
				   enum mail_flags flags, uint32_t keywords,
				   const char **error_r)
{
	return mailbox_msg_change_flags(box, seq, MAILBOX_FLAGS_REPLACE,
					flags, keywords, error_r);
}
