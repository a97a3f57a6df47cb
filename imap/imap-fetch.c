/* Writing FETCH answers in slices (imap-fetch.h). */
#include "imap-common.h"
#include "imap-fetch.h"
#include "mail-sort-keys.h"
#include "imap-fetch-hdr.h"
#include "imap-date.h"
#include "imap-sync.h"
#include "imap-notify.h"
#include "imap-flags.h"
#include "imap-envelope.h"
#include "imap-bodystructure.h"
#include "message-parser.h"
#include "imap-preview.h"
#include "imap-uidonly.h"
#include "imap-context.h"
#include "imap-preview-lazy.h"
#include "imap-text-memo.h"

/* One item's text before a literal: "BODY[]<123456789> {123456789}" or
   "INTERNALDATE "...", "FLAGS (...)" with keywords. */
#define FETCH_ITEM_TEXT_MAX (IMAP_FLAGS_STR_MAX + 64)
/* One item's text: an ENVELOPE or BODYSTRUCTURE at most (their writers
   cut there), or a long HEADER.FIELDS section name. */
#define IMAP_FETCH_TEXT_MAX (IMAP_ENVELOPE_OUTPUT_MAX + 1024 * 1024)

/* Done with the section's file: closed unless it is the parsed one,
   which ctx->structure owns. */
static void fetch_body_close(struct imap_fetch_ctx *ctx)
{
	if (ctx->body_fd_borrowed) {
		ctx->body_fd = -1;
		ctx->body_fd_borrowed = false;
	} else {
		i_close_fd(&ctx->body_fd);
	}
}

void imap_fetch_deinit(struct imap_fetch_ctx *ctx)
{
	if (ctx->vanished != NULL) {
		imap_vanished_deinit(ctx->vanished);
		ctx->vanished = NULL;
	}
	fetch_body_close(ctx);
	if (ctx->thread_keys != NULL)
		mail_sort_keys_reader_deinit(&ctx->thread_keys);
	imap_msg_structure_clear(&ctx->structure);
	if (ctx->text.data != NULL)
		buffer_free(&ctx->text);
	for (unsigned int i = 0; i < IMAP_MSG_TEXT_COUNT; i++) {
		if (ctx->msg_texts[i].data != NULL)
			buffer_free(&ctx->msg_texts[i]);
	}
	for (unsigned int i = 0; i < IMAP_FETCH_HDR_ITEMS; i++) {
		if (ctx->hdr_texts[i].data != NULL)
			buffer_free(&ctx->hdr_texts[i]);
	}
}

/* The hdr_texts slot of item, or -1 if the cache does not serve it. */
static int fetch_hdr_slot(const struct imap_fetch_ctx *ctx,
			  const struct imap_fetch_item *item)
{
	int slot = 0;

	if (!imap_fetch_hdr_cacheable(item))
		return -1;
	for (const struct imap_fetch_item *it = ctx->items; it < item; it++) {
		if (imap_fetch_hdr_cacheable(it))
			slot++;
	}
	return slot < IMAP_FETCH_HDR_ITEMS ? slot : -1;
}

/* What the message's sections still need, least first. */
enum fetch_need {
	FETCH_NEED_NOTHING,
	/* where the header ends (imap_section_header_only()): from the
	   cache, else a parse of the header */
	FETCH_NEED_HDR_SIZE,
	/* the header parsed: a HEADER.FIELDS that missed the cache fills
	   it from the parse (imap_fetch_hdr_fill()) */
	FETCH_NEED_HEADER,
	FETCH_NEED_TREE,
};

/* Compose the message's cacheable HEADER.FIELDS items from the cache,
   and say what the other items (and misses) need. */
static enum fetch_need fetch_hdr_from_cache(struct imap_fetch_ctx *ctx)
{
	enum fetch_need need = FETCH_NEED_NOTHING;

	ctx->hdr_hits = 0;
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		const struct imap_fetch_item *item = &ctx->items[i];
		int slot = fetch_hdr_slot(ctx, item);
		enum fetch_need this = FETCH_NEED_TREE;

		if (slot >= 0) {
			buffer_t *buf = &ctx->hdr_texts[slot];
			if (buf->data == NULL)
				buffer_init(buf, IMAP_FETCH_HDR_MAX + 2);
			if (imap_fetch_hdr_lookup(ctx->box, ctx->seq,
						  &item->section, buf) > 0) {
				ctx->hdr_hits |= 1U << slot;
				continue;
			}
			this = FETCH_NEED_HEADER;
		} else if (imap_section_header_only(&item->section)) {
			this = FETCH_NEED_HDR_SIZE;
		}
		if ((item->type == IMAP_FETCH_BODY ||
		     item->type == IMAP_FETCH_BINARY_SIZE) &&
		    imap_section_needs_structure(&item->section) &&
		    this > need)
			need = this;
	}
	/* a BODY or BODYSTRUCTURE the cache may miss parses everything:
	   the sections share that parse */
	if (need != FETCH_NEED_NOTHING &&
	    (ctx->need_texts & ~(1U << IMAP_MSG_TEXT_ENVELOPE)) != 0)
		need = FETCH_NEED_TREE;
	return need;
}

static bool fetch_next_seq(struct imap_fetch_ctx *ctx)
{
	if (ctx->seq != 0 && ctx->seq < ctx->ranges[ctx->range_idx].seq2) {
		ctx->seq++;
		return true;
	}
	if (ctx->seq != 0)
		ctx->range_idx++;
	if (ctx->range_idx >= ctx->range_count)
		return false;
	ctx->seq = ctx->ranges[ctx->range_idx].seq1;
	return true;
}

/* A message (or an item of it) that could not be read: ENOENT means
   it was expunged and its file is gone (another process or program
   removed it; only logged at debug level, the tagged reply says
   EXPUNGEISSUED: RFC 2180 4.1.2); anything else is a server error. */
static void fetch_msg_failed(struct imap_fetch_ctx *ctx, const char *error)
{
	if (errno == ENOENT) {
		i_debug("FETCH %u: %s", ctx->seq, error);
		/* by UID a vanished message is simply not there */
		if (!ctx->cmd->uid)
			ctx->some_expunged = true;
	} else {
		i_error("FETCH %u: %s", ctx->seq, error);
		ctx->some_failed = true;
	}
}

/* Parse the message once for every item that needs its structure, and
   refuse BINARY of an unknown encoding before anything is written. */
static int fetch_msg_structure(struct imap_fetch_ctx *ctx,
			       const char **error_r)
{
	struct imap_body_source src;

	ctx->hdr_size_seq = 0;
	if (!ctx->need_structure)
		return 0;
	/* HEADER.FIELDS from the cache need neither the tree nor the file */
	enum fetch_need need = fetch_hdr_from_cache(ctx);
	if (need == FETCH_NEED_NOTHING)
		return 0;
	/* the message's HEADER and TEXT need only where its header ends:
	   cached once a FETCH asked for them, else the header is parsed
	   (not all of a big message's parts) */
	if (need == FETCH_NEED_HDR_SIZE &&
	    imap_msg_hdr_size_lookup(ctx->box, ctx->seq, &ctx->hdr_size)) {
		ctx->hdr_size_seq = ctx->seq;
		return 0;
	}
	if (need != FETCH_NEED_TREE) {
		if (imap_msg_header_get(&ctx->structure, ctx->box, ctx->seq,
					error_r) < 0)
			return -1;
		ctx->hdr_size = ctx->structure.root->header_size;
		ctx->hdr_size_seq = ctx->seq;
		imap_msg_hdr_size_add(&ctx->structure, ctx->box, ctx->seq);
	} else if (imap_msg_structure_get(&ctx->structure, ctx->box,
					  ctx->seq, error_r) < 0) {
		return -1;
	}
	/* an ENVELOPE this FETCH asks for is cached by fetch_msg_texts() */
	if ((ctx->need_texts & (1U << IMAP_MSG_TEXT_ENVELOPE)) == 0)
		imap_msg_texts_fill(&ctx->structure, ctx->box, ctx->seq);
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		const struct imap_fetch_item *item = &ctx->items[i];
		if ((item->type == IMAP_FETCH_BODY ||
		     item->type == IMAP_FETCH_BINARY_SIZE) &&
		    item->section.binary &&
		    imap_body_source_get(ctx->structure.root, &item->section,
					 0, &src) < 0) {
			ctx->unknown_cte = true;
			return -1;
		}
	}
	return 0;
}

/* ENVELOPE, BODY, BODYSTRUCTURE: from the cache, else from the part
   tree (parsed now if no section needed it). ENVELOPE last: a miss of
   the others parses the whole message, which then serves it too, while
   alone it reads only the header. */
static int fetch_msg_texts(struct imap_fetch_ctx *ctx, const char **error_r)
{
	for (unsigned int i = IMAP_MSG_TEXT_COUNT; i-- > 0; ) {
		if ((ctx->need_texts & (1U << i)) == 0)
			continue;
		buffer_t *buf = &ctx->msg_texts[i];
		if (buf->data == NULL)
			buffer_init(buf, IMAP_ENVELOPE_OUTPUT_MAX);
		buffer_reset(buf);
		if (imap_msg_text_get(&ctx->structure, ctx->box, ctx->seq,
				      (enum imap_msg_text)i, buf, error_r) < 0)
			return -1;
	}
	return 0;
}

/* EMAILID, THREADID (RFC 8474 5.3). An id that cannot be known any more
   is a message that is gone. */
static int fetch_msg_ids(struct imap_fetch_ctx *ctx, const char **error_r)
{
	int ret = 1;

	if (ctx->need_emailid)
		ret = mailbox_msg_emailid(ctx->box, ctx->seq, ctx->emailid,
					  error_r);
	if (ret > 0 && ctx->need_threadid) {
		if (ctx->thread_keys == NULL) {
			ctx->thread_keys =
				mail_sort_keys_reader_init(ctx->box, NULL, 0);
		}
		ret = mailbox_msg_threadid(ctx->thread_keys, ctx->box,
					   ctx->seq, ctx->threadid, error_r);
	}
	if (ret == 0) {
		errno = ENOENT;
		*error_r = "Message was expunged";
	}
	return ret > 0 ? 0 : -1;
}

/* Everything that can fail is checked before the first byte of the
   message's response, so a message that cannot be read is skipped
   whole. A message another session expunged that this one was not told
   of yet is still read (RFC 2180 4.1.1: its file is kept,
   maildir-ghost.h); only its \Seen can no longer change. */
static int fetch_msg_prepare(struct imap_fetch_ctx *ctx)
{
	struct mailbox *box = ctx->box;
	const char *error = "";

	if (fetch_msg_structure(ctx, &error) < 0 ||
	    fetch_msg_texts(ctx, &error) < 0 ||
	    fetch_msg_ids(ctx, &error) < 0) {
		if (!ctx->unknown_cte)
			fetch_msg_failed(ctx, error);
		return -1;
	}
	ctx->add_flags = false;
	if (ctx->set_seen && !mailbox_is_readonly(box) &&
	    !mailbox_msg_is_expunged(box, ctx->seq) &&
	    (mailbox_msg_flags(box, ctx->seq) & MAIL_SEEN) == 0) {
		if (mailbox_msg_change_flags(box, ctx->seq, MAILBOX_FLAGS_ADD,
					     MAIL_SEEN, 0, &error) < 0) {
			/* gone meanwhile: the data is sent all the same */
			if (errno != ENOENT)
				i_error("Setting \\Seen failed: %s", error);
		} else {
			ctx->add_flags = !ctx->flags_requested;
			/* the sync does not report our own change */
			imap_context_flags_changed(ctx->cmd->client, ctx->seq);
			ctx->seen_changed = true;
		}
	}
	return 0;
}

/* Open the item's section for streaming: *size_r bytes follow,
   *has_nul_r asks for a literal8. */
static int fetch_section_open(struct imap_fetch_ctx *ctx,
			      const struct imap_fetch_item *item,
			      uint64_t *size_r, bool *has_nul_r,
			      const char **error_r)
{
	struct mailbox *box = ctx->box;
	const struct message_part *root = NULL;
	struct imap_body_source src;
	uint64_t vsize = 0;
	bool structure = imap_section_needs_structure(&item->section);
	/* the header's end is all this section needs (fetch_msg_structure()
	   found it without the part tree) */
	bool by_hdr = structure && ctx->hdr_size_seq == ctx->seq &&
		imap_section_header_only(&item->section);

	if (structure && !by_hdr)
		root = ctx->structure.root;
	if ((!structure || (by_hdr &&
			    item->section.text == IMAP_SECTION_TEXT)) &&
	    mailbox_msg_vsize(box, ctx->seq, &vsize, error_r) < 0)
		return -1;
	if (by_hdr)
		imap_body_source_header(&ctx->hdr_size, &item->section, vsize,
					&src);
	else if (imap_body_source_get(root, &item->section, vsize, &src) < 0) {
		errno = EINVAL;
		*error_r = "Unknown Content-Transfer-Encoding";
		return -1;
	}
	fetch_body_close(ctx);
	/* the file a parse of this message left open, else open it */
	ctx->body_fd = imap_msg_structure_fd(&ctx->structure, ctx->seq);
	ctx->body_fd_borrowed = ctx->body_fd != -1;
	if (!ctx->body_fd_borrowed)
		ctx->body_fd = imap_fetch_msg_open(box, ctx->seq, error_r);
	if (ctx->body_fd == -1)
		return -1;
	if (ctx->body == NULL)
		ctx->body = p_malloc(ctx->cmd->pool, sizeof(*ctx->body));
	imap_body_stream_init(ctx->body, ctx->body_fd,
			      !mailbox_msg_is_crlf(box, ctx->seq),
			      &item->section, &src);
	if (imap_body_stream_measure(ctx->body, size_r, has_nul_r) < 0) {
		*error_r = "Reading the message failed";
		fetch_body_close(ctx);
		return -1;
	}
	return 0;
}

/* A section composed from the cache: the literal goes with the text. */
static int fetch_body_cached(struct imap_fetch_ctx *ctx,
			     const struct imap_fetch_item *item,
			     const buffer_t *text, buffer_t *buf)
{
	size_t size = text->used;
	size_t start = item->partial ? (size_t)MIN(item->start, size) : 0;

	size -= start;
	if (item->partial)
		size = (size_t)MIN(size, item->count);
	/* a NUL makes it a literal8, as from the file */
	bool literal8 = memchr(text->data + start, '\0', size) != NULL;
	ctx->body_left = 0;
	if (buffer_printf(buf, "%s %s{%llu}\r\n", item->name,
			  literal8 ? "~" : "", (unsigned long long)size) < 0 ||
	    buffer_append(buf, text->data + start, size) < 0)
		return -1;
	return 0;
}

static int fetch_body_open(struct imap_fetch_ctx *ctx,
			   const struct imap_fetch_item *item, buffer_t *buf,
			   const char **error_r)
{
	int slot = fetch_hdr_slot(ctx, item);
	uint64_t size;
	bool has_nul;

	if (slot >= 0 && (ctx->hdr_hits & (1U << slot)) != 0)
		return fetch_body_cached(ctx, item, &ctx->hdr_texts[slot], buf);
	if (fetch_section_open(ctx, item, &size, &has_nul, error_r) < 0)
		return -1;
	/* answered from the file: what it lists is cached for next time */
	if (slot >= 0)
		imap_fetch_hdr_fill(&ctx->structure, ctx->box, ctx->seq,
				    ctx->body_fd, &item->section);
	/* RFC 3516: binary data with NULs goes as literal8; like Dovecot,
	   so does every decoded part, an empty one too */
	enum imap_body_filter filter = ctx->body->src.filter;
	bool literal8 = has_nul || filter == IMAP_BODY_FILTER_BASE64 ||
		filter == IMAP_BODY_FILTER_QP;
	uint64_t start = item->partial ? MIN(item->start, size) : 0;
	size -= start;
	if (item->partial)
		size = MIN(size, item->count);
	if (imap_body_stream_skip(ctx->body, start) < 0) {
		*error_r = "Reading the message failed";
		fetch_body_close(ctx);
		return -1;
	}
	ctx->body_left = size;
	if (size == 0)
		fetch_body_close(ctx);
	return buffer_printf(buf, "%s %s{%llu}\r\n", item->name,
			     literal8 ? "~" : "", (unsigned long long)size);
}

static int fetch_binary_size(struct imap_fetch_ctx *ctx,
			     const struct imap_fetch_item *item, buffer_t *buf,
			     const char **error_r)
{
	uint64_t size;
	bool has_nul;

	if (fetch_section_open(ctx, item, &size, &has_nul, error_r) < 0)
		return -1;
	fetch_body_close(ctx);
	return buffer_printf(buf, "%s %llu", item->name,
			     (unsigned long long)size);
}

static int fetch_structure_text(struct imap_fetch_ctx *ctx,
				const struct imap_fetch_item *item,
				buffer_t *buf)
{
	enum imap_msg_text which = item->type == IMAP_FETCH_ENVELOPE ?
		IMAP_MSG_TEXT_ENVELOPE : item->extended ?
		IMAP_MSG_TEXT_BODYSTRUCTURE : IMAP_MSG_TEXT_BODY;
	const buffer_t *text = &ctx->msg_texts[which];

	/* buf has room for a name and the longest text */
	if (buffer_append_str(buf, item->name) < 0 ||
	    buffer_append_c(buf, ' ') < 0 ||
	    buffer_append(buf, text->data, text->used) < 0)
		return -1;
	return 0;
}

/* Append one item's text; for a body, open it (the data follows).
   Returns -1 with errno and *error_r. */
static int fetch_item_text(struct imap_fetch_ctx *ctx,
			   const struct imap_fetch_item *item, buffer_t *buf,
			   const char **error_r)
{
	struct mailbox *box = ctx->box;
	char date[IMAP_DATETIME_LEN + 1];
	uint64_t size;
	time_t t;

	switch (item->type) {
	case IMAP_FETCH_UID:
		return buffer_printf(buf, "UID %u", mailbox_msg_uid(box, ctx->seq));
	case IMAP_FETCH_FLAGS:
		if (buffer_append_str(buf, "FLAGS ") < 0)
			return -1;
		return imap_write_msg_flags(buf, box, ctx->seq,
					    !ctx->cmd->client->imap4rev2);
	case IMAP_FETCH_RFC822_SIZE:
		if (mailbox_msg_vsize(box, ctx->seq, &size, error_r) < 0)
			return -1;
		return buffer_printf(buf, "RFC822.SIZE %llu",
				     (unsigned long long)size);
	case IMAP_FETCH_INTERNALDATE:
		if (mailbox_msg_internaldate(box, ctx->seq, &t, error_r) < 0)
			return -1;
		imap_datetime_format(t, date, sizeof(date));
		return buffer_printf(buf, "INTERNALDATE \"%s\"", date);
	case IMAP_FETCH_SAVEDATE:
		/* NIL when the cached value was lost (RFC 8514 4.2) */
		if (mailbox_msg_savedate(box, ctx->seq, &t) <= 0)
			return buffer_append_str(buf, "SAVEDATE NIL");
		imap_datetime_format(t, date, sizeof(date));
		return buffer_printf(buf, "SAVEDATE \"%s\"", date);
	case IMAP_FETCH_BODY:
		return fetch_body_open(ctx, item, buf, error_r);
	case IMAP_FETCH_BINARY_SIZE:
		return fetch_binary_size(ctx, item, buf, error_r);
	case IMAP_FETCH_ENVELOPE:
	case IMAP_FETCH_BODYSTRUCTURE:
		return fetch_structure_text(ctx, item, buf);
	case IMAP_FETCH_MODSEQ:
		ctx->cmd->client->modseq_sent = true;
		return buffer_printf(buf, "MODSEQ (%llu)", (unsigned long long)
				     mailbox_msg_modseq(box, ctx->seq));
	case IMAP_FETCH_PREVIEW: {
		bool missed = false;
		int ret = imap_preview_append(&ctx->structure, box, ctx->seq,
					      item->lazy, &missed, buf, error_r);
		/* RFC 8970 4.1: computed afterwards for a later FETCH */
		if (missed)
			imap_preview_lazy_queue(ctx->cmd->client, ctx->seq);
		return ret;
	}
	case IMAP_FETCH_EMAILID:
		return buffer_printf(buf, "EMAILID (%s)", ctx->emailid);
	case IMAP_FETCH_THREADID:
		return buffer_printf(buf, "THREADID (%s)", ctx->threadid);
	}
	i_unreached();
}

/* Send what is left of ctx->text. Returns true when it is all sent. */
static bool fetch_send_text(struct imap_fetch_ctx *ctx)
{
	struct ostream *output = ctx->cmd->client->output;

	while (ctx->text_sent < ctx->text.used) {
		size_t n = MIN(o_stream_get_buffer_avail(output),
			       ctx->text.used - ctx->text_sent);
		if (n == 0 || o_stream_send(output, ctx->text.data +
					    ctx->text_sent, n) < 0)
			return false;
		ctx->text_sent += n;
	}
	buffer_reset(&ctx->text);
	ctx->text_sent = 0;
	return true;
}

/* Send the body data that fits, read from the file straight into the
   output buffer. Returns true when it is all sent. */
static bool fetch_send_body(struct imap_fetch_ctx *ctx)
{
	struct ostream *output = ctx->cmd->client->output;

	while (ctx->body_left > 0) {
		size_t want = (size_t)MIN(ctx->body_left, IMAP_FETCH_BODY_CHUNK);
		if (o_stream_get_buffer_avail(output) < want)
			return false;
		unsigned char *data = o_stream_reserve(output, want);
		if (data == NULL)
			return false;
		ssize_t ret = imap_body_stream_read(ctx->body, data, want);
		if (ret <= 0) {
			/* the file shrank or failed: the literal's size was
			   promised, so pad it (clients count bytes) */
			if (ret < 0)
				i_error("Reading a message failed: %m");
			memset(data, ' ', want);
			ret = (ssize_t)want;
		}
		ctx->body_left -= (uint64_t)ret;
		if (o_stream_commit(output, (size_t)ret) < 0)
			return false;
	}
	fetch_body_close(ctx);
	return true;
}

/* Continue the current message. Returns true when it is complete. */
static bool fetch_msg_continue(struct imap_fetch_ctx *ctx)
{
	struct client *client = ctx->cmd->client;

	for (;;) {
		if (!fetch_send_text(ctx))
			return false;
		if (ctx->body_left > 0 && !fetch_send_body(ctx))
			return false;
		if (ctx->item_idx == ctx->item_count)
			break;
		const struct imap_fetch_item *item = &ctx->items[ctx->item_idx++];
		bool sep = ctx->item_idx > 1 || ctx->add_flags;
		const char *error = "Reply too long";
		errno = ENOBUFS;
		if ((sep && buffer_append_c(&ctx->text, ' ') < 0) ||
		    fetch_item_text(ctx, item, &ctx->text, &error) < 0) {
			/* failed after the prepare step: the line is open,
			   so close it with what was sent */
			fetch_msg_failed(ctx, error);
			ctx->item_idx = ctx->item_count;
			buffer_reset(&ctx->text);
			ctx->body_left = 0;
			fetch_body_close(ctx);
		}
	}
	client_send_line(client, ")");
	return true;
}

static void fetch_msg_begin(struct imap_fetch_ctx *ctx)
{
	struct client *client = ctx->cmd->client;
	char line[FETCH_ITEM_TEXT_MAX];
	buffer_t buf;

	imap_fetch_resp_prefix(client, ctx->seq, line, sizeof(line));
	(void)o_stream_send_str(client->output, line);
	if (ctx->add_flags) {
		buffer_init(&buf, FETCH_ITEM_TEXT_MAX);
		/* FETCH_ITEM_TEXT_MAX holds every flag name */
		if (buffer_append_str(&buf, "FLAGS ") < 0 ||
		    imap_write_msg_flags(&buf, ctx->box, ctx->seq,
					 !client->imap4rev2) < 0)
			i_unreached();
		(void)o_stream_send(client->output, buf.data, buf.used);
		buffer_free(&buf);
	}
	ctx->item_idx = 0;
	ctx->in_msg = true;
}

static void fetch_add_changed(void *context, uint32_t uid1, uint32_t uid2)
{
	uidset_add_range(context, uid1, uid2);
}

/* CHANGEDSINCE: keep of the ranges only the messages the change history
   names (O(changes)); each is still checked by its modseq. Without the
   history back to the value every message of the ranges is looked at. */
static void fetch_narrow_changed(struct imap_fetch_ctx *ctx)
{
	struct mailbox *box = ctx->box;
	struct uidset changed = { NULL, 0, 0 };
	const char *error;

	ctx->narrowed = true;
	int ret = mailbox_changed_since(box, ctx->changedsince,
					fetch_add_changed, &changed, &error);
	if (ret < 0)
		i_error("FETCH CHANGEDSINCE: %s", error);
	if (ret <= 0) {
		uidset_free(&changed);
		return;
	}
	uint32_t count = mailbox_get_count(box);
	struct seq_range *out = p_malloc(ctx->cmd->pool, sizeof(*out) *
		(size_t)(changed.count + ctx->range_count + 1));
	unsigned int n = 0, j = 0;
	for (unsigned int i = 0; i < changed.count; i++) {
		uint32_t s1 = mailbox_uid_to_seq_ge(box, changed.ranges[i].lo);
		if (s1 == 0)
			break;
		uint32_t s2 = changed.ranges[i].hi == UINT32_MAX ? 0 :
			mailbox_uid_to_seq_ge(box, changed.ranges[i].hi + 1);
		s2 = s2 == 0 ? count : s2 - 1;
		/* both lists ascend: intersect them */
		while (j < ctx->range_count && ctx->ranges[j].seq2 < s1)
			j++;
		for (unsigned int k = j; k < ctx->range_count &&
		     ctx->ranges[k].seq1 <= s2; k++) {
			uint32_t a = MAX(s1, ctx->ranges[k].seq1);
			uint32_t b = MIN(s2, ctx->ranges[k].seq2);
			if (a > b)
				continue;
			if (n > 0 && out[n - 1].seq2 + 1 >= a)
				out[n - 1].seq2 = MAX(out[n - 1].seq2, b);
			else {
				out[n].seq1 = a;
				out[n++].seq2 = b;
			}
		}
	}
	uidset_free(&changed);
	ctx->ranges = out;
	ctx->range_count = n;
	ctx->range_idx = 0;
	ctx->seq = 0;
}

/* Write the cache values this command queued, and say (log_debug) how
   many message files it opened: tests and bench/big-mailbox.sh read the
   line to prove a cached FETCH opens none. */
static void fetch_debug_stats(struct imap_fetch_ctx *ctx)
{
	const struct imap_fetch_counters *now = &imap_fetch_counters;
	const struct imap_fetch_counters *then = &ctx->counters_start;

	imap_fetch_cache_flush(&ctx->structure, ctx->box);
	i_debug("FETCH: %u messages, %llu message files opened, "
		"%llu texts from the cache, %llu parsed, %u records looked at, "
		"%llu bytes read to parse, %llu texts already unpacked",
		ctx->msgs_sent,
		(unsigned long long)(now->files_opened - then->files_opened),
		(unsigned long long)(now->text_hits - then->text_hits),
		(unsigned long long)(now->text_misses - then->text_misses),
		ctx->records_looked,
		(unsigned long long)(now->parse_bytes - then->parse_bytes),
		(unsigned long long)(imap_text_memo_hits -
				     ctx->memo_hits_start));
}

bool imap_fetch_run(struct imap_fetch_ctx *ctx)
{
	struct client *client = ctx->cmd->client;
	unsigned int msgs = 0, scans = 0;

	if (ctx->text.data == NULL) {
		buffer_init(&ctx->text, IMAP_FETCH_TEXT_MAX);
		ctx->counters_start = imap_fetch_counters;
		ctx->memo_hits_start = imap_text_memo_hits;
	}
	if (ctx->changedsince != 0 && !ctx->narrowed)
		fetch_narrow_changed(ctx);
	/* RFC 7162 3.2.6: VANISHED (EARLIER) before any FETCH */
	if (ctx->vanished != NULL) {
		if (!imap_vanished_send(ctx->vanished)) {
			ctx->cmd->wait = CLIENT_WAIT_OUTPUT;
			return false;
		}
		imap_vanished_deinit(ctx->vanished);
		ctx->vanished = NULL;
	}
	for (;;) {
		if (ctx->in_msg) {
			if (!fetch_msg_continue(ctx)) {
				ctx->cmd->wait = CLIENT_WAIT_OUTPUT;
				return false;
			}
			ctx->in_msg = false;
		}
		if (client->disconnected)
			return true;
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL) {
			ctx->cmd->wait = CLIENT_WAIT_OUTPUT;
			return false;
		}
		if (++msgs > IMAP_FETCH_MSGS_PER_SLICE) {
			ctx->cmd->wait = CLIENT_WAIT_NONE;
			return false;
		}
		if (!fetch_next_seq(ctx))
			break;
		/* CHANGEDSINCE: a look at the record, no file opened */
		if (ctx->changedsince != 0)
			ctx->records_looked++;
		if (ctx->changedsince != 0 &&
		    mailbox_msg_modseq(ctx->box, ctx->seq) <= ctx->changedsince) {
			msgs--;
			if (++scans > IMAP_FETCH_SCANS_PER_SLICE) {
				ctx->cmd->wait = CLIENT_WAIT_NONE;
				return false;
			}
			continue;
		}
		if (fetch_msg_prepare(ctx) < 0) {
			if (ctx->unknown_cte)
				break;
			continue;
		}
		fetch_msg_begin(ctx);
		ctx->msgs_sent++;
	}
	fetch_debug_stats(ctx);
	imap_fetch_deinit(ctx);
	/* once per FETCH, not per message */
	if (ctx->seen_changed)
		imap_notify_flags_changed(ctx->cmd->client);
	if (ctx->unknown_cte) {
		client_send_tagline(ctx->cmd, "NO [UNKNOWN-CTE] Unknown "
				    "Content-Transfer-Encoding.");
	} else if (ctx->some_failed) {
		client_send_tagline(ctx->cmd, "NO [SERVERBUG] Internal error "
				    "occurred. Refer to server log for more "
				    "information.");
	} else if (ctx->some_expunged) {
		/* the wording of RFC 2180 4.1.2, which clients recognize */
		client_send_tagline(ctx->cmd, "NO [EXPUNGEISSUED] Some of the "
				    "requested messages no longer exist");
	} else {
		client_send_tagline(ctx->cmd, ctx->done_text != NULL ?
				    ctx->done_text : "OK Fetch completed.");
	}
	return true;
}
