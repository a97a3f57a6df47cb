#ifndef IMAP_FETCH_NOW_H
#define IMAP_FETCH_NOW_H
/* A FETCH the server runs on its own (NOTIFY's MessageNew fetch-atts
   during IDLE, UPDATE's fetch-atts of SEARCH and SORT: RFC 5465 5.2, 7)
   where nothing else may come between its responses and what follows:
   it runs to its end at once, with no tag and no tagged reply, while
   the client's command in progress (if any) waits. By sequence numbers,
   so that the sync at its end reports no expunge. */

#include "imap-client.h"

/* The longest sequence set imap_fetch_now() takes (a longer one goes
   in several FETCHes). */
#define IMAP_FETCH_NOW_SET_MAX 8192

/* An untagged internal FETCH command of args (after "FETCH") in its own
   pool (pool_name), for client_command_run_internal() or to run at once
   (the caller unrefs cmd->pool). */
struct client_command *
imap_fetch_internal_command(struct client *client, const struct imap_arg *args,
			    const char *pool_name);

/* Run the parsed arguments after "FETCH" (args[0] the sequence set).
   Returns false if the FETCH could not be written whole (the output
   buffer filled; what it wrote cannot be taken back: the caller ends
   the session). */
bool imap_fetch_now_args(struct client *client, const struct imap_arg *args);
/* "FETCH seqset atts" (atts a list checked by imap_notify_fetch_atts()).
   Returns as imap_fetch_now_args(). */
bool imap_fetch_now(struct client *client, const char *seqset,
		    const char *atts);

#endif
