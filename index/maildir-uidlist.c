/* moat.uidlist reading, locking and atomic rewriting (maildir-uidlist.h). */
#include "lib.h"
#include "log.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"

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
	bool have_file_stat, dirty;
	struct stat file_st;         /* of the version in memory */
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
	i_free(ul->by_base);
}

bool maildir_uidlist_base_is_valid(const char *base, size_t base_len)
{
	if (base_len == 0 || base_len > MAILDIR_FILENAME_MAX)
		return false;
	for (size_t i = 0; i < base_len; i++) {
		unsigned char c = (unsigned char)base[i];
		if (c <= ' ' || c == 0x7f || c == ':' || c == '/')
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

static int uidlist_parse_u64(const char *str, uint64_t *num_r)
{
	uint64_t num = 0;

	if (*str == '\0')
		return -1;
	for (; *str != '\0'; str++) {
		if (*str < '0' || *str > '9' || num > (UINT64_MAX - 9) / 10)
			return -1;
		num = num * 10 + (uint64_t)(*str - '0');
	}
	*num_r = num;
	return 0;
}

/* line is modified in place. Returns 0 or -1 on corruption. */
static int uidlist_parse_rec(struct maildir_uidlist *ul, char *line)
{
	char *fields[8];
	unsigned int n = 0;

	for (char *p = strtok(line, " "); p != NULL; p = strtok(NULL, " ")) {
		if (n == N_ELEMENTS(fields))
			break;   /* later versions may add fields */
		fields[n++] = p;
	}
	uint32_t uid;
	if (n < 2 || uidlist_parse_u32(fields[0], &uid) < 0 || uid == 0)
		return -1;
	if (ul->count > 0 && uid <= ul->recs[ul->count - 1].uid)
		return -1;
	if (!maildir_uidlist_base_is_valid(fields[1], strlen(fields[1])))
		return -1;
	struct maildir_uidlist_rec *rec = uidlist_new_rec(ul);
	rec->uid = uid;
	rec->base = p_strdup(ul->pool, fields[1]);
	for (unsigned int i = 2; i < n; i++) {
		if (strncmp(fields[i], "S=", 2) == 0)
			(void)uidlist_parse_u64(fields[i] + 2, &rec->size);
		else if (strncmp(fields[i], "W=", 2) == 0)
			(void)uidlist_parse_u64(fields[i] + 2, &rec->vsize);
	}
	return 0;
}

static int uidlist_parse_header(struct maildir_uidlist *ul, char *line)
{
	char *v = strtok(line, " "), *uv = strtok(NULL, " ");
	char *un = strtok(NULL, " ");

	if (v == NULL || strcmp(v, "V1") != 0 || uv == NULL || un == NULL ||
	    uidlist_parse_u32(uv, &ul->uid_validity) < 0 ||
	    uidlist_parse_u32(un, &ul->next_uid) < 0 ||
	    ul->uid_validity == 0 || ul->next_uid == 0)
		return -1;
	return 0;
}

/* Parse a whole file image (NUL-terminated, modified in place). */
static int uidlist_parse(struct maildir_uidlist *ul, char *data)
{
	char *line = data, *end;
	bool header = true;

	while ((end = strchr(line, '\n')) != NULL) {
		*end = '\0';
		if (end - line > MAILDIR_UIDLIST_MAX_LINE)
			return -1;
		if (header) {
			if (uidlist_parse_header(ul, line) < 0)
				return -1;
			header = false;
		} else if (uidlist_parse_rec(ul, line) < 0) {
			return -1;
		}
		line = end + 1;
	}
	/* A missing header or a partial last line: not written by us (we
	   rename complete files), so treat it as corruption. */
	if (header || *line != '\0')
		return -1;
	if (ul->count > 0 && ul->recs[ul->count - 1].uid >= ul->next_uid) {
		if (ul->recs[ul->count - 1].uid == UINT32_MAX)
			return -1;
		ul->next_uid = ul->recs[ul->count - 1].uid + 1;
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
	if (memchr(data, '\0', size) != NULL || uidlist_parse(ul, data) < 0) {
		i_error("Corrupted %s, assigning a new UIDVALIDITY", ul->path);
		uidlist_reset_new(ul);
	} else {
		ul->dirty = false;
	}
	free(data);
	return 0;
}

int maildir_uidlist_refresh(struct maildir_uidlist *ul, const char **error_r)
{
	struct stat st;
	int fd = open(ul->path, O_RDONLY | O_CLOEXEC);

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
	if (ul->have_file_stat && uidlist_stat_equals(&st, &ul->file_st)) {
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

static int uidlist_try_lock(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int maildir_uidlist_lock(struct maildir_uidlist *ul, const char **error_r)
{
	i_assert(ul->lock_fd == -1);

	int fd = open(ul->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
	if (maildir_uidlist_refresh(ul, error_r) < 0) {
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
	return ul->count;
}

struct maildir_uidlist_rec *
maildir_uidlist_get(struct maildir_uidlist *ul, unsigned int idx)
{
	i_assert(idx < ul->count);
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
	ul->dirty = true;
	return rec;
}

void maildir_uidlist_set_dirty(struct maildir_uidlist *ul)
{
	ul->dirty = true;
}

bool maildir_uidlist_is_dirty(struct maildir_uidlist *ul)
{
	return ul->dirty;
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
	size_t used;
	bool failed;
	char buf[UIDLIST_WRITE_BUF_SIZE];
};

static void writer_flush(struct uidlist_writer *w)
{
	size_t pos = 0;

	while (pos < w->used && !w->failed) {
		ssize_t ret = write(w->fd, w->buf + pos, w->used - pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			if (ret == 0)
				errno = EIO;
			w->failed = true;
		} else {
			pos += (size_t)ret;
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
	int len = snprintf(line, sizeof(line), "V1 %u %u\n", ul->uid_validity,
			   ul->next_uid);
	writer_add(w, line, (size_t)len);
	for (unsigned int i = 0; i < ul->count; i++)
		writer_add(w, line, uidlist_fmt_rec(line, &ul->recs[i]));
	writer_flush(w);
	int ret = w->failed ? -1 : 0;
	i_free(w);
	return ret;
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

int maildir_uidlist_write(struct maildir_uidlist *ul, const char **error_r)
{
	i_assert(ul->lock_fd != -1);

	uidlist_compact(ul);
	int fd = open(ul->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0600);
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
