/* SELECT and EXAMINE (RFC 3501 6.3.1, 6.3.2) with the CONDSTORE and
   QRESYNC parameters (RFC 7162 3.1.8, 3.2.5): the changes since the
   client's modseq follow the usual answer as VANISHED (EARLIER) and
   FETCH responses, written in slices by imap-fetch.c. The untagged
   OK [MAILBOXID] is RFC 8474 4.2. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-sync.h"
#include "imap-flags.h"
#include "imap-mailbox.h"
#include "imap-list.h"
#include "imap-condstore.h"
#include "imap-fetch.h"
#include "mailbox-objectid.h"

#include <strings.h>

/* The select parameters (RFC 4466 select-params). */
struct select_params {
	bool condstore;
	bool qresync;
	uint32_t uidvalidity;
	uint64_t modseq;
	struct seq_range *known;       /* UIDs, NULL: 1:<UIDNEXT-1> */
	unsigned int known_count;
	struct seq_range *mseqs, *muids;  /* seq-match-data */
	unsigned int mseq_count, muid_count;
};

/* A set of the QRESYNC parameter: no "*" (RFC 7162 7). */
static bool select_parse_set(struct client_command *cmd,
			     const struct imap_arg *arg,
			     struct seq_range **ranges_r, unsigned int *count_r)
{
	const char *str;

	if (!imap_arg_get_atom(arg, &str) || strchr(str, '*') != NULL ||
	    imap_seqset_parse(cmd->pool, str, ranges_r, count_r) < 0)
		return false;
	return true;
}

static bool select_parse_seqmatch(struct client_command *cmd,
				  const struct imap_arg *arg,
				  struct select_params *p)
{
	const struct imap_arg *list;
	unsigned int count;

	return imap_arg_get_list(arg, &list, &count) && count == 2 &&
		select_parse_set(cmd, &list[0], &p->mseqs, &p->mseq_count) &&
		select_parse_set(cmd, &list[1], &p->muids, &p->muid_count);
}

/* "QRESYNC (uidvalidity modseq [known-uids [seq-match-data]])" */
static bool select_parse_qresync(struct client_command *cmd,
				 const struct imap_arg *arg,
				 struct select_params *p)
{
	const struct imap_arg *list;
	unsigned int count;
	uint64_t uidvalidity;

	if (!imap_arg_get_list(arg, &list, &count) || count < 2 || count > 4 ||
	    !imap_arg_get_modseq(&list[0], false, &uidvalidity) ||
	    uidvalidity > UINT32_MAX ||
	    !imap_arg_get_modseq(&list[1], false, &p->modseq))
		return false;
	p->uidvalidity = (uint32_t)uidvalidity;
	/* known-uids and seq-match-data are each optional */
	unsigned int i = 2;
	if (i < count && list[i].type != IMAP_ARG_LIST &&
	    !select_parse_set(cmd, &list[i++], &p->known, &p->known_count))
		return false;
	/* RFC 9586 3.7: no seq-match-data once UIDONLY is on */
	if (i < count && (cmd->client->uidonly ||
			  !select_parse_seqmatch(cmd, &list[i++], p)))
		return false;
	if (i != count)
		return false;
	if (p->known != NULL)
		imap_uid_ranges_normalize(p->known, &p->known_count);
	p->qresync = true;
	return true;
}

/* Parse the optional parameter list; *error_r for BAD. */
static bool select_parse_params(struct client_command *cmd,
				const struct imap_arg *arg,
				struct select_params *p, const char **error_r)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *name;

	*error_r = "Invalid arguments.";
	if (imap_arg_is_eol(arg))
		return true;
	if (!imap_arg_get_list(arg, &list, &count) ||
	    !imap_arg_is_eol(&arg[1]))
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&list[i], &name)) {
			*error_r = "Invalid select parameter.";
			return false;
		}
		if (strcasecmp(name, "CONDSTORE") == 0) {
			p->condstore = true;
		} else if (strcasecmp(name, "QRESYNC") == 0 && !p->qresync) {
			/* RFC 7162 3.2.5: only after ENABLE QRESYNC */
			if (!cmd->client->qresync) {
				*error_r = "QRESYNC is not enabled.";
				return false;
			}
			if (i + 1 >= count ||
			    !select_parse_qresync(cmd, &list[++i], p)) {
				*error_r = "Invalid QRESYNC parameter.";
				return false;
			}
		} else {
			*error_r = "Unknown select parameter.";
			return false;
		}
	}
	return true;
}

static void select_send_status(struct client_command *cmd,
			       struct mailbox *box, const char *mailboxid)
{
	struct client *client = cmd->client;
	uint32_t count = mailbox_get_count(box);
	uint32_t recent = mailbox_get_recent_count(box);
	uint32_t unseen = mailbox_get_first_unseen_seq(box);

	/* FLAGS and PERMANENTFLAGS with the keywords (read-only: none) */
	imap_send_flags_list(client);
	client_send_linef(client, "* %u EXISTS", count);
	/* RFC 9051 Appendix E 10-12: IMAP4rev2 gets the mailbox's LIST
	   and neither RECENT nor the deprecated UNSEEN code */
	if (client->imap4rev2)
		imap_list_send_mailbox(client, cmd->pool, mailbox_get_name(box));
	else
		client_send_linef(client, "* %u RECENT", recent);
	if (unseen != 0 && !client->imap4rev2)
		client_send_linef(client, "* OK [UNSEEN %u] First unseen.", unseen);
	client_send_linef(client, "* OK [UIDVALIDITY %u] UIDs valid",
			  mailbox_get_uidvalidity(box));
	client_send_linef(client, "* OK [UIDNEXT %u] Predicted next UID",
			  mailbox_get_next_uid(box));
	/* RFC 8474 4.2 */
	if (mailboxid[0] != '\0')
		client_send_linef(client, "* OK [MAILBOXID (%s)] Mailbox id",
				  mailboxid);
	/* RFC 7162 3.1.2.1: every mailbox has modseqs (no NOMODSEQ) */
	if (client->condstore)
		client_send_linef(client, "* OK [HIGHESTMODSEQ %llu] Highest",
			(unsigned long long)mailbox_get_highest_modseq(box));
	client->exists_sent = count;
	client->recent_sent = recent;
}

static bool cmd_select_full(struct client_command *cmd, bool readonly)
{
	struct client *client = cmd->client;
	struct select_params *params = p_malloc(cmd->pool, sizeof(*params));
	const char *name, *error;
	struct mailbox *box;

	/* "SELECT" alone (found by fuzz-imap-session): no error text
	   came from a parser then, so name the problem here */
	if (!imap_arg_get_astring(&cmd->args[0], &name)) {
		client_send_command_error(cmd, "Missing or invalid mailbox name");
		return true;
	}
	if (!select_parse_params(cmd, &cmd->args[1], params, &error)) {
		client_send_command_error(cmd, error);
		return true;
	}
	/* RFC 3501: the current mailbox is deselected first, even if the
	   new selection fails */
	bool was_selected = client->mailbox != NULL;
	client_unselect(client);
	/* RFC 9051 6.3.2, RFC 7162 3.2.11: the old mailbox is closed (a
	   server with CONDSTORE says so to every client) */
	if (was_selected)
		client_send_line(client, "* OK [CLOSED] Previous mailbox "
				 "closed.");
	/* an enabling command (RFC 7162 3.1.8); this SELECT says the
	   HIGHESTMODSEQ itself */
	if (params->condstore || params->qresync)
		client->condstore = true;

	/* SELECT takes \Recent; EXAMINE leaves it (RFC 3501 6.3.2). Both
	   keep reading what other sessions expunge until told (SESSION). */
	enum mailbox_open_flags flags = (readonly ? MAILBOX_OPEN_READONLY :
		MAILBOX_OPEN_SELECT) | MAILBOX_OPEN_SESSION | MAILBOX_OPEN_QUOTA;
	if (client->user->set->mail_fsync == MOAT_FSYNC_NEVER)
		flags |= MAILBOX_OPEN_NO_FSYNC;
	char boxname[MAILBOX_NAME_MAX + 1];
	/* an invalid name can't exist */
	int ret = !imap_mailbox_name_decode(client, name, boxname) ? 0 :
		mailbox_open(client->user->mail_root, boxname, flags, &box,
			       &error);
	if (ret == 0) {
		client_send_tagline(cmd, "NO [NONEXISTENT] Mailbox doesn't exist");
		return true;
	}
	/* a folder whose id can't be read or made (read-only storage) is
	   still selectable, without the MAILBOXID line: logged */
	char mailboxid[MAILBOX_ID_LEN + 1];
	if (ret > 0 && mailbox_id_get(mailbox_get_path(box), mailboxid,
				      &error) < 0) {
		i_error("SELECT: MAILBOXID: %s", error);
		mailboxid[0] = '\0';
	}
	if (ret < 0) {
		i_error("Opening mailbox failed: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return true;
	}
	client->mailbox = box;
	select_send_status(cmd, box, mailboxid);
	const char *done = readonly ? "OK [READ-ONLY] Examine completed." :
		"OK [READ-WRITE] Select completed.";
	/* RFC 7162 3.2.5: another UIDVALIDITY means nothing to report */
	if (params->qresync &&
	    params->uidvalidity == mailbox_get_uidvalidity(box)) {
		return imap_fetch_qresync(cmd, params->modseq, params->known,
					  params->known_count, params->mseqs,
					  params->mseq_count, params->muids,
					  params->muid_count, done);
	}
	client_send_tagline(cmd, done);
	return true;
}

bool cmd_select(struct client_command *cmd)
{
	return cmd_select_full(cmd, false);
}

bool cmd_examine(struct client_command *cmd)
{
	return cmd_select_full(cmd, true);
}
