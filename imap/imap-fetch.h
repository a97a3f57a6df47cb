#ifndef IMAP_FETCH_H
#define IMAP_FETCH_H
/* FETCH answers, written in slices: a big answer goes out as the client
   reads it (the command waits for the output to drain), and message
   bodies are streamed from their files in chunks. */

#include "imap-client.h"
#include "imap-seqset.h"
#include "mail-crlf.h"
#include "imap-fetch-body.h"
#include "imap-fetch-cache.h"
#include "imap-condstore.h"
#include "mailbox-objectid.h"
#include "message-parser.h"

/* The items of one FETCH; more than this is a client error. */
#define IMAP_FETCH_MAX_ITEMS 256
/* Bytes of a body read and sent per step. */
#define IMAP_FETCH_BODY_CHUNK (32 * 1024)
/* HEADER.FIELDS items of one FETCH answered from the cache
   (imap-fetch-hdr.h); later ones read the file. */
#define IMAP_FETCH_HDR_ITEMS 4
/* Messages per slice before other clients get their turn. */
#define IMAP_FETCH_MSGS_PER_SLICE 500
/* Messages whose modseq is looked at (CHANGEDSINCE) per slice. */
#define IMAP_FETCH_SCANS_PER_SLICE 50000

enum imap_fetch_item_type {
	IMAP_FETCH_UID,
	IMAP_FETCH_FLAGS,
	IMAP_FETCH_RFC822_SIZE,
	IMAP_FETCH_INTERNALDATE,
	IMAP_FETCH_SAVEDATE,      /* RFC 8514 */
	IMAP_FETCH_BODY,          /* BODY[...], BINARY[...], RFC822[.*] */
	IMAP_FETCH_BINARY_SIZE,   /* BINARY.SIZE[part] */
	IMAP_FETCH_ENVELOPE,
	IMAP_FETCH_BODYSTRUCTURE, /* also BODY (not extended) */
	IMAP_FETCH_MODSEQ,        /* RFC 7162 3.1.4.2 */
	IMAP_FETCH_PREVIEW,       /* RFC 8970 */
	IMAP_FETCH_EMAILID,       /* RFC 8474 5.3 */
	IMAP_FETCH_THREADID,
};

struct imap_fetch_item {
	enum imap_fetch_item_type type;
	const char *name;         /* in the reply: "BODY[]<10>", "RFC822" */
	bool partial;
	uint64_t start, count;
	/* BODY, BINARY_SIZE: which section (imap-fetch-body.h) */
	struct imap_section section;
	bool extended;            /* BODYSTRUCTURE rather than BODY */
	bool lazy;                /* PREVIEW (LAZY) */
};

struct imap_fetch_ctx {
	struct client_command *cmd;
	struct mailbox *box;
	/* sized for what the command can ask (cmd-fetch.c), so a small
	   FETCH does not allocate and clear room for the maximum */
	struct imap_fetch_item *items;
	unsigned int item_count, item_cap;
	bool set_seen;            /* a BODY[] without PEEK or RFC822 */
	bool seen_changed;        /* set_seen set some \Seen (imap-notify.h) */
	bool flags_requested;
	bool need_structure;      /* some item needs the part tree */
	/* where message hdr_size_seq's header ends, when its sections need
	   no more (imap_section_header_only()): from the cache or a parse */
	uint32_t hdr_size_seq;
	struct message_size hdr_size;
	unsigned int need_texts;  /* bit per enum imap_msg_text */
	bool unknown_cte;         /* a BINARY part had an unknown encoding */
	/* RFC 8474: EMAILID / THREADID asked for; the current message's,
	   got before its response starts; the THREADIDs' header keys are
	   read through thread_keys (created at the first message) */
	bool need_emailid, need_threadid;
	char emailid[MAILBOX_MSG_OBJECTID_LEN + 1];
	char threadid[MAILBOX_MSG_OBJECTID_LEN + 1];
	struct mail_sort_keys_reader *thread_keys;

	struct seq_range *ranges;
	unsigned int range_count, range_idx;
	uint32_t seq;             /* current message, 0 = next range */

	/* the message being written */
	unsigned int item_idx;
	bool in_msg, add_flags;
	int body_fd;
	bool body_fd_borrowed;   /* body_fd is ctx->structure's */
	struct imap_body_stream *body; /* allocated at the first body item */
	uint64_t body_left;
	/* the message's part tree, parsed once per message */
	struct imap_msg_structure structure;
	/* its ENVELOPE/BODY/BODYSTRUCTURE (need_texts), got before the
	   message's response starts: from the cache or the part tree */
	buffer_t msg_texts[IMAP_MSG_TEXT_COUNT];
	/* the message's HEADER.FIELDS composed from the cache: of the
	   first IMAP_FETCH_HDR_ITEMS such items, those with a bit in
	   hdr_hits (got before the message's response starts) */
	buffer_t hdr_texts[IMAP_FETCH_HDR_ITEMS];
	unsigned int hdr_hits;
	/* imap_fetch_counters when the command started (debug line) */
	struct imap_fetch_counters counters_start;
	uint64_t memo_hits_start;       /* imap_text_memo_hits, likewise */
	uint32_t msgs_sent;
	/* text of the current item not yet sent (ENVELOPE, BODYSTRUCTURE
	   and literal announcements), sent as the output drains */
	buffer_t text;
	size_t text_sent;
	bool some_expunged;       /* a message's file was gone */
	bool some_failed;         /* a server error (logged) */

	/* RFC 7162: only messages with a modseq above this (0: all) */
	uint64_t changedsince;
	uint32_t records_looked;  /* messages whose modseq was compared */
	bool narrowed;            /* ranges cut down to the changed runs */
	/* VANISHED (EARLIER) to send before the FETCHes, or NULL */
	struct imap_vanished *vanished;
	/* the tagged OK (SELECT (QRESYNC) ends with its own) */
	const char *done_text;
};

/* SELECT/EXAMINE (QRESYNC): after the status lines, VANISHED (EARLIER)
   and "FETCH (UID FLAGS MODSEQ)" of what changed after since among the
   UIDs known (sorted, merged; NULL: all), then "tag done_text". */
bool imap_fetch_qresync(struct client_command *cmd, uint64_t since,
			struct seq_range *known, unsigned int known_count,
			const struct seq_range *mseqs, unsigned int mseq_count,
			const struct seq_range *muids, unsigned int muid_count,
			const char *done_text);

/* Whether arg is a valid FETCH item list (NOTIFY's MessageNew fetch-atts,
   imap-notify-set.c); allocates from cmd's pool. */
bool imap_fetch_items_check(struct client_command *cmd,
			    const struct imap_arg *arg);

/* Writes as much as fits; returns true when everything was sent (the
   tagged reply included). */
bool imap_fetch_run(struct imap_fetch_ctx *ctx);
void imap_fetch_deinit(struct imap_fetch_ctx *ctx);

#endif
