#ifndef IMAP_DELIVER_H
#define IMAP_DELIVER_H
/* Mail delivery into this user's mailboxes, for lmtp (moat-deliver
   protocol, doc/architecture.md). Master hands the process one end of a
   socketpair per recipient (DELIVER-CONN); lmtp, holding the other end,
   sends
     DELIVER <id> <mailbox> <return-path> <delivered-to> +fd
   where fd is a memfd with the message as the MTA sent it (dot-unstuffed)
   and mailbox is "" for INBOX or a folder name that falls back to INBOX
   when there is no such folder. The answer is
     OK <id> <uid>                         saved, fsynced and indexed
     FAIL <id> <reply code> <enhanced code> <text>
   A DELIVER is staged in tmp/ when it is read and then waits in the
   user's group commit with the APPENDs of the user's sessions
   (imap-commit.h); its OK is sent once the batch is on disk.
   The process being the only writer of its user's index, sessions in IDLE
   hear of the new message at once and its cache is filled once.

   A delivery has an id (a digest of folder, envelope and message) that its
   file's name carries (mailbox_append_begin_delivery()). When the process
   died after saving but before answering, the MTA got a 4xx and tries
   again: the id finds the saved message and the answer is OK with its
   uid, so nothing is delivered twice. */

#include "imap-common.h"

/* The message size a DELIVER may carry: message_size_limit (0 = none)
   within this hard bound, so the process's work stays bounded. */
#define IMAP_DELIVER_SIZE_MAX (1024ULL * 1024 * 1024)
/* Delivery connections at once (each is one recipient of one
   transaction): lmtp's client_limit times its recipients fit well. */
#define IMAP_DELIVER_CONNS_MAX 256
/* Deliveries staged and waiting for their group commit at once: lmtp
   sends one per connection at a time, so this is only reached by a
   misbehaving peer (the rest get 451). */
#define IMAP_DELIVER_PENDING_MAX (2 * IMAP_DELIVER_CONNS_MAX)

/* Takes the socket; refuses (closes it) beyond IMAP_DELIVER_CONNS_MAX. */
void imap_deliver_conn_create(struct imap_user *user, int fd);
/* Closes every delivery connection (process shutdown). */
void imap_deliver_conns_destroy_all(struct imap_user *user);

#endif
