/* moat.index.cache: append-only per-message field records. */
#include "lib.h"
#include "mail-index-private.h"
#include "mail-cache.h"
#include "crc32c.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

#define MAIL_CACHE_MAGIC 0x41434f4dU      /* "MOCA" little-endian */
/* 2: records without fixed headers or padding (struct cache_rec);
   3: their crc is CRC-32C (lib/crc32c.h), not zlib's crc32. A file of
   an older version is replaced by a new one on the next cache write,
   its values are misses until then. */
#define MAIL_CACHE_MAJOR 3
#define MAIL_CACHE_MINOR 0
/* Offsets are 32-bit: a cache never grows past this (compress first). */
#define MAIL_CACHE_MAX_FILE_SIZE 0xfff00000U
/* Compression writes the new file in chunks of this size. */
#define MAIL_CACHE_COMPRESS_CHUNK (1024U * 1024)

struct mail_cache_header {
	uint32_t magic;
	uint8_t major_version;
	uint8_t minor_version;
	uint16_t unused;
	uint32_t header_size;
	uint32_t file_seq;
	uint32_t fields_count;
	uint32_t crc;              /* crc32 of the header with crc = 0 */
	char fields[MAIL_CACHE_MAX_FIELDS][MAIL_CACHE_FIELD_NAME_MAX + 1];
};

/* Records (major versions 2 and 3) are not aligned and carry no
   fixed-size header: u32 crc, LEB128 fields size, LEB128 prev delta (0 =
   no older record of the message, else this offset minus the older
   one's), then the fields: u8 field index, LEB128 data size, data. The
   uid is not stored: the crc covers it (CRC-32C of the uid as 4
   little-endian bytes, then of every byte of the record after the crc;
   version 2 used zlib's crc32), so a record reached from another
   message's offset fails its crc like garbage does. This framing costs
   about 15 bytes a message where version 1's fixed headers and padding
   cost 43 (doc/index-format.md). */
#define CACHE_CRC_SIZE 4
/* A LEB128 u32 takes at most 5 bytes. */
#define CACHE_VARINT_MAX 5
/* crc + two varints */
#define CACHE_REC_HDR_MAX (CACHE_CRC_SIZE + 2 * CACHE_VARINT_MAX)

/* A record whose framing (and, from record_at(), crc) was checked. */
struct cache_rec {
	uint32_t size;             /* every byte of the record */
	uint32_t prev_offset;      /* older record of the message, 0 = none */
	const unsigned char *fields, *end;
};

_Static_assert(sizeof(struct mail_cache_header) == 2072, "cache header layout");

/* A queued mail_cache_add() in the transaction's buffer (not on disk),
   followed by the data padded to 4. */
struct mail_cache_pending {
	uint32_t uid;
	uint32_t size;
	char name[MAIL_CACHE_FIELD_NAME_MAX + 1];
};

/* Records this handle wrote since its view last synced, so that a chain
   continues from them (open addressing on uid; full = forget all). */
#define CACHE_RECENT_SLOTS 1024

struct cache_recent {
	uint32_t uid, offset;
};

struct mail_cache {
	struct mail_index *index;
	struct cache_recent recent[CACHE_RECENT_SLOTS];
	unsigned int recent_count;
	int fd;
	uint32_t file_seq;         /* 0 = no usable file open */
	const unsigned char *map;
	size_t map_size;
	/* Records this handle wrote that chain to an older record of their
	   message: what a compression would merge (mail_cache_want_compress). */
	uint32_t chained_written;
	/* Records of memo_uid whose crc checked out in this mapping: the
	   lookups of one message's items (ENVELOPE, BODYSTRUCTURE, header
	   fields, one after the other in a FETCH) check each record's crc
	   once, not once per item (crc32 was a fifth of a cached FETCH's
	   CPU).
	   Forgotten at the next message, sync, remap or close, so a file
	   garbled later is still caught by the next message's lookups. */
	uint32_t memo_uid;
	unsigned int memo_count;
	uint32_t memo_offsets[MAIL_CACHE_MAX_CHAIN];
};

static uint32_t hdr_crc(const struct mail_cache_header *hdr)
{
	struct mail_cache_header copy = *hdr;

	copy.crc = 0;
	return (uint32_t)crc32(0L, (const void *)&copy, sizeof(copy));
}

static bool header_is_valid(const struct mail_cache_header *hdr)
{
	return hdr->magic == MAIL_CACHE_MAGIC &&
		hdr->major_version == MAIL_CACHE_MAJOR &&
		hdr->header_size == sizeof(*hdr) && hdr->file_seq != 0 &&
		hdr->fields_count <= MAIL_CACHE_MAX_FIELDS &&
		hdr->crc == hdr_crc(hdr);
}

static void memo_forget(struct mail_cache *cache)
{
	cache->memo_uid = 0;
	cache->memo_count = 0;
}

static void cache_close_file(struct mail_cache *cache)
{
	if (cache->map != NULL)
		(void)munmap((void *)cache->map, cache->map_size);
	cache->map = NULL;
	cache->map_size = 0;
	cache->file_seq = 0;
	i_close_fd(&cache->fd);
	mail_cache_view_synced(cache);
}

static struct mail_cache *cache_get(struct mail_index *index)
{
	if (index->cache == NULL) {
		index->cache = i_malloc(sizeof(*index->cache));
		index->cache->index = index;
		index->cache->fd = -1;
	}
	return index->cache;
}

void mail_cache_free(struct mail_cache **_cache)
{
	struct mail_cache *cache = *_cache;

	if (cache == NULL)
		return;
	*_cache = NULL;
	cache_close_file(cache);
	i_free(cache);
}

void mail_cache_invalidate(struct mail_cache *cache)
{
	cache_close_file(cache);
}

void mail_cache_view_synced(struct mail_cache *cache)
{
	memo_forget(cache);
	if (cache->recent_count == 0)
		return;
	memset(cache->recent, 0, sizeof(cache->recent));
	cache->recent_count = 0;
}

static struct cache_recent *recent_slot(struct mail_cache *cache, uint32_t uid)
{
	unsigned int i = (uid * 2654435761U) % CACHE_RECENT_SLOTS;

	while (cache->recent[i].uid != 0 && cache->recent[i].uid != uid)
		i = (i + 1) % CACHE_RECENT_SLOTS;
	return &cache->recent[i];
}

static void recent_set(struct mail_cache *cache, uint32_t uid, uint32_t offset)
{
	if (cache->recent_count >= CACHE_RECENT_SLOTS / 2)
		mail_cache_view_synced(cache);
	struct cache_recent *r = recent_slot(cache, uid);
	if (r->uid == 0)
		cache->recent_count++;
	r->uid = uid;
	r->offset = offset;
}

/* Map the whole file (again, when it grew). Returns true if usable. */
static bool cache_remap(struct mail_cache *cache)
{
	struct stat st;

	if (fstat(cache->fd, &st) < 0 || st.st_size < (off_t)sizeof(struct mail_cache_header) ||
	    st.st_size > MAIL_CACHE_MAX_FILE_SIZE)
		return false;
	if ((size_t)st.st_size == cache->map_size)
		return true;
	memo_forget(cache);
	if (cache->map != NULL)
		(void)munmap((void *)cache->map, cache->map_size);
	cache->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, cache->fd, 0);
	if (cache->map == MAP_FAILED) {
		cache->map = NULL;
		cache->map_size = 0;
		return false;
	}
	cache->map_size = (size_t)st.st_size;
	return true;
}

static bool cache_open_file(struct mail_cache *cache)
{
	struct mail_cache_header hdr;
	bool readonly = (cache->index->flags & MAIL_INDEX_OPEN_READONLY) != 0;

	cache_close_file(cache);
	cache->fd = open(cache->index->cache_path,
			 (readonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC);
	if (cache->fd < 0)
		return false;
	if (!cache_remap(cache)) {
		cache_close_file(cache);
		return false;
	}
	memcpy(&hdr, cache->map, sizeof(hdr));
	if (hdr.magic == MAIL_CACHE_MAGIC && hdr.major_version != MAIL_CACHE_MAJOR) {
		/* another version's file (an upgrade): misses, not
		   corruption; the next write replaces it */
		cache_close_file(cache);
		return false;
	}
	if (!header_is_valid(&hdr)) {
		mail_index_corrupted(cache->index, "%s: bad header",
				     cache->index->cache_path);
		cache_close_file(cache);
		return false;
	}
	cache->file_seq = hdr.file_seq;
	return true;
}

/* The file whose seq the view's map names, or false. */
static bool cache_want(struct mail_cache *cache, uint32_t seq)
{
	if (seq == 0)
		return false;
	if (cache->file_seq == seq)
		return true;
	return cache_open_file(cache) && cache->file_seq == seq;
}

static int field_find(const struct mail_cache_header *hdr, const char *name)
{
	for (uint32_t i = 0; i < hdr->fields_count && i < MAIL_CACHE_MAX_FIELDS; i++) {
		if (strncmp(hdr->fields[i], name, MAIL_CACHE_FIELD_NAME_MAX + 1) == 0)
			return (int)i;
	}
	return -1;
}

/* Bytes of a LEB128 u32 at p (before end), 0 if garbled. */
static size_t varint_get(const unsigned char *p, const unsigned char *end,
			 uint32_t *value_r)
{
	uint64_t value = 0;

	for (size_t i = 0; i < CACHE_VARINT_MAX && p + i < end; i++) {
		value |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if ((p[i] & 0x80) == 0) {
			if (value > UINT32_MAX)
				return 0;
			*value_r = (uint32_t)value;
			return i + 1;
		}
	}
	return 0;
}

static size_t varint_put(unsigned char *out, uint32_t value)
{
	size_t n = 0;

	do {
		unsigned char b = value & 0x7f;
		value >>= 7;
		out[n++] = value != 0 ? (unsigned char)(b | 0x80) : b;
	} while (value != 0);
	return n;
}

static uint32_t rec_crc(uint32_t uid, const unsigned char *after_crc, size_t size)
{
	const unsigned char uid_le[4] = {
		uid & 0xff, (uid >> 8) & 0xff, (uid >> 16) & 0xff, uid >> 24
	};
	return crc32c(crc32c(0, uid_le, sizeof(uid_le)), after_crc, size);
}

/* The framing of the record at offset of a file image: in bounds, prev
   before it. No crc check (that needs the uid). */
static bool record_parse(const unsigned char *map, size_t map_size,
			 uint32_t offset, struct cache_rec *rec_r)
{
	uint32_t fields_size, prev_delta;
	size_t n;

	if (offset < sizeof(struct mail_cache_header) ||
	    (size_t)offset + CACHE_CRC_SIZE >= map_size)
		return false;
	const unsigned char *p = map + offset + CACHE_CRC_SIZE;
	const unsigned char *end = map + map_size;
	if ((n = varint_get(p, end, &fields_size)) == 0)
		return false;
	p += n;
	if ((n = varint_get(p, end, &prev_delta)) == 0)
		return false;
	p += n;
	if (fields_size > (size_t)(end - p) ||
	    prev_delta > offset - sizeof(struct mail_cache_header))
		return false;
	rec_r->fields = p;
	rec_r->end = p + fields_size;
	rec_r->size = (uint32_t)(rec_r->end - (map + offset));
	rec_r->prev_offset = prev_delta == 0 ? 0 : offset - prev_delta;
	return true;
}

/* The valid record of uid at offset of a file image. */
static bool record_at(const unsigned char *map, size_t map_size,
		      uint32_t offset, uint32_t uid, struct cache_rec *rec_r)
{
	uint32_t want;

	if (!record_parse(map, map_size, offset, rec_r))
		return false;
	memcpy(&want, map + offset, sizeof(want));
	return rec_crc(uid, map + offset + CACHE_CRC_SIZE,
		       rec_r->size - CACHE_CRC_SIZE) == want;
}

/* Find field id in a parsed record. */
static bool record_find_field(const struct cache_rec *rec, unsigned int id,
			      const void **data_r, size_t *size_r)
{
	const unsigned char *p = rec->fields;
	uint32_t size;
	size_t n;

	while (p < rec->end) {
		unsigned int field = *p++;
		if (field >= MAIL_CACHE_MAX_FIELDS ||
		    (n = varint_get(p, rec->end, &size)) == 0)
			return false;
		p += n;
		if (size > (size_t)(rec->end - p))
			return false;
		if (field == id) {
			*data_r = p;
			*size_r = size;
			return true;
		}
		p += size;
	}
	return false;
}

/* Whether the crc of the parsed record at offset of the lookup's
   message (memo_uid) holds; computed only the first time. */
static bool memo_crc_ok(struct mail_cache *cache, uint32_t offset,
			uint32_t uid, const struct cache_rec *rec)
{
	uint32_t want;

	for (unsigned int i = 0; i < cache->memo_count; i++) {
		if (cache->memo_offsets[i] == offset)
			return true;
	}
	memcpy(&want, cache->map + offset, sizeof(want));
	if (rec_crc(uid, cache->map + offset + CACHE_CRC_SIZE,
		    rec->size - CACHE_CRC_SIZE) != want)
		return false;
	if (cache->memo_count < MAIL_CACHE_MAX_CHAIN)
		cache->memo_offsets[cache->memo_count++] = offset;
	return true;
}

int mail_cache_lookup(struct mail_index_view *view, uint32_t seq,
		      const char *field, const void **data_r, size_t *size_r)
{
	struct mail_index *index = view->index;
	const struct mail_index_record *irec = mail_index_view_lookup(view, seq);
	struct mail_cache *cache = cache_get(index);
	uint32_t offset = irec->cache_offset;
	struct cache_rec rec;

	if (offset == 0 || !cache_want(cache, index->map->hdr.cache_file_seq))
		return 0;
	if (offset >= cache->map_size && !cache_remap(cache))
		return 0;
	int id = field_find((const void *)cache->map, field);
	if (id < 0)
		return 0;
	if (cache->memo_uid != irec->uid) {
		cache->memo_uid = irec->uid;
		cache->memo_count = 0;
	}
	/* The records on the way are only parsed (bounded, prev before
	   them); the one that holds the field must pass its crc, which binds
	   the uid: a garbled record on the way costs a miss or a wrong turn
	   that ends in a crc failure, never wrong data. */
	for (unsigned int hops = 0; offset != 0 && hops < MAIL_CACHE_MAX_CHAIN; hops++) {
		if (!record_parse(cache->map, cache->map_size, offset, &rec))
			return 0;
		if (record_find_field(&rec, (unsigned int)id, data_r, size_r))
			return memo_crc_ok(cache, offset, irec->uid, &rec) ? 1 : 0;
		offset = rec.prev_offset;
	}
	return 0;
}

int mail_cache_add(struct mail_index_transaction *t, uint32_t uid,
		   const char *field, const void *data, size_t size)
{
	struct mail_cache_pending p;
	static const char pad[4];
	size_t len = strlen(field);

	if (uid == 0 || len == 0 || len > MAIL_CACHE_FIELD_NAME_MAX ||
	    size > MAIL_CACHE_FIELD_MAX_SIZE)
		return -1;
	memset(&p, 0, sizeof(p));
	p.uid = uid;
	p.size = (uint32_t)size;
	memcpy(p.name, field, len);
	if (buffer_append(&t->cache, &p, sizeof(p)) < 0 ||
	    buffer_append(&t->cache, data, size) < 0 ||
	    buffer_append(&t->cache, pad, (4 - size % 4) % 4) < 0)
		return -1;
	return 0;
}

/* ---- writing (index lock held) ---- */

/* Append one field to a record's fields being built. */
static void rec_add_field(buffer_t *fields, unsigned int id, const void *data,
			  uint32_t size)
{
	unsigned char head[1 + CACHE_VARINT_MAX];
	size_t n;

	head[0] = (unsigned char)id;
	n = 1 + varint_put(head + 1, size);
	if (buffer_append(fields, head, n) < 0 ||
	    buffer_append(fields, data, size) < 0)
		i_panic("cache record buffer full");
}

/* Append to out the record of uid holding fields, to be written at file
   offset (out's end), chaining to prev (0 = none, else < offset). */
static void rec_emit(buffer_t *out, uint32_t offset, uint32_t uid,
		     uint32_t prev, const buffer_t *fields)
{
	unsigned char head[CACHE_REC_HDR_MAX];
	size_t start = out->used, n = CACHE_CRC_SIZE;

	i_assert(prev < offset && fields->used <= UINT32_MAX);
	memset(head, 0, CACHE_CRC_SIZE);
	n += varint_put(head + n, (uint32_t)fields->used);
	n += varint_put(head + n, prev == 0 ? 0 : offset - prev);
	if (buffer_append(out, head, n) < 0 ||
	    buffer_append(out, fields->data, fields->used) < 0)
		i_panic("cache record buffer full");
	uint32_t crc = rec_crc(uid, (const unsigned char *)out->data + start +
			       CACHE_CRC_SIZE, out->used - start - CACHE_CRC_SIZE);
	memcpy(out->data + start, &crc, sizeof(crc));
}

/* Replace the cache file by hdr followed by body (tmp + rename). */
static int cache_write_file(struct mail_cache *cache, struct mail_cache_header *hdr,
			    const buffer_t *body, const char **error_r)
{
	struct mail_index *index = cache->index;
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", index->cache_path) >= (int)sizeof(tmp)) {
		*error_r = mail_index_set_error(index, "cache path too long");
		return -1;
	}
	hdr->crc = hdr_crc(hdr);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0 || fd_pwrite_full(fd, hdr, sizeof(*hdr), 0) < 0 ||
	    (body != NULL && fd_pwrite_full(fd, body->data, body->used, sizeof(*hdr)) < 0) ||
	    rename(tmp, index->cache_path) < 0) {
		*error_r = mail_index_set_error(index, "writing %s: %s", tmp,
						strerror(errno));
		if (fd >= 0)
			(void)unlink(tmp);
		i_close_fd(&fd);
		return -1;
	}
	i_close_fd(&fd);
	if (!cache_open_file(cache) || cache->file_seq != hdr->file_seq) {
		*error_r = mail_index_set_error(index, "%s replaced under us",
						index->cache_path);
		return -1;
	}
	return 0;
}

static void header_from_file(struct mail_cache *cache, struct mail_cache_header *hdr)
{
	if (cache->file_seq != 0) {
		memcpy(hdr, cache->map, sizeof(*hdr));
	} else {
		memset(hdr, 0, sizeof(*hdr));
		hdr->magic = MAIL_CACHE_MAGIC;
		hdr->major_version = MAIL_CACHE_MAJOR;
		hdr->minor_version = MAIL_CACHE_MINOR;
		hdr->header_size = sizeof(*hdr);
	}
}

/* Writers check that the file is still the one at the path (it may have
   been deleted or replaced) with an intact header. */
static bool cache_file_still_valid(struct mail_cache *cache)
{
	struct mail_cache_header hdr;
	struct stat st, st2;

	if (stat(cache->index->cache_path, &st) < 0 || fstat(cache->fd, &st2) < 0 ||
	    st.st_ino != st2.st_ino || st.st_dev != st2.st_dev)
		return false;
	memcpy(&hdr, cache->map, sizeof(hdr));
	return header_is_valid(&hdr) && hdr.file_seq == cache->file_seq;
}

/* Make the file the tail names usable, or start a new one. */
static int flush_ensure_file(struct mail_index_transaction *t, const char **error_r)
{
	struct mail_cache *cache = cache_get(t->index);
	uint32_t want = t->index->tail->hdr.cache_file_seq;
	struct mail_cache_header hdr;

	if (cache->file_seq != 0 && !cache_file_still_valid(cache))
		cache_close_file(cache);
	if (cache_want(cache, want))
		return 0;
	header_from_file(cache, &hdr);
	hdr.file_seq = MAX(want, cache->file_seq) + 1;
	if (cache_write_file(cache, &hdr, NULL, error_r) < 0)
		return -1;
	mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_CACHE_RESET,
				    &hdr.file_seq, sizeof(hdr.file_seq));
	return 0;
}

/* The field's id, registering it in the header. -1 if the registry is full. */
static int flush_field_id(struct mail_cache *cache, const char *name,
			  bool *changed)
{
	struct mail_cache_header *hdr = (void *)cache->map;
	int id = field_find(hdr, name);

	if (id >= 0 || hdr->fields_count >= MAIL_CACHE_MAX_FIELDS)
		return id;
	struct mail_cache_header copy = *hdr;
	strncpy(copy.fields[copy.fields_count], name, MAIL_CACHE_FIELD_NAME_MAX);
	id = (int)copy.fields_count++;
	copy.crc = hdr_crc(&copy);
	if (fd_pwrite_full(cache->fd, &copy, sizeof(copy), 0) < 0)
		return -1;
	*changed = true;
	return id;
}

/* The newest record of uid in this file as the view knows it. */
static uint32_t flush_prev_offset(struct mail_index *index, uint32_t uid)
{
	struct mail_index_map *map = index->map;
	struct cache_recent *r = recent_slot(index->cache, uid);

	if (r->uid == uid)
		return r->offset;

	if (map->hdr.cache_file_seq != index->cache->file_seq)
		return 0;
	uint32_t seq = mail_index_map_lower_bound(map, uid);
	if (seq > map->hdr.messages_count || map->recs[seq - 1].uid != uid)
		return 0;
	return map->recs[seq - 1].cache_offset;
}

/* Write the record of uid collected in fields to recs (file offset
   base + recs->used), and its offset to offsets. */
static void flush_emit(struct mail_index *index, uint32_t base, uint32_t uid,
		       buffer_t *fields, buffer_t *recs, buffer_t *offsets,
		       uint32_t *chained)
{
	struct mail_transaction_cache_offset co;
	uint32_t offset = base + (uint32_t)recs->used;
	uint32_t prev = flush_prev_offset(index, uid);

	/* an offset past the 32-bit limit is caught by the caller's size
	   check before anything is written */
	if (prev >= offset)
		prev = 0;
	rec_emit(recs, offset, uid, prev, fields);
	if (prev != 0)
		(*chained)++;
	co.uid = uid;
	co.offset = offset;
	if (buffer_append(offsets, &co, sizeof(co)) < 0)
		i_panic("cache offsets buffer full");
	buffer_reset(fields);
}

int mail_cache_transaction_flush(struct mail_index_transaction *t,
				 const char **error_r)
{
	struct mail_index *index = t->index;
	struct mail_cache *cache = cache_get(index);
	buffer_t recs, offsets, fields;
	struct mail_cache_pending p;
	struct mail_transaction_cache_offset co;
	size_t pos = 0;
	uint32_t cur_uid = 0, chained = 0;
	bool changed = false;
	int ret = 0;

	if (flush_ensure_file(t, error_r) < 0 || !cache_remap(cache))
		return -1;
	uint32_t base = (uint32_t)cache->map_size;
	buffer_init(&recs, MAIL_TRANSACTION_MAX_SIZE);
	buffer_init(&offsets, MAIL_TRANSACTION_MAX_SIZE);
	buffer_init(&fields, MAIL_TRANSACTION_MAX_SIZE);
	while (pos + sizeof(p) <= t->cache.used) {
		memcpy(&p, t->cache.data + pos, sizeof(p));
		const void *data = t->cache.data + pos + sizeof(p);
		pos += sizeof(p) + ((p.size + 3) & ~3U);
		int id = flush_field_id(cache, p.name, &changed);
		if (id < 0)
			continue;
		if (p.uid != cur_uid) {
			if (cur_uid != 0)
				flush_emit(index, base, cur_uid, &fields, &recs,
					   &offsets, &chained);
			cur_uid = p.uid;
		}
		rec_add_field(&fields, (unsigned int)id, data, p.size);
	}
	if (cur_uid != 0)
		flush_emit(index, base, cur_uid, &fields, &recs, &offsets, &chained);
	if ((uint64_t)base + recs.used > MAIL_CACHE_MAX_FILE_SIZE) {
		/* Full: drop the values, the next compression makes room. */
	} else if (recs.used > 0 && fd_pwrite_full(cache->fd, recs.data, recs.used, base) < 0) {
		*error_r = mail_index_set_error(index, "pwrite(%s): %s",
						index->cache_path, strerror(errno));
		ret = -1;
	} else if (offsets.used > 0) {
		cache->chained_written += chained;
		mail_transaction_rec_add_op(&t->rec, MAIL_TRANSACTION_CACHE_OFFSET,
					    offsets.data, offsets.used);
		for (size_t i = 0; i < offsets.used; i += sizeof(co)) {
			memcpy(&co, offsets.data + i, sizeof(co));
			recent_set(cache, co.uid, co.offset);
		}
	}
	buffer_free(&fields);
	buffer_free(&recs);
	buffer_free(&offsets);
	return ret;
}

/* ---- compression ---- */

/* Append to body the newest value of every field of the chain at offset;
   body starts at file offset base. */
static void compress_one(struct mail_cache *cache, uint32_t uid, uint32_t offset,
			 uint64_t base, buffer_t *body, buffer_t *fields,
			 buffer_t *offsets)
{
	struct cache_rec rec;
	uint64_t seen = 0;

	buffer_reset(fields);
	for (unsigned int hops = 0; offset != 0 && hops < MAIL_CACHE_MAX_CHAIN; hops++) {
		if (!record_at(cache->map, cache->map_size, offset, uid, &rec))
			break;
		for (unsigned int id = 0; id < MAIL_CACHE_MAX_FIELDS; id++) {
			const void *data;
			size_t size;
			if ((seen & (1ULL << id)) != 0 ||
			    !record_find_field(&rec, id, &data, &size))
				continue;
			seen |= 1ULL << id;
			rec_add_field(fields, id, data, (uint32_t)size);
		}
		offset = rec.prev_offset;
	}
	uint64_t offset_new = base + body->used;
	if (fields->used == 0 ||
	    offset_new + CACHE_REC_HDR_MAX + fields->used > MAIL_CACHE_MAX_FILE_SIZE) {
		/* nothing (or no room: a miss) */
		return;
	}
	rec_emit(body, (uint32_t)offset_new, uid, 0, fields);
	struct mail_transaction_cache_offset co = { uid, (uint32_t)offset_new };
	if (buffer_append(offsets, &co, sizeof(co)) < 0)
		i_panic("cache offsets buffer full");
}

/* Write the compressed file as tmp: header, then the records of the
   view's messages in chunks (memory stays bounded by the chunk size, not
   the mailbox), fdatasynced. Returns 0 or -1. */
static int compress_write_tmp(struct mail_cache *cache, struct mail_index_map *map,
			      struct mail_cache_header *hdr, const char *tmp,
			      buffer_t *offsets)
{
	buffer_t body, fields;
	uint64_t base = sizeof(*hdr);
	int ret = 0;

	hdr->crc = hdr_crc(hdr);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0 || fd_pwrite_full(fd, hdr, sizeof(*hdr), 0) < 0) {
		i_close_fd(&fd);
		return -1;
	}
	buffer_init(&body, MAIL_CACHE_MAX_FILE_SIZE);
	buffer_init(&fields, MAIL_TRANSACTION_MAX_SIZE);
	for (uint32_t i = 0; i < map->hdr.messages_count && ret == 0; i++) {
		if (map->recs[i].cache_offset != 0)
			compress_one(cache, map->recs[i].uid, map->recs[i].cache_offset,
				     base, &body, &fields, offsets);
		if (body.used >= MAIL_CACHE_COMPRESS_CHUNK ||
		    i + 1 == map->hdr.messages_count) {
			ret = fd_pwrite_full(fd, body.data, body.used, (off_t)base);
			base += body.used;
			buffer_reset(&body);
		}
	}
	buffer_free(&fields);
	buffer_free(&body);
	/* on disk before the rename: a power cut must not leave a renamed
	   file without its records (they would be misses, never wrong) */
	if (ret == 0)
		ret = fdatasync(fd);
	i_close_fd(&fd);
	return ret;
}

/* Lock held: the view's map is at the end of the log (else returns 0).
   A new file (seq + 1) replaces the old by rename; then one log record
   (CACHE_RESET + CACHE_OFFSETs) points the index at it. A crash before
   the rename leaves the old file in use (and a stale .tmp that the next
   compression overwrites); one between the rename and the log record
   leaves the index naming the old seq: misses, and the next cache write
   starts a new file. Readers keep their mapping of the old file until
   their sync shows the new seq. */
int mail_cache_compress_locked(struct mail_index *index, const char **error_r)
{
	struct mail_cache *cache = cache_get(index);
	struct mail_index_map *map = index->map;
	struct mail_cache_header hdr;
	char tmp[PATH_MAX];
	buffer_t offsets;
	int ret = -1;

	if (mail_index_tail_refresh(index, error_r) < 0)
		return -1;
	if (index->cursor.file->hdr.file_seq != index->tail_cursor.file->hdr.file_seq ||
	    index->cursor.offset != index->tail_cursor.offset ||
	    !cache_want(cache, map->hdr.cache_file_seq) || !cache_remap(cache))
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", index->cache_path) >= (int)sizeof(tmp)) {
		*error_r = mail_index_set_error(index, "cache path too long");
		return -1;
	}
	header_from_file(cache, &hdr);
	hdr.file_seq = cache->file_seq + 1;
	buffer_init(&offsets, MAIL_TRANSACTION_MAX_SIZE);
	/* one attempt per fill: a failing compression is not retried at
	   every sync */
	cache->chained_written = 0;
	if (compress_write_tmp(cache, map, &hdr, tmp, &offsets) < 0 ||
	    rename(tmp, index->cache_path) < 0) {
		*error_r = mail_index_set_error(index, "writing %s: %s", tmp,
						strerror(errno));
		(void)unlink(tmp);
		buffer_free(&offsets);
		return -1;
	}
	buffer_t *rec = &index->rec_buf;
	buffer_reset(rec);
	mail_transaction_rec_begin(rec);
	mail_transaction_rec_add_op(rec, MAIL_TRANSACTION_CACHE_RESET,
				    &hdr.file_seq, sizeof(hdr.file_seq));
	if (offsets.used > 0)
		mail_transaction_rec_add_op(rec, MAIL_TRANSACTION_CACHE_OFFSET,
					    offsets.data, offsets.used);
	mail_transaction_rec_finish(rec, index->tail->hdr.highest_modseq);
	if (mail_transaction_log_append(index->tail_cursor.file,
			index->tail_cursor.offset, rec, error_r) == 0) {
		mail_index_map_apply(index->tail, rec->data, rec->used, NULL);
		index->tail_cursor.offset += (uint32_t)rec->used;
		index->tail->hdr.log_file_offset = index->tail_cursor.offset;
		ret = 1;
	}
	buffer_free(&offsets);
	/* the new file is opened by the next lookup or write */
	cache_close_file(cache);
	return ret;
}

int mail_cache_compress(struct mail_index_view *view, const char **error_r)
{
	struct mail_index *index = view->index;

	if (mail_index_lock(index, true, error_r) < 0)
		return -1;
	int ret = mail_cache_compress_locked(index, error_r);
	mail_index_unlock(index);
	return ret;
}

bool mail_cache_want_compress(struct mail_index *index)
{
	struct mail_cache *cache = index->cache;

	if (cache == NULL || (index->flags & MAIL_INDEX_OPEN_READONLY) != 0)
		return false;
	return cache->chained_written >= MAIL_CACHE_COMPRESS_MIN_CHAINED &&
		cache->chained_written >= index->map->hdr.messages_count /
		MAIL_CACHE_COMPRESS_CHAINED_DIV;
}

void mail_cache_get_usage(struct mail_index_view *view,
			  uint64_t *file_size_r, uint64_t *used_r)
{
	struct mail_index *index = view->index;
	struct mail_cache *cache = cache_get(index);
	struct mail_index_map *map = index->map;
	uint64_t used = sizeof(struct mail_cache_header);

	*file_size_r = 0;
	*used_r = 0;
	if (!cache_want(cache, map->hdr.cache_file_seq) || !cache_remap(cache))
		return;
	for (uint32_t i = 0; i < map->hdr.messages_count; i++) {
		uint32_t offset = map->recs[i].cache_offset;
		struct cache_rec rec;
		for (unsigned int hops = 0; offset != 0 && hops < MAIL_CACHE_MAX_CHAIN; hops++) {
			if (!record_at(cache->map, cache->map_size, offset,
				       map->recs[i].uid, &rec))
				break;
			used += rec.size;
			offset = rec.prev_offset;
		}
	}
	*file_size_r = cache->map_size;
	*used_r = used;
}

unsigned int mail_cache_check_mem(const void *data, size_t size)
{
	struct mail_cache_header hdr;
	struct cache_rec rec;
	unsigned int count = 0;

	if (size < sizeof(hdr) || size > MAIL_CACHE_MAX_FILE_SIZE)
		return 0;
	memcpy(&hdr, data, sizeof(hdr));
	if (!header_is_valid(&hdr))
		return 0;
	/* The records follow each other; a walk knows no uids, so it checks
	   the framing and the fields (the crc is checked by lookups). */
	const unsigned char *map = data;
	uint32_t offset = sizeof(hdr);
	while (record_parse(map, size, offset, &rec)) {
		for (unsigned int id = 0; id <= hdr.fields_count; id++) {
			const void *fdata;
			size_t fsize;
			(void)record_find_field(&rec, id, &fdata, &fsize);
		}
		count++;
		offset += rec.size;
	}
	return count;
}
