#ifndef IMAP_LIST_H
#define IMAP_LIST_H
/* The LIST and LSUB engine: matches the user's mailbox list against the
   patterns and sends the untagged replies (RFC 9051 6.3.9, RFC 5258
   LIST-EXTENDED, RFC 3348 CHILDREN, RFC 6154 SPECIAL-USE, RFC 5819
   LIST-STATUS). */

#include "imap-client.h"
#include "imap-status.h"

/* Canonical patterns per command (more is BAD). */
#define IMAP_LIST_PATTERNS_MAX 32

enum imap_list_select {
	IMAP_LIST_SEL_SUBSCRIBED = 0x01,
	IMAP_LIST_SEL_REMOTE = 0x02,
	IMAP_LIST_SEL_RECURSIVEMATCH = 0x04,
	IMAP_LIST_SEL_SPECIALUSE = 0x08,
};

enum imap_list_return {
	IMAP_LIST_RET_SUBSCRIBED = 0x01,
	IMAP_LIST_RET_CHILDREN = 0x02,
	IMAP_LIST_RET_SPECIALUSE = 0x04,
	IMAP_LIST_RET_STATUS = 0x08,
};

struct imap_list_request {
	enum imap_list_select select;
	enum imap_list_return ret;
	enum imap_status_items status_items;
	/* Extended syntax was used: \NonExistent and CHILDINFO may be sent. */
	bool extended;
	bool lsub;
	/* The patterns are UTF-8 on the wire (client_utf8_names()), not
	   modified UTF-7; set before imap_list_add_pattern(). */
	bool utf8;
	/* UTF-8 canonical patterns (reference + pattern); a pattern that was
	   not valid modified UTF-7 is left out (it matches nothing). */
	const char *patterns[IMAP_LIST_PATTERNS_MAX];
	unsigned int pattern_count;
};

/* Add reference + pattern (wire forms) to req, allocated from pool.
   Returns false if there are too many patterns. */
bool imap_list_add_pattern(struct imap_list_request *req, pool_t pool,
			   const char *ref, const char *pattern);
/* Whether name matches pattern ("*" anything, "%" anything but "/";
   INBOX in any case). */
bool imap_list_match(const char *pattern, const char *name);
/* Send the LIST (or LSUB) and STATUS replies, then the tagged OK (or NO
   when the list could not be read). Runs in slices: returns true when
   done, false when it waits for the client to read (cmd->func is set to
   continue). req is copied. */
bool imap_list_run(struct client_command *cmd,
		   const struct imap_list_request *req);

/* "* LIST (<attributes>) "/" <name>" of one normalized name, as a plain
   LIST would show it (RFC 9051 6.3.2: IMAP4rev2 SELECT sends it). */
void imap_list_send_mailbox(struct client *client, pool_t pool,
			    const char *name);

/* The unsolicited LIST of a NOTIFY event (RFC 5465 5.4, 5.5): extended
   attributes (\NonExistent, \Subscribed), and OLDNAME after a rename
   (oldname != NULL). */
void imap_list_send_notify(struct client *client, pool_t pool,
			   const char *name, const char *oldname);

#endif
