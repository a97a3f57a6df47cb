/* moat.uidlist reading, locking and atomic rewriting (maildir-uidlist.h). */
#include "lib.h"
#include "log.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#define UIDLIST_ERROR_MAX 512
#define UIDLIST_LOCK_RETRY_MS 5

struct maildir_uidlist {
	char *path, *tmp_path, *lock_path, *dir;
	bool fsync;
	pool_t pool;                 /* base names of the records */
	struct maildir_uidlist_rec *recs;
	unsigned int count, alloc;
	struct maildir_uidlist_rec **by_base;   /* NULL = not built */
	uint32_t uid_validity, next_uid;
	/* The file was missing or corrupt and UIDs start over: until it is
	   written, the caller may move UIDVALIDITY above the index's. */
	bool was_reset;
	/* dirty: the file must be rewritten (records expunged, header
	   changed); records [written_count, count) only need appending. */
	bool have_file_stat, dirty;
	/* Only the tail was read (maildir_uidlist_lock_append()): next_uid
	   is known, records before valid_end are not in memory. */
	bool partial;
	unsigned int written_count;
	/* Records from this uid on are not in a dovecot-uidlist that shares
	   our UIDVALIDITY yet: the next write appends them there too
	   (maildir-import.h, switching back to Dovecot). */
	uint32_t mirror_next_uid;
	/* End of the last complete, valid line: a torn tail after it (a
	   crash during an append) is ignored and cut by the next append. */
	uint64_t valid_end;
	struct stat file_st;         /* of the version in memory */
	/* what was written without a sync since the last
	   maildir_uidlist_take_unsynced() */
	enum maildir_uidlist_unsynced unsynced;
	int lock_fd;
	char error[UIDLIST_ERROR_MAX];
};

static const char *uidlist_set_error(struct maildir_uidlist *ul,
				     const char *fmt, ...) ATTR_FORMAT(2, 3);
static const char *uidlist_set_error(struct maildir_uidlist *ul,
				     const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(ul->error, sizeof(ul->error), fmt, args);
	va_end(args);
	return ul->error;
}

void maildir_uidlist_set_fsync(struct maildir_uidlist *ul, bool fsync)
{
	ul->fsync = fsync;
}

/* A write that was not synced: kind says what a later sync must cover. */
static void uidlist_note_unsynced(struct maildir_uidlist *ul,
				  enum maildir_uidlist_unsynced kind)
{
	if (!ul->fsync && kind > ul->unsynced)
		ul->unsynced = kind;
}

enum maildir_uidlist_unsynced
maildir_uidlist_take_unsynced(struct maildir_uidlist *ul)
{
	enum maildir_uidlist_unsynced kind = ul->unsynced;

	ul->unsynced = MAILDIR_UIDLIST_UNSYNCED_NONE;
	return kind;
}

struct maildir_uidlist *maildir_uidlist_init(const char *dir, bool fsync)
{
	struct maildir_uidlist *ul = i_malloc(sizeof(*ul));

	ul->dir = i_strdup(dir);
	ul->path = i_strdup_printf("%s/" MAILDIR_UIDLIST_NAME, dir);
	ul->tmp_path = i_strdup_printf("%s/" MAILDIR_UIDLIST_NAME ".tmp", dir);
	ul->lock_path = i_strdup_printf("%s/" MAILDIR_UIDLIST_LOCK_NAME, dir);
	ul->fsync = fsync;
	ul->pool = pool_create("maildir uidlist", 4096);
	ul->lock_fd = -1;
	ul->next_uid = 1;
	return ul;
}

void maildir_uidlist_deinit(struct maildir_uidlist **_ul)
{
	struct maildir_uidlist *ul = *_ul;

	*_ul = NULL;
	if (ul->lock_fd != -1)
		maildir_uidlist_unlock(ul);
	pool_unref(&ul->pool);
	i_free(ul->recs);
	i_free(ul->by_base);
	i_free(ul->path);
	i_free(ul->tmp_path);
	i_free(ul->lock_path);
	i_free(ul->dir);
	i_free(ul);
}

static void uidlist_clear(struct maildir_uidlist *ul)
{
	pool_clear(ul->pool);
	ul->count = 0;
	ul->written_count = 0;
	ul->partial = false;
	ul->valid_end = 0;
	i_free(ul->by_base);
}

/* Bit c of the set is 1 for a byte c that no base name may contain:
   controls, space, DEL, ':' and '/'. One test per byte: this runs over
   every name of every scan and of every uidlist read. */
static bool base_byte_is_bad(unsigned char c)
{
	static const uint64_t bad[4] = {
		0xffffffffULL | 1ULL << ' ' | 1ULL << '/' | 1ULL << ':',
		1ULL << (0x7f - 64), 0, 0,
	};

	return (bad[c >> 6] >> (c & 63)) & 1;
}

bool maildir_uidlist_base_is_valid(const char *base, size_t base_len)
{
	if (base_len == 0 || base_len > MAILDIR_FILENAME_MAX)
		return false;
	for (size_t i = 0; i < base_len; i++) {
		if (base_byte_is_bad((unsigned char)base[i]))
			return false;
	}
	return true;
}

static struct maildir_uidlist_rec *uidlist_new_rec(struct maildir_uidlist *ul)
{
	if (ul->count == ul->alloc) {
		ul->alloc = ul->alloc == 0 ? 64 : ul->alloc * 2;
		ul->recs = i_realloc(ul->recs,
				     i_mul_size(ul->alloc, sizeof(*ul->recs)));
	}
	i_free(ul->by_base);
	struct maildir_uidlist_rec *rec = &ul->recs[ul->count++];
	memset(rec, 0, sizeof(*rec));
	rec->size = rec->vsize = MAILDIR_SIZE_UNKNOWN;
	return rec;
}

static int uidlist_parse_u32(const char *str, uint32_t *num_r)
{
	uint64_t num = 0;

	if (*str == '\0')
		return -1;
	for (; *str != '\0'; str++) {
		if (*str < '0' || *str > '9')
			return -1;
		num = num * 10 + (uint64_t)(*str - '0');
		if (num > UINT32_MAX)
			return -1;
	}
	*num_r = (uint32_t)num;
	return 0;
}

/* The value of a "S=" or "W=" field, p[0..len): *num_r is set only
   if they are all digits and fit (as before: a bad field is ignored). */
static void uidlist_parse_size_field(const char *p, size_t len,
				     uint64_t *num_r)
{
	uint64_t num = 0;

	if (len == 0)
		return;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9' || num > (UINT64_MAX - 9) / 10)
			return;
		num = num * 10 + (uint64_t)(p[i] - '0');
	}
	*num_r = num;
}

/* Extra fields of a record line read at most: later versions may add
   fields */
#define UIDLIST_REC_EXTRA_FIELDS_MAX 6

/* A record line line[0..len) that uidlist_line_is_rec() accepted: its
   uid, the base at line[base..base_end) (valid, one space before it),
   then fields separated by runs of spaces. Returns 0 or -1 on
   corruption. */
static int uidlist_parse_rec(struct maildir_uidlist *ul, const char *line,
			     size_t len, uint32_t uid, size_t base,
			     size_t base_end)
{
	if (ul->count > 0 && uid <= ul->recs[ul->count - 1].uid)
		return -1;
	struct maildir_uidlist_rec *rec = uidlist_new_rec(ul);
	rec->uid = uid;
	char *copy = p_malloc(ul->pool, base_end - base + 1);   /* zero-filled */
	memcpy(copy, line + base, base_end - base);
	rec->base = copy;
	size_t i = base_end;
	for (unsigned int n = 0; n < UIDLIST_REC_EXTRA_FIELDS_MAX; n++) {
		while (i < len && line[i] == ' ')
			i++;
		if (i == len)
			break;
		size_t start = i;
		while (i < len && line[i] != ' ')
			i++;
		if (i - start >= 2 && line[start + 1] == '=') {
			if (line[start] == 'S')
				uidlist_parse_size_field(line + start + 2,
					i - start - 2, &rec->size);
			else if (line[start] == 'W')
				uidlist_parse_size_field(line + start + 2,
					i - start - 2, &rec->vsize);
		}
	}
	return 0;
}

static int uidlist_parse_header(struct maildir_uidlist *ul, char *line)
{
	char *v = strtok(line, " "), *uv = strtok(NULL, " ");
	char *un = strtok(NULL, " ");

	/* V1 files are read the same way (see maildir-uidlist.h) */
	if (v == NULL || (strcmp(v, "V1") != 0 && strcmp(v, "V2") != 0) ||
	    uv == NULL || un == NULL ||
	    uidlist_parse_u32(uv, &ul->uid_validity) < 0 ||
	    uidlist_parse_u32(un, &ul->next_uid) < 0 ||
	    ul->uid_validity == 0 || ul->next_uid == 0)
		return -1;
	return 0;
}

/* Whether line[0..len) (without its LF) is a record line whose uid is
   above prev_uid; the uid goes to *uid_r, its base is
   line[*base_r..*base_end_r). Allocates nothing. */
static bool uidlist_line_is_rec(const char *line, size_t len,
				uint32_t prev_uid, uint32_t *uid_r,
				size_t *base_r, size_t *base_end_r)
{
	uint64_t uid = 0;
	size_t i = 0;

	if (len > MAILDIR_UIDLIST_MAX_LINE)
		return false;
	for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
		uid = uid * 10 + (uint64_t)(line[i] - '0');
		if (uid > UINT32_MAX)
			return false;
	}
	if (i == 0 || i == len || line[i] != ' ' || uid == 0 || uid <= prev_uid)
		return false;
	size_t base = ++i;
	while (i < len && line[i] != ' ')
		i++;
	size_t base_end = i;
	if (!maildir_uidlist_base_is_valid(line + base, base_end - base))
		return false;
	for (; i < len; i++) {
		if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
			return false;
	}
	*uid_r = (uint32_t)uid;
	*base_r = base;
	*base_end_r = base_end;
	return true;
}

/* What follows the last valid line at p: a torn append (an incomplete
   line, or the zeros a power loss leaves in an extended file) is
   ignored; anything else is corruption. */
static bool uidlist_tail_is_torn(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl == NULL || memchr(p, '\0', (size_t)(nl - p)) != NULL;
}

/* Parse a whole file image (modified in place). Sets ul->valid_end. */
static int uidlist_parse(struct maildir_uidlist *ul, char *data, size_t size)
{
	char *p = data, *end = data + size;
	char *nl = memchr(p, '\n', size);
	uint32_t last_uid = 0, uid;

	if (nl == NULL)
		return -1;
	*nl = '\0';
	if (nl - p > MAILDIR_UIDLIST_MAX_LINE || strlen(p) != (size_t)(nl - p) ||
	    uidlist_parse_header(ul, p) < 0)
		return -1;
	p = nl + 1;
	while (p < end) {
		size_t base, base_end;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL ||
		    !uidlist_line_is_rec(p, (size_t)(nl - p), last_uid, &uid,
					 &base, &base_end)) {
			if (!uidlist_tail_is_torn(p, end))
				return -1;
			break;
		}
		if (uidlist_parse_rec(ul, p, (size_t)(nl - p), uid, base,
				      base_end) < 0)
			return -1;
		last_uid = uid;
		p = nl + 1;
	}
	ul->valid_end = (uint64_t)(p - data);
	if (last_uid >= ul->next_uid) {
		if (last_uid == UINT32_MAX)
			return -1;
		ul->next_uid = last_uid + 1;
	}
	return 0;
}

static void uidlist_reset_new(struct maildir_uidlist *ul)
{
	uint32_t old_validity = ul->uid_validity;

	uidlist_clear(ul);
	ul->uid_validity = (uint32_t)time(NULL);
	/* a new UIDVALIDITY must differ from the previous one */
	if (ul->uid_validity <= old_validity)
		ul->uid_validity = old_validity + 1;
	ul->next_uid = 1;
	ul->mirror_next_uid = 1;
	ul->dirty = true;
	ul->was_reset = true;
}

static bool uidlist_stat_equals(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
		a->st_size == b->st_size &&
		a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
		a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
		a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
		a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int uidlist_read_fd(struct maildir_uidlist *ul, int fd,
			   const struct stat *st, const char **error_r)
{
	size_t size = (size_t)st->st_size, pos = 0;
	char *data = i_malloc(size + 1);

	while (pos < size) {
		ssize_t ret = read(fd, data + pos, size - pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			*error_r = uidlist_set_error(ul, "read(%s) failed: %s",
				ul->path, ret == 0 ? "unexpected EOF" :
				strerror(errno));
			free(data);
			return -1;
		}
		pos += (size_t)ret;
	}
	data[size] = '\0';
	uidlist_clear(ul);
	if (uidlist_parse(ul, data, size) < 0) {
		i_error("Corrupted %s, assigning a new UIDVALIDITY", ul->path);
		uidlist_reset_new(ul);
	} else {
		ul->dirty = false;
		ul->written_count = ul->count;
	}
	ul->mirror_next_uid = ul->next_uid;
	free(data);
	return 0;
}

int maildir_uidlist_refresh(struct maildir_uidlist *ul, const char **error_r)
{
	struct stat st;
	int fd = open(ul->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1 && errno == ELOOP) {
		/* not ours (it may point at another user's list): as if
		   missing, and the next write replaces the link itself */
		i_error("%s is a symlink: ignored, UIDs start over", ul->path);
		errno = ENOENT;
	}
	if (fd == -1) {
		if (errno != ENOENT) {
			*error_r = uidlist_set_error(ul, "open(%s) failed: %m",
						     ul->path);
			return -1;
		}
		if (!ul->have_file_stat && ul->uid_validity != 0)
			return 0;   /* still no file: keep what we made */
		ul->have_file_stat = false;
		uidlist_reset_new(ul);
		return 1;
	}
	if (fstat(fd, &st) < 0) {
		*error_r = uidlist_set_error(ul, "fstat(%s) failed: %m", ul->path);
		i_close_fd(&fd);
		return -1;
	}
	if (ul->have_file_stat && !ul->partial &&
	    uidlist_stat_equals(&st, &ul->file_st)) {
		i_close_fd(&fd);
		return 0;
	}
	if ((uint64_t)st.st_size > MAILDIR_UIDLIST_MAX_FILE_SIZE) {
		*error_r = uidlist_set_error(ul, "%s is too large", ul->path);
		i_close_fd(&fd);
		return -1;
	}
	int ret = uidlist_read_fd(ul, fd, &st, error_r);
	i_close_fd(&fd);
	if (ret < 0)
		return -1;
	ul->file_st = st;
	ul->have_file_stat = true;
	return 1;
}

/* Bytes read from the end of the file by an appender: many lines, so a
   torn tail shorter than this still leaves a valid line to find. */
#define UIDLIST_TAIL_READ_SIZE (16U * 1024)

/* The last valid record line in buf (read from file offset off; the
   first, partial line is skipped). Returns 0 with its uid and end
   offset, -1 if there is none or the window looks corrupt. */
static int uidlist_scan_tail(char *buf, size_t size, uint64_t off,
			     uint32_t *last_uid_r, uint64_t *end_r)
{
	char *end = buf + size;
	char *p = memchr(buf, '\n', size), *nl;
	uint32_t last_uid = 0, uid;

	if (p == NULL)
		return -1;
	for (p++; p < end; p = nl + 1) {
		size_t base, base_end;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL ||
		    !uidlist_line_is_rec(p, (size_t)(nl - p), last_uid, &uid,
					 &base, &base_end)) {
			if (!uidlist_tail_is_torn(p, end))
				return -1;
			break;
		}
		last_uid = uid;
	}
	if (last_uid == 0 || last_uid == UINT32_MAX)
		return -1;
	*last_uid_r = last_uid;
	*end_r = off + (uint64_t)(p - buf);
	return 0;
}

static ssize_t uidlist_pread_full(int fd, char *buf, size_t size, off_t off)
{
	size_t pos = 0;

	while (pos < size) {
		ssize_t ret = pread(fd, buf + pos, size - pos, off + (off_t)pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (ret == 0)
			break;
		pos += (size_t)ret;
	}
	return (ssize_t)pos;
}

/* Read only the header and the last lines: enough to give out the next
   UIDs and append. Returns 1 if done, 0 if a full read is needed. */
static int uidlist_read_tail(struct maildir_uidlist *ul, int fd,
			     const struct stat *st)
{
	char *buf = i_malloc(UIDLIST_TAIL_READ_SIZE + 1);
	uint64_t off = (uint64_t)st->st_size - UIDLIST_TAIL_READ_SIZE;
	uint32_t validity = ul->uid_validity, next_uid = ul->next_uid;
	uint32_t last_uid;
	uint64_t valid_end;
	int ret = 0;

	ssize_t n = uidlist_pread_full(fd, buf, MAILDIR_UIDLIST_MAX_LINE + 1, 0);
	char *nl = n <= 0 ? NULL : memchr(buf, '\n', (size_t)n);
	if (nl != NULL) {
		*nl = '\0';
		if (strlen(buf) == (size_t)(nl - buf) &&
		    uidlist_parse_header(ul, buf) == 0)
			ret = 1;
	}
	if (ret == 1 &&
	    (uidlist_pread_full(fd, buf, UIDLIST_TAIL_READ_SIZE, (off_t)off) !=
	     (ssize_t)UIDLIST_TAIL_READ_SIZE ||
	     uidlist_scan_tail(buf, UIDLIST_TAIL_READ_SIZE, off, &last_uid,
			       &valid_end) < 0))
		ret = 0;
	i_free(buf);
	if (ret == 0) {
		ul->uid_validity = validity;
		ul->next_uid = next_uid;
		return 0;
	}
	uint32_t hdr_validity = ul->uid_validity, hdr_next = ul->next_uid;
	uidlist_clear(ul);
	ul->uid_validity = hdr_validity;
	ul->next_uid = MAX(hdr_next, last_uid + 1);
	ul->mirror_next_uid = ul->next_uid;
	ul->partial = true;
	ul->valid_end = valid_end;
	ul->dirty = false;
	ul->was_reset = false;
	ul->file_st = *st;
	ul->have_file_stat = true;
	return 1;
}

/* Locked: bring next_uid and valid_end up to date, from the tail only
   when the file is big. */
static int uidlist_refresh_tail(struct maildir_uidlist *ul,
				const char **error_r)
{
	struct stat st;
	int fd = open(ul->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1)
		return maildir_uidlist_refresh(ul, error_r);
	if (fstat(fd, &st) < 0) {
		*error_r = uidlist_set_error(ul, "fstat(%s) failed: %m", ul->path);
		i_close_fd(&fd);
		return -1;
	}
	if (ul->have_file_stat && uidlist_stat_equals(&st, &ul->file_st)) {
		/* what we read or wrote last: nothing new */
		i_close_fd(&fd);
		return 0;
	}
	int ret = (uint64_t)st.st_size <= 2 * UIDLIST_TAIL_READ_SIZE ? 0 :
		uidlist_read_tail(ul, fd, &st);
	i_close_fd(&fd);
	if (ret == 0)
		return maildir_uidlist_refresh(ul, error_r);
	return 1;
}

static int uidlist_try_lock(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

static int uidlist_take_lock(struct maildir_uidlist *ul, const char **error_r)
{
	i_assert(ul->lock_fd == -1);

	int fd = open(ul->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	if (fd == -1) {
		*error_r = uidlist_set_error(ul, "open(%s) failed: %m",
					     ul->lock_path);
		return -1;
	}
	uint64_t start = time_monotonic_ms();
	while (uidlist_try_lock(fd) < 0) {
		if ((errno != EAGAIN && errno != EACCES && errno != EINTR) ||
		    time_monotonic_ms() - start > MAILDIR_UIDLIST_LOCK_TIMEOUT_MS) {
			*error_r = uidlist_set_error(ul,
				"fcntl(%s, F_OFD_SETLK) failed: %s",
				ul->lock_path, errno == EAGAIN || errno == EACCES ?
				"timed out" : strerror(errno));
			i_close_fd(&fd);
			return -1;
		}
		struct timespec ts = { 0, UIDLIST_LOCK_RETRY_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	ul->lock_fd = fd;
	return 0;
}

int maildir_uidlist_lock(struct maildir_uidlist *ul, const char **error_r)
{
	if (uidlist_take_lock(ul, error_r) < 0)
		return -1;
	if (maildir_uidlist_refresh(ul, error_r) < 0) {
		maildir_uidlist_unlock(ul);
		return -1;
	}
	return 0;
}

int maildir_uidlist_lock_append(struct maildir_uidlist *ul,
				const char **error_r)
{
	if (uidlist_take_lock(ul, error_r) < 0)
		return -1;
	if (uidlist_refresh_tail(ul, error_r) < 0) {
		maildir_uidlist_unlock(ul);
		return -1;
	}
	return 0;
}

void maildir_uidlist_unlock(struct maildir_uidlist *ul)
{
	/* closing the OFD releases the lock */
	i_close_fd(&ul->lock_fd);
}

bool maildir_uidlist_is_locked(struct maildir_uidlist *ul)
{
	return ul->lock_fd != -1;
}

uint32_t maildir_uidlist_get_uidvalidity(struct maildir_uidlist *ul)
{
	return ul->uid_validity;
}

uint32_t maildir_uidlist_get_next_uid(struct maildir_uidlist *ul)
{
	return ul->next_uid;
}

unsigned int maildir_uidlist_count(struct maildir_uidlist *ul)
{
	/* a tail-only list (lock_append) has no old records to show */
	i_assert(!ul->partial);
	return ul->count;
}

struct maildir_uidlist_rec *
maildir_uidlist_get(struct maildir_uidlist *ul, unsigned int idx)
{
	i_assert(idx < ul->count && !ul->partial);
	return &ul->recs[idx];
}

static int rec_base_cmp(const void *p1, const void *p2)
{
	const struct maildir_uidlist_rec *const *r1 = p1, *const *r2 = p2;

	return strcmp((*r1)->base, (*r2)->base);
}

struct maildir_uidlist_rec *const *
maildir_uidlist_get_sorted_by_base(struct maildir_uidlist *ul,
				   unsigned int *count_r)
{
	i_assert(!ul->partial);
	if (ul->by_base == NULL && ul->count > 0) {
		ul->by_base = i_malloc(i_mul_size(ul->count, sizeof(*ul->by_base)));
		bool sorted = true;
		for (unsigned int i = 0; i < ul->count; i++) {
			ul->by_base[i] = &ul->recs[i];
			if (sorted && i > 0 &&
			    strcmp(ul->recs[i - 1].base, ul->recs[i].base) > 0)
				sorted = false;
		}
		/* UIDs are given in name order, so the list usually is */
		if (!sorted) {
			qsort(ul->by_base, ul->count, sizeof(*ul->by_base),
			      rec_base_cmp);
		}
	}
	*count_r = ul->count;
	return ul->by_base;
}

struct maildir_uidlist_rec *
maildir_uidlist_add(struct maildir_uidlist *ul, const char *base,
		    size_t base_len, uint64_t size, uint64_t vsize)
{
	i_assert(ul->lock_fd != -1);
	i_assert(base_len > 0 && base_len <= MAILDIR_FILENAME_MAX);
	/* UID space exhausted: a new UIDVALIDITY is the only way out */
	if (ul->next_uid == UINT32_MAX)
		i_panic("%s: UIDs exhausted", ul->path);

	struct maildir_uidlist_rec *rec = uidlist_new_rec(ul);
	rec->uid = ul->next_uid++;
	char *copy = p_malloc(ul->pool, base_len + 1);   /* zero-filled */
	memcpy(copy, base, base_len);
	rec->base = copy;
	rec->size = size;
	rec->vsize = vsize;
	/* appended at the next write (no rewrite needed) */
	return rec;
}

void maildir_uidlist_import_begin(struct maildir_uidlist *ul,
				  uint32_t uidvalidity, uint32_t next_uid)
{
	i_assert(ul->lock_fd != -1 && !ul->partial);
	i_assert(uidvalidity != 0 && next_uid != 0);
	uidlist_clear(ul);
	ul->uid_validity = uidvalidity;
	ul->next_uid = next_uid;
	ul->dirty = true;
	/* the UIDs persist: no reset for the caller to handle */
	ul->was_reset = false;
	/* the other server's list already holds every record added here */
	ul->mirror_next_uid = next_uid;
}

int maildir_uidlist_add_uid(struct maildir_uidlist *ul, uint32_t uid,
			    const char *base, size_t base_len, uint64_t size,
			    uint64_t vsize)
{
	i_assert(ul->lock_fd != -1 && !ul->partial);
	i_assert(maildir_uidlist_base_is_valid(base, base_len));
	if (uid == 0 || uid == UINT32_MAX ||
	    (ul->count > 0 && uid <= ul->recs[ul->count - 1].uid))
		return -1;
	struct maildir_uidlist_rec *rec = uidlist_new_rec(ul);
	rec->uid = uid;
	char *copy = p_malloc(ul->pool, base_len + 1);   /* zero-filled */
	memcpy(copy, base, base_len);
	rec->base = copy;
	rec->size = size;
	rec->vsize = vsize;
	if (uid >= ul->next_uid)
		ul->next_uid = uid + 1;
	if (uid >= ul->mirror_next_uid)
		ul->mirror_next_uid = uid + 1;
	return 0;
}

void maildir_uidlist_set_dirty(struct maildir_uidlist *ul)
{
	ul->dirty = true;
}

bool maildir_uidlist_is_dirty(struct maildir_uidlist *ul)
{
	return ul->dirty || ul->count > ul->written_count;
}

static void uidlist_compact(struct maildir_uidlist *ul)
{
	unsigned int j = 0;

	for (unsigned int i = 0; i < ul->count; i++) {
		if (!ul->recs[i].expunged)
			ul->recs[j++] = ul->recs[i];
	}
	if (j != ul->count)
		i_free(ul->by_base);
	ul->count = j;
}

/* Bytes collected before one write(): a big list takes few syscalls
   and no buffer grows with it. */
#define UIDLIST_WRITE_BUF_SIZE (64U * 1024)
/* "<uid> <base> S=<n> W=<n>\n": 10 + 1 + base + 2 * (3 + 20) + 1 */
#define UIDLIST_LINE_SIZE (MAILDIR_FILENAME_MAX + 64)

struct uidlist_writer {
	int fd;
	uint64_t offset;             /* where the next flush writes */
	size_t used;
	bool failed;
	char buf[UIDLIST_WRITE_BUF_SIZE];
};

static void writer_flush(struct uidlist_writer *w)
{
	size_t pos = 0;

	while (pos < w->used && !w->failed) {
		ssize_t ret = pwrite(w->fd, w->buf + pos, w->used - pos,
				     (off_t)w->offset);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			if (ret == 0)
				errno = EIO;
			w->failed = true;
		} else {
			pos += (size_t)ret;
			w->offset += (uint64_t)ret;
		}
	}
	w->used = 0;
}

static void writer_add(struct uidlist_writer *w, const char *data, size_t len)
{
	i_assert(len <= sizeof(w->buf));
	if (sizeof(w->buf) - w->used < len)
		writer_flush(w);
	memcpy(w->buf + w->used, data, len);
	w->used += len;
}

/* Decimal digits of num at buf (no NUL). Returns their count. */
static size_t uidlist_fmt_u64(char *buf, uint64_t num)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + num % 10);
		num /= 10;
	} while (num != 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

static size_t uidlist_fmt_rec(char *line, const struct maildir_uidlist_rec *rec)
{
	size_t base_len = strlen(rec->base), n;

	i_assert(base_len <= MAILDIR_FILENAME_MAX);
	n = uidlist_fmt_u64(line, rec->uid);
	line[n++] = ' ';
	memcpy(line + n, rec->base, base_len);
	n += base_len;
	if (rec->size != MAILDIR_SIZE_UNKNOWN) {
		memcpy(line + n, " S=", 3);
		n += 3 + uidlist_fmt_u64(line + n + 3, rec->size);
	}
	if (rec->vsize != MAILDIR_SIZE_UNKNOWN) {
		memcpy(line + n, " W=", 3);
		n += 3 + uidlist_fmt_u64(line + n + 3, rec->vsize);
	}
	line[n++] = '\n';
	return n;
}

/* Returns 0, or -1 with errno. */
static int uidlist_write_file(struct maildir_uidlist *ul, int fd)
{
	struct uidlist_writer *w = i_malloc(sizeof(*w));
	char line[UIDLIST_LINE_SIZE];

	w->fd = fd;
	int len = snprintf(line, sizeof(line), "V2 %u %u\n", ul->uid_validity,
			   ul->next_uid);
	writer_add(w, line, (size_t)len);
	for (unsigned int i = 0; i < ul->count; i++)
		writer_add(w, line, uidlist_fmt_rec(line, &ul->recs[i]));
	writer_flush(w);
	int ret = w->failed ? -1 : 0;
	i_free(w);
	return ret;
}

/* Append records [written_count, count) at valid_end. Returns the new
   end offset, or 0 with errno. */
static uint64_t uidlist_append_lines(struct maildir_uidlist *ul, int fd)
{
	struct uidlist_writer *w = i_malloc(sizeof(*w));
	char line[UIDLIST_LINE_SIZE];

	w->fd = fd;
	w->offset = ul->valid_end;
	for (unsigned int i = ul->written_count; i < ul->count; i++)
		writer_add(w, line, uidlist_fmt_rec(line, &ul->recs[i]));
	writer_flush(w);
	uint64_t end = w->failed ? 0 : w->offset;
	i_free(w);
	return end;
}

/* The cheap write: new records appended to the file we hold in memory
   (or its tail), one fdatasync; no tmp file, rename or directory fsync.
   A torn tail left by a crash is cut first. */
static int uidlist_write_append(struct maildir_uidlist *ul,
				const char **error_r)
{
	struct stat st;
	uint64_t end = 0;
	bool touched = false;
	int fd = open(ul->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1) {
		*error_r = uidlist_set_error(ul, "open(%s) failed: %m", ul->path);
		return -1;
	}
	if (fstat(fd, &st) < 0)
		goto fail;
	if (st.st_ino != ul->file_st.st_ino || st.st_dev != ul->file_st.st_dev) {
		/* replaced without the lock: not by a moat writer */
		errno = ESTALE;
		goto fail;
	}
	if ((uint64_t)st.st_size != ul->valid_end) {
		i_warning("%s: cutting %lld bytes of a torn append", ul->path,
			  (long long)st.st_size - (long long)ul->valid_end);
		if (ftruncate(fd, (off_t)ul->valid_end) < 0)
			goto fail;
	}
	touched = true;
	uidlist_note_unsynced(ul, MAILDIR_UIDLIST_UNSYNCED_APPEND);
	end = uidlist_append_lines(ul, fd);
	if (end == 0 || (ul->fsync && fdatasync(fd) < 0) || fstat(fd, &st) < 0)
		goto fail;
	i_close_fd(&fd);
	ul->valid_end = end;
	ul->written_count = ul->count;
	ul->file_st = st;
	return 0;
fail:;
	int saved = errno;
	/* the lines are not acknowledged: leave no half of them behind */
	if (touched)
		(void)ftruncate(fd, (off_t)ul->valid_end);
	i_close_fd(&fd);
	*error_r = uidlist_set_error(ul, "appending to %s failed: %s",
				     ul->path, strerror(saved));
	return -1;
}

int maildir_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	int ret = fsync(fd);
	int saved = errno;
	i_close_fd(&fd);
	errno = saved;
	return ret;
}

/* After a write: append the records Dovecot's list lacks to the
   folder's dovecot-uidlist, when it numbers the messages as we do (the
   same UIDVALIDITY: the folder came from Dovecot). Dovecot reads lines
   appended after its header's next UID and raises it past them, so a
   switch back keeps every UID. Failures only log: our own list is
   written and right. */
static void uidlist_mirror_dovecot(struct maildir_uidlist *ul)
{
	char path[PATH_MAX], line[UIDLIST_LINE_SIZE];
	uint32_t from = ul->mirror_next_uid;
	int fd;

	ul->mirror_next_uid = ul->next_uid;
	if (ul->count == 0 || ul->recs[ul->count - 1].uid < from ||
	    snprintf(path, sizeof(path), "%s/" MAILDIR_DOVECOT_UIDLIST_NAME,
		     ul->dir) >= (int)sizeof(path))
		return;
	int ret = maildir_dovecot_uidlist_open_append(path, ul->uid_validity,
						      &fd);
	if (ret <= 0)
		return;
	/* another file: only a syncfs covers it */
	uidlist_note_unsynced(ul, MAILDIR_UIDLIST_UNSYNCED_OTHER);
	struct uidlist_writer *w = i_malloc(sizeof(*w));
	w->fd = fd;
	struct stat st;
	w->offset = fstat(fd, &st) < 0 ? 0 : (uint64_t)st.st_size;
	w->failed = w->offset == 0;
	for (unsigned int i = 0; i < ul->count && !w->failed; i++) {
		const struct maildir_uidlist_rec *rec = &ul->recs[i];
		if (rec->uid < from || rec->expunged)
			continue;
		int n = snprintf(line, sizeof(line), "%u :%s\n", rec->uid,
				 rec->base);
		i_assert(n > 0 && (size_t)n < sizeof(line));
		writer_add(w, line, (size_t)n);
	}
	writer_flush(w);
	if (w->failed || (ul->fsync && fdatasync(fd) < 0))
		i_warning("%s: keeping it in step with %s failed: %m "
			  "(a switch back to Dovecot gives the missing "
			  "messages new UIDs)", path, ul->path);
	i_free(w);
	i_close_fd(&fd);
}

static int maildir_uidlist_write_own(struct maildir_uidlist *ul,
				     const char **error_r)
{
	i_assert(ul->lock_fd != -1);

	if (!ul->dirty && ul->have_file_stat && !ul->was_reset) {
		if (ul->count == ul->written_count)
			return 0;
		return uidlist_write_append(ul, error_r);
	}
	/* a rewrite needs every record */
	i_assert(!ul->partial);
	uidlist_compact(ul);
	/* a new file and a rename: the folder's directory too */
	uidlist_note_unsynced(ul, MAILDIR_UIDLIST_UNSYNCED_OTHER);
	int fd = open(ul->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd == -1) {
		*error_r = uidlist_set_error(ul, "open(%s) failed: %m",
					     ul->tmp_path);
		return -1;
	}
	bool failed = uidlist_write_file(ul, fd) < 0 ||
		(ul->fsync && fsync(fd) < 0);
	int saved = errno;
	if (close(fd) < 0 && !failed) {
		failed = true;
		saved = errno;
	}
	if (!failed && rename(ul->tmp_path, ul->path) < 0) {
		failed = true;
		saved = errno;
	}
	if (failed) {
		*error_r = uidlist_set_error(ul, "writing %s failed: %s",
					     ul->path, strerror(saved));
		(void)unlink(ul->tmp_path);
		return -1;
	}
	if (ul->fsync && maildir_fsync_dir(ul->dir) < 0) {
		*error_r = uidlist_set_error(ul, "fsync(%s) failed: %m", ul->dir);
		return -1;
	}
	if (stat(ul->path, &ul->file_st) < 0) {
		*error_r = uidlist_set_error(ul, "stat(%s) failed: %m", ul->path);
		ul->have_file_stat = false;
		return -1;
	}
	ul->have_file_stat = true;
	ul->dirty = false;
	ul->was_reset = false;
	ul->written_count = ul->count;
	ul->valid_end = (uint64_t)ul->file_st.st_size;
	return 0;
}

int maildir_uidlist_write(struct maildir_uidlist *ul, const char **error_r)
{
	if (maildir_uidlist_write_own(ul, error_r) < 0)
		return -1;
	uidlist_mirror_dovecot(ul);
	return 0;
}

void maildir_uidlist_raise_next_uid(struct maildir_uidlist *ul,
				    uint32_t next_uid)
{
	i_assert(ul->lock_fd != -1);
	if (next_uid > ul->next_uid) {
		ul->next_uid = next_uid;
		ul->dirty = true;
	}
}

bool maildir_uidlist_was_reset(struct maildir_uidlist *ul)
{
	return ul->was_reset;
}

void maildir_uidlist_raise_uidvalidity(struct maildir_uidlist *ul,
				       uint32_t above)
{
	i_assert(ul->was_reset && above < UINT32_MAX);
	if (ul->uid_validity <= above) {
		ul->uid_validity = above + 1;
		ul->dirty = true;
	}
}

void maildir_uidlist_adopt_uidvalidity(struct maildir_uidlist *ul,
				       uint32_t uidvalidity)
{
	i_assert(ul->was_reset && uidvalidity != 0);
	if (ul->uid_validity != uidvalidity) {
		ul->uid_validity = uidvalidity;
		ul->dirty = true;
	}
}

int maildir_uidlist_append_begin(struct maildir_uidlist *ul, uint64_t *mark_r,
				 const char **error_r)
{
	i_assert(ul->lock_fd != -1);
	if ((ul->dirty || !ul->have_file_stat || ul->was_reset) &&
	    maildir_uidlist_write(ul, error_r) < 0)
		return -1;
	*mark_r = ul->valid_end;
	return 0;
}

void maildir_uidlist_forget_written(struct maildir_uidlist *ul)
{
	i_assert(ul->lock_fd != -1);
	if (ul->dirty || ul->count != ul->written_count)
		return;
	uint32_t next_uid = ul->next_uid, validity = ul->uid_validity;
	uint64_t valid_end = ul->valid_end;
	uidlist_clear(ul);
	ul->uid_validity = validity;
	ul->next_uid = next_uid;
	ul->valid_end = valid_end;
	/* the next refresh reads the whole file again */
	ul->partial = true;
}

int maildir_uidlist_append_rollback(struct maildir_uidlist *ul, uint64_t mark,
				    const char **error_r)
{
	i_assert(ul->lock_fd != -1);
	int fd = open(ul->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	uidlist_note_unsynced(ul, MAILDIR_UIDLIST_UNSYNCED_APPEND);
	if (fd == -1 || ftruncate(fd, (off_t)mark) < 0 ||
	    (ul->fsync && fdatasync(fd) < 0) || fstat(fd, &st) < 0) {
		*error_r = uidlist_set_error(ul, "truncating %s failed: %m",
					     ul->path);
		if (fd != -1)
			i_close_fd(&fd);
		return -1;
	}
	i_close_fd(&fd);
	uint32_t validity = ul->uid_validity;
	uidlist_clear(ul);
	ul->uid_validity = validity;
	ul->valid_end = mark;
	ul->file_st = st;
	ul->have_file_stat = true;
	ul->partial = true;
	ul->dirty = false;
	return 0;
}
