#ifndef IMAP_SEARCH_H
#define IMAP_SEARCH_H
/* SEARCHRES (RFC 5182): the result a SEARCH RETURN (SAVE) keeps for the
   session, as UIDs, so "$" means the same messages however sequence
   numbers move. It is forgotten when the mailbox is closed. Commands that
   take a sequence set accept "$" through imap_search_seqset(). */

#include "imap-common.h"
#include "imap-seqset.h"
#include "mail-search.h"

struct client_command;

/* Replace the saved result (sorted, merged UID ranges; count may be 0). */
void imap_search_saved_set(struct client *client,
			   const struct mail_search_range *uids,
			   unsigned int count);
/* Forget it (UNSELECT, CLOSE, SELECT, logout; a failed SAVE). */
void imap_search_saved_clear(struct client *client);
/* What "$" means now (the empty set when nothing was saved). The
   pointer is valid until the next set or clear. */
const struct mail_search_saved *imap_search_saved_get(struct client *client);

/* ESEARCH (RFC 4731) and ESORT (RFC 5267) result options. */
enum imap_search_return {
	IMAP_SEARCH_RETURN_MIN = 0x01,
	IMAP_SEARCH_RETURN_MAX = 0x02,
	IMAP_SEARCH_RETURN_ALL = 0x04,
	IMAP_SEARCH_RETURN_COUNT = 0x08,
	IMAP_SEARCH_RETURN_SAVE = 0x10,
	IMAP_SEARCH_RETURN_PARTIAL = 0x20,   /* RFC 9394 */
	/* RFC 5267 4.2, 4.3: a hint (ignored), and keep the result
	   updated (imap-context.h) */
	IMAP_SEARCH_RETURN_CONTEXT = 0x40,
	IMAP_SEARCH_RETURN_UPDATE = 0x80,
};
/* The options that ask for result data. */
#define IMAP_SEARCH_RETURN_DATA \
	(IMAP_SEARCH_RETURN_MIN | IMAP_SEARCH_RETURN_MAX | \
	 IMAP_SEARCH_RETURN_ALL | IMAP_SEARCH_RETURN_COUNT | \
	 IMAP_SEARCH_RETURN_PARTIAL)

/* RFC 9394 partial-range: results lo..hi (1-based, lo <= hi) counted
   from the first result, or from the last one (from_end: -lo:-hi). */
struct imap_search_partial {
	bool from_end;
	uint32_t lo, hi;
};
/* Parse "lo:hi" or "-lo:-hi" (either order, no "*"). */
bool imap_search_partial_parse(const char *str,
			       struct imap_search_partial *partial_r);
/* The results a partial range selects out of total, as 0-based
   positions first..last in result order; false if none (NIL). */
bool imap_search_partial_window(const struct imap_search_partial *partial,
				uint32_t total, uint32_t *first_r,
				uint32_t *last_r);
/* Append " PARTIAL (<range> " (the range as requested, low first). */
int imap_search_partial_head(const struct imap_search_partial *partial,
			     buffer_t *out);

/* Parse "RETURN (options)" at *args, if there, and step past it: sets
   *extended_r (the answer is ESEARCH) and *ret_r (and *partial_r for
   PARTIAL); "RETURN ()" is RETURN (ALL), and so is "RETURN (CONTEXT)".
   "UPDATE (fetch-att ...)" (RFC 5465 7) sets *update_atts_r to the list,
   for the caller to check (imap_notify_fetch_atts()); else it is left
   alone. Without RETURN nothing changes. Returns false for a bad option
   list (answer BAD): an unknown option, PARTIAL twice or with ALL (RFC
   9394 3.1), UPDATE with a list after another UPDATE. */
bool imap_search_parse_return(const struct imap_arg **args, bool *extended_r,
			      enum imap_search_return *ret_r,
			      struct imap_search_partial *partial_r,
			      const struct imap_arg **update_atts_r);

/* A command's sequence-set argument ("$" included) as sorted, merged
   sequence ranges of the selected mailbox (from cmd->pool): numbers
   are UIDs when cmd->uid. Returns 0, or -1 on a syntax error or a
   sequence number past the last message (answer BAD). "$" is never an
   error: messages expunged since it was saved are simply absent. */
int imap_search_seqset(struct client_command *cmd, const char *str,
		       struct seq_range **ranges_r, unsigned int *count_r);

#endif
