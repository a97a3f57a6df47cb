/* FETCH texts through the mail cache (imap-fetch-cache.h). */
#include "imap-common.h"
#include "imap-fetch-cache.h"
#include "imap-cache-text.h"
#include "imap-text-memo.h"
#include "imap-envelope.h"
#include "imap-bodystructure.h"
#include "message-parser.h"

/* Cache field names (mail-cache.h: short identifiers). They carry the
   writers' version, so a value cached by a moat whose texts differed is
   never looked up (version 1 had no suffix). */
static const char *const msg_text_fields[IMAP_MSG_TEXT_COUNT] = {
	[IMAP_MSG_TEXT_ENVELOPE] = "imap.envelope." IMAP_MSG_TEXT_VERSION,
	[IMAP_MSG_TEXT_BODY] = "imap.body." IMAP_MSG_TEXT_VERSION,
	[IMAP_MSG_TEXT_BODYSTRUCTURE] =
		"imap.bodystructure." IMAP_MSG_TEXT_VERSION,
};
/* Where the header ends, as the parser of this version finds it. */
#define HDR_SIZE_FIELD "imap.hdrsize." IMAP_MSG_TEXT_VERSION
#define HDR_SIZE_LEN 16
/* The stored form of a text: its tag and length add a few bytes. */
#define PACKED_MAX (IMAP_CACHE_TEXT_MAX + 16)

struct imap_fetch_counters imap_fetch_counters;

int imap_fetch_msg_open(struct mailbox *box, uint32_t seq,
			const char **error_r)
{
	imap_fetch_counters.files_opened++;
	return mailbox_msg_open(box, seq, error_r);
}

static bool msg_text_lookup(struct mailbox *box, uint32_t seq,
			    enum imap_msg_text which, buffer_t *out)
{
	const void *data;
	size_t size;

	if (mailbox_msg_cache_lookup(box, seq, msg_text_fields[which],
				     &data, &size) <= 0)
		return false;
	/* a plain stored text is copied: the memo would only cost room */
	bool packed = imap_cache_text_is_packed(data, size);
	if (packed && imap_text_memo_get(data, size, out))
		return true;
	size_t old_used = out->used;
	/* garbled or too big for out: compute it again */
	if (imap_cache_text_unpack(data, size, out) < 0)
		return false;
	if (packed)
		imap_text_memo_put(data, size, out->data + old_used,
				   out->used - old_used);
	return true;
}

static void msg_text_write(const struct imap_msg_structure *ms,
			   enum imap_msg_text which, buffer_t *out)
{
	switch (which) {
	case IMAP_MSG_TEXT_ENVELOPE:
		imap_envelope_write(ms->pool, ms->root, out);
		return;
	case IMAP_MSG_TEXT_BODY:
	case IMAP_MSG_TEXT_BODYSTRUCTURE:
		imap_bodystructure_write(ms->pool, ms->root, out,
					 which == IMAP_MSG_TEXT_BODYSTRUCTURE);
		return;
	}
	i_unreached();
}

/* Queue text (out from old_used on) for the cache. Only a cache:
   failures cost a parse next time. */
static void msg_text_cache_add(struct imap_msg_structure *ms,
			       struct mailbox *box, uint32_t seq,
			       enum imap_msg_text which, const buffer_t *out,
			       size_t old_used)
{
	buffer_t packed;
	const char *error;

	buffer_init(&packed, PACKED_MAX);
	if (imap_cache_text_pack(out->data + old_used, out->used - old_used,
				 &packed) == 0 &&
	    mailbox_msg_cache_add(box, seq, msg_text_fields[which],
				  packed.data, packed.used, &error) == 0) {
		ms->cache_pending++;
		if (ms->queued_seq != seq) {
			ms->queued_seq = seq;
			ms->queued_texts = 0;
		}
		ms->queued_texts |= 1U << which;
	}
	buffer_free(&packed);
	if (ms->cache_pending >= IMAP_FETCH_CACHE_FLUSH_TEXTS)
		imap_fetch_cache_flush(ms, box);
}

int imap_msg_text_get(struct imap_msg_structure *ms, struct mailbox *box,
		      uint32_t seq, enum imap_msg_text which, buffer_t *out,
		      const char **error_r)
{
	size_t old_used = out->used;

	if (msg_text_lookup(box, seq, which, out)) {
		imap_fetch_counters.text_hits++;
		return 0;
	}
	if (which == IMAP_MSG_TEXT_ENVELOPE) {
		if (imap_msg_header_get(ms, box, seq, error_r) < 0)
			return -1;
	} else {
		if (imap_msg_structure_get(ms, box, seq, error_r) < 0)
			return -1;
	}
	imap_fetch_counters.text_misses++;
	msg_text_write(ms, which, out);
	/* (imap_msg_texts_fill() may have queued it already) */
	if (ms->queued_seq != seq || (ms->queued_texts & (1U << which)) == 0)
		msg_text_cache_add(ms, box, seq, which, out, old_used);
	if (which != IMAP_MSG_TEXT_ENVELOPE)
		imap_msg_texts_fill(ms, box, seq);
	return 0;
}

void imap_msg_texts_fill(struct imap_msg_structure *ms, struct mailbox *box,
			 uint32_t seq)
{
	const void *data;
	size_t size;
	buffer_t text;

	/* (the ENVELOPE needs only the header: any parse serves) */
	i_assert(ms->seq == seq);
	if ((ms->queued_seq == seq &&
	     (ms->queued_texts & (1U << IMAP_MSG_TEXT_ENVELOPE)) != 0) ||
	    mailbox_msg_cache_lookup(box, seq,
				     msg_text_fields[IMAP_MSG_TEXT_ENVELOPE],
				     &data, &size) > 0)
		return;
	buffer_init(&text, IMAP_ENVELOPE_OUTPUT_MAX);
	msg_text_write(ms, IMAP_MSG_TEXT_ENVELOPE, &text);
	msg_text_cache_add(ms, box, seq, IMAP_MSG_TEXT_ENVELOPE, &text, 0);
	buffer_free(&text);
}

static uint64_t le64_get(const unsigned char *p)
{
	uint64_t v = 0;

	for (unsigned int i = 8; i-- > 0; )
		v = (v << 8) | p[i];
	return v;
}

static void le64_put(unsigned char *p, uint64_t v)
{
	for (unsigned int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

bool imap_msg_hdr_size_lookup(struct mailbox *box, uint32_t seq,
			      struct message_size *hdr_r)
{
	const void *data;
	size_t size;

	if (mailbox_msg_cache_lookup(box, seq, HDR_SIZE_FIELD, &data,
				     &size) <= 0 || size != HDR_SIZE_LEN)
		return false;
	memset(hdr_r, 0, sizeof(*hdr_r));
	hdr_r->physical = le64_get(data);
	hdr_r->virtual = le64_get((const unsigned char *)data + 8);
	/* each LF made CRLF at most doubles it: anything else is garbled */
	if (hdr_r->virtual < hdr_r->physical ||
	    hdr_r->virtual - hdr_r->physical > hdr_r->physical)
		return false;
	return true;
}

void imap_msg_hdr_size_add(struct imap_msg_structure *ms,
			   struct mailbox *box, uint32_t seq)
{
	const struct message_size *hdr = &ms->root->header_size;
	unsigned char value[HDR_SIZE_LEN];
	struct message_size cached;
	const char *error;

	i_assert(ms->seq == seq);
	/* (a HEADER.FIELDS that missed parses with the size cached) */
	if (imap_msg_hdr_size_lookup(box, seq, &cached))
		return;
	le64_put(value, hdr->physical);
	le64_put(value + 8, hdr->virtual);
	if (mailbox_msg_cache_add(box, seq, HDR_SIZE_FIELD, value,
				  sizeof(value), &error) == 0)
		ms->cache_pending++;
	if (ms->cache_pending >= IMAP_FETCH_CACHE_FLUSH_TEXTS)
		imap_fetch_cache_flush(ms, box);
}

void imap_fetch_cache_flush(struct imap_msg_structure *ms,
			    struct mailbox *box)
{
	const char *error;

	if (ms->cache_pending == 0)
		return;
	ms->cache_pending = 0;
	if (mailbox_cache_flush(box, &error) < 0)
		i_error("FETCH: writing the cache failed: %s", error);
}

void imap_msg_fill_init(struct imap_msg_fill *fill, struct mailbox *box)
{
	memset(fill, 0, sizeof(*fill));
	fill->box = box;
}

void imap_msg_fill_flush(struct imap_msg_fill *fill)
{
	imap_fetch_cache_flush(&fill->ms, fill->box);
	imap_msg_structure_clear(&fill->ms);
}

void imap_msg_fill_deinit(struct imap_msg_fill *fill)
{
	if (fill->box == NULL)
		return;
	imap_msg_fill_flush(fill);
	fill->box = NULL;
}

static bool msg_text_is_cached(struct imap_msg_structure *ms,
			       struct mailbox *box, uint32_t seq,
			       enum imap_msg_text which)
{
	const void *data;
	size_t size;

	return (ms->queued_seq == seq &&
		(ms->queued_texts & (1U << which)) != 0) ||
		mailbox_msg_cache_lookup(box, seq, msg_text_fields[which],
					 &data, &size) > 0;
}

void imap_msg_fill_read_callback(struct mailbox *box, uint32_t seq, int fd,
				 void *context)
{
	struct imap_msg_fill *fill = context;
	buffer_t text;

	i_assert(fill->box == box);
	if (msg_text_is_cached(&fill->ms, box, seq, IMAP_MSG_TEXT_ENVELOPE))
		return;
	/* the header was just read: this pread comes from the page cache */
	if (imap_msg_header_parse_fd(&fill->ms, seq, fd) < 0)
		return;   /* only a cache: the FETCH parses it then */
	buffer_init(&text, IMAP_ENVELOPE_OUTPUT_MAX);
	msg_text_write(&fill->ms, IMAP_MSG_TEXT_ENVELOPE, &text);
	msg_text_cache_add(&fill->ms, box, seq, IMAP_MSG_TEXT_ENVELOPE,
			   &text, 0);
	buffer_free(&text);
}
