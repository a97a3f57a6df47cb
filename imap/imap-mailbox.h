#ifndef IMAP_MAILBOX_H
#define IMAP_MAILBOX_H
/* Mailbox names between the wire and moat (UTF-8, mailbox-name.h), and
   the NO answers of the mailbox list operations. On the wire a name is
   modified UTF-7 (RFC 3501 5.1.3), or UTF-8 as it is once the client
   sent ENABLE UTF8=ACCEPT or ENABLE IMAP4rev2 (client_utf8_names(), RFC
   6855 section 3, RFC 9051 5.1): then "&" is just a character, so "&-"
   and "&AOk-" are names of their own. */

#include "imap-client.h"
#include "mailbox-list.h"

/* Decode and normalize a wire name in the client's mode. On failure
   answers the command with NO [CANNOT] or NO [LIMIT] and returns false. */
bool imap_mailbox_name_get(struct client_command *cmd, const char *wire,
			   char name_r[MAILBOX_NAME_MAX + 1]);
/* As above without answering: false if the name can't exist. */
bool imap_mailbox_name_decode(const struct client *client, const char *wire,
			      char name_r[MAILBOX_NAME_MAX + 1]);
/* The name as an IMAP astring in the client's mode (atom or quoted
   string, mUTF-7 or UTF-8), from pool. */
const char *imap_mailbox_name_to_wire(const struct client *client,
				      pool_t pool, const char *name);
/* Answer a failed mailbox_list_*() call with the right response code. */
void imap_mailbox_list_error(struct client_command *cmd,
			     enum mailbox_list_error code, const char *error);
/* Open flags for this user's settings (fsync policy). */
enum mailbox_open_flags imap_mailbox_open_flags(struct client *client,
						bool readonly);
/* Before DELETE (children = false) or RENAME (children = true) of name:
   close this client's views of it (the selected one with an untagged
   [CLOSED]). */
void imap_mailbox_release(struct client *client, const char *name,
			  bool children);

/* The SPECIAL-USE folder names of the settings, normalized (invalid
   ones left out). */
struct imap_mailbox_specials {
	struct mailbox_special_names names;
	char buf[MAILBOX_SPECIAL_COUNT][MAILBOX_NAME_MAX + 1];
};
void imap_mailbox_specials_get(const struct moat_settings *set,
			       struct imap_mailbox_specials *specials_r);
/* Create the missing SPECIAL-USE folders, once per process: before the
   first IMAP session or admin request, or a delivery to another folder
   than INBOX. A process started only for deliveries into INBOX never
   pays for it (five folders, a dozen directory syncs). */
void imap_mailbox_autocreate(struct imap_user *user);

#endif
