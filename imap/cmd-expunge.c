/* EXPUNGE (RFC 9051 6.4.3) and UID EXPUNGE (RFC 4315 2.1): remove the
   messages marked \Deleted (for UID EXPUNGE only those in the UID set).
   The files are unlinked here (other sessions that still show one keep
   reading it until told: maildir-ghost.h) and cur/ is fsynced; the sync
   before the tagged reply reports "* n EXPUNGE" for each in ascending
   order of the current numbering. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-notify.h"
#include "imap-seqset.h"
#include "imap-sync.h"

/* Returns false after an I/O error (logged). */
static bool expunge_range(struct mailbox *box, uint32_t seq1, uint32_t seq2,
			  bool *changed)
{
	const char *error;
	bool ok = true;

	for (uint32_t seq = seq1; seq <= seq2; seq++) {
		if ((mailbox_msg_flags(box, seq) & MAIL_DELETED) == 0 ||
		    mailbox_msg_is_expunged(box, seq))
			continue;
		if (mailbox_msg_expunge(box, seq, &error) == 0) {
			*changed = true;
		} else if (errno != ENOENT) {
			i_error("EXPUNGE failed: %s", error);
			ok = false;
		}
	}
	return ok;
}

bool cmd_expunge(struct client_command *cmd)
{
	struct client *client = cmd->client;
	struct mailbox *box = client->mailbox;
	struct seq_range *ranges, all;
	unsigned int count = 1;
	const char *set, *error;
	bool changed = false, ok = true;

	if (cmd->uid) {
		if (!imap_arg_get_atom(&cmd->args[0], &set) ||
		    !imap_arg_is_eol(&cmd->args[1]) ||
		    imap_seqset_parse(cmd->pool, set, &ranges, &count) < 0 ||
		    imap_seqset_resolve(box, true, ranges, &count) < 0) {
			client_send_command_error(cmd, "Invalid UID set.");
			return true;
		}
	} else if (!imap_arg_is_eol(&cmd->args[0])) {
		client_send_command_error(cmd, "EXPUNGE takes no arguments.");
		return true;
	}
	if (mailbox_is_readonly(box)) {
		client_send_tagline(cmd, "NO [CANNOT] Mailbox is read-only.");
		return true;
	}
	/* \Deleted as it is now, not as this session last synced: another
	   session's STORE that got its OK before this EXPUNGE counts. No
	   expunges are reported yet, so the numbers above stay right. */
	imap_sync_send(client, false);
	if (!cmd->uid) {
		all.seq1 = 1;
		all.seq2 = mailbox_get_count(box);
		ranges = &all;
		count = all.seq2 == 0 ? 0 : 1;
	}
	for (unsigned int i = 0; i < count; i++)
		ok = expunge_range(box, ranges[i].seq1, ranges[i].seq2,
				   &changed) && ok;
	/* the OK says the expunges are on disk */
	if (mailbox_expunge_sync(box, &error) < 0) {
		i_error("EXPUNGE: %s", error);
		ok = false;
	}
	if (changed)
		imap_notify_changed(client);
	client_send_tagline(cmd, ok ? "OK Expunge completed." :
			    "NO [SERVERBUG] Internal error occurred. Refer to "
			    "server log for more information.");
	return true;
}
