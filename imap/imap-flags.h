#ifndef IMAP_FLAGS_H
#define IMAP_FLAGS_H
/* Flags and keywords in IMAP syntax: parsing flag lists (STORE, APPEND),
   writing a message's flags, and the FLAGS / PERMANENTFLAGS lists. */

#include "imap-client.h"

/* "(" + 6 system flags + 26 keywords of up to 128 bytes + ")": bounded
   by the keyword limits of the storage. */
#define IMAP_FLAGS_STR_MAX 4096

struct imap_flag_list {
	enum mail_flags flags;             /* system flags named */
	const char *keywords[MAILBOX_KEYWORDS_MAX];
	unsigned int keyword_count;        /* distinct names */
	bool too_many_keywords;            /* more than the limit named */
};

/* Parse a flag list: a parenthesized list of flags, or (for STORE) the
   remaining atoms of the line when args is not a list. \Recent and
   unknown system flags, \*, and invalid keyword atoms are errors
   (*error_r is the text for BAD). Strings are valid while args are. */
int imap_flag_list_parse(const struct imap_arg *args, bool allow_bare,
			 struct imap_flag_list *list_r, const char **error_r);

/* Turn the keyword names into a bitmask of box, defining missing ones
   when create is set. Returns 1, 0 if a name could not be defined (no
   letter left: NO [LIMIT]), -1 on error. Names not defined are left out
   when !create. */
int imap_flag_list_keywords(struct mailbox *box,
			    const struct imap_flag_list *list, bool create,
			    uint32_t *keywords_r, const char **error_r);

/* "(\Seen ... kw1 kw2)" of message seq, \Recent included unless
   !recent (IMAP4rev2 has no \Recent). Returns -1 if buf is full. */
int imap_write_msg_flags(buffer_t *buf, struct mailbox *box, uint32_t seq,
			 bool recent);

/* "* FLAGS (...)" and "* OK [PERMANENTFLAGS (...)]" of the selected
   mailbox with its keywords; remembers which keywords the client knows. */
void imap_send_flags_list(struct client *client);
/* Re-read the keyword names of the selected mailbox and send the lists
   again if they changed (before any FETCH that shows a new keyword). */
void imap_sync_keywords(struct client *client);

#endif
