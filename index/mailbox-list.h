#ifndef MAILBOX_LIST_H
#define MAILBOX_LIST_H
/* The user's mailboxes: the Maildir++ folders under the mail root, their
   subscriptions and special uses, and the operations on names (CREATE,
   DELETE, RENAME, SUBSCRIBE).

   Names given to these functions are UTF-8 (mailbox-name.h); they are
   normalized and checked again here, so no caller can reach outside the
   root. Errors: functions return 0 or -1 with *error_r (a static string
   or one valid until the next call) and *code_r telling what went wrong.

   A listing is a snapshot read by one directory scan (one stat per
   folder); it owns its nodes and is freed with mailbox_list_free(). */

#include "mailbox-name.h"

/* subscriptions: more than this many bytes is treated as corrupt. */
#define MAILBOX_SUBSCRIPTIONS_MAX_SIZE (1024 * 1024)
#define MAILBOX_SUBSCRIPTIONS_FILE "subscriptions"
/* The last UIDVALIDITY handed out by CREATE or RENAME INBOX, so a
   mailbox re-created within the same second gets a new one. */
#define MAILBOX_UIDVALIDITY_FILE "moat.uidvalidity"
/* More folders than this in one root are not listed (a runaway client
   creating folders must not make every LIST unbounded). */
#define MAILBOX_LIST_MAX_NODES 100000

enum mailbox_list_node_flags {
	/* A Maildir folder (has cur/): can be selected. */
	MAILBOX_NODE_SELECTABLE = 0x01,
	/* A folder directory without cur/: \Noselect (a deleted parent). */
	MAILBOX_NODE_NOSELECT = 0x02,
	MAILBOX_NODE_SUBSCRIBED = 0x04,
	/* Some descendant is SELECTABLE or NOSELECT. */
	MAILBOX_NODE_CHILDREN = 0x08,
};
#define MAILBOX_NODE_EXISTS (MAILBOX_NODE_SELECTABLE | MAILBOX_NODE_NOSELECT)

enum mailbox_special_use {
	MAILBOX_SPECIAL_NONE = 0,
	MAILBOX_SPECIAL_DRAFTS = 0x01,
	MAILBOX_SPECIAL_SENT = 0x02,
	MAILBOX_SPECIAL_TRASH = 0x04,
	MAILBOX_SPECIAL_JUNK = 0x08,
	MAILBOX_SPECIAL_ARCHIVE = 0x10,
};
#define MAILBOX_SPECIAL_COUNT 5

/* The special-use folders (RFC 6154), created at login. name[i] is the
   folder of use 1 << i (Drafts, Sent, Trash, Junk, Archive): normalized
   UTF-8 names, NULL or "" for none. */
struct mailbox_special_names {
	const char *name[MAILBOX_SPECIAL_COUNT];
};
/* Drafts, Sent, Trash, Junk, Archive. */
extern const struct mailbox_special_names mailbox_special_defaults;

enum mailbox_list_error {
	MAILBOX_LIST_ERR_NONE = 0,
	MAILBOX_LIST_ERR_INVALID,      /* bad name: CANNOT */
	MAILBOX_LIST_ERR_LIMIT,        /* name too long: LIMIT */
	MAILBOX_LIST_ERR_EXISTS,       /* ALREADYEXISTS */
	MAILBOX_LIST_ERR_NOTFOUND,     /* NONEXISTENT */
	MAILBOX_LIST_ERR_CANNOT,       /* not allowed (INBOX, into itself) */
	MAILBOX_LIST_ERR_HASCHILDREN,  /* \Noselect with children */
	MAILBOX_LIST_ERR_INTERNAL,     /* I/O error: logged */
};

struct mailbox_list_node {
	const char *name;              /* normalized UTF-8 */
	enum mailbox_list_node_flags flags;
	enum mailbox_special_use special;
};

struct mailbox_list;

/* Scan the root. Every existing folder, INBOX, every subscribed name
   and every ancestor of those is a node (an ancestor or a subscription
   that does not exist has neither SELECTABLE nor NOSELECT). Nodes are
   sorted so that a node's descendants follow it directly (INBOX first,
   then by bytes with "/" lowest). Returns 0 or -1. */
int mailbox_list_read(const char *root,
		      const struct mailbox_special_names *specials,
		      struct mailbox_list **list_r, const char **error_r);
void mailbox_list_free(struct mailbox_list **list);
unsigned int mailbox_list_count(const struct mailbox_list *list);
const struct mailbox_list_node *
mailbox_list_get(const struct mailbox_list *list, unsigned int idx);
/* The node of a normalized name, or NULL. */
const struct mailbox_list_node *
mailbox_list_lookup(const struct mailbox_list *list, const char *name);

/* The special use of a normalized name; names may be NULL (none). */
enum mailbox_special_use
mailbox_special_use_of(const struct mailbox_special_names *names,
		       const char *name);
/* "\\Drafts" etc. for one use bit; NULL for none. */
const char *mailbox_special_use_attr(enum mailbox_special_use use);

/* CREATE: creates missing parents as mailboxes too. A \Noselect folder
   becomes selectable. */
int mailbox_list_create(const char *root, const char *name,
			enum mailbox_list_error *code_r, const char **error_r);
/* DELETE (RFC 9051 6.3.5): INBOX can't be deleted. A mailbox with
   children loses its messages and becomes \Noselect; a \Noselect one
   with children is refused (HASCHILDREN); else the folder is removed. */
int mailbox_list_delete(const char *root, const char *name,
			enum mailbox_list_error *code_r, const char **error_r);
/* RENAME (RFC 9051 6.3.6): children move along; renaming INBOX moves its
   messages to the new mailbox and leaves INBOX empty (its children stay).
   Missing parents of the new name are created. */
int mailbox_list_rename(const char *root, const char *oldname,
			const char *newname,
			enum mailbox_list_error *code_r, const char **error_r);
/* Add or remove name in the subscriptions file (no existence check).
   Returns 0 also when nothing changed. */
int mailbox_list_subscribe(const char *root, const char *name, bool set,
			   enum mailbox_list_error *code_r,
			   const char **error_r);
/* Whether the normalized name is in the subscriptions file (existing or
   not), from the process's memo of the file: a stat per call while the
   file is unchanged. False if it cannot be read. */
bool mailbox_list_is_subscribed(const char *root, const char *name);
/* For mailbox_open(): whether name is a selectable folder (INBOX always
   is), with its normalized name and path. Invalid names are not found. */
int mailbox_list_find_folder(const char *root, const char *name,
			     char norm_r[MAILBOX_NAME_MAX + 1],
			     char path_r[PATH_MAX]);
/* Create and subscribe the special-use folders that are missing, and
   the root itself. Returns 0 or -1. */
int mailbox_list_autocreate(const char *root,
			    const struct mailbox_special_names *specials,
			    const char **error_r);

#endif
