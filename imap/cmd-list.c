/* LIST (RFC 9051 6.3.9) with the RFC 5258 extended syntax: selection
   options SUBSCRIBED REMOTE RECURSIVEMATCH SPECIAL-USE, several patterns,
   return options SUBSCRIBED CHILDREN SPECIAL-USE STATUS (RFC 5819). */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-list.h"

#include <strings.h>

struct list_opt {
	const char *name;
	unsigned int flag;
};

static const struct list_opt list_select_opts[] = {
	{ "SUBSCRIBED", IMAP_LIST_SEL_SUBSCRIBED },
	{ "REMOTE", IMAP_LIST_SEL_REMOTE },
	{ "RECURSIVEMATCH", IMAP_LIST_SEL_RECURSIVEMATCH },
	{ "SPECIAL-USE", IMAP_LIST_SEL_SPECIALUSE },
	{ NULL, 0 }
};

static const struct list_opt list_return_opts[] = {
	{ "SUBSCRIBED", IMAP_LIST_RET_SUBSCRIBED },
	{ "CHILDREN", IMAP_LIST_RET_CHILDREN },
	{ "SPECIAL-USE", IMAP_LIST_RET_SPECIALUSE },
	{ "STATUS", IMAP_LIST_RET_STATUS },
	{ NULL, 0 }
};

/* The flag of an option atom in opts; 0 if arg is not one of them. */
static unsigned int list_opt_flag(const struct list_opt *opts,
				  const struct imap_arg *arg)
{
	const char *atom;

	if (!imap_arg_get_atom(arg, &atom))
		return 0;
	for (; opts->name != NULL; opts++) {
		if (strcasecmp(atom, opts->name) == 0)
			return opts->flag;
	}
	return 0;
}

static bool list_parse_select(const struct imap_arg *arg,
			      struct imap_list_request *req)
{
	const struct imap_arg *list;
	unsigned int count;

	if (!imap_arg_get_list(arg, &list, &count))
		return false;
	for (unsigned int i = 0; i < count; i++) {
		unsigned int flag = list_opt_flag(list_select_opts, &list[i]);
		if (flag == 0)
			return false;
		req->select |= flag;
	}
	/* RFC 5258 3.1: RECURSIVEMATCH needs another criterion */
	if ((req->select & IMAP_LIST_SEL_RECURSIVEMATCH) != 0 &&
	    (req->select & (IMAP_LIST_SEL_SUBSCRIBED |
			    IMAP_LIST_SEL_SPECIALUSE)) == 0)
		return false;
	return true;
}

static bool list_parse_return(const struct imap_arg *arg,
			      struct imap_list_request *req)
{
	const struct imap_arg *list;
	unsigned int count;

	if (!imap_arg_get_list(arg, &list, &count))
		return false;
	for (unsigned int i = 0; i < count; i++) {
		unsigned int flag = list_opt_flag(list_return_opts, &list[i]);
		if (flag == 0)
			return false;
		req->ret |= flag;
		if (flag == IMAP_LIST_RET_STATUS &&
		    !imap_status_parse_items(&list[++i], &req->status_items))
			return false;
	}
	return true;
}

/* One pattern or a list of them. *empty_r: the only pattern is "". */
static bool list_parse_patterns(struct client_command *cmd,
				const struct imap_arg *arg, const char *ref,
				struct imap_list_request *req, bool *empty_r)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *pattern;

	*empty_r = false;
	if (imap_arg_get_astring(arg, &pattern)) {
		*empty_r = pattern[0] == '\0';
		return imap_list_add_pattern(req, cmd->pool, ref, pattern);
	}
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return false;
	req->extended = true;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_astring(&list[i], &pattern) ||
		    !imap_list_add_pattern(req, cmd->pool, ref, pattern))
			return false;
	}
	return true;
}

static bool list_parse(struct client_command *cmd,
		       struct imap_list_request *req, bool *empty_r)
{
	const struct imap_arg *args = cmd->args;
	const char *ref;
	unsigned int i = 0;

	if (args[0].type == IMAP_ARG_LIST) {
		req->extended = true;
		if (!list_parse_select(&args[i++], req))
			return false;
	}
	if (!imap_arg_get_astring(&args[i++], &ref) ||
	    !list_parse_patterns(cmd, &args[i++], ref, req, empty_r))
		return false;
	if (imap_arg_atom_equals(&args[i], "RETURN")) {
		req->extended = true;
		if (!list_parse_return(&args[i + 1], req))
			return false;
		i += 2;
	}
	if ((req->select & IMAP_LIST_SEL_SUBSCRIBED) != 0)
		req->ret |= IMAP_LIST_RET_SUBSCRIBED;   /* RFC 5258 3.1 */
	return imap_arg_is_eol(&args[i]);
}

bool cmd_list(struct client_command *cmd)
{
	struct imap_list_request req;
	bool empty;

	memset(&req, 0, sizeof(req));
	req.utf8 = client_utf8_names(cmd->client);
	if (!list_parse(cmd, &req, &empty)) {
		client_send_command_error(cmd, "Invalid LIST arguments.");
		return true;
	}
	if (empty && req.select == 0) {
		/* the hierarchy separator and the (empty) root */
		client_send_line(cmd->client, "* LIST (\\Noselect) \"/\" \"\"");
		client_send_tagline(cmd, "OK List completed.");
		return true;
	}
	return imap_list_run(cmd, &req);
}
