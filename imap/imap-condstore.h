#ifndef IMAP_CONDSTORE_H
#define IMAP_CONDSTORE_H
/* CONDSTORE and QRESYNC (RFC 7162): the session's state, modseq values,
   and VANISHED responses (doc/condstore.md). */

#include "imap-client.h"
#include "imap-seqset.h"
#include "mailbox-uidset.h"

/* mod-sequence-value: 1 .. 2^63-1 (RFC 7162 7) */
#define IMAP_MODSEQ_MAX 9223372036854775807ULL
/* A VANISHED line is cut into several at about this length (RFC 7162
   4 asks clients for lines of about 8 KiB; we answer in kind). */
#define IMAP_VANISHED_LINE_MAX 8192

/* An atom of digits within mod-sequence-value (allow_zero: valzer). */
bool imap_arg_get_modseq(const struct imap_arg *arg, bool allow_zero,
			 uint64_t *modseq_r);
/* A CONDSTORE enabling command (RFC 7162 3.1): from now on every FETCH
   update has UID and MODSEQ; the first one with a mailbox selected says
   its HIGHESTMODSEQ. */
void imap_condstore_enable(struct client *client);
/* "* OK [HIGHESTMODSEQ n]" of the selected mailbox, n being what the
   session reported everything up to. */
void imap_send_highestmodseq(struct client *client);

/* Sort ranges (of UIDs, from a parsed set) and merge them, in place. */
void imap_uid_ranges_normalize(struct seq_range *ranges, unsigned int *count);

/* Sending "* VANISHED (EARLIER) ..." (RFC 7162 3.2.5, 3.2.6): for the
   UIDs of known (sorted, merged) that were expunged after since, or, when
   the history does not reach back so far, every UID of known that is not
   in the mailbox, above what the sequence match data proves the client
   knows. Sent in lines of IMAP_VANISHED_LINE_MAX as output room allows. */
struct imap_vanished {
	struct client *client;
	const struct seq_range *known;
	unsigned int known_count;
	/* with the history: the expunged UIDs (sorted, merged) */
	struct uidset set;
	bool exact;
	/* position: the next range of set / of known, and uid in it */
	unsigned int pos;
	uint32_t next_uid;
	buffer_t line;
	bool failed;
};

/* mseqs/muids: the QRESYNC seq-match data as parsed (mseq_count 0 for
   none). known must stay valid until deinit. Returns 0, or -1 on an I/O
   error (logged). */
int imap_vanished_init(struct imap_vanished *v, struct client *client,
		       uint64_t since, const struct seq_range *known,
		       unsigned int known_count, const struct seq_range *mseqs,
		       unsigned int mseq_count, const struct seq_range *muids,
		       unsigned int muid_count);
/* Returns true when everything was sent. */
bool imap_vanished_send(struct imap_vanished *v);
void imap_vanished_deinit(struct imap_vanished *v);

#endif
