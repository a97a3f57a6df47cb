/* uid -> base name through sparse samples of moat.uidlist
   (maildir-uidlist-lookup.h). */
#include "lib.h"
#include "maildir-filename.h"
#include "maildir-uidlist-lookup.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Read size while sampling: big enough that a line never straddles
   more than one refill. */
#define LOOKUP_READ_SIZE (64U * 1024)
/* What one lookup reads: STEP lines of at most MAX_LINE bytes each. */
#define LOOKUP_SPAN ((MAILDIR_UIDLIST_LOOKUP_STEP + 1) * \
		     (MAILDIR_UIDLIST_MAX_LINE + 1))

struct lookup_sample {
	uint32_t uid;
	uint32_t offset;          /* the file is < 4 GB (MAX_FILE_SIZE) */
};

struct maildir_uidlist_lookup {
	char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	/* End of the last complete line sampled, and lines before it: an
	   appended file is sampled on from there. */
	uint64_t sampled_end, line_no;
	struct lookup_sample *samples;
	unsigned int count, alloc;
	/* The span last read (LOOKUP_SPAN + 1 bytes), so that lookups of
	   neighbouring uids (FETCH 1:*, SORT, THREAD) share one pread */
	char *span;
	uint64_t span_offset;
	size_t span_len;
	bool span_valid;
	char error[256];
};

struct maildir_uidlist_lookup *maildir_uidlist_lookup_init(const char *dir)
{
	struct maildir_uidlist_lookup *l = i_malloc(sizeof(*l));

	l->path = i_strdup_printf("%s/%s", dir, MAILDIR_UIDLIST_NAME);
	l->fd = -1;
	return l;
}

void maildir_uidlist_lookup_deinit(struct maildir_uidlist_lookup **_l)
{
	struct maildir_uidlist_lookup *l = *_l;

	*_l = NULL;
	if (l->fd != -1)
		i_close_fd(&l->fd);
	i_free(l->samples);
	i_free(l->span);
	i_free(l->path);
	i_free(l);
}

unsigned int maildir_uidlist_lookup_samples(struct maildir_uidlist_lookup *l)
{
	return l->count;
}

/* The uid a record line starts with, 0 if none. */
static uint32_t line_uid(const char *p, const char *end)
{
	uint64_t uid = 0;

	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		uid = uid * 10 + (uint64_t)(*p - '0');
		if (uid > UINT32_MAX)
			return 0;
	}
	return p < end && *p == ' ' ? (uint32_t)uid : 0;
}

static void lookup_add_sample(struct maildir_uidlist_lookup *l, uint32_t uid,
			      uint64_t offset)
{
	if (uid == 0 || offset > UINT32_MAX ||
	    (l->count > 0 && uid <= l->samples[l->count - 1].uid))
		return;   /* not a usable record line: lookups scan past it */
	if (l->count == l->alloc) {
		l->alloc = l->alloc == 0 ? 64 : l->alloc * 2;
		l->samples = i_realloc(l->samples,
			i_mul_size(l->alloc, sizeof(*l->samples)));
	}
	l->samples[l->count].uid = uid;
	l->samples[l->count].offset = (uint32_t)offset;
	l->count++;
}

/* Read the file from sampled_end on, keeping a sample every STEP record
   lines. An incomplete last line (an append in progress, or torn) is
   left for the next call. */
static int lookup_sample_file(struct maildir_uidlist_lookup *l)
{
	char *buf = i_malloc(LOOKUP_READ_SIZE);
	uint64_t file_offset = l->sampled_end, line_no = l->line_no;
	size_t used = 0;
	ssize_t ret;

	while ((ret = pread(l->fd, buf + used, LOOKUP_READ_SIZE - used,
			    (off_t)(file_offset + used))) > 0) {
		used += (size_t)ret;
		char *p = buf, *end = buf + used, *nl;
		while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			/* line 0 is the header */
			if (line_no > 0 &&
			    (line_no - 1) % MAILDIR_UIDLIST_LOOKUP_STEP == 0) {
				lookup_add_sample(l, line_uid(p, nl),
					file_offset + (uint64_t)(p - buf));
			}
			line_no++;
			p = nl + 1;
		}
		size_t done = (size_t)(p - buf);
		if (done == 0 && used == LOOKUP_READ_SIZE)
			break;    /* a line longer than any we write */
		memmove(buf, p, used - done);
		used -= done;
		file_offset += done;
	}
	i_free(buf);
	l->sampled_end = file_offset;
	l->line_no = line_no;
	return ret < 0 ? -1 : 0;
}

/* (Re)open and sample when the file was replaced. Returns 1 if it was,
   0 if unchanged, -1 on error. */
static int lookup_refresh(struct maildir_uidlist_lookup *l,
			  const char **error_r)
{
	struct stat st;

	/* appended lines may extend a span that ended at EOF */
	l->span_valid = false;
	if (stat(l->path, &st) < 0) {
		if (errno != ENOENT)
			goto fail;
		if (l->fd != -1)
			i_close_fd(&l->fd);
		l->count = 0;
		l->sampled_end = l->line_no = 0;
		return 0;
	}
	if (l->fd != -1 && st.st_ino == l->ino && st.st_dev == l->dev &&
	    (uint64_t)st.st_size >= l->sampled_end) {
		/* the same file: unchanged, or lines were appended */
		if ((uint64_t)st.st_size == l->sampled_end)
			return 0;
		if (lookup_sample_file(l) < 0)
			goto fail;
		return 1;
	}
	if (l->fd != -1)
		i_close_fd(&l->fd);
	l->fd = open(l->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (l->fd == -1 || fstat(l->fd, &st) < 0)
		goto fail;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	l->count = 0;
	l->sampled_end = 0;
	l->line_no = 0;
	if (lookup_sample_file(l) < 0)
		goto fail;
	return 1;
fail:
	snprintf(l->error, sizeof(l->error), "%s: %s", l->path,
		 strerror(errno));
	*error_r = l->error;
	if (l->fd != -1)
		i_close_fd(&l->fd);
	l->count = 0;
	l->sampled_end = l->line_no = 0;
	return -1;
}

/* Parse "<uid> <base>[ S=n]..." (NUL-terminated line). */
static void lookup_parse_line(char *line, char *base_r, uint64_t *size_r)
{
	char *p = strchr(line, ' ') + 1;
	size_t len = strcspn(p, " ");

	memcpy(base_r, p, len);
	base_r[len] = '\0';
	*size_r = MAILDIR_SIZE_UNKNOWN;
	for (p += len; *p == ' '; p += strcspn(p, " ")) {
		p++;
		if (strncmp(p, "S=", 2) == 0 && p[2] >= '0' && p[2] <= '9')
			*size_r = strtoull(p + 2, NULL, 10);
	}
}

/* Scan the lines after the nearest sample. Returns 1, 0, -1. */
static int lookup_scan(struct maildir_uidlist_lookup *l, uint32_t uid,
		       char *base_r, uint64_t *size_r)
{
	unsigned int lo = 0, hi = l->count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (l->samples[mid].uid <= uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	uint64_t offset = l->samples[lo - 1].offset;
	if (!l->span_valid || l->span_offset != offset) {
		if (l->span == NULL)
			l->span = i_malloc(LOOKUP_SPAN + 1);
		ssize_t ret = pread(l->fd, l->span, LOOKUP_SPAN, (off_t)offset);
		if (ret < 0) {
			l->span_valid = false;
			return -1;
		}
		l->span_len = (size_t)ret;
		l->span[ret] = '\0';
		l->span_offset = offset;
		l->span_valid = true;
	}
	/* parsed in place: the found line's LF is a NUL only meanwhile, the
	   span is kept intact for the next lookup */
	char *p = l->span, *end = l->span + l->span_len, *nl;
	int found = 0;
	while (found == 0 && p < end &&
	       (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		uint32_t line = line_uid(p, nl);
		if (line == uid && nl - p <= MAILDIR_UIDLIST_MAX_LINE) {
			*nl = '\0';
			lookup_parse_line(p, base_r, size_r);
			*nl = '\n';
			found = 1;
		} else if (line > uid) {
			break;
		}
		p = nl + 1;
	}
	return found;
}

int maildir_uidlist_lookup(struct maildir_uidlist_lookup *l, uint32_t uid,
			   char base_r[MAILDIR_UIDLIST_MAX_LINE + 1],
			   uint64_t *size_r, const char **error_r)
{
	int ret = 0;

	/* a uid's base never changes: a stale file still answers right */
	if (l->fd != -1) {
		ret = lookup_scan(l, uid, base_r, size_r);
		if (ret != 0)
			goto out;
	}
	ret = lookup_refresh(l, error_r);
	if (ret <= 0)
		return ret;
	ret = lookup_scan(l, uid, base_r, size_r);
out:
	if (ret < 0) {
		snprintf(l->error, sizeof(l->error), "pread(%s): %s", l->path,
			 strerror(errno));
		*error_r = l->error;
	}
	return ret;
}
