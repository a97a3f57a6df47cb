/* WHO and KICK from moatadm, through master (imap-admin.h). */
#include "imap-admin.h"
#include "imap-client.h"
#include "mailbox-quota.h"
#include "strfuncs.h"

static bool imap_admin_listed(const char *const *list, unsigned int count,
			      const char *address)
{
	for (unsigned int i = 0; i < count; i++) {
		if (strcmp(list[i], address) == 0)
			return true;
	}
	return false;
}

static void imap_admin_who(struct imap_user *user, struct ipc_conn *master,
			   const char *id)
{
	const char *args[IPC_MAX_ARGS];
	char count_str[32];
	unsigned int sessions = 0, count = 3;

	args[0] = "WHO-REPLY";
	args[1] = id;
	args[2] = count_str;
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (c->disconnected)
			continue;
		sessions++;
		if (count - 3 < IMAP_ADMIN_WHO_ADDRESSES_MAX &&
		    !imap_admin_listed(args + 3, count - 3, c->session))
			args[count++] = c->session;
	}
	args[count] = NULL;
	snprintf(count_str, sizeof(count_str), "%u", sessions);
	(void)ipc_send(master, args, -1);
}

static void imap_admin_kick(struct imap_user *user, struct ipc_conn *master,
			    const char *id, const char *reason)
{
	char count_str[32];
	unsigned int sessions = 0;

	/* client_disconnect() frees from the loop: the list stays valid. */
	for (struct client *c = user->clients; c != NULL; c = c->next) {
		if (c->disconnected)
			continue;
		client_disconnect(c, reason, "Kicked by the administrator");
		sessions++;
	}
	i_info("kicked %u session(s) (moatadm): %s", sessions, reason);
	snprintf(count_str, sizeof(count_str), "%u", sessions);
	(void)ipc_sendv(master, -1, "KICK-REPLY", id, count_str, NULL);
}

/* Walks every folder (as a missing maildirsize would): the loop waits
   meanwhile, which the admin asked for. */
static void imap_admin_quota_recalc(struct imap_user *user,
				    struct ipc_conn *master, const char *id)
{
	struct mailbox_quota_usage usage;
	const char *error;
	char storage[32], messages[32];

	if (mailbox_quota_recalc(user->mail_root, &user->quota, &usage,
				 &error) < 0) {
		i_error("quota recalc (moatadm) failed: %s", error);
		(void)ipc_sendv(master, -1, "ADMIN-OP-REPLY", id, "fail", error,
				NULL);
		return;
	}
	i_info("quota recalculated (moatadm): %lld bytes, %lld messages",
	       (long long)usage.storage, (long long)usage.messages);
	snprintf(storage, sizeof(storage), "%lld", (long long)usage.storage);
	snprintf(messages, sizeof(messages), "%lld", (long long)usage.messages);
	(void)ipc_sendv(master, -1, "ADMIN-OP-REPLY", id, "ok", "",
			"storage_bytes", storage, "messages", messages, NULL);
}

bool imap_admin_input(struct imap_user *user, struct ipc_conn *master,
		      const char *const *args)
{
	unsigned int count = str_array_length(args);

	if (strcmp(args[0], "WHO") == 0) {
		if (count != 2)
			i_fatal("master sent an invalid WHO record");
		imap_admin_who(user, master, args[1]);
		return true;
	}
	if (strcmp(args[0], "ADMIN-OP") == 0) {
		if (count != 3 || strcmp(args[2], "quota-recalc") != 0)
			i_fatal("master sent an invalid ADMIN-OP record");
		imap_admin_quota_recalc(user, master, args[1]);
		return true;
	}
	if (strcmp(args[0], "KICK") == 0) {
		if (count != 3)
			i_fatal("master sent an invalid KICK record");
		imap_admin_kick(user, master, args[1], args[2]);
		return true;
	}
	return false;
}
