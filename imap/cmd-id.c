/* ID (RFC 2971): we log nothing the client says and answer with our name. */
#include "imap-common.h"
#include "imap-commands.h"

/* RFC 2971 3.3: at most 30 field-value pairs, fields up to 30 octets and
   values up to 1024 octets. */
#define ID_MAX_PAIRS 30
#define ID_FIELD_MAX 30
#define ID_VALUE_MAX 1024

static bool id_args_valid(const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *str;

	if (arg->type == IMAP_ARG_NIL)
		return true;
	if (!imap_arg_get_list(arg, &list, &count) || count % 2 != 0 ||
	    count / 2 > ID_MAX_PAIRS)
		return false;
	for (unsigned int i = 0; i < count; i += 2) {
		if (!imap_arg_get_string(&list[i], &str) ||
		    strlen(str) > ID_FIELD_MAX)
			return false;
		if (!imap_arg_get_nstring(&list[i + 1], &str) ||
		    (str != NULL && strlen(str) > ID_VALUE_MAX))
			return false;
	}
	return true;
}

bool cmd_id(struct client_command *cmd)
{
	if (!id_args_valid(&cmd->args[0]) || !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd, "Invalid ID parameters.");
		return true;
	}
	client_send_line(cmd->client, "* ID (\"name\" \"moat\")");
	client_send_tagline(cmd, "OK ID completed.");
	return true;
}
