#ifndef IMAP_THREAD_CACHE_H
#define IMAP_THREAD_CACHE_H
/* The last THREAD answer of the user's imap process, for the next THREAD
   of the same folder in the same state: clients (webmail above all) send
   the same THREAD at every refresh of a big folder, and the answer only
   changes when the folder does.

   The key is what the answer depends on: the folder (name, UIDVALIDITY),
   the view's state (HIGHESTMODSEQ, message count and numbering stamp:
   every append, flag change and expunge raises the modseq, and two
   views with the same three number their messages alike, see
   mailbox_get_numbering_stamp()), the algorithm, UID or not, and the
   search program. Only programs whose answer follows from
   that state are keyed (imap_thread_cache_program()): flag keys and ALL,
   nothing that depends on the session (\Recent, $) or on the clock.
   One answer is kept, at most imap_thread_cache_size bytes. */

#include "buffer.h"
#include "imap-parser.h"
#include "imap-thread.h"

#include <stdbool.h>
#include <stdint.h>

struct imap_thread_cache_key {
	const char *mailbox;          /* the folder's name */
	uint32_t uidvalidity;
	uint64_t highest_modseq;
	uint32_t count;
	uint64_t numbering;           /* mailbox_get_numbering_stamp() */
	enum imap_thread_alg alg;
	bool uid;
	const char *program;          /* imap_thread_cache_program() */
};

/* A kept answer: "* THREAD ...\r\n". Referenced while a command sends it. */
struct imap_thread_answer {
	int refcount;
	buffer_t text;
};

/* 0 keeps none. */
void imap_thread_cache_init(size_t max_size);
void imap_thread_cache_deinit(void);
size_t imap_thread_cache_max_size(void);

/* The search program args (up to IMAP_ARG_EOL) as a key, in out: true if
   it can be keyed at all. */
bool imap_thread_cache_program(const struct imap_arg *args, buffer_t *out);

/* The answer kept for key, referenced (imap_thread_answer_unref()), or
   NULL. */
struct imap_thread_answer *
imap_thread_cache_lookup(const struct imap_thread_cache_key *key);
/* Keep text as the answer for key (replacing the one kept). */
void imap_thread_cache_store(const struct imap_thread_cache_key *key,
			     const void *text, size_t len);
void imap_thread_answer_unref(struct imap_thread_answer **answer);

#endif
