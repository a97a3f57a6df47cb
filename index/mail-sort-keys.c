/* SORT and THREAD keys through the mail cache (mail-sort-keys.h).

   Stored form (little-endian; a value that does not decode exactly is
   a miss):
     sort.keys   u8 version 4 (1 had lower case keys, 2 had the
                 references in a field "thread.refs" of their own, 3
                 folded only Latin, Greek and Cyrillic and refused
                 Message-IDs with an empty side), u8 flags (1 = sent date
                 valid, 2 = reply, 4 = Message-ID present), u32 the
                 unicode_casemap_id() the strings were folded with (keys
                 of other tables, e.g. from before a Unicode update, are
                 misses), i64 sent date, u64 base subject hash, u16
                 reference count, [u64 Message-ID hash], count u64
                 reference hashes, then MAIL_SORT_STR_COUNT strings, each
                 a LEB128 length and its bytes. */
#include "lib.h"
#include "log.h"
#include "mail-sort-keys.h"
#include "mailbox-read-ahead.h"
#include "imap-base-subject.h"
#include "unicode-casemap.h"
#include "message-header.h"
#include "message-address.h"
#include "message-date.h"
#include "rfc2047.h"
#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SORT_KEYS_FIELD "sort.keys"
#define SORT_KEYS_VERSION 4
#define SORT_KEYS_FLAG_SENT 0x01
#define SORT_KEYS_FLAG_REPLY 0x02
#define SORT_KEYS_FLAG_MSGID 0x04
/* version, flags, casemap id, date, subject hash, reference count */
#define SORT_KEYS_HEAD_SIZE 24
/* the head, the ids, and per string at most 2 length bytes */
#define SORT_KEYS_ENCODED_MAX \
	(SORT_KEYS_HEAD_SIZE + 8 * (1 + MAIL_THREAD_REFS_MAX) + \
	 MAIL_SORT_STR_COUNT * (2 + MAIL_SORT_STR_MAX))
/* Bytes read from a message file per read (after the first). */
#define SORT_KEYS_CHUNK_SIZE (16 * 1024)
_Static_assert(MAIL_SORT_KEYS_FIRST_READ <= SORT_KEYS_CHUNK_SIZE,
	       "the first read fits the chunk");

enum hdr_field {
	HDR_DATE, HDR_SUBJECT, HDR_FROM, HDR_TO, HDR_CC,
	HDR_MESSAGE_ID, HDR_IN_REPLY_TO, HDR_REFERENCES,
};
#define HDR_COUNT 8
static const char *const hdr_names[HDR_COUNT] = {
	"Date", "Subject", "From", "To", "Cc",
	"Message-ID", "In-Reply-To", "References",
};

struct mail_sort_keys_reader {
	struct mailbox *box;
	const uint32_t *seqs;        /* the messages asked for, in order */
	unsigned int seq_count;
	unsigned int pos;            /* index in seqs of the last miss */
	unsigned int ahead;          /* next index in seqs to read ahead */

	pool_t pool;                 /* one message's header values */
	struct message_header_parser *hparser;
	buffer_t line;
	unsigned char chunk[SORT_KEYS_CHUNK_SIZE];
	buffer_t enc;                /* the encoded keys after a miss */
	buffer_t scratch, subject;
	uint64_t ids[MAIL_THREAD_REFS_MAX], ring_ids[MAIL_THREAD_REFS_MAX];
	const char *hdr[HDR_COUNT];  /* first of each field, or NULL */
	size_t hdr_len[HDR_COUNT];
	unsigned int pending;
	struct mail_sort_keys_stats stats;
	mailbox_msg_read_callback_t *read_cb;
	void *read_context;
};

struct mail_sort_keys_reader *
mail_sort_keys_reader_init(struct mailbox *box, const uint32_t *seqs,
			   unsigned int count)
{
	struct mail_sort_keys_reader *r = i_malloc(sizeof(*r));

	r->box = box;
	r->seqs = seqs;
	r->seq_count = count;
	r->pool = pool_create("sort keys", 4096);
	r->hparser = message_header_parser_init(MAIL_SORT_KEYS_FIELD_MAX);
	buffer_init(&r->line, MAIL_SORT_KEYS_FIELD_MAX);
	buffer_init(&r->enc, SORT_KEYS_ENCODED_MAX);
	buffer_init(&r->scratch, MAIL_SORT_KEYS_FIELD_MAX);
	buffer_init(&r->subject, IMAP_BASE_SUBJECT_MAX);
	return r;
}

static void reader_flush(struct mail_sort_keys_reader *r)
{
	const char *error;

	if (r->pending == 0)
		return;
	r->pending = 0;
	if (mailbox_cache_flush(r->box, &error) < 0)
		i_error("SORT: writing the cache failed: %s", error);
}

void mail_sort_keys_reader_deinit(struct mail_sort_keys_reader **reader)
{
	struct mail_sort_keys_reader *r = *reader;

	*reader = NULL;
	reader_flush(r);
	message_header_parser_deinit(&r->hparser);
	buffer_free(&r->line);
	buffer_free(&r->enc);
	buffer_free(&r->scratch);
	buffer_free(&r->subject);
	pool_unref(&r->pool);
	i_free(r);
}

void mail_sort_keys_reader_set_read_callback(struct mail_sort_keys_reader *reader,
					     mailbox_msg_read_callback_t *cb,
					     void *context)
{
	reader->read_cb = cb;
	reader->read_context = context;
}

void mail_sort_keys_reader_get_stats(const struct mail_sort_keys_reader *reader,
				     struct mail_sort_keys_stats *stats_r)
{
	*stats_r = reader->stats;
}

/* ---- Message-IDs ---- */

uint64_t mail_thread_msgid_hash(const void *id, size_t len)
{
	uint64_t h = hash_fnv1a64(id, len);

	/* a final mix spreads the last bytes over all bits */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h == 0 ? 1 : h;
}

/* ---- encoding ---- */

static void put_u64(buffer_t *buf, uint64_t v)
{
	unsigned char b[8];

	for (unsigned int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	buffer_append_trunc(buf, b, sizeof(b));
}

static void put_u32(buffer_t *buf, uint32_t v)
{
	unsigned char b[4];

	for (unsigned int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	buffer_append_trunc(buf, b, sizeof(b));
}

static uint32_t get_u32(const unsigned char *p)
{
	return p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
		((uint32_t)p[3] << 24);
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

uint64_t mail_thread_refs_at(const struct mail_thread_refs *refs,
			     unsigned int idx)
{
	i_assert(idx < refs->count);
	return get_u64(refs->refs + 8 * idx);
}

static void put_str(buffer_t *buf, const void *data, size_t len)
{
	unsigned char b[2];

	i_assert(len <= MAIL_SORT_STR_MAX);
	if (len < 0x80) {
		b[0] = (unsigned char)len;
		buffer_append_trunc(buf, b, 1);
	} else {
		b[0] = (unsigned char)(0x80 | (len & 0x7f));
		b[1] = (unsigned char)(len >> 7);
		buffer_append_trunc(buf, b, 2);
	}
	buffer_append_trunc(buf, data, len);
}

/* The strings after the ids. */
static bool decode_strs(const unsigned char *p, const unsigned char *end,
			struct mail_sort_keys *keys_r)
{
	for (unsigned int i = 0; i < MAIL_SORT_STR_COUNT; i++) {
		if (p >= end)
			return false;
		size_t len = *p & 0x7f;
		if ((*p++ & 0x80) != 0) {
			if (p >= end)
				return false;
			len |= (size_t)*p++ << 7;
		}
		if (len > MAIL_SORT_STR_MAX || len > (size_t)(end - p))
			return false;
		keys_r->str[i] = p;
		keys_r->str_len[i] = len;
		p += len;
	}
	return p == end;
}

static bool decode_keys(const unsigned char *p, size_t size,
			struct mail_sort_keys *keys_r,
			struct mail_thread_refs *refs_r)
{
	const unsigned char *end = p + size;

	if (size < SORT_KEYS_HEAD_SIZE || p[0] != SORT_KEYS_VERSION ||
	    get_u32(p + 2) != unicode_casemap_id())
		return false;
	keys_r->sent_valid = (p[1] & SORT_KEYS_FLAG_SENT) != 0;
	keys_r->reply = (p[1] & SORT_KEYS_FLAG_REPLY) != 0;
	keys_r->sent_date = (int64_t)get_u64(p + 6);
	keys_r->subject_hash = get_u64(p + 14);
	bool has_id = (p[1] & SORT_KEYS_FLAG_MSGID) != 0;
	unsigned int count = p[22] | ((unsigned int)p[23] << 8);
	size_t ids_size = 8 * ((size_t)count + (has_id ? 1 : 0));
	if (count > MAIL_THREAD_REFS_MAX ||
	    ids_size > size - SORT_KEYS_HEAD_SIZE)
		return false;
	p += SORT_KEYS_HEAD_SIZE;
	uint64_t msgid = has_id ? get_u64(p) : 0;
	if (has_id && msgid == 0)
		return false;
	if (refs_r != NULL) {
		refs_r->msgid = msgid;
		refs_r->refs = p + (has_id ? 8 : 0);
		refs_r->count = count;
	}
	return decode_strs(p + ids_size, end, keys_r);
}

/* ---- reading the header ---- */

static void header_field(struct mail_sort_keys_reader *r,
			 const struct message_header_field *field)
{
	for (unsigned int i = 0; i < HDR_COUNT; i++) {
		if (r->hdr[i] == NULL && strcasecmp(field->name, hdr_names[i]) == 0) {
			r->hdr[i] = p_strndup(r->pool, field->value,
					      field->value_len);
			r->hdr_len[i] = field->value_len;
			return;
		}
	}
}

/* One physical line (without LF). Returns true at the blank line. */
static bool header_line(struct mail_sort_keys_reader *r, bool truncated)
{
	struct message_header_field field;
	const unsigned char *p = (const unsigned char *)r->line.data;
	size_t len = r->line.used;

	if (len > 0 && p[len - 1] == '\r' && !truncated)
		len--;
	if (len == 0 && !truncated) {
		if (message_header_parser_flush(r->hparser, &field))
			header_field(r, &field);
		return true;
	}
	if (message_header_parser_line(r->hparser, p, len, truncated, &field))
		header_field(r, &field);
	return false;
}

/* Feed a chunk; returns true when the header ended. */
static bool header_chunk(struct mail_sort_keys_reader *r, size_t size,
			 bool *skipping)
{
	const unsigned char *p = r->chunk, *end = p + size;

	while (p < end) {
		const unsigned char *lf = memchr(p, '\n', (size_t)(end - p));
		size_t n = lf == NULL ? (size_t)(end - p) : (size_t)(lf - p);
		if (!*skipping && buffer_append(&r->line, p, n) < 0) {
			/* over-long line: keep its start, drop the rest */
			size_t room = r->line.max_size - r->line.used;
			buffer_append_trunc(&r->line, p, MIN(room, n));
			(void)header_line(r, true);
			*skipping = true;
		}
		if (lf == NULL)
			break;
		bool done = !*skipping && header_line(r, false);
		*skipping = false;
		buffer_reset(&r->line);
		p = lf + 1;
		if (done)
			return true;
	}
	return false;
}

static int header_read(struct mail_sort_keys_reader *r, int fd)
{
	struct message_header_field field;
	uint64_t offset = 0;
	bool skipping = false;
	ssize_t ret = 0;

	memset(r->hdr, 0, sizeof(r->hdr));
	pool_clear(r->pool);
	message_header_parser_reset(r->hparser);
	buffer_reset(&r->line);
	while (offset < MAIL_SORT_KEYS_HEADER_MAX) {
		/* the first read is the part read ahead */
		size_t want = offset == 0 ? MAIL_SORT_KEYS_FIRST_READ :
			sizeof(r->chunk);
		ret = pread(fd, r->chunk, want, (off_t)offset);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			break;
		if (header_chunk(r, (size_t)ret, &skipping))
			return 0;
		offset += (uint64_t)ret;
	}
	if (ret < 0 && offset < MAIL_SORT_KEYS_HEADER_MAX)
		return -1;
	/* no blank line: all of it is header */
	if (r->line.used > 0 && !skipping)
		(void)header_line(r, false);
	if (message_header_parser_flush(r->hparser, &field))
		header_field(r, &field);
	return 0;
}

/* ---- computing the keys ---- */

/* Append the folded text as a string key: as many whole characters as
   fold into MAIL_SORT_STR_MAX bytes. */
static void put_folded(struct mail_sort_keys_reader *r, const char *text,
		       size_t len)
{
	char folded[MAIL_SORT_STR_MAX];
	size_t used, n = unicode_casemap(text, len, &used, folded,
					 sizeof(folded));

	put_str(&r->enc, folded, n);
}

/* The first address of a header as the ENVELOPE lists it: a group's
   start marker (its name as addr-mailbox) counts, as RFC 5256 and 5957
   take the envelope's first address (and Dovecot does). */
static const struct message_address *
first_address(struct mail_sort_keys_reader *r, enum hdr_field which)
{
	const struct message_address *addr;

	if (r->hdr[which] == NULL)
		return NULL;
	addr = message_address_parse(r->pool, r->hdr[which], r->hdr_len[which]);
	for (; addr != NULL; addr = addr->next) {
		if (addr->mailbox != NULL)
			return addr;
	}
	return NULL;
}

static void put_mailbox(struct mail_sort_keys_reader *r,
			const struct message_address *addr)
{
	if (addr == NULL)
		put_str(&r->enc, "", 0);
	else
		put_folded(r, addr->mailbox, strlen(addr->mailbox));
}

/* RFC 5957 section 3: the decoded display name, else mailbox@host. */
static void put_display(struct mail_sort_keys_reader *r,
			const struct message_address *addr)
{
	const char *text = "";

	if (addr != NULL && addr->name != NULL)
		text = rfc2047_decode(r->pool, addr->name, strlen(addr->name));
	if (*text == '\0' && addr != NULL) {
		text = addr->domain == NULL ? addr->mailbox :
			p_strdup_printf(r->pool, "%s@%s", addr->mailbox,
					addr->domain);
	}
	put_folded(r, text, strlen(text));
}

/* The head's date, subject and reply flag; the base subject stays in
   r->subject for the strings. */
static void keys_head(struct mail_sort_keys_reader *r, unsigned char *flags,
		      int64_t *date_r, uint64_t *subject_r)
{
	time_t t = 0;
	int tz;
	bool reply = false;

	if (r->hdr[HDR_DATE] != NULL &&
	    message_date_parse(r->hdr[HDR_DATE], r->hdr_len[HDR_DATE],
			       &t, &tz) == 0)
		*flags |= SORT_KEYS_FLAG_SENT;
	else
		t = 0;
	*date_r = (int64_t)t;
	buffer_reset(&r->subject);
	if (r->hdr[HDR_SUBJECT] != NULL)
		imap_base_subject_get(r->pool, r->hdr[HDR_SUBJECT],
				      r->hdr_len[HDR_SUBJECT], &r->subject,
				      &reply);
	if (reply)
		*flags |= SORT_KEYS_FLAG_REPLY;
	/* base subjects are folded already and fit MAIL_SORT_STR_MAX */
	*subject_r = r->subject.used == 0 ? 0 :
		mail_thread_msgid_hash(r->subject.data, r->subject.used);
}

static void keys_strs(struct mail_sort_keys_reader *r)
{
	const struct message_address *from, *to, *cc;

	put_str(&r->enc, r->subject.data, r->subject.used);
	from = first_address(r, HDR_FROM);
	to = first_address(r, HDR_TO);
	cc = first_address(r, HDR_CC);
	put_mailbox(r, from);
	put_mailbox(r, to);
	put_mailbox(r, cc);
	put_display(r, from);
	put_display(r, to);
}

/* Hashes of the msg-ids in a header value, the last `max` of them, into
   ids (returns how many). */
static unsigned int refs_collect(struct mail_sort_keys_reader *r,
				 enum hdr_field which, uint64_t *ids,
				 unsigned int max, bool first_only)
{
	const char *p = r->hdr[which], *end;
	unsigned int count = 0, total = 0;

	if (p == NULL)
		return 0;
	end = p + r->hdr_len[which];
	while (mail_thread_msgid_next(&p, end, &r->scratch)) {
		/* a ring of the last max ids, put in order below */
		ids[total % max] = mail_thread_msgid_hash(r->scratch.data,
							  r->scratch.used);
		total++;
		if (first_only)
			break;
	}
	count = MIN(total, max);
	if (total > max) {
		/* rotate the ring so the oldest kept id comes first */
		unsigned int shift = total % max;
		i_assert(max <= N_ELEMENTS(r->ring_ids));
		for (unsigned int i = 0; i < max; i++)
			r->ring_ids[i] = ids[(shift + i) % max];
		memcpy(ids, r->ring_ids, sizeof(*ids) * max);
	}
	return count;
}

/* Encode the keys of the parsed header into r->enc. */
static void keys_encode(struct mail_sort_keys_reader *r)
{
	unsigned char head[SORT_KEYS_HEAD_SIZE];
	uint64_t msgid = 0, subject;
	int64_t date;
	unsigned int count;

	memset(head, 0, sizeof(head));
	head[0] = SORT_KEYS_VERSION;
	keys_head(r, &head[1], &date, &subject);
	if (refs_collect(r, HDR_MESSAGE_ID, &msgid, 1, true) == 0)
		msgid = 0;
	count = refs_collect(r, HDR_REFERENCES, r->ids, MAIL_THREAD_REFS_MAX,
			     false);
	if (count == 0)
		count = refs_collect(r, HDR_IN_REPLY_TO, r->ids, 1, true);
	if (msgid != 0)
		head[1] |= SORT_KEYS_FLAG_MSGID;
	head[22] = (unsigned char)count;
	head[23] = (unsigned char)(count >> 8);

	buffer_reset(&r->enc);
	buffer_append_trunc(&r->enc, head, 2);
	put_u32(&r->enc, unicode_casemap_id());
	put_u64(&r->enc, (uint64_t)date);
	put_u64(&r->enc, subject);
	buffer_append_trunc(&r->enc, head + 22, 2);
	if (msgid != 0)
		put_u64(&r->enc, msgid);
	for (unsigned int i = 0; i < count; i++)
		put_u64(&r->enc, r->ids[i]);
	keys_strs(r);
}

/* ---- reading ahead ---- */

/* Ask for the first bytes of the next messages after r->pos that miss
   in the cache (mailbox_prefetch(): on the read-ahead thread where the
   process has one), so they come from the disk while earlier ones are
   parsed. */
static void prefetch_fill(struct mail_sort_keys_reader *r)
{
	const void *data;
	size_t size;

	if (r->ahead <= r->pos)
		r->ahead = r->pos + 1;
	/* in batches of half the window: one wakeup of the thread each */
	if (r->ahead > r->pos + MAIL_SORT_KEYS_PREFETCH / 2)
		return;
	while (r->ahead < r->seq_count &&
	       r->ahead <= r->pos + MAIL_SORT_KEYS_PREFETCH) {
		uint32_t seq = r->seqs[r->ahead];
		if (mailbox_msg_cache_lookup(r->box, seq, SORT_KEYS_FIELD,
					     &data, &size) <= 0 &&
		    !mailbox_prefetch(r->box, seq, MAIL_SORT_KEYS_FIRST_READ))
			break;
		r->ahead++;
	}
}

/* Move r->pos to seq's index in r->seqs; false if it is not there.
   seqs ascend: a caller out of order only loses the reading ahead. */
static bool reader_seek(struct mail_sort_keys_reader *r, uint32_t seq)
{
	while (r->pos < r->seq_count && r->seqs[r->pos] < seq)
		r->pos++;
	return r->pos < r->seq_count && r->seqs[r->pos] == seq;
}

/* The fd of seq, opened now; asks for the next ones ahead. */
static int prefetch_take(struct mail_sort_keys_reader *r, uint32_t seq,
			 const char **error_r)
{
	if (reader_seek(r, seq))
		prefetch_fill(r);
	return mailbox_msg_open(r->box, seq, error_r);
}

/* ---- lookups ---- */

/* Parse seq's header into r->enc and queue it for the cache. Returns
   1, 0 if the file vanished, -1. */
static int keys_compute(struct mail_sort_keys_reader *r, uint32_t seq,
			const char **error_r)
{
	const char *error;
	int fd, ret;

	fd = prefetch_take(r, seq, error_r);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	ret = header_read(r, fd);
	int saved_errno = errno;
	if (ret == 0 && r->read_cb != NULL)
		r->read_cb(r->box, seq, fd, r->read_context);
	i_close_fd(&fd);
	if (ret < 0) {
		*error_r = p_strdup_printf(r->pool, "read(message %u) failed: %s",
					   seq, strerror(saved_errno));
		return -1;
	}
	r->stats.misses++;
	keys_encode(r);
	if (mailbox_msg_cache_add(r->box, seq, SORT_KEYS_FIELD, r->enc.data,
				  r->enc.used, &error) == 0 &&
	    ++r->pending >= MAIL_SORT_KEYS_FLUSH_COUNT)
		reader_flush(r);
	return 1;
}

int mail_sort_keys_get(struct mail_sort_keys_reader *r, uint32_t seq,
		       struct mail_sort_keys *keys_r,
		       struct mail_thread_refs *refs_r, const char **error_r)
{
	const void *data;
	size_t size;
	int ret;

	if (mailbox_msg_cache_lookup(r->box, seq, SORT_KEYS_FIELD,
				     &data, &size) > 0 &&
	    decode_keys(data, size, keys_r, refs_r)) {
		r->stats.hits++;
		return 1;
	}
	if ((ret = keys_compute(r, seq, error_r)) <= 0)
		return ret;
	if (!decode_keys((const void *)r->enc.data, r->enc.used, keys_r,
			 refs_r))
		i_panic("sort keys: own encoding does not decode");
	return 1;
}

