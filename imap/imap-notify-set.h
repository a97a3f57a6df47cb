#ifndef IMAP_NOTIFY_SET_H
#define IMAP_NOTIFY_SET_H
/* What one NOTIFY SET asked for (RFC 5465 3.1, 6, 8): the events for the
   selected mailbox and, per event group, which other mailboxes and which
   events. Parsed once; matching a name costs a walk over the groups. */

#include "imap-client.h"

/* Event groups per NOTIFY SET; more is a NO [LIMIT]. */
#define IMAP_NOTIFY_GROUPS_MAX 32
/* Mailbox names in all `mailboxes` and `subtree` groups together; more
   is a NO [LIMIT] (the set's memory must not follow the command line). */
#define IMAP_NOTIFY_NAMES_MAX 100
/* The MessageNew fetch-att list, as kept for the FETCH it causes. */
#define IMAP_NOTIFY_FETCH_ATTS_MAX 1024

enum imap_notify_event {
	IMAP_NOTIFY_MESSAGE_NEW = 0x01,
	IMAP_NOTIFY_MESSAGE_EXPUNGE = 0x02,
	IMAP_NOTIFY_FLAG_CHANGE = 0x04,
	IMAP_NOTIFY_MAILBOX_NAME = 0x08,
	IMAP_NOTIFY_SUBSCRIPTION_CHANGE = 0x10,
};
#define IMAP_NOTIFY_MESSAGE_EVENTS (IMAP_NOTIFY_MESSAGE_NEW | \
	IMAP_NOTIFY_MESSAGE_EXPUNGE | IMAP_NOTIFY_FLAG_CHANGE)
/* BADEVENT's list: every event moat reports (RFC 5465 3.1). */
#define IMAP_NOTIFY_EVENTS_SUPPORTED "MessageNew MessageExpunge FlagChange " \
	"MailboxName SubscriptionChange"

enum imap_notify_filter {
	IMAP_NOTIFY_FILTER_INBOXES,
	IMAP_NOTIFY_FILTER_PERSONAL,
	IMAP_NOTIFY_FILTER_SUBSCRIBED,
	IMAP_NOTIFY_FILTER_SUBTREE,
	IMAP_NOTIFY_FILTER_MAILBOXES,
};

struct imap_notify_group {
	enum imap_notify_filter filter;
	enum imap_notify_event events;
	/* SUBTREE, MAILBOXES: normalized UTF-8 names (unknown ones too:
	   MailboxName reports their creation) */
	const char **names;
	unsigned int name_count;
};

struct imap_notify_set {
	pool_t pool;
	/* SELECTED or SELECTED-DELAYED (RFC 5465 6.1): message events of
	   the selected mailbox, whatever it is; 0 without either */
	enum imap_notify_event selected_events;
	bool selected_delayed;
	/* MessageNew's fetch-atts for the selected mailbox ("(UID ...)"),
	   NULL for none */
	const char *fetch_atts;
	bool status;               /* the STATUS indicator */
	struct imap_notify_group groups[IMAP_NOTIFY_GROUPS_MAX];
	unsigned int group_count;
};

/* Parse the arguments after "SET" into a set allocated from its own pool.
   Returns 1 on success, 0 for a BAD (syntax, RFC 5465 5's pairing rules)
   and -1 for a NO (unsupported event, limits): *error_r is the reply
   text after "BAD " or "NO ". */
int imap_notify_set_parse(struct client_command *cmd,
			  const struct imap_arg *args,
			  struct imap_notify_set **set_r, const char **error_r);
void imap_notify_set_free(struct imap_notify_set **set);
/* A fetch-att list at arg (MessageNew's, or UPDATE's of SEARCH and SORT:
   RFC 5465 7) checked as FETCH checks it and written as text from pool,
   "(UID ...)" (UID first when the list lacks it; at most
   IMAP_NOTIFY_FETCH_ATTS_MAX). Returns false for a bad list (BAD). */
bool imap_notify_fetch_atts(struct client_command *cmd,
			    const struct imap_arg *arg, pool_t pool,
			    const char **atts_r);

/* The events the set's groups ask for on a (normalized) name, not
   counting SELECTED. subscribed: whether the name is subscribed (only
   looked at when a SUBSCRIBED group exists, see
   imap_notify_set_has_filter()). */
enum imap_notify_event
imap_notify_set_events(const struct imap_notify_set *set,
		       const struct moat_settings *mset, const char *name,
		       bool subscribed);
bool imap_notify_set_has_filter(const struct imap_notify_set *set,
				enum imap_notify_filter filter);

#endif
