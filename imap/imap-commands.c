/* The command table (imap-commands.h). Keep it sorted by name. */
#include "imap-common.h"
#include "imap-commands.h"

#include <strings.h>

static const struct command imap_commands[] = {
	{ "APPEND", cmd_append, CMD_FLAG_LITERAL_SIZE },
	{ "CANCELUPDATE", cmd_cancelupdate, CMD_FLAG_NEEDS_SELECTED },
	{ "CAPABILITY", cmd_capability, 0 },
	{ "CHECK", cmd_check, CMD_FLAG_NEEDS_SELECTED },
	{ "CLOSE", cmd_close, CMD_FLAG_NEEDS_SELECTED },
	{ "COMPRESS", cmd_compress, 0 },
	{ "COPY", cmd_copy, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "CREATE", cmd_create, 0 },
	{ "DELETE", cmd_delete, 0 },
	{ "ENABLE", cmd_enable, 0 },
	{ "EXAMINE", cmd_examine, 0 },
	{ "EXPUNGE", cmd_expunge, CMD_FLAG_NEEDS_SELECTED |
		CMD_FLAG_UID_ALLOWED },
	{ "FETCH", cmd_fetch, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_USES_SEQS |
		CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "GETQUOTA", cmd_getquota, 0 },
	{ "GETQUOTAROOT", cmd_getquotaroot, 0 },
	{ "ID", cmd_id, 0 },
	{ "IDLE", cmd_idle, 0 },
	{ "LIST", cmd_list, 0 },
	{ "LOGOUT", cmd_logout, 0 },
	{ "LSUB", cmd_lsub, 0 },
	{ "MOVE", cmd_move, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "NAMESPACE", cmd_namespace, 0 },
	{ "NOOP", cmd_noop, 0 },
	{ "NOTIFY", cmd_notify, 0 },
	{ "RENAME", cmd_rename, 0 },
	{ "SEARCH", cmd_search, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_USES_SEQS |
		CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "SELECT", cmd_select, 0 },
	{ "SETQUOTA", cmd_setquota, 0 },
	{ "SORT", cmd_sort, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_USES_SEQS |
		CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "STATUS", cmd_status, 0 },
	{ "STORE", cmd_store, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_USES_SEQS |
		CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "SUBSCRIBE", cmd_subscribe, 0 },
	{ "THREAD", cmd_thread, CMD_FLAG_NEEDS_SELECTED | CMD_FLAG_USES_SEQS |
		CMD_FLAG_UID_ALLOWED |
		CMD_FLAG_SEQSET },
	{ "UNSELECT", cmd_unselect, CMD_FLAG_NEEDS_SELECTED },
	{ "UNSUBSCRIBE", cmd_unsubscribe, 0 },
};

static int command_cmp(const void *key, const void *p)
{
	const struct command *cmd = p;

	return strcasecmp(key, cmd->name);
}

const struct command *command_find(const char *name)
{
	return bsearch(name, imap_commands, N_ELEMENTS(imap_commands),
		       sizeof(imap_commands[0]), command_cmp);
}

_Static_assert(N_ELEMENTS(imap_commands) <= IMAP_COMMANDS_MAX,
	      "IMAP_COMMANDS_MAX is smaller than the command table");

unsigned int command_count(void)
{
	return N_ELEMENTS(imap_commands);
}

unsigned int command_index(const struct command *def)
{
	i_assert(def >= imap_commands &&
		 def < imap_commands + N_ELEMENTS(imap_commands));
	return (unsigned int)(def - imap_commands);
}

const struct command *command_by_index(unsigned int idx)
{
	i_assert(idx < N_ELEMENTS(imap_commands));
	return &imap_commands[idx];
}
