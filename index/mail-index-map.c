/* The in-memory view of moat.index: mapping, validation, writing, and
   applying log records to it. */
#include "lib.h"
#include "mail-index-private.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

/* The byte layouts doc/index-format.md documents. */
_Static_assert(sizeof(struct mail_index_header) == 72, "index header layout");
_Static_assert(sizeof(struct mail_index_record) == 40, "index record layout");
_Static_assert(sizeof(struct mail_transaction_log_header) == 40, "log header layout");
_Static_assert(sizeof(struct mail_transaction_rec_header) == 16, "log record layout");
_Static_assert(sizeof(struct mail_transaction_append) == 32, "append op layout");
_Static_assert(sizeof(struct mail_transaction_flags) == 20, "flags op layout");

/* Header plus every keyword name at its maximum length, rounded up. */
#define MAIL_INDEX_MAX_HEADER_SIZE 8192
/* Room for appends reserved (as address space only) beyond the records. */
#define MAP_MIN_SPARE_RECORDS 4096U

static size_t page_round(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) / page * page;
}

static void map_reserve(struct mail_index_map *map, uint32_t capacity)
{
	size_t size = page_round(i_mul_size(capacity, sizeof(struct mail_index_record)));
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (mem == MAP_FAILED)
		i_panic("mmap(%zu) failed: %s", size, strerror(errno));
	if (map->recs != NULL) {
		memcpy(mem, map->recs, (size_t)map->hdr.messages_count *
		       sizeof(struct mail_index_record));
	}
	if (map->mem != NULL)
		(void)munmap(map->mem, map->mem_size);
	map->mem = mem;
	map->mem_size = size;
	map->recs = mem;
	map->rec_capacity = (uint32_t)(size / sizeof(struct mail_index_record));
}

static void map_header_init(struct mail_index_header *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = MAIL_INDEX_MAGIC;
	hdr->major_version = MAIL_INDEX_MAJOR;
	hdr->minor_version = MAIL_INDEX_MINOR;
	hdr->compat_flags = MAIL_INDEX_COMPAT_LE64;
	hdr->header_size = sizeof(*hdr);
	hdr->record_size = sizeof(struct mail_index_record);
	hdr->next_uid = 1;
}

struct mail_index_map *mail_index_map_new_empty(bool header_only)
{
	struct mail_index_map *map = i_malloc(sizeof(*map));

	map_header_init(&map->hdr);
	map->header_only = header_only;
	mail_index_map_init_history(map);
	if (!header_only)
		map_reserve(map, MAP_MIN_SPARE_RECORDS);
	return map;
}

void mail_index_map_free(struct mail_index_map **_map)
{
	struct mail_index_map *map = *_map;

	if (map == NULL)
		return;
	*_map = NULL;
	if (map->mem != NULL)
		(void)munmap(map->mem, map->mem_size);
	for (unsigned int i = 0; i < MAIL_INDEX_MAX_KEYWORDS; i++)
		i_free(map->keywords[i]);
	mail_index_history_close(map);
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++)
		i_free(map->list[i].runs);
	i_free(map);
}

struct mail_index_map *mail_index_map_header_copy(const struct mail_index_map *map)
{
	struct mail_index_map *copy = mail_index_map_new_empty(true);

	copy->hdr = map->hdr;
	for (unsigned int i = 0; i < MAIL_INDEX_MAX_KEYWORDS; i++)
		copy->keywords[i] = i_strdup(map->keywords[i]);
	return copy;
}

bool mail_index_header_is_valid(const struct mail_index_header *hdr,
				size_t file_size, const char **error_r)
{
	if (hdr->magic != MAIL_INDEX_MAGIC)
		*error_r = "bad magic";
	else if (hdr->major_version != MAIL_INDEX_MAJOR)
		*error_r = "unsupported major version";
	else if (hdr->compat_flags != MAIL_INDEX_COMPAT_LE64)
		*error_r = "written by another architecture";
	else if (hdr->header_size < sizeof(*hdr) || hdr->header_size % 8 != 0 ||
		 hdr->header_size > MAIL_INDEX_MAX_HEADER_SIZE)
		*error_r = "bad header size";
	else if (hdr->record_size != sizeof(struct mail_index_record))
		*error_r = "bad record size";
	else if (hdr->messages_count > MAIL_INDEX_MAX_MESSAGES ||
		 (uint64_t)hdr->header_size + (uint64_t)hdr->messages_count *
		 hdr->record_size != file_size)
		*error_r = "file size does not match the message count";
	else if (hdr->seen_count > hdr->messages_count ||
		 hdr->deleted_count > hdr->messages_count)
		*error_r = "bad flag counts";
	else if (hdr->keywords_count > MAIL_INDEX_MAX_KEYWORDS)
		*error_r = "too many keywords";
	else if (hdr->next_uid == 0 || hdr->log_file_seq == 0)
		*error_r = "bad next_uid or log position";
	else
		return true;
	return false;
}

/* Header bytes (incl. names) as read: check crc and parse the names. */
static bool map_parse_header(struct mail_index_map *map, const unsigned char *data,
			     const char **error_r)
{
	struct mail_index_header hdr;
	uint32_t zero = 0;

	memcpy(&hdr, data, sizeof(hdr));
	uint32_t crc = (uint32_t)crc32(0L, data, offsetof(struct mail_index_header, crc));
	crc = (uint32_t)crc32(crc, (const void *)&zero, sizeof(zero));
	crc = (uint32_t)crc32(crc, data + sizeof(hdr), hdr.header_size - sizeof(hdr));
	if (crc != hdr.crc) {
		*error_r = "header crc mismatch";
		return false;
	}
	const char *p = (const char *)data + sizeof(hdr);
	const char *end = (const char *)data + hdr.header_size;
	for (unsigned int i = 0; i < hdr.keywords_count; i++) {
		size_t len = strnlen(p, (size_t)(end - p));
		if (p + len >= end || len == 0 || len > MAIL_INDEX_KEYWORD_MAX_LEN) {
			*error_r = "bad keyword names";
			return false;
		}
		map->keywords[i] = i_strndup(p, len);
		p += len + 1;
	}
	map->hdr = hdr;
	return true;
}

/* Map fd (or copy data) into a fresh map; the header is already valid. */
static int map_load(const struct mail_index_header *hdr, int fd,
		    const void *data, size_t file_size,
		    struct mail_index_map **map_r, const char **error_r)
{
	struct mail_index_map *map = i_malloc(sizeof(*map));
	uint32_t count = hdr->messages_count;

	mail_index_map_init_history(map);
	size_t hsize = hdr->header_size;

	/* Address space for the file plus spare room for appends; only
	   touched pages cost memory. */
	size_t size = page_round(i_add_size(file_size, i_mul_size(
		count / 2 + MAP_MIN_SPARE_RECORDS, sizeof(struct mail_index_record))));
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		i_panic("mmap(%zu) failed: %s", size, strerror(errno));
	map->mem = mem;
	map->mem_size = size;
	if (fd >= 0) {
		if (mmap(mem, file_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
			*error_r = "mmap of the index failed";
			mail_index_map_free(&map);
			return -1;
		}
	} else {
		memcpy(mem, data, file_size);
	}
	if (!map_parse_header(map, mem, error_r)) {
		mail_index_map_free(&map);
		return -1;
	}
	map->recs = (void *)((char *)mem + hsize);
	map->rec_capacity = (uint32_t)((size - hsize) / sizeof(struct mail_index_record));
	*map_r = map;
	return 0;
}

int mail_index_map_read(const char *path, struct mail_index_map **map_r,
			const char **error_r)
{
	struct mail_index_header hdr;
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		*error_r = "open of the index failed";
		return -1;
	}
	if (fstat(fd, &st) < 0 || pread(fd, &hdr, sizeof(hdr), 0) != sizeof(hdr)) {
		*error_r = "index shorter than its header";
		i_close_fd(&fd);
		return -1;
	}
	if (!mail_index_header_is_valid(&hdr, (size_t)st.st_size, error_r)) {
		i_close_fd(&fd);
		return -1;
	}
	int ret = map_load(&hdr, fd, NULL, (size_t)st.st_size, map_r, error_r);
	i_close_fd(&fd);
	return ret < 0 ? -1 : 1;
}

int mail_index_map_read_mem(const void *data, size_t size,
			    struct mail_index_map **map_r, const char **error_r)
{
	struct mail_index_header hdr;

	if (size < sizeof(hdr)) {
		*error_r = "index shorter than its header";
		return -1;
	}
	memcpy(&hdr, data, sizeof(hdr));
	if (!mail_index_header_is_valid(&hdr, size, error_r))
		return -1;
	return map_load(&hdr, -1, data, size, map_r, error_r) < 0 ? -1 : 1;
}

static int write_all(int fd, const void *data, size_t size)
{
	const char *p = data;

	while (size > 0) {
		ssize_t ret = write(fd, p, size);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			return -1;
		p += ret;
		size -= (size_t)ret;
	}
	return 0;
}

/* Header with names and crc into buf. */
static void map_build_header(struct mail_index_map *map, buffer_t *buf)
{
	struct mail_index_header hdr = map->hdr;
	static const char pad[8];

	hdr.magic = MAIL_INDEX_MAGIC;
	hdr.major_version = MAIL_INDEX_MAJOR;
	hdr.minor_version = MAIL_INDEX_MINOR;
	hdr.compat_flags = MAIL_INDEX_COMPAT_LE64;
	hdr.record_size = sizeof(struct mail_index_record);
	hdr.crc = 0;
	if (buffer_append(buf, &hdr, sizeof(hdr)) < 0)
		i_unreached();
	for (unsigned int i = 0; i < hdr.keywords_count; i++) {
		if (buffer_append(buf, map->keywords[i],
				  strlen(map->keywords[i]) + 1) < 0)
			i_unreached();
	}
	if (buffer_append(buf, pad, (8 - buf->used % 8) % 8) < 0)
		i_unreached();
	struct mail_index_header *h = (void *)buf->data;
	h->header_size = (uint32_t)buf->used;
	h->crc = (uint32_t)crc32(0L, (const void *)buf->data, (uInt)buf->used);
}

int mail_index_map_write(struct mail_index_map *map, const char *path,
			 bool do_fsync, const char **error_r)
{
	char tmp[PATH_MAX];
	buffer_t hbuf;
	int fd, ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		*error_r = "index path too long";
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		  O_CLOEXEC, 0600);
	if (fd < 0) {
		*error_r = "creating the index file failed";
		return -1;
	}
	buffer_init(&hbuf, MAIL_INDEX_MAX_HEADER_SIZE);
	map_build_header(map, &hbuf);
	if (write_all(fd, hbuf.data, hbuf.used) < 0 ||
	    write_all(fd, map->recs, (size_t)map->hdr.messages_count *
		      sizeof(struct mail_index_record)) < 0 ||
	    (do_fsync && fdatasync(fd) < 0) || rename(tmp, path) < 0) {
		*error_r = "writing the index file failed";
		(void)unlink(tmp);
		ret = -1;
	}
	buffer_free(&hbuf);
	i_close_fd(&fd);
	return ret;
}

uint32_t mail_index_map_lower_bound(const struct mail_index_map *map, uint32_t uid)
{
	uint32_t lo = 0, hi = map->hdr.messages_count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (map->recs[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

void mail_index_map_set_keyword(struct mail_index_map *map, unsigned int idx,
				const char *name, size_t len)
{
	i_assert(idx < MAIL_INDEX_MAX_KEYWORDS);
	i_free(map->keywords[idx]);
	map->keywords[idx] = i_strndup(name, len);
	if (map->hdr.keywords_count <= idx)
		map->hdr.keywords_count = idx + 1;
	/* Names are defined in order; fill holes so the file stays dense. */
	for (unsigned int i = 0; i < idx; i++) {
		if (map->keywords[i] == NULL)
			map->keywords[i] = i_strdup("$unnamed");
	}
}

int mail_index_map_keyword_find(const struct mail_index_map *map, const char *name)
{
	for (unsigned int i = 0; i < map->hdr.keywords_count; i++) {
		if (map->keywords[i] != NULL && strcasecmp(map->keywords[i], name) == 0)
			return (int)i;
	}
	return -1;
}

/* Keep seen/deleted counts and the first-unseen hint in step with one
   record's flag change. */
static void map_count_flags(struct mail_index_map *map, uint32_t uid,
			    uint8_t old_flags, uint8_t new_flags)
{
	struct mail_index_header *hdr = &map->hdr;

	if ((old_flags & MAIL_SEEN) != 0)
		hdr->seen_count--;
	if ((new_flags & MAIL_SEEN) != 0)
		hdr->seen_count++;
	if ((old_flags & MAIL_DELETED) != 0)
		hdr->deleted_count--;
	if ((new_flags & MAIL_DELETED) != 0)
		hdr->deleted_count++;
	if ((new_flags & MAIL_SEEN) == 0 &&
	    (hdr->first_unseen_uid == 0 || uid < hdr->first_unseen_uid))
		hdr->first_unseen_uid = uid;
}

/* The hint pointed at a message that is now seen or gone: move it on. */
static void map_fix_first_unseen(struct mail_index_map *map)
{
	struct mail_index_header *hdr = &map->hdr;

	if (hdr->first_unseen_uid == 0)
		return;
	uint32_t seq = mail_index_map_lower_bound(map, hdr->first_unseen_uid);
	for (; seq <= hdr->messages_count; seq++) {
		if ((map->recs[seq - 1].flags & MAIL_SEEN) == 0) {
			hdr->first_unseen_uid = map->recs[seq - 1].uid;
			return;
		}
	}
	hdr->first_unseen_uid = 0;
}

static void apply_append(struct mail_index_map *map, const void *payload,
			 uint32_t size, uint64_t modseq,
			 const struct mail_index_sync_target *target)
{
	struct mail_transaction_append a;

	for (uint32_t pos = 0; pos + sizeof(a) <= size; pos += sizeof(a)) {
		memcpy(&a, (const char *)payload + pos, sizeof(a));
		if (a.uid < map->hdr.next_uid || a.uid == 0)
			continue;  /* not ascending: never written by moat */
		map->hdr.next_uid = a.uid == UINT32_MAX ? a.uid : a.uid + 1;
		if (map->header_only)
			continue;
		if (map->hdr.messages_count >= MAIL_INDEX_MAX_MESSAGES)
			continue;
		if (map->hdr.messages_count == map->rec_capacity)
			map_reserve(map, map->rec_capacity * 2);
		struct mail_index_record *rec = &map->recs[map->hdr.messages_count++];
		memset(rec, 0, sizeof(*rec));
		rec->uid = a.uid;
		rec->flags = a.flags & MAIL_FLAGS_PERMANENT;
		rec->keywords = a.keywords;
		rec->modseq = modseq;
		rec->size = a.size;
		rec->internal_date = a.internal_date;
		map_count_flags(map, a.uid, 0, rec->flags);
		mail_index_map_add_run(map, MAIL_INDEX_HISTORY_CHANGES, modseq,
				       a.uid, a.uid);
		if (target != NULL && target->cb->appended != NULL)
			target->cb->appended(target->context, map->hdr.messages_count, a.uid);
	}
}

static void apply_flags(struct mail_index_map *map, const void *payload,
			uint32_t size, uint64_t modseq,
			const struct mail_index_sync_target *target)
{
	struct mail_transaction_flags f;

	if (map->header_only)
		return;
	for (uint32_t pos = 0; pos + sizeof(f) <= size; pos += sizeof(f)) {
		memcpy(&f, (const char *)payload + pos, sizeof(f));
		uint32_t seq = mail_index_map_lower_bound(map, f.uid1);
		bool unseen_moved = false;
		for (; seq <= map->hdr.messages_count; seq++) {
			struct mail_index_record *rec = &map->recs[seq - 1];
			if (rec->uid > f.uid2)
				break;
			uint8_t flags = (uint8_t)((rec->flags | f.add_flags) &
				~f.remove_flags & MAIL_FLAGS_PERMANENT);
			uint32_t kw = (rec->keywords | f.add_keywords) & ~f.remove_keywords;
			if (flags == rec->flags && kw == rec->keywords)
				continue;
			map_count_flags(map, rec->uid, rec->flags, flags);
			if (rec->uid == map->hdr.first_unseen_uid && (flags & MAIL_SEEN) != 0)
				unseen_moved = true;
			rec->flags = flags;
			rec->keywords = kw;
			rec->modseq = modseq;
			mail_index_map_add_run(map, MAIL_INDEX_HISTORY_CHANGES,
					       modseq, rec->uid, rec->uid);
			if (target != NULL && target->cb->flags_changed != NULL)
				target->cb->flags_changed(target->context, seq, rec->uid);
		}
		if (unseen_moved)
			map_fix_first_unseen(map);
	}
}

static void apply_expunge(struct mail_index_map *map, const void *payload,
			  uint32_t size, uint64_t modseq,
			  const struct mail_index_sync_target *target)
{
	struct mail_transaction_range r;

	if (map->header_only)
		return;
	for (uint32_t pos = 0; pos + sizeof(r) <= size; pos += sizeof(r)) {
		memcpy(&r, (const char *)payload + pos, sizeof(r));
		uint32_t first = mail_index_map_lower_bound(map, r.uid1);
		uint32_t last = first, run_start = 0;
		bool unseen_gone = false;
		for (; last <= map->hdr.messages_count; last++) {
			struct mail_index_record *rec = &map->recs[last - 1];
			if (rec->uid > r.uid2)
				break;
			if ((rec->flags & MAIL_SEEN) != 0)
				map->hdr.seen_count--;
			if ((rec->flags & MAIL_DELETED) != 0)
				map->hdr.deleted_count--;
			if (rec->uid == map->hdr.first_unseen_uid)
				unseen_gone = true;
			/* the history keeps uids that were messages only */
			if (last == first || rec[-1].uid + 1 != rec->uid) {
				if (last > first)
					mail_index_map_add_run(map,
						MAIL_INDEX_HISTORY_EXPUNGES,
						modseq, run_start, rec[-1].uid);
				run_start = rec->uid;
			}
			/* Each removal renumbers the rest, as EXPUNGE does. */
			if (target != NULL && target->cb->expunge != NULL)
				target->cb->expunge(target->context, first, rec->uid);
		}
		uint32_t n = last - first;
		if (n == 0)
			continue;
		mail_index_map_add_run(map, MAIL_INDEX_HISTORY_EXPUNGES, modseq,
				       run_start, map->recs[last - 2].uid);
		memmove(&map->recs[first - 1], &map->recs[last - 1],
			(size_t)(map->hdr.messages_count - (last - 1)) *
			sizeof(struct mail_index_record));
		map->hdr.messages_count -= n;
		if (unseen_gone)
			map_fix_first_unseen(map);
	}
}

static void apply_cache_offsets(struct mail_index_map *map, const void *payload,
				uint32_t size)
{
	struct mail_transaction_cache_offset c;

	if (map->header_only)
		return;
	for (uint32_t pos = 0; pos + sizeof(c) <= size; pos += sizeof(c)) {
		memcpy(&c, (const char *)payload + pos, sizeof(c));
		uint32_t seq = mail_index_map_lower_bound(map, c.uid);
		if (seq <= map->hdr.messages_count && map->recs[seq - 1].uid == c.uid)
			map->recs[seq - 1].cache_offset = c.offset;
	}
}

static void apply_small_op(struct mail_index_map *map,
			   const struct mail_transaction_op_header *op,
			   const void *payload)
{
	uint32_t u32;
	struct mail_transaction_header_update hu;

	switch (op->type) {
	case MAIL_TRANSACTION_KEYWORD:
		if (op->size <= sizeof(u32))
			break;
		memcpy(&u32, payload, sizeof(u32));
		const char *name = (const char *)payload + sizeof(u32);
		size_t len = strnlen(name, op->size - sizeof(u32));
		if (u32 < MAIL_INDEX_MAX_KEYWORDS && len > 0 &&
		    len <= MAIL_INDEX_KEYWORD_MAX_LEN)
			mail_index_map_set_keyword(map, u32, name, len);
		break;
	case MAIL_TRANSACTION_HEADER:
		if (op->size < sizeof(hu))
			break;
		memcpy(&hu, payload, sizeof(hu));
		if (hu.uidvalidity != 0)
			map->hdr.uidvalidity = hu.uidvalidity;
		if (hu.next_uid > map->hdr.next_uid)
			map->hdr.next_uid = hu.next_uid;
		break;
	case MAIL_TRANSACTION_FIRST_RECENT:
		if (op->size < sizeof(u32))
			break;
		memcpy(&u32, payload, sizeof(u32));
		if (u32 > map->hdr.first_recent_uid)
			map->hdr.first_recent_uid = u32;
		break;
	case MAIL_TRANSACTION_CACHE_RESET:
		if (op->size < sizeof(u32))
			break;
		memcpy(&u32, payload, sizeof(u32));
		map->hdr.cache_file_seq = u32;
		for (uint32_t i = 0; !map->header_only &&
		     i < map->hdr.messages_count; i++)
			map->recs[i].cache_offset = 0;
		break;
	default:
		/* Unknown ops of a later minor version are skipped. */
		break;
	}
}

void mail_index_map_apply(struct mail_index_map *map, const void *rec, size_t size,
			  const struct mail_index_sync_target *target)
{
	struct mail_transaction_rec_header rh;
	struct mail_transaction_op_iter iter;
	const struct mail_transaction_op_header *op;
	const void *payload;

	memcpy(&rh, rec, sizeof(rh));
	map->apply_modseq = rh.modseq;
	mail_transaction_op_iter_init(&iter, rec, size);
	while (mail_transaction_op_next(&iter, &op, &payload)) {
		switch (op->type) {
		case MAIL_TRANSACTION_APPEND:
			apply_append(map, payload, op->size, rh.modseq, target);
			break;
		case MAIL_TRANSACTION_FLAGS:
			apply_flags(map, payload, op->size, rh.modseq, target);
			break;
		case MAIL_TRANSACTION_EXPUNGE:
			apply_expunge(map, payload, op->size, rh.modseq, target);
			break;
		case MAIL_TRANSACTION_CACHE_OFFSET:
			apply_cache_offsets(map, payload, op->size);
			break;
		case MAIL_TRANSACTION_MODSEQ_FLOOR: {
			uint64_t floor;
			if (op->size < sizeof(floor))
				break;
			memcpy(&floor, payload, sizeof(floor));
			/* only a floor that set the modseq hides a past;
			   the restart is below this record's own changes */
			if (floor >= rh.modseq)
				mail_index_map_history_restart(map, rh.modseq - 1);
			break;
		}
		default:
			apply_small_op(map, op, payload);
			break;
		}
	}
	if (rh.modseq > map->hdr.highest_modseq)
		map->hdr.highest_modseq = rh.modseq;
}

bool mail_index_map_check(const struct mail_index_map *map, const char **error_r)
{
	const struct mail_index_header *hdr = &map->hdr;
	uint32_t seen = 0, deleted = 0, first_unseen = 0, prev_uid = 0;

	for (uint32_t i = 0; i < hdr->messages_count; i++) {
		const struct mail_index_record *rec = &map->recs[i];
		if (rec->uid <= prev_uid || rec->uid >= hdr->next_uid) {
			*error_r = "uids not ascending or >= next_uid";
			return false;
		}
		if ((rec->flags & ~MAIL_FLAGS_PERMANENT) != 0) {
			*error_r = "unknown flag bits";
			return false;
		}
		if (rec->modseq > hdr->highest_modseq) {
			*error_r = "record modseq above highest_modseq";
			return false;
		}
		prev_uid = rec->uid;
		seen += (rec->flags & MAIL_SEEN) != 0;
		deleted += (rec->flags & MAIL_DELETED) != 0;
		if ((rec->flags & MAIL_SEEN) == 0 && first_unseen == 0)
			first_unseen = rec->uid;
	}
	if (seen != hdr->seen_count || deleted != hdr->deleted_count) {
		*error_r = "seen/deleted counts wrong";
		return false;
	}
	if (first_unseen != hdr->first_unseen_uid) {
		*error_r = "first unseen uid wrong";
		return false;
	}
	return true;
}
