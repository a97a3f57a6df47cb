#ifndef IMAP_PREVIEW_LAZY_H
#define IMAP_PREVIEW_LAZY_H
/* PREVIEW (LAZY) (RFC 8970 4.1): a preview the cache did not have is
   answered NIL at once and computed afterwards, so that a later FETCH
   finds it. The messages wait per session as UID ranges (a FETCH 1:*
   is one range), at most IMAP_PREVIEW_LAZY_RANGES_MAX of them: beyond
   that a miss is not queued (the next LAZY miss queues it again). A
   timer computes IMAP_PREVIEW_LAZY_PER_SLICE previews at a time, only
   while the session runs no command (or one that waits for input, as
   IDLE does), so the work never delays an answer by more than one
   slice; each slice writes what it computed to
   the mail cache. The queue is forgotten with the mailbox. */

#include "imap-common.h"

#define IMAP_PREVIEW_LAZY_RANGES_MAX 1024
/* A preview reads at most 64 KiB of one part (IMAP_PREVIEW_INPUT_HTML):
   a slice is a few milliseconds. */
#define IMAP_PREVIEW_LAZY_PER_SLICE 8
/* Between slices, and while a command runs: the loop serves input and
   the user's other sessions meanwhile. */
#define IMAP_PREVIEW_LAZY_DELAY_MSECS 20

struct client;

/* seq of the selected mailbox had no preview in the cache. */
void imap_preview_lazy_queue(struct client *client, uint32_t seq);
/* Forget the queue (the mailbox is closed, the client goes). */
void imap_preview_lazy_clear(struct client *client);

#endif
