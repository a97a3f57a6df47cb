#ifndef IMAP_CONTEXT_H
#define IMAP_CONTEXT_H
/* CONTEXT=SEARCH and CONTEXT=SORT (RFC 5267 4.3): results kept up to
   date. A SEARCH or SORT (or UID ...) with RETURN (UPDATE) leaves an
   update context behind: its search program and its current result.
   When the mailbox changes (new messages, flag changes by any session,
   expunges) only the changed messages are judged again, and the
   differences go to the client: for SEARCH as
   "* ESEARCH (TAG "t") [UID] REMOVEFROM (0 set) ADDTO (0 set)" (context
   position 0: mailbox order), for SORT as position/number pairs in
   sort order. Updates stop at CANCELUPDATE or when the mailbox is
   closed.

   Memory per context: its tag and program, and the result as UID ranges
   (8 bytes per run of consecutive UIDs; it has to be kept, since an
   expunged message can no longer be judged and a flag change has to be
   told from the old state); a SORT context also the result in sort
   order (4 bytes per match). Per client: the UIDs whose flags changed
   since the last report (as ranges). A message's judgement allocates
   what mail_search_match() needs, only while updates are computed. */

#include "imap-common.h"
#include "imap-seqset.h"
#include "mail-search.h"
#include "imap-sort.h"

struct client;

/* Whether tag names an update context of the client (RFC 5267 4.3:
   another UPDATE with that tag is a BAD). */
bool imap_context_exists(struct client *client, const char *tag);
/* Whether another context fits in imap_max_update_contexts. */
bool imap_context_can_add(struct client *client);
/* Why an UPDATE cannot be kept: NULL when it can, else the text of the
   untagged NO [NOUPDATE "tag"] (the limit; program: for other reasons
   to come, none today). */
const char *imap_context_refusal(struct client *client,
				 const struct mail_search_program *program);
/* If imap_context_refusal() refuses cmd's UPDATE: send its
   "* NO [NOUPDATE "tag"] why" and return true. */
bool imap_context_refuse(struct client_command *cmd,
			 const struct mail_search_program *program);
/* Start updates for tag (UIDs if uid) of program, which lives in *pool:
   the context takes the pool over and sets *pool to NULL; its message
   sequence sets become the UIDs they name now
   (mail_search_program_seqs_to_uids()). fetch_atts:
   NULL, or the fetch-atts of "UPDATE (...)" (RFC 5465 7) as
   imap_notify_fetch_atts() wrote them: new messages that join the
   result get "* n FETCH (...)" after their EXISTS and before the
   ESEARCH that adds them. matches are the current result as sorted,
   merged sequence ranges of the selected mailbox. The caller checked
   imap_context_refuse(). */
void imap_context_add(struct client *client, const char *tag, bool uid,
		      pool_t *pool, struct mail_search_program *program,
		      const char *fetch_atts, const struct seq_range *matches,
		      unsigned int count);
/* The same for UPDATE of SORT (CONTEXT=SORT): sorted are the matches
   as sequence numbers in sort order by crit. */
void imap_context_add_sort(struct client *client, const char *tag, bool uid,
			   pool_t *pool, struct mail_search_program *program,
			   const char *fetch_atts,
			   const struct imap_sort_criterion *crit,
			   unsigned int crit_count, const uint32_t *sorted,
			   unsigned int count);
/* CANCELUPDATE of tag: false if there is no such context. */
bool imap_context_cancel(struct client *client, const char *tag);
/* Forget every context (the mailbox is closed, the client goes). */
void imap_context_clear(struct client *client);

/* ---- hooks of the selected mailbox's sync (imap-sync.c) ---- */

/* seq (uid) is about to be reported expunged: REMOVEFROM goes out
   before the EXPUNGE (RFC 5267 4.3.4). */
void imap_context_expunge(struct client *client, uint32_t seq, uint32_t uid);
/* The flags of seq changed (another session's change after its FETCH,
   or this session's own STORE or \Seen): judged again at the next
   imap_context_sync_end(). */
void imap_context_flags_changed(struct client *client, uint32_t seq);
/* After EXISTS: judge the changed messages and the new ones (those each
   context has not seen yet) and send the updates. A context with
   fetch-atts runs its FETCH here (imap-fetch-now.h); the sync that FETCH
   does at its end leaves what it finds to the next sync end. */
void imap_context_sync_end(struct client *client);

#endif
