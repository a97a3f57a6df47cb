/* ENABLE (RFC 5161, RFC 9051 6.3.1). IMAP4rev2 switches the session to
   RFC 9051 behaviour (doc/imap4rev2.md); CONDSTORE and QRESYNC turn on
   RFC 7162's (doc/condstore.md; QRESYNC implies CONDSTORE); UIDONLY
   RFC 9586's (imap-uidonly.h); UTF8=ACCEPT RFC 6855's (UTF-8 mailbox
   names, checked UTF-8 in quoted strings, the UTF8 APPEND data item:
   doc/extensions.md). Unknown
   names are ignored as the RFC requires, and "* ENABLED" lists only what
   this command newly enabled. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-condstore.h"

#include <strings.h>

bool cmd_enable(struct client_command *cmd)
{
	const struct imap_arg *args = cmd->args;
	struct client *client = cmd->client;
	bool rev2 = false, condstore = false, qresync = false, uidonly = false;
	bool utf8 = false;
	const char *name;
	/* every name below once: "* ENABLED" plus 49 bytes */
	char line[96] = "* ENABLED";

	if (imap_arg_is_eol(&args[0])) {
		client_send_command_error(cmd, "ENABLE needs capability names.");
		return true;
	}
	for (; !imap_arg_is_eol(args); args++) {
		if (!imap_arg_get_atom(args, &name)) {
			client_send_command_error(cmd, "Invalid capability name.");
			return true;
		}
		if (strcasecmp(name, "IMAP4rev2") == 0)
			rev2 = true;
		else if (strcasecmp(name, "CONDSTORE") == 0)
			condstore = true;
		else if (strcasecmp(name, "QRESYNC") == 0)
			qresync = true;
		else if (strcasecmp(name, "UIDONLY") == 0)
			uidonly = true;
		else if (strcasecmp(name, "UTF8=ACCEPT") == 0)
			utf8 = true;
	}
	if (rev2 && !client->imap4rev2) {
		client->imap4rev2 = true;
		strcat(line, " IMAP4rev2");
	}
	if (utf8 && !client->utf8) {
		client->utf8 = true;
		strcat(line, " UTF8=ACCEPT");
	}
	if (uidonly && !client->uidonly) {
		client->uidonly = true;
		strcat(line, " UIDONLY");
	}
	if (qresync && !client->qresync) {
		client->qresync = true;
		strcat(line, " QRESYNC");
	}
	if ((condstore || qresync) && !client->condstore) {
		if (condstore)
			strcat(line, " CONDSTORE");
	} else {
		condstore = qresync = false;
	}
	client_send_line(client, line);
	/* after the ENABLED line: a mailbox selected gets its
	   HIGHESTMODSEQ (RFC 7162 3.1) */
	if (condstore || qresync)
		imap_condstore_enable(client);
	client_send_tagline(cmd, "OK Enabled.");
	return true;
}
