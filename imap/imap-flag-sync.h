#ifndef IMAP_FLAG_SYNC_H
#define IMAP_FLAG_SYNC_H
/* One sync for the STOREs of all the user's sessions in one loop turn.

   A batch of pipelined commands (client_handle_input()) commits its
   STOREs without the log's fdatasync and holds their OKs corked. At
   the batch's end the session waits here instead of syncing: when the
   loop has run every session that was ready in this turn, one
   fdatasync per log file (the sessions of one folder share the file)
   makes all their changes durable, and then each session's replies
   leave (client_batch_finish()). Ten sessions of one user, each with
   one STORE in flight, so cost about one sync where they cost ten.
   The sync runs on the loop: nothing else of the user's runs during
   it, and no reply leaves before it. */

struct client;

/* client's batch ended with flag changes not yet durable: its output
   stays corked, its input waits, until the sync of this turn. */
void imap_flag_sync_wait(struct client *client);
/* client goes away (or syncs by itself) before the turn's sync. */
void imap_flag_sync_cancel(struct client *client);

#endif
