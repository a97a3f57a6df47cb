#ifndef IMAP_COMMANDS_H
#define IMAP_COMMANDS_H
/* The command table: one sorted list of { name, func, flags }. */

#include "imap-client.h"

enum command_flags {
	CMD_FLAG_NEEDS_SELECTED = 0x01,
	/* The non-UID form works on sequence numbers: no EXPUNGE may be sent
	   while or right after it runs (RFC 3501 7.4.1). */
	CMD_FLAG_USES_SEQS = 0x02,
	/* "UID <name>" exists and shares the function (cmd->uid is set). */
	CMD_FLAG_UID_ALLOWED = 0x04,
	/* The command streams its literal itself (APPEND): the line is
	   parsed with IMAP_PARSE_FLAG_LITERAL_SIZE. */
	CMD_FLAG_LITERAL_SIZE = 0x08,
	/* The non-UID form takes a sequence set: refused once UIDONLY is
	   enabled (RFC 9586 3.2, 3.8). */
	CMD_FLAG_SEQSET = 0x10,
};

struct command {
	const char *name;        /* upper case */
	command_func_t *func;
	enum command_flags flags;
};

/* Case-insensitive lookup; NULL if unknown. */
const struct command *command_find(const char *name);
/* More than the table holds (a build-time check keeps it so): the size
   of per-command arrays such as imap-stats.c's. */
#define IMAP_COMMANDS_MAX 64
/* The table as an array: its size, a command's position, and back. */
unsigned int command_count(void);
unsigned int command_index(const struct command *def);
const struct command *command_by_index(unsigned int idx);

bool cmd_append(struct client_command *cmd);
bool cmd_capability(struct client_command *cmd);
bool cmd_check(struct client_command *cmd);
bool cmd_close(struct client_command *cmd);
bool cmd_compress(struct client_command *cmd);
bool cmd_copy(struct client_command *cmd);
bool cmd_enable(struct client_command *cmd);
bool cmd_examine(struct client_command *cmd);
bool cmd_expunge(struct client_command *cmd);
bool cmd_fetch(struct client_command *cmd);
bool cmd_id(struct client_command *cmd);
bool cmd_idle(struct client_command *cmd);
bool cmd_logout(struct client_command *cmd);
bool cmd_move(struct client_command *cmd);
bool cmd_noop(struct client_command *cmd);
bool cmd_notify(struct client_command *cmd);
bool cmd_search(struct client_command *cmd);
bool cmd_cancelupdate(struct client_command *cmd);
bool cmd_select(struct client_command *cmd);
bool cmd_store(struct client_command *cmd);
/* SORT and THREAD (cmd-sort.c, cmd-thread.c) */
bool cmd_sort(struct client_command *cmd);
bool cmd_thread(struct client_command *cmd);
bool cmd_unselect(struct client_command *cmd);
/* mailbox list commands */
bool cmd_create(struct client_command *cmd);
bool cmd_delete(struct client_command *cmd);
bool cmd_list(struct client_command *cmd);
bool cmd_lsub(struct client_command *cmd);
bool cmd_namespace(struct client_command *cmd);
bool cmd_getquota(struct client_command *cmd);
bool cmd_getquotaroot(struct client_command *cmd);
bool cmd_setquota(struct client_command *cmd);
bool cmd_rename(struct client_command *cmd);
bool cmd_status(struct client_command *cmd);
bool cmd_subscribe(struct client_command *cmd);
bool cmd_unsubscribe(struct client_command *cmd);

#endif
