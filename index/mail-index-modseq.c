/* The histories behind CONDSTORE and QRESYNC (RFC 7162): which uids were
   expunged at which modseq (moat.index.modseq, exact: VANISHED) and
   which were changed or appended at which modseq (moat.index.changes:
   where to look for modseqs above a value), kept past log rotation
   (layout: doc/index-format.md).

   A map knows every run of a kind with a modseq above its base: those up
   to the state the file was written with (read from the file) and those
   it applied from the log since it was loaded (map->list). A checkpoint
   adds the latter to the file before moat.index is replaced, so the file
   always reaches at least as far as moat.index and a map loaded from
   moat.index never misses what lies between. */
#include "lib.h"
#include "log.h"
#include "mail-index-private.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#define MODSEQ_FILE_MAGIC 0x534d4f4dU      /* "MOMS" little-endian */
#define MODSEQ_FILE_MAJOR 1
#define MODSEQ_FILE_MINOR 0
/* Entries kept in a file: 1 MiB. Beyond it the oldest half goes and the
   base rises (older modseqs get the RFC's fallback answer, or a look at
   every record). */
#define MAIL_INDEX_HISTORY_MAX 65536U
/* Runs a map keeps between checkpoints (1 MiB per kind); past it the
   oldest half is forgotten and the map's history starts later. */
#define MAIL_INDEX_MAP_RUNS_MAX 65536U
/* Entries copied or searched per read. */
#define HISTORY_CHUNK 256U

struct mail_index_modseq_header {
	uint32_t magic;
	uint8_t major_version;
	uint8_t minor_version;
	uint16_t compat_flags;
	uint32_t header_size;
	uint32_t uidvalidity;
	uint64_t highest_modseq;   /* the index state it was written with */
	uint64_t base_modseq;      /* every expunge above this is listed */
	uint32_t count;            /* entries that follow */
	uint32_t crc;              /* crc32 of the header with this 0 */
};
_Static_assert(sizeof(struct mail_index_modseq_header) == 40,
	       "modseq file header layout");
_Static_assert(sizeof(struct mail_index_modseq_run) == 16,
	       "history entry layout");

void mail_index_map_init_history(struct mail_index_map *map)
{
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++)
		map->hist[i].fd = -1;
}

void mail_index_map_add_run(struct mail_index_map *map,
			    enum mail_index_history_kind kind, uint64_t modseq,
			    uint32_t uid1, uint32_t uid2)
{
	struct mail_index_history_list *list = &map->list[kind];

	if (map->header_only)
		return;
	if (list->count > 0) {
		struct mail_index_modseq_run *last = &list->runs[list->count - 1];
		/* one transaction's neighbouring runs are one */
		if (last->modseq == modseq && last->uid2 + 1 == uid1) {
			last->uid2 = uid2;
			return;
		}
	}
	if (list->count == MAIL_INDEX_MAP_RUNS_MAX) {
		unsigned int drop = MAIL_INDEX_MAP_RUNS_MAX / 2;
		list->from = MAX(list->from, list->runs[drop - 1].modseq);
		memmove(list->runs, list->runs + drop,
			(list->count - drop) * sizeof(*list->runs));
		list->count -= drop;
	}
	if (list->count == list->alloc) {
		list->alloc = list->alloc == 0 ? 16 :
			MIN(list->alloc * 2, MAIL_INDEX_MAP_RUNS_MAX);
		list->runs = i_realloc(list->runs, i_mul_size(list->alloc,
							      sizeof(*list->runs)));
	}
	struct mail_index_modseq_run *e = &list->runs[list->count++];
	e->modseq = modseq;
	e->uid1 = uid1;
	e->uid2 = uid2;
}

void mail_index_map_history_restart(struct mail_index_map *map,
				    uint64_t modseq)
{
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++) {
		struct mail_index_history_list *list = &map->list[i];
		uint32_t keep = 0;

		if (list->from >= modseq)
			continue;
		while (keep < list->count &&
		       list->runs[list->count - keep - 1].modseq > modseq)
			keep++;
		if (keep > 0)
			memmove(list->runs, list->runs + list->count - keep,
				keep * sizeof(*list->runs));
		list->count = keep;
		list->from = modseq;
	}
}

static uint32_t header_crc(const struct mail_index_modseq_header *hdr)
{
	struct mail_index_modseq_header copy = *hdr;

	copy.crc = 0;
	return (uint32_t)crc32(0L, (const void *)&copy, sizeof(copy));
}

static void header_init(struct mail_index_modseq_header *hdr,
			uint32_t uidvalidity, uint64_t highest, uint64_t base,
			uint32_t count)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = MODSEQ_FILE_MAGIC;
	hdr->major_version = MODSEQ_FILE_MAJOR;
	hdr->minor_version = MODSEQ_FILE_MINOR;
	hdr->compat_flags = 1;    /* the index's MAIL_INDEX_COMPAT_LE64 */
	hdr->header_size = sizeof(*hdr);
	hdr->uidvalidity = uidvalidity;
	hdr->highest_modseq = highest;
	hdr->base_modseq = base;
	hdr->count = count;
	hdr->crc = header_crc(hdr);
}

/* Open the file and check its header. Returns the fd or -1 (missing or
   unusable: *why_r says which, NULL for missing). */
static int history_open(const char *path, int flags,
			struct mail_index_modseq_header *hdr_r,
			const char **why_r)
{
	struct stat st;
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);

	*why_r = NULL;
	if (fd < 0) {
		if (errno != ENOENT)
			*why_r = "open failed";
		return -1;
	}
	if (fstat(fd, &st) < 0 ||
	    pread(fd, hdr_r, sizeof(*hdr_r), 0) != (ssize_t)sizeof(*hdr_r))
		*why_r = "shorter than its header";
	else if (hdr_r->magic != MODSEQ_FILE_MAGIC ||
		 hdr_r->major_version != MODSEQ_FILE_MAJOR ||
		 hdr_r->compat_flags != 1 ||
		 hdr_r->header_size != sizeof(*hdr_r) ||
		 hdr_r->crc != header_crc(hdr_r))
		*why_r = "bad header";
	else if (hdr_r->count > MAIL_INDEX_HISTORY_MAX ||
		 (uint64_t)st.st_size < sizeof(*hdr_r) +
		 (uint64_t)hdr_r->count * sizeof(struct mail_index_modseq_run))
		*why_r = "shorter than its entries";
	else if (hdr_r->base_modseq > hdr_r->highest_modseq)
		*why_r = "base above highest modseq";
	else
		return fd;
	i_close_fd(&fd);
	return -1;
}

static void history_load_kind(struct mail_index *index,
			      struct mail_index_map *map,
			      enum mail_index_history_kind kind)
{
	struct mail_index_history *hist = &map->hist[kind];
	struct mail_index_modseq_header hdr;
	const char *why, *path = index->history_path[kind];

	map->list[kind].count = 0;
	map->list[kind].from = map->hdr.highest_modseq;
	int fd = history_open(path, O_RDONLY, &hdr, &why);
	if (fd < 0) {
		if (why != NULL)
			mail_index_corrupted(index, "%s: %s", path, why);
		return;
	}
	/* older than moat.index (a crash between the two renames): what
	   lies between is unknown, so the history starts here */
	if (hdr.uidvalidity != map->hdr.uidvalidity ||
	    hdr.highest_modseq < map->hdr.highest_modseq ||
	    hdr.base_modseq > map->hdr.highest_modseq) {
		i_close_fd(&fd);
		return;
	}
	hist->fd = fd;
	hist->count = hdr.count;
	hist->base_modseq = hdr.base_modseq;
	hist->highest_modseq = hdr.highest_modseq;
}

void mail_index_history_load(struct mail_index *index,
			     struct mail_index_map *map)
{
	mail_index_history_close(map);
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++)
		history_load_kind(index, map, i);
}

void mail_index_history_close(struct mail_index_map *map)
{
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++) {
		if (map->hist[i].fd >= 0)
			i_close_fd(&map->hist[i].fd);
		map->hist[i].fd = -1;
		map->hist[i].count = 0;
	}
}

/* Whether the file continues into the list (it reaches the list's
   start, so nothing lies between). */
static bool hist_usable(const struct mail_index_map *map,
			enum mail_index_history_kind kind)
{
	return map->hist[kind].fd >= 0 &&
		map->hist[kind].highest_modseq >= map->list[kind].from;
}

static uint64_t map_history_base(const struct mail_index_map *map,
				 enum mail_index_history_kind kind)
{
	return hist_usable(map, kind) ? map->hist[kind].base_modseq :
		map->list[kind].from;
}

static int read_entries(int fd, uint32_t first, uint32_t n,
			struct mail_index_modseq_run *buf)
{
	size_t size = (size_t)n * sizeof(*buf);
	off_t offset = (off_t)(sizeof(struct mail_index_modseq_header) +
			       (uint64_t)first * sizeof(*buf));

	return pread(fd, buf, size, offset) == (ssize_t)size ? 0 : -1;
}

/* The first entry of the file with modseq > since (binary search). */
static int history_lower_bound(const struct mail_index_history *hist,
			       uint64_t since, uint32_t *idx_r)
{
	uint32_t lo = 0, hi = hist->count;
	struct mail_index_modseq_run e;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (read_entries(hist->fd, mid, 1, &e) < 0)
			return -1;
		if (e.modseq <= since)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx_r = lo;
	return 0;
}

static int history_scan_file(const struct mail_index_history *hist,
			     uint64_t since, uint64_t limit,
			     mail_index_expunged_func_t *cb, void *context)
{
	struct mail_index_modseq_run buf[HISTORY_CHUNK];
	uint32_t idx;

	if (history_lower_bound(hist, since, &idx) < 0)
		return -1;
	while (idx < hist->count) {
		uint32_t n = MIN(hist->count - idx, HISTORY_CHUNK);
		if (read_entries(hist->fd, idx, n, buf) < 0)
			return -1;
		for (uint32_t i = 0; i < n; i++) {
			if (buf[i].modseq > limit)
				return 0;
			/* garbled entries are skipped, never followed */
			if (buf[i].modseq > since && buf[i].uid1 != 0 &&
			    buf[i].uid1 <= buf[i].uid2)
				cb(context, buf[i].uid1, buf[i].uid2);
		}
		idx += n;
	}
	return 0;
}

static int history_since(struct mail_index_view *view,
			 enum mail_index_history_kind kind, uint64_t since,
			 mail_index_expunged_func_t *cb, void *context,
			 const char **error_r)
{
	struct mail_index *index = view->index;
	const struct mail_index_map *map = index->map;
	const struct mail_index_history *hist = &map->hist[kind];
	const struct mail_index_history_list *list = &map->list[kind];
	uint64_t limit = map->hdr.highest_modseq;
	uint64_t list_from = since;

	if (since < map_history_base(map, kind))
		return 0;
	if (hist_usable(map, kind)) {
		if (since < hist->highest_modseq &&
		    history_scan_file(hist, since,
				      MIN(limit, hist->highest_modseq),
				      cb, context) < 0) {
			*error_r = mail_index_set_error(index, "pread(%s): %s",
				index->history_path[kind], strerror(errno));
			return -1;
		}
		list_from = MAX(since, hist->highest_modseq);
	}
	for (uint32_t i = 0; i < list->count; i++) {
		const struct mail_index_modseq_run *e = &list->runs[i];
		if (e->modseq > list_from && e->modseq <= limit)
			cb(context, e->uid1, e->uid2);
	}
	return 1;
}

int mail_index_view_expunged_since(struct mail_index_view *view,
				   uint64_t since,
				   mail_index_expunged_func_t *cb,
				   void *context, const char **error_r)
{
	return history_since(view, MAIL_INDEX_HISTORY_EXPUNGES, since, cb,
			     context, error_r);
}

int mail_index_view_changed_since(struct mail_index_view *view,
				  uint64_t since,
				  mail_index_expunged_func_t *cb,
				  void *context, const char **error_r)
{
	return history_since(view, MAIL_INDEX_HISTORY_CHANGES, since, cb,
			     context, error_r);
}

uint64_t mail_index_view_history_base(struct mail_index_view *view)
{
	return map_history_base(view->index->map, MAIL_INDEX_HISTORY_EXPUNGES);
}

/* ---- writing (lock held) ---- */

/* What the new file holds: the old file's entries from old_first, then
   the map's entries from list_first, above base. */
struct history_source {
	int old_fd;
	uint32_t old_first, old_count;
	const struct mail_index_modseq_run *list;
	uint32_t list_first, list_count;
};

static uint32_t source_total(const struct history_source *src)
{
	return (src->old_count - src->old_first) +
		(src->list_count - src->list_first);
}

/* The entry at position i of the concatenation. */
static int source_get(const struct history_source *src, uint32_t i,
		      struct mail_index_modseq_run *e_r)
{
	uint32_t old_n = src->old_count - src->old_first;

	if (i >= old_n) {
		*e_r = src->list[src->list_first + i - old_n];
		return 0;
	}
	return read_entries(src->old_fd, src->old_first + i, 1, e_r);
}

/* Past the cap: keep the newest half, and every entry of the modseq
   where the cut falls goes too (the base must be a whole modseq). */
static int source_trim(struct history_source *src, uint64_t *base)
{
	uint32_t total = source_total(src);
	struct mail_index_modseq_run e;

	if (total <= MAIL_INDEX_HISTORY_MAX)
		return 0;
	uint32_t drop = total - MAIL_INDEX_HISTORY_MAX / 2;
	if (source_get(src, drop - 1, &e) < 0)
		return -1;
	*base = MAX(*base, e.modseq);
	for (; drop < total; drop++) {
		struct mail_index_modseq_run next;
		if (source_get(src, drop, &next) < 0)
			return -1;
		if (next.modseq > *base)
			break;
	}
	uint32_t old_n = src->old_count - src->old_first;
	if (drop >= old_n) {
		src->list_first += drop - old_n;
		src->old_first = src->old_count;
	} else {
		src->old_first += drop;
	}
	return 0;
}

static int history_copy_entries(int fd, const struct history_source *src)
{
	struct mail_index_modseq_run buf[HISTORY_CHUNK];
	off_t offset = sizeof(struct mail_index_modseq_header);

	for (uint32_t i = src->old_first; i < src->old_count; ) {
		uint32_t n = MIN(src->old_count - i, HISTORY_CHUNK);
		if (read_entries(src->old_fd, i, n, buf) < 0 ||
		    fd_pwrite_full(fd, buf, n * sizeof(*buf), offset) < 0)
			return -1;
		offset += (off_t)(n * sizeof(*buf));
		i += n;
	}
	size_t size = (size_t)(src->list_count - src->list_first) *
		sizeof(*src->list);
	/* (an empty list may have no array at all) */
	return size == 0 ? 0 :
		fd_pwrite_full(fd, src->list + src->list_first, size, offset);
}

/* Write a whole new file (tmp, fdatasync, rename). */
static int history_rewrite(struct mail_index *index, const char *path,
			   uint32_t uidvalidity, uint64_t highest, uint64_t base,
			   struct history_source *src, const char **error_r)
{
	char tmp[PATH_MAX];
	struct mail_index_modseq_header hdr;

	if (source_trim(src, &base) < 0) {
		*error_r = mail_index_set_error(index, "pread(%s): %s",
			path, strerror(errno));
		return -1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >=
	    (int)sizeof(tmp)) {
		*error_r = mail_index_set_error(index, "path too long");
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0) {
		*error_r = mail_index_set_error(index, "open(%s): %s", tmp,
						strerror(errno));
		return -1;
	}
	header_init(&hdr, uidvalidity, highest, base, source_total(src));
	int ret = 0;
	if (fd_pwrite_full(fd, &hdr, sizeof(hdr), 0) < 0 ||
	    history_copy_entries(fd, src) < 0 || fdatasync(fd) < 0 ||
	    rename(tmp, path) < 0) {
		*error_r = mail_index_set_error(index, "writing %s: %s", tmp,
						strerror(errno));
		(void)unlink(tmp);
		ret = -1;
	}
	i_close_fd(&fd);
	return ret;
}

/* Append the map's new entries to the file in place: entries, sync,
   then the header that counts them, sync. A crash in between leaves
   bytes past the count, which are ignored and overwritten next time. */
static int history_append(struct mail_index *index, const char *path, int fd,
			  struct mail_index_modseq_header *hdr,
			  uint64_t highest, const struct history_source *src,
			  const char **error_r)
{
	uint32_t n = src->list_count - src->list_first;
	off_t offset = (off_t)(sizeof(*hdr) +
			       (uint64_t)hdr->count * sizeof(*src->list));

	if ((n > 0 && (fd_pwrite_full(fd, src->list + src->list_first,
				  n * sizeof(*src->list), offset) < 0 ||
		       fdatasync(fd) < 0))) {
		*error_r = mail_index_set_error(index, "writing %s: %s",
			path, strerror(errno));
		return -1;
	}
	header_init(hdr, hdr->uidvalidity, highest, hdr->base_modseq,
		    hdr->count + n);
	if (fd_pwrite_full(fd, hdr, sizeof(*hdr), 0) < 0 || fdatasync(fd) < 0) {
		*error_r = mail_index_set_error(index, "writing %s: %s",
			path, strerror(errno));
		return -1;
	}
	return 0;
}

static int history_write_kind(struct mail_index *index,
			      struct mail_index_map *map,
			      enum mail_index_history_kind kind,
			      const char **error_r)
{
	const struct mail_index_history_list *list = &map->list[kind];
	const char *path = index->history_path[kind];
	struct mail_index_modseq_header hdr;
	struct history_source src = {
		.old_fd = -1, .list = list->runs, .list_count = list->count,
	};
	uint64_t highest = map->hdr.highest_modseq;
	const char *why;
	int ret;

	int fd = history_open(path, O_RDWR, &hdr, &why);
	/* usable if it reaches the start of what the map applied */
	if (fd >= 0 && (hdr.uidvalidity != map->hdr.uidvalidity ||
			hdr.highest_modseq < list->from ||
			hdr.highest_modseq > highest))
		i_close_fd(&fd);
	if (fd < 0) {
		/* the history starts where this map's knowledge does */
		return history_rewrite(index, path, map->hdr.uidvalidity,
				       highest, list->from, &src, error_r);
	}
	if (hdr.highest_modseq == highest) {
		i_close_fd(&fd);
		return 0;
	}
	while (src.list_first < src.list_count &&
	       list->runs[src.list_first].modseq <= hdr.highest_modseq)
		src.list_first++;
	if (hdr.count + (src.list_count - src.list_first) <=
	    MAIL_INDEX_HISTORY_MAX) {
		ret = history_append(index, path, fd, &hdr, highest, &src,
				     error_r);
	} else {
		src.old_fd = fd;
		src.old_count = hdr.count;
		ret = history_rewrite(index, path, hdr.uidvalidity, highest,
				      hdr.base_modseq, &src, error_r);
	}
	i_close_fd(&fd);
	return ret;
}

int mail_index_history_write(struct mail_index *index,
			     struct mail_index_map *map, const char **error_r)
{
	int ret = 0;

	i_assert(index->locked);
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++) {
		if (history_write_kind(index, map, i, error_r) < 0)
			ret = -1;
	}
	return ret;
}

int mail_index_history_reset(struct mail_index *index, uint32_t uidvalidity,
			     uint64_t base_modseq, const char **error_r)
{
	i_assert(index->locked);
	for (unsigned int i = 0; i < MAIL_INDEX_HISTORY_KINDS; i++) {
		struct history_source src = { .old_fd = -1 };
		if (history_rewrite(index, index->history_path[i], uidvalidity,
				    base_modseq, base_modseq, &src,
				    error_r) < 0)
			return -1;
	}
	return 0;
}
