/* The cached folder list of a Maildir++ root (mailbox-list-private.h):
   what the last scan of the root found.

   The rule (what the cache must notice): the list is valid while
   - the root keeps the mtime the scan started with: creating, deleting
     or renaming a folder (by moat or by any other Maildir tool) adds or
     removes a root entry and so changes it; and
   - every \Noselect folder keeps the mtime it had when the scan saw no
     cur/ in it: a cur/ made inside (the folder becomes selectable, e.g.
     by another tool) changes that folder's mtime, not the root's.
   So a check costs one stat of the root plus one per \Noselect folder
   (usually none). Not noticed: a selectable folder losing its cur/ while
   the folder stays (it is broken then, SELECT calls it nonexistent) until
   the root changes. An mtime too close to now may still hide a change
   made in the same timestamp tick (mailbox_list_mtime_settled()): such
   a scan is not cached.

   The file lives in its own subdirectory so that writing it (tmp +
   rename) does not change the root's mtime itself. Format:
     "moat-mailboxlist 2 <root mtime sec> <nsec>\n"
     then per folder "S <name>\n" (selectable) or
     "N <mtime sec> <nsec> <name>\n" (\Noselect, the folder's mtime)
   with normalized UTF-8 names. The last file read stays in memory (one
   per process: an imap process serves one user), so an unchanged root
   costs no read. */
#include "lib.h"
#include "log.h"
#include "buffer.h"
#include "mailbox-list-private.h"

#include <fcntl.h>
#include <sys/stat.h>

#define LIST_CACHE_FILE MAILBOX_LIST_CACHE_DIR "/list"
#define LIST_CACHE_HEADER "moat-mailboxlist 2 "
/* Names are at most MAILBOX_NAME_MAX bytes: a bigger file is not ours. */
#define LIST_CACHE_MAX_SIZE \
	((size_t)MAILBOX_LIST_MAX_NODES * (MAILBOX_NAME_MAX + 48) + 128)
/* Within this long of "now" an mtime may still hide a change made in the
   same timestamp tick: such a scan is not cached. Whole-second mtimes may
   come from a file system that keeps only seconds (or two); finer ones
   come from a clock that ticks at least every few milliseconds (Linux:
   one jiffy), so a tenth of a second is ample there, and a LIST soon
   after a change (the first one creates MAILBOX_LIST_CACHE_DIR) does not
   rescan for seconds. */
#define LIST_CACHE_SETTLE_SECS 2
#define LIST_CACHE_SETTLE_FINE_NSECS (100 * 1000 * 1000)

bool mailbox_list_mtime_settled(const struct timespec *mtime,
				const struct timespec *now)
{
	struct timespec limit = *mtime;

	if (mtime->tv_nsec == 0) {
		limit.tv_sec += LIST_CACHE_SETTLE_SECS;
	} else {
		limit.tv_nsec += LIST_CACHE_SETTLE_FINE_NSECS;
		if (limit.tv_nsec >= 1000000000L) {
			limit.tv_sec++;
			limit.tv_nsec -= 1000000000L;
		}
	}
	return now->tv_sec > limit.tv_sec ||
		(now->tv_sec == limit.tv_sec && now->tv_nsec > limit.tv_nsec);
}

static bool cache_path(const char *root, const char *file, char *buf,
		       size_t size)
{
	return snprintf(buf, size, "%s/%s", root, file) < (int)size;
}

/* The whole file, NUL-terminated and i_malloc'd; NULL if unusable. */
static char *cache_read_file(const char *root, size_t *size_r)
{
	char path[PATH_MAX];
	struct stat st;

	if (!cache_path(root, LIST_CACHE_FILE, path, sizeof(path)))
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > LIST_CACHE_MAX_SIZE) {
		i_close_fd(&fd);
		return NULL;
	}
	size_t size = (size_t)st.st_size;
	char *data = i_malloc(size + 1);
	size_t pos = 0;
	while (pos < size) {
		ssize_t ret = read(fd, data + pos, size - pos);
		if (ret <= 0) {
			if (ret < 0 && errno == EINTR)
				continue;
			break;   /* replaced meanwhile: the check below fails */
		}
		pos += (size_t)ret;
	}
	i_close_fd(&fd);
	data[pos] = '\0';
	*size_r = pos;
	return data;
}

/* One folder line at *p: its kind ('S' or 'N'), for 'N' the folder's
   mtime, and its name (cut at the line end). Advances *p. */
static bool cache_parse_line(char **p, char *kind_r, struct timespec *mtime_r,
			     char **name_r)
{
	char *line = *p, *end = strchr(line, '\n');
	unsigned long long sec, nsec;
	int len = 0;

	if (end == NULL || end - line < 3 || line[1] != ' ' ||
	    (line[0] != 'S' && line[0] != 'N'))
		return false;
	*end = '\0';
	*kind_r = line[0];
	*name_r = line + 2;
	if (line[0] == 'N') {
		if (sscanf(line + 2, "%llu %llu %n", &sec, &nsec, &len) != 2 ||
		    len == 0 || nsec >= 1000000000ULL)
			return false;
		mtime_r->tv_sec = (time_t)sec;
		mtime_r->tv_nsec = (long)nsec;
		*name_r = line + 2 + len;
	}
	*p = end + 1;
	return **name_r != '\0' && strlen(*name_r) <= MAILBOX_NAME_MAX;
}

/* Whether the \Noselect folder name still has mtime (no cur/ made). */
static bool cache_noselect_unchanged(const char *root, const char *name,
				     const struct timespec *mtime)
{
	char path[PATH_MAX];
	struct stat st;

	return mailbox_name_to_path(root, name, path, sizeof(path)) == 0 &&
		lstat(path, &st) == 0 &&
		st.st_mtim.tv_sec == mtime->tv_sec &&
		st.st_mtim.tv_nsec == mtime->tv_nsec;
}

/* Check the folder lines after the header (add == NULL: also that no
   \Noselect folder changed), or pass them to add. Parses a scratch copy:
   lines is not changed. */
static bool cache_parse_lines(const char *root, const char *lines,
			      size_t size, mailbox_list_cache_add_func_t *add,
			      void *context)
{
	char *copy = i_malloc(size + 1), *p = copy, kind, *name;
	struct timespec mtime;
	unsigned int count = 0;
	bool ok = true;

	memcpy(copy, lines, size);
	copy[size] = '\0';
	while (ok && *p != '\0') {
		ok = cache_parse_line(&p, &kind, &mtime, &name) &&
			++count <= MAILBOX_LIST_MAX_NODES;
		if (!ok)
			break;
		if (add == NULL) {
			ok = kind == 'S' ||
				cache_noselect_unchanged(root, name, &mtime);
		} else {
			add(context, name, kind == 'S' ?
			    MAILBOX_NODE_SELECTABLE : MAILBOX_NODE_NOSELECT);
		}
	}
	i_free(copy);
	return ok;
}

/* The folder lines of the last file read (see the top). */
static struct {
	char *root;
	struct timespec mtime;
	char *lines;
	size_t size;
} cache_memo;

static void cache_memo_set(const char *root, const struct timespec *mtime,
			   const char *lines, size_t size)
{
	i_free(cache_memo.root);
	i_free(cache_memo.lines);
	cache_memo.root = i_strdup(root);
	cache_memo.mtime = *mtime;
	cache_memo.lines = i_malloc(size + 1);
	memcpy(cache_memo.lines, lines, size);
	cache_memo.lines[size] = '\0';
	cache_memo.size = size;
}

static bool cache_memo_get(const char *root, const struct timespec *mtime,
			   const char **lines_r, size_t *size_r)
{
	if (cache_memo.root == NULL || strcmp(cache_memo.root, root) != 0 ||
	    cache_memo.mtime.tv_sec != mtime->tv_sec ||
	    cache_memo.mtime.tv_nsec != mtime->tv_nsec)
		return false;
	*lines_r = cache_memo.lines;
	*size_r = cache_memo.size;
	return true;
}

/* The folder lines of the file if it was written for mtime: i_malloc'd
   (the caller frees *data_r), or false. */
static bool cache_read_lines(const char *root, const struct timespec *mtime,
			     char **data_r, const char **lines_r,
			     size_t *size_r)
{
	unsigned long long sec, nsec;
	size_t size;
	int len = 0;

	char *data = cache_read_file(root, &size);
	if (data == NULL)
		return false;
	if (strlen(data) != size ||
	    strncmp(data, LIST_CACHE_HEADER, strlen(LIST_CACHE_HEADER)) != 0 ||
	    sscanf(data + strlen(LIST_CACHE_HEADER), "%llu %llu\n%n",
		   &sec, &nsec, &len) != 2 || len == 0 ||
	    (time_t)sec != mtime->tv_sec || (long)nsec != mtime->tv_nsec) {
		i_free(data);
		return false;
	}
	*data_r = data;
	*lines_r = data + strlen(LIST_CACHE_HEADER) + len;
	*size_r = size - strlen(LIST_CACHE_HEADER) - (size_t)len;
	return true;
}

int mailbox_list_cache_read(const char *root, const struct timespec *mtime,
			    mailbox_list_cache_add_func_t *add, void *context)
{
	const char *lines;
	char *data = NULL;
	size_t size;

	if (!cache_memo_get(root, mtime, &lines, &size)) {
		if (!cache_read_lines(root, mtime, &data, &lines, &size))
			return 0;
	}
	/* checked in full first: a garbled or stale file adds nothing */
	int ret = 0;
	if (cache_parse_lines(root, lines, size, NULL, context)) {
		if (data != NULL)
			cache_memo_set(root, mtime, lines, size);
		(void)cache_parse_lines(root, lines, size, add, context);
		ret = 1;
	}
	i_free(data);
	return ret;
}

static bool cache_format(buffer_t *buf, const struct timespec *mtime,
			 const struct mailbox_list_node *nodes,
			 const struct timespec *mtimes, unsigned int count,
			 const struct timespec *now)
{
	int ret;

	if (buffer_printf(buf, LIST_CACHE_HEADER "%llu %llu\n",
			  (unsigned long long)mtime->tv_sec,
			  (unsigned long long)mtime->tv_nsec) < 0)
		return false;
	for (unsigned int i = 0; i < count; i++) {
		/* a name with a line end can't be stored: no cache */
		if (strchr(nodes[i].name, '\n') != NULL)
			return false;
		if ((nodes[i].flags & MAILBOX_NODE_SELECTABLE) != 0) {
			ret = buffer_printf(buf, "S %s\n", nodes[i].name);
		} else if (!mailbox_list_mtime_settled(&mtimes[i], now)) {
			return false;   /* a cur/ made in this tick won't show */
		} else {
			ret = buffer_printf(buf, "N %llu %llu %s\n",
				(unsigned long long)mtimes[i].tv_sec,
				(unsigned long long)mtimes[i].tv_nsec,
				nodes[i].name);
		}
		if (ret < 0)
			return false;
	}
	return true;
}

static void cache_write_file(const char *root, const buffer_t *buf)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];

	if (!cache_path(root, MAILBOX_LIST_CACHE_DIR, dir, sizeof(dir)) ||
	    !cache_path(root, LIST_CACHE_FILE, path, sizeof(path)) ||
	    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path,
		     (long)getpid()) >= (int)sizeof(tmp))
		return;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		      O_NOFOLLOW, 0600);
	if (fd == -1)
		return;
	/* only a cache: no fsync, a lost file costs one scan */
	bool ok = write(fd, buf->data, buf->used) == (ssize_t)buf->used;
	i_close_fd(&fd);
	if (!ok || rename(tmp, path) < 0)
		(void)unlink(tmp);
}

void mailbox_list_cache_write(const char *root, const struct timespec *mtime,
			      const struct mailbox_list_node *nodes,
			      const struct timespec *mtimes,
			      unsigned int count)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME, &now) < 0 ||
	    !mailbox_list_mtime_settled(mtime, &now))
		return;
	buffer_t buf;
	buffer_init(&buf, LIST_CACHE_MAX_SIZE);
	if (cache_format(&buf, mtime, nodes, mtimes, count, &now))
		cache_write_file(root, &buf);
	buffer_free(&buf);
}

void mailbox_list_cache_invalidate(const char *root)
{
	char path[PATH_MAX];

	/* A new mtime also stops a scan that ran meanwhile from caching
	   its result (mailbox_list_cache_write's caller compares). */
	if (utimensat(AT_FDCWD, root, NULL, 0) < 0 && errno != ENOENT)
		i_error("utimensat(%s) failed: %m", root);
	if (cache_path(root, LIST_CACHE_FILE, path, sizeof(path)) &&
	    unlink(path) < 0 && errno != ENOENT)
		i_error("unlink(%s) failed: %m", path);
	/* the new root mtime makes the memo stale too; free it anyway */
	i_free(cache_memo.root);
	i_free(cache_memo.lines);
}
