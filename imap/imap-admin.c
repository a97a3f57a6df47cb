/* WHO and KICK from moatadm, through master (imap-admin.h). */
#include "imap-admin.h"
#include "imap-client.h"
#include "imap-mailbox.h"
#include "mailbox-check.h"
#include "mailbox-list.h"
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

/* One mailbox checked (or rebuilt): its row; 0 if its index is
   inconsistent (or the rebuild failed). -1: it does not exist. */
static int imap_admin_index_one(struct imap_user *user,
				struct ipc_conn *master, const char *id,
				const char *name, bool rebuild)
{
	struct mailbox *box;
	const char *error;
	bool rebuilt = false;
	char messages[32], validity[32], next[32], modseq[32];

	int ret = mailbox_open(user->mail_root, name, rebuild ? 0 :
			       MAILBOX_OPEN_READONLY, &box, &error);
	if (ret == 0)
		return -1;
	if (ret > 0) {
		if (rebuild) {
			rebuilt = true;
			if (mailbox_index_rebuild(box, &error) == 0)
				error = NULL;
		} else if (mailbox_index_check(box, &rebuilt, &error) == 0) {
			error = NULL;
		}
		snprintf(messages, sizeof(messages), "%u", mailbox_get_count(box));
		snprintf(validity, sizeof(validity), "%u",
			 mailbox_get_uidvalidity(box));
		snprintf(next, sizeof(next), "%u", mailbox_get_next_uid(box));
		snprintf(modseq, sizeof(modseq), "%llu", (unsigned long long)
			 mailbox_get_highest_modseq(box));
		mailbox_close(&box);
	} else {
		messages[0] = validity[0] = next[0] = modseq[0] = '\0';
	}
	if (error != NULL)
		i_error("index %s (moatadm) of %s: %s",
			rebuild ? "rebuild" : "check", name, error);
	(void)ipc_sendv(master, -1, "ADMIN-OP-ROW", id, "mailbox", name,
			"messages", messages, "uidvalidity", validity,
			"uidnext", next, "highestmodseq", modseq,
			"rebuilt", rebuilt ? "yes" : "no",
			"result", error == NULL ? "ok" : error, NULL);
	return error == NULL ? 1 : 0;
}

/* Each selectable mailbox (or the one named) checked (opened read-only)
   or rebuilt; the loop waits meanwhile, so no session of the user sees
   a half-built index. */
static void imap_admin_index_op(struct imap_user *user,
				struct ipc_conn *master, const char *id,
				const char *name, bool rebuild)
{
	struct imap_mailbox_specials specials;
	struct mailbox_list *list;
	const char *error;
	unsigned int bad = 0;
	char text[64];

	if (name[0] != '\0') {
		int ret = imap_admin_index_one(user, master, id, name, rebuild);
		(void)ipc_sendv(master, -1, "ADMIN-OP-REPLY", id,
				ret < 0 ? "notfound" : ret == 0 ? "failed" : "ok",
				ret < 0 ? "No such mailbox" : ret == 0 ?
				(rebuild ? "The rebuild failed" :
				 "The index is inconsistent") : "", NULL);
		return;
	}
	imap_mailbox_specials_get(user->set, &specials);
	if (mailbox_list_read(user->mail_root, &specials.names, &list,
			      &error) < 0) {
		(void)ipc_sendv(master, -1, "ADMIN-OP-REPLY", id, "fail", error,
				NULL);
		return;
	}
	for (unsigned int i = 0; i < mailbox_list_count(list); i++) {
		const struct mailbox_list_node *node = mailbox_list_get(list, i);
		if ((node->flags & MAILBOX_NODE_SELECTABLE) != 0 &&
		    imap_admin_index_one(user, master, id, node->name,
					 rebuild) == 0)
			bad++;
	}
	mailbox_list_free(&list);
	snprintf(text, sizeof(text), rebuild ?
		 "%u mailbox(es) could not be rebuilt" :
		 "%u mailbox(es) with an inconsistent index", bad);
	(void)ipc_sendv(master, -1, "ADMIN-OP-REPLY", id,
			bad == 0 ? "ok" : "failed", bad == 0 ? "" : text, NULL);
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
		if (count != 4)
			i_fatal("master sent an invalid ADMIN-OP record");
		if (strcmp(args[2], "quota-recalc") == 0)
			imap_admin_quota_recalc(user, master, args[1]);
		else if (strcmp(args[2], "index-check") == 0)
			imap_admin_index_op(user, master, args[1], args[3], false);
		else if (strcmp(args[2], "index-rebuild") == 0)
			imap_admin_index_op(user, master, args[1], args[3], true);
		else
			i_fatal("master sent an unknown ADMIN-OP");
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
