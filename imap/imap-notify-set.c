/* Parsing NOTIFY SET's event groups and matching names (imap-notify-set.h). */
#include "imap-common.h"
#include "imap-notify-set.h"
#include "imap-fetch.h"
#include "imap-mailbox.h"

#include <strings.h>

struct notify_parse {
	struct client_command *cmd;
	struct imap_notify_set *set;
	unsigned int name_count;
	bool selected_seen;
	/* an event moat does not report was named: NO [BADEVENT] once the
	   whole command parsed (a BAD wins) */
	bool unsupported;
	bool limit;                /* the error is a NO [LIMIT] */
	const char *error;
};

static const struct {
	const char *name;
	enum imap_notify_event event;
} notify_events[] = {
	{ "MessageNew", IMAP_NOTIFY_MESSAGE_NEW },
	{ "MessageExpunge", IMAP_NOTIFY_MESSAGE_EXPUNGE },
	{ "FlagChange", IMAP_NOTIFY_FLAG_CHANGE },
	{ "MailboxName", IMAP_NOTIFY_MAILBOX_NAME },
	{ "SubscriptionChange", IMAP_NOTIFY_SUBSCRIPTION_CHANGE },
};

static bool parse_fail(struct notify_parse *p, const char *error)
{
	if (p->error == NULL)
		p->error = error;
	return false;
}

/* The fetch-att list as text: atoms and lists of atoms (PREVIEW (LAZY)),
   the only things a fetch-att list holds. The top level starts with UID
   when the client did not ask for it (imap-notify-send.c fetches by
   sequence number; a NOTIFY client needs the UID, RFC 5465 5.2). */
static bool fetch_atts_write(buffer_t *buf, const struct imap_arg *list,
			     unsigned int count, bool top)
{
	int ret = buffer_append_c(buf, '(');
	bool has_uid = false;

	for (unsigned int i = 0; top && i < count; i++) {
		if (imap_arg_atom_equals(&list[i], "UID"))
			has_uid = true;
	}
	if (top && !has_uid)
		ret |= buffer_append_str(buf, "UID ");

	for (unsigned int i = 0; i < count && ret == 0; i++) {
		const struct imap_arg *sub;
		unsigned int sub_count;
		const char *atom;

		if (i > 0)
			ret = buffer_append_c(buf, ' ');
		if (imap_arg_get_atom(&list[i], &atom))
			ret |= buffer_append_str(buf, atom);
		else if (imap_arg_get_list(&list[i], &sub, &sub_count))
			ret |= fetch_atts_write(buf, sub, sub_count, false) ?
				0 : -1;
		else
			return false;
	}
	return ret == 0 && buffer_append_c(buf, ')') == 0;
}

static bool parse_fetch_atts(struct notify_parse *p, const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;
	buffer_t buf;

	if (!imap_arg_get_list(arg, &list, &count) || count == 0 ||
	    !imap_fetch_items_check(p->cmd, arg))
		return parse_fail(p, "Invalid MessageNew fetch attributes.");
	buffer_init(&buf, IMAP_NOTIFY_FETCH_ATTS_MAX);
	bool ok = fetch_atts_write(&buf, list, count, true);
	if (ok)
		p->set->fetch_atts = p_strdup(p->set->pool, buf.data);
	buffer_free(&buf);
	return ok ? true : parse_fail(p, "Invalid MessageNew fetch attributes.");
}

bool imap_notify_fetch_atts(struct client_command *cmd,
			    const struct imap_arg *arg, pool_t pool,
			    const char **atts_r)
{
	const struct imap_arg *list;
	unsigned int count;
	buffer_t buf;

	if (!imap_arg_get_list(arg, &list, &count) || count == 0 ||
	    !imap_fetch_items_check(cmd, arg))
		return false;
	buffer_init(&buf, IMAP_NOTIFY_FETCH_ATTS_MAX);
	bool ok = fetch_atts_write(&buf, list, count, true);
	if (ok)
		*atts_r = p_strdup(pool, buf.data);
	buffer_free(&buf);
	return ok;
}

/* One event name at list[*i] (and MessageNew's fetch-atts after it). */
static bool parse_event(struct notify_parse *p, const struct imap_arg *list,
			unsigned int count, unsigned int *i, bool selected,
			enum imap_notify_event *events)
{
	const char *atom;

	if (!imap_arg_get_atom(&list[*i], &atom))
		return parse_fail(p, "Invalid event.");
	for (unsigned int j = 0; j < N_ELEMENTS(notify_events); j++) {
		if (strcasecmp(atom, notify_events[j].name) != 0)
			continue;
		*events |= notify_events[j].event;
		if (notify_events[j].event == IMAP_NOTIFY_MESSAGE_NEW &&
		    *i + 1 < count && list[*i + 1].type == IMAP_ARG_LIST) {
			/* RFC 5465 8: only for the selected mailbox */
			if (!selected)
				return parse_fail(p, "Fetch attributes are only "
						  "allowed for SELECTED.");
			*i += 1;
			return parse_fetch_atts(p, &list[*i]);
		}
		return true;
	}
	/* AnnotationChange (RFC 5465 5.1) counts as a message event for
	   the pairing rule; like the METADATA events and any other it is
	   not supported */
	if (strcasecmp(atom, "AnnotationChange") == 0)
		*events |= IMAP_NOTIFY_FLAG_CHANGE;
	p->unsupported = true;
	return true;
}

/* "NONE" or "(" event *(SP event) ")", with RFC 5465 5's rules. */
static bool parse_events(struct notify_parse *p, const struct imap_arg *arg,
			 bool selected, enum imap_notify_event *events_r)
{
	const struct imap_arg *list;
	unsigned int count;
	enum imap_notify_event events = 0;

	*events_r = 0;
	if (imap_arg_atom_equals(arg, "NONE"))
		return true;
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return parse_fail(p, "Invalid event list.");
	for (unsigned int i = 0; i < count; i++) {
		if (!parse_event(p, list, count, &i, selected, &events))
			return false;
	}
	bool is_new = (events & IMAP_NOTIFY_MESSAGE_NEW) != 0;
	bool is_expunge = (events & IMAP_NOTIFY_MESSAGE_EXPUNGE) != 0;
	if (is_new != is_expunge)
		return parse_fail(p, "MessageNew and MessageExpunge must be "
				  "given together.");
	if ((events & IMAP_NOTIFY_FLAG_CHANGE) != 0 && !is_new)
		return parse_fail(p, "FlagChange and AnnotationChange need "
				  "MessageNew and MessageExpunge.");
	/* RFC 5465 6.1: only message events for the selected mailbox */
	if (selected && (events & ~IMAP_NOTIFY_MESSAGE_EVENTS) != 0)
		return parse_fail(p, "Only message events are allowed for "
				  "SELECTED.");
	*events_r = events;
	return true;
}

static bool parse_name(struct notify_parse *p, struct imap_notify_group *g,
		       const struct imap_arg *arg, unsigned int idx)
{
	char name[MAILBOX_NAME_MAX + 1];
	const char *wire;

	if (!imap_arg_get_astring(arg, &wire))
		return parse_fail(p, "Invalid mailbox name.");
	if (++p->name_count > IMAP_NOTIFY_NAMES_MAX) {
		p->limit = true;
		return parse_fail(p, "Too many mailbox names.");
	}
	/* not valid modified UTF-7: a name that cannot exist, kept as
	   sent so that it matches nothing */
	g->names[idx] = imap_mailbox_name_decode(p->cmd->client, wire, name) ?
		p_strdup(p->set->pool, name) :
		p_strdup_printf(p->set->pool, "\x01%s", wire);
	return true;
}

/* mailbox / "(" mailbox *(SP mailbox) ")" */
static bool parse_names(struct notify_parse *p, struct imap_notify_group *g,
			const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;

	if (!imap_arg_get_list(arg, &list, &count)) {
		list = arg;
		count = 1;
	} else if (count == 0) {
		return parse_fail(p, "Empty mailbox list.");
	}
	g->names = p_malloc(p->set->pool, sizeof(*g->names) * count);
	g->name_count = count;
	for (unsigned int i = 0; i < count; i++) {
		if (!parse_name(p, g, &list[i], i))
			return false;
	}
	return true;
}

static bool parse_selected(struct notify_parse *p, bool delayed,
			   const struct imap_arg *list, unsigned int count)
{
	if (p->selected_seen)
		return parse_fail(p, "SELECTED given twice.");
	p->selected_seen = true;
	if (count != 2)
		return parse_fail(p, "Invalid event group.");
	p->set->selected_delayed = delayed;
	return parse_events(p, &list[1], true, &p->set->selected_events);
}

static const struct {
	const char *name;
	enum imap_notify_filter filter;
	bool names;
} notify_filters[] = {
	{ "INBOXES", IMAP_NOTIFY_FILTER_INBOXES, false },
	{ "PERSONAL", IMAP_NOTIFY_FILTER_PERSONAL, false },
	{ "SUBSCRIBED", IMAP_NOTIFY_FILTER_SUBSCRIBED, false },
	{ "SUBTREE", IMAP_NOTIFY_FILTER_SUBTREE, true },
	{ "MAILBOXES", IMAP_NOTIFY_FILTER_MAILBOXES, true },
};

/* "(" filter-mailboxes SP events ")" */
static bool parse_group(struct notify_parse *p, const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count, f;
	const char *atom;

	if (!imap_arg_get_list(arg, &list, &count) || count < 2 ||
	    !imap_arg_get_atom(&list[0], &atom))
		return parse_fail(p, "Invalid event group.");
	if (strcasecmp(atom, "SELECTED") == 0 ||
	    strcasecmp(atom, "SELECTED-DELAYED") == 0)
		return parse_selected(p, strcasecmp(atom, "SELECTED") != 0,
				      list, count);
	for (f = 0; f < N_ELEMENTS(notify_filters); f++) {
		if (strcasecmp(atom, notify_filters[f].name) == 0)
			break;
	}
	if (f == N_ELEMENTS(notify_filters))
		return parse_fail(p, "Unknown mailbox filter.");
	if (count != (notify_filters[f].names ? 3U : 2U))
		return parse_fail(p, "Invalid event group.");
	if (p->set->group_count == IMAP_NOTIFY_GROUPS_MAX) {
		p->limit = true;
		return parse_fail(p, "Too many event groups.");
	}
	struct imap_notify_group *g = &p->set->groups[p->set->group_count++];
	g->filter = notify_filters[f].filter;
	if (notify_filters[f].names && !parse_names(p, g, &list[1]))
		return false;
	return parse_events(p, &list[count - 1], false, &g->events);
}

int imap_notify_set_parse(struct client_command *cmd,
			  const struct imap_arg *args,
			  struct imap_notify_set **set_r, const char **error_r)
{
	pool_t pool = pool_create("notify set", 1024);
	struct notify_parse p = { .cmd = cmd };

	p.set = p_malloc(pool, sizeof(*p.set));
	p.set->pool = pool;
	if (imap_arg_atom_equals(args, "STATUS")) {
		p.set->status = true;
		args++;
	}
	bool ok = !imap_arg_is_eol(args) ||
		parse_fail(&p, "Missing event groups.");
	for (; ok && !imap_arg_is_eol(args); args++)
		ok = parse_group(&p, args);
	if (!ok) {
		bool limit = p.limit;
		pool_unref(&pool);
		*error_r = limit ? p_strdup_printf(cmd->pool, "[LIMIT] %s",
						   p.error) : p.error;
		return limit ? -1 : 0;
	}
	if (p.unsupported) {
		pool_unref(&pool);
		*error_r = "[BADEVENT (" IMAP_NOTIFY_EVENTS_SUPPORTED ")] "
			"Unsupported event.";
		return -1;
	}
	*set_r = p.set;
	return 1;
}

void imap_notify_set_free(struct imap_notify_set **_set)
{
	struct imap_notify_set *set = *_set;

	if (set == NULL)
		return;
	*_set = NULL;
	pool_unref(&set->pool);
}

static bool name_in_subtree(const char *root, const char *name)
{
	size_t len = strlen(root);

	return strncmp(root, name, len) == 0 &&
		(name[len] == '\0' || name[len] == MAILBOX_NAME_SEP);
}

static bool group_matches(const struct imap_notify_group *g,
			  const struct moat_settings *mset, const char *name,
			  bool subscribed)
{
	switch (g->filter) {
	case IMAP_NOTIFY_FILTER_INBOXES:
		/* RFC 5465 6.3: delivery goes to INBOX, and with detail
		   mailboxes anywhere: then inboxes is personal */
		return mset->lmtp_save_to_detail_mailbox ||
			strcmp(name, "INBOX") == 0;
	case IMAP_NOTIFY_FILTER_PERSONAL:
		return true;
	case IMAP_NOTIFY_FILTER_SUBSCRIBED:
		return subscribed;
	case IMAP_NOTIFY_FILTER_SUBTREE:
		for (unsigned int i = 0; i < g->name_count; i++) {
			if (name_in_subtree(g->names[i], name))
				return true;
		}
		return false;
	case IMAP_NOTIFY_FILTER_MAILBOXES:
		for (unsigned int i = 0; i < g->name_count; i++) {
			if (strcmp(g->names[i], name) == 0)
				return true;
		}
		return false;
	}
	i_unreached();
}

enum imap_notify_event
imap_notify_set_events(const struct imap_notify_set *set,
		       const struct moat_settings *mset, const char *name,
		       bool subscribed)
{
	enum imap_notify_event events = 0;

	for (unsigned int i = 0; i < set->group_count; i++) {
		if (group_matches(&set->groups[i], mset, name, subscribed))
			events |= set->groups[i].events;
	}
	return events;
}

bool imap_notify_set_has_filter(const struct imap_notify_set *set,
				enum imap_notify_filter filter)
{
	for (unsigned int i = 0; i < set->group_count; i++) {
		if (set->groups[i].filter == filter &&
		    set->groups[i].events != 0)
			return true;
	}
	return false;
}
