/* HEADER.FIELDS through the mail cache (imap-fetch-hdr.h).

   A cache value is "h" followed by one entry per occurrence of the field,
   in header order: u16 place among the header's fields, u32 length, then
   the field's bytes (name, colon, value, continuation lines, CRLFs). The
   header is split into fields by the rules of the HEADER.FIELDS filter
   (imap-body-stream.c hf_byte): a field starts at a line that does not
   start with SP or HT; its name runs to the first colon; a line without
   one, or a name of IMAP_SECTION_FIELD_NAME_MAX bytes or more, names no
   field anyone can list; lines before the first field belong to none. */
#include "imap-common.h"
#include "imap-fetch-hdr.h"

#include <ctype.h>
#include <strings.h>

#define HDR_VALUE_MAGIC 'h'
#define HDR_ENTRY_HEAD (2 + 4)
/* Names of one section served from the cache; a longer list reads the
   file (each name is one lookup and one pass over the header). */
#define HDR_NAMES_MAX 16
/* "hdr." name "." version and a NUL: 30 characters at most, within the
   mail cache's 31 (index/mail-cache.h MAIL_CACHE_FIELD_NAME_MAX). */
#define HDR_CACHE_NAME_SIZE \
	(4 + IMAP_FETCH_HDR_NAME_MAX + 1 + sizeof(IMAP_FETCH_HDR_VERSION))
/* Occurrences of the listed fields merged per answer; a header with
   more (a long Received chain asked for) is read from the file. */
#define HDR_FIELDS_MAX 1024

bool imap_fetch_hdr_cacheable(const struct imap_fetch_item *item)
{
	const struct imap_section *sec = &item->section;

	if (item->type != IMAP_FETCH_BODY || sec->binary ||
	    sec->part[0] != '\0' || sec->text != IMAP_SECTION_HEADER_FIELDS ||
	    sec->field_count == 0 || sec->field_count > HDR_NAMES_MAX)
		return false;
	for (unsigned int i = 0; i < sec->field_count; i++) {
		if (strlen(sec->fields[i]) > IMAP_FETCH_HDR_NAME_MAX)
			return false;
	}
	return true;
}

/* "hdr.<name>.<version>", lower case. */
static void hdr_cache_name(const char *name, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "hdr.%s." IMAP_FETCH_HDR_VERSION,
				    name);

	for (size_t i = 0; i < n && i < size; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
}

/* Whether the earlier names of sec list name again (it is done once). */
static bool hdr_name_repeated(const struct imap_section *sec, unsigned int idx)
{
	for (unsigned int i = 0; i < idx; i++) {
		if (strcasecmp(sec->fields[i], sec->fields[idx]) == 0)
			return true;
	}
	return false;
}

/* ---- splitting a header into fields ---- */

struct hdr_field {
	size_t start, end;	/* bytes of the header */
	size_t name_len;	/* 0: names nothing listable */
};

/* The field starting at pos (not SP, HT, CR or LF): through the end of
   its first line and every continuation line. */
static size_t hdr_field_at(const unsigned char *h, size_t n, size_t pos,
			   struct hdr_field *f_r)
{
	size_t i = pos + 1, name_end = 0;

	/* the first byte is the name's whatever it is (as hf_byte) */
	for (; i < n; i++) {
		if (h[i] == ':') {
			name_end = i;
			break;
		}
		if (h[i] == '\n' || i - pos == IMAP_SECTION_FIELD_NAME_MAX)
			break;
	}
	f_r->start = pos;
	f_r->name_len = 0;
	if (name_end != 0) {
		size_t len = name_end - pos;
		while (len > 0 && (h[pos + len - 1] == ' ' ||
				   h[pos + len - 1] == '\t'))
			len--;
		f_r->name_len = len;
	}
	/* to the end of the line, then its continuations */
	for (;;) {
		while (i < n && h[i] != '\n')
			i++;
		if (i < n)
			i++;
		if (i >= n || (h[i] != ' ' && h[i] != '\t'))
			break;
	}
	f_r->end = i;
	return i;
}

/* The cache value of name for header h (n bytes) into value. Returns 0,
   -1 if it does not fit. */
static int hdr_value_build(const unsigned char *h, size_t n, const char *name,
			   buffer_t *value)
{
	size_t name_len = strlen(name), pos = 0;
	unsigned int entries = 0;
	uint16_t place = 0;

	buffer_reset(value);
	if (buffer_append_c(value, HDR_VALUE_MAGIC) < 0)
		return -1;
	/* lines before the first field belong to no field */
	while (pos < n && (h[pos] == ' ' || h[pos] == '\t')) {
		while (pos < n && h[pos] != '\n')
			pos++;
		if (pos < n)
			pos++;
	}
	while (pos < n && h[pos] != '\r' && h[pos] != '\n') {
		struct hdr_field f;

		pos = hdr_field_at(h, n, pos, &f);
		if (f.name_len == name_len &&
		    strncasecmp((const char *)h + f.start, name, name_len) == 0) {
			uint32_t len = (uint32_t)(f.end - f.start);
			entries++;
			if (buffer_append(value, &place, sizeof(place)) < 0 ||
			    buffer_append(value, &len, sizeof(len)) < 0 ||
			    buffer_append(value, h + f.start, len) < 0)
				return -1;
		}
		if (place == UINT16_MAX || entries > HDR_FIELDS_MAX)
			return -1;
		place++;
	}
	return 0;
}

/* Read the header of ms's message (CRLF form, with its blank line) into
   buf. Returns 0, -1 if it is bigger than buf or unreadable. */
static int hdr_read(struct imap_msg_structure *ms, struct mailbox *box,
		    uint32_t seq, int fd, buffer_t *buf)
{
	static const char *const no_fields[] = { NULL };
	const struct imap_section hsec = {
		.part = "", .text = IMAP_SECTION_HEADER, .fields = no_fields,
	};
	struct imap_body_source src;
	struct imap_body_stream *s;
	int ret = 0;

	if (imap_body_source_get(ms->root, &hsec, 0, &src) < 0 ||
	    !src.found || src.virt_size > buf->max_size)
		return -1;
	s = i_malloc(sizeof(*s));
	imap_body_stream_init(s, fd, !mailbox_msg_is_crlf(box, seq), &hsec,
			      &src);
	for (;;) {
		unsigned char chunk[IMAP_BODY_STREAM_CHUNK];
		ssize_t n = imap_body_stream_read(s, chunk, sizeof(chunk));
		if (n <= 0) {
			ret = n < 0 ? -1 : 0;
			break;
		}
		if (buffer_append(buf, chunk, (size_t)n) < 0) {
			ret = -1;
			break;
		}
	}
	i_free(s);
	return ret;
}

void imap_fetch_hdr_fill(struct imap_msg_structure *ms, struct mailbox *box,
			 uint32_t seq, int fd, const struct imap_section *sec)
{
	char field[HDR_CACHE_NAME_SIZE];
	buffer_t hdr, value;
	const char *error;

	buffer_init(&hdr, IMAP_FETCH_HDR_MAX);
	/* every byte of the header can be in one value, with the magic
	   and the head of each entry */
	buffer_init(&value, IMAP_FETCH_HDR_MAX + 1 +
		    HDR_ENTRY_HEAD * (HDR_FIELDS_MAX + 1));
	if (hdr_read(ms, box, seq, fd, &hdr) < 0) {
		i_debug("FETCH %u: header not cached (too big or unreadable)",
			seq);
		goto out;
	}
	for (unsigned int i = 0; i < sec->field_count; i++) {
		const void *data;
		size_t size;

		hdr_cache_name(sec->fields[i], field, sizeof(field));
		/* a value already there is not added again (a list that
		   misses for another name must not grow the cache) */
		if (hdr_name_repeated(sec, i) ||
		    mailbox_msg_cache_lookup(box, seq, field, &data, &size) > 0 ||
		    hdr_value_build((const unsigned char *)hdr.data, hdr.used,
				    sec->fields[i],
				    &value) < 0)
			continue;
		if (mailbox_msg_cache_add(box, seq, field, value.data,
					  value.used, &error) == 0)
			ms->cache_pending++;
	}
out:
	buffer_free(&value);
	buffer_free(&hdr);
}

/* ---- composing an answer from the cache ---- */

struct hdr_entry {
	uint16_t place;
	uint32_t pos, len;	/* in the scratch buffer */
};

/* Append the entries of one cached value to scratch and entries.
   Returns 0, -1 if the value is garbled or does not fit. */
static int hdr_value_parse(const unsigned char *data, size_t size,
			   buffer_t *scratch, struct hdr_entry *entries,
			   unsigned int *count)
{
	size_t pos = 1;

	if (size == 0 || data[0] != HDR_VALUE_MAGIC)
		return -1;
	while (pos < size) {
		uint16_t place;
		uint32_t len;

		if (size - pos < HDR_ENTRY_HEAD || *count == HDR_FIELDS_MAX)
			return -1;
		memcpy(&place, data + pos, sizeof(place));
		memcpy(&len, data + pos + 2, sizeof(len));
		pos += HDR_ENTRY_HEAD;
		if (len > size - pos)
			return -1;
		entries[*count].place = place;
		entries[*count].pos = (uint32_t)scratch->used;
		entries[*count].len = len;
		if (buffer_append(scratch, data + pos, len) < 0)
			return -1;
		(*count)++;
		pos += len;
	}
	return 0;
}

static int hdr_entry_cmp(const void *a, const void *b)
{
	const struct hdr_entry *x = a, *y = b;

	return (int)x->place - (int)y->place;
}

int imap_fetch_hdr_lookup(struct mailbox *box, uint32_t seq,
			  const struct imap_section *sec, buffer_t *out)
{
	char field[HDR_CACHE_NAME_SIZE];
	struct hdr_entry *entries;
	unsigned int count = 0;
	const void *data;
	size_t size;
	buffer_t scratch;
	int ret = 1;

	buffer_reset(out);
	/* the values are pieces of one header of at most IMAP_FETCH_HDR_MAX */
	buffer_init(&scratch, IMAP_FETCH_HDR_MAX);
	entries = i_malloc(sizeof(*entries) * HDR_FIELDS_MAX);
	for (unsigned int i = 0; i < sec->field_count && ret > 0; i++) {
		if (hdr_name_repeated(sec, i))
			continue;
		hdr_cache_name(sec->fields[i], field, sizeof(field));
		/* data lives until the next cache call: copied out at once */
		if (mailbox_msg_cache_lookup(box, seq, field, &data, &size) <= 0 ||
		    hdr_value_parse(data, size, &scratch, entries, &count) < 0)
			ret = 0;
	}
	if (ret > 0) {
		qsort(entries, count, sizeof(*entries), hdr_entry_cmp);
		for (unsigned int i = 0; i < count && ret > 0; i++) {
			if (buffer_append(out, scratch.data + entries[i].pos,
					  entries[i].len) < 0)
				ret = 0;
		}
		/* the selected fields end with the blank line */
		if (ret > 0 && buffer_append(out, "\r\n", 2) < 0)
			ret = 0;
	}
	i_free(entries);
	buffer_free(&scratch);
	return ret;
}
