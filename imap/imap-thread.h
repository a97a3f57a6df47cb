#ifndef IMAP_THREAD_H
#define IMAP_THREAD_H
/* The THREAD algorithms of RFC 5256 (ORDEREDSUBJECT, REFERENCES) over
   messages given one by one in mailbox order, and the writer of the
   THREAD response. Pure: no mailbox, no I/O (tests/unit/test-imap-thread).

   Message-IDs and base subjects come as 64-bit hashes (mail-sort-keys.h
   explains why that is safe): a message costs 24 bytes here, plus a
   16-byte node and ~20 bytes of id table per message or referenced id
   while messages are added; its references are only read while it is
   added. These arrays (sized from the message count up front) are the
   floor for threading: every message must take part.

   Memory: O(messages + distinct references) for one command, freed by
   imap_thread_deinit(); nothing survives the command. */

#include "buffer.h"

#include <stdint.h>

enum imap_thread_alg {
	IMAP_THREAD_ORDEREDSUBJECT,
	IMAP_THREAD_REFERENCES,
};

struct imap_thread_msg {
	uint32_t num;           /* written in the answer: seq or UID */
	int64_t date;           /* sent date (RFC 5256 2.2), UTC seconds */
	uint64_t msgid;         /* hash of the Message-ID; 0 = none */
	const uint64_t *refs;   /* references, oldest first (only read
				   during imap_thread_add()) */
	unsigned int ref_count;
	uint64_t subject;       /* hash of the base subject; 0 = empty */
	bool reply;             /* the subject is a reply or forward */
};

struct imap_thread;

/* msg_count: how many messages will be added (arrays are sized for
   them; more are allowed). */
struct imap_thread *imap_thread_init(enum imap_thread_alg alg,
				     unsigned int msg_count);
void imap_thread_deinit(struct imap_thread **thread);
/* Add the next message (in mailbox order: the order breaks date ties). */
void imap_thread_add(struct imap_thread *thread,
		     const struct imap_thread_msg *msg);
/* Build the threads; after this only imap_thread_write() is allowed. */
void imap_thread_finish(struct imap_thread *thread);
/* Append the next part of the answer's thread lists (what follows
   "* THREAD") to out, stopping before out->used passes max_used.
   Returns true when everything was written. */
bool imap_thread_write(struct imap_thread *thread, buffer_t *out,
		       size_t max_used);

#endif
