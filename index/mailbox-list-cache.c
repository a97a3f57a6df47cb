/* The cached folder list of a Maildir++ root (mailbox-list-private.h):
   what the last scan of the root found, valid while the root directory
   keeps the mtime the scan started with. Creating, deleting or renaming a
   folder (by moat or by any other Maildir tool) changes that mtime.

   The file lives in its own subdirectory so that writing it (tmp +
   rename) does not change the root's mtime itself. Format:
     "moat-mailboxlist 1 <root mtime sec> <nsec>\n"
     then per folder "S <name>\n" (selectable) or "N <name>\n" (\Noselect)
   with normalized UTF-8 names. */
#include "lib.h"
#include "log.h"
#include "buffer.h"
#include "mailbox-list-private.h"

#include <fcntl.h>
#include <sys/stat.h>

#define LIST_CACHE_FILE MAILBOX_LIST_CACHE_DIR "/list"
#define LIST_CACHE_HEADER "moat-mailboxlist 1 "
/* Names are at most MAILBOX_NAME_MAX bytes: a bigger file is not ours. */
#define LIST_CACHE_MAX_SIZE \
	((size_t)MAILBOX_LIST_MAX_NODES * (MAILBOX_NAME_MAX + 4) + 128)
/* Within this many seconds of "now" an mtime may still hide a change
   made in the same timestamp tick: such a scan is not cached. */
#define LIST_CACHE_SETTLE_SECS 2

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

/* Check the folder lines after the header (add == NULL), or pass them
   to add (the lines are cut at their line ends then). */
static bool cache_parse_lines(char *p, mailbox_list_cache_add_func_t *add,
			      void *context)
{
	unsigned int count = 0;

	while (*p != '\0') {
		char *end = strchr(p, '\n');
		if (end == NULL || end - p < 3 || p[1] != ' ' ||
		    (p[0] != 'S' && p[0] != 'N') ||
		    end - p - 2 > MAILBOX_NAME_MAX ||
		    ++count > MAILBOX_LIST_MAX_NODES)
			return false;
		if (add != NULL) {
			*end = '\0';
			add(context, p + 2, p[0] == 'S' ?
			    MAILBOX_NODE_SELECTABLE : MAILBOX_NODE_NOSELECT);
		}
		p = end + 1;
	}
	return true;
}

int mailbox_list_cache_read(const char *root, const struct timespec *mtime,
			    mailbox_list_cache_add_func_t *add, void *context)
{
	unsigned long long sec, nsec;
	size_t size;
	int len = 0;

	char *data = cache_read_file(root, &size);
	if (data == NULL)
		return 0;
	if (strlen(data) != size ||
	    strncmp(data, LIST_CACHE_HEADER, strlen(LIST_CACHE_HEADER)) != 0 ||
	    sscanf(data + strlen(LIST_CACHE_HEADER), "%llu %llu\n%n",
		   &sec, &nsec, &len) != 2 || len == 0 ||
	    (time_t)sec != mtime->tv_sec || (long)nsec != mtime->tv_nsec) {
		i_free(data);
		return 0;
	}
	/* checked in full first: a garbled file adds nothing */
	char *lines = data + strlen(LIST_CACHE_HEADER) + len;
	int ret = 0;
	if (cache_parse_lines(lines, NULL, context)) {
		(void)cache_parse_lines(lines, add, context);
		ret = 1;
	}
	i_free(data);
	return ret;
}

static bool cache_format(buffer_t *buf, const struct timespec *mtime,
			 const struct mailbox_list_node *nodes,
			 unsigned int count)
{
	if (buffer_printf(buf, LIST_CACHE_HEADER "%llu %llu\n",
			  (unsigned long long)mtime->tv_sec,
			  (unsigned long long)mtime->tv_nsec) < 0)
		return false;
	for (unsigned int i = 0; i < count; i++) {
		/* a name with a line end can't be stored: no cache */
		if (strchr(nodes[i].name, '\n') != NULL ||
		    buffer_printf(buf, "%c %s\n",
				  (nodes[i].flags & MAILBOX_NODE_SELECTABLE) != 0 ?
				  'S' : 'N', nodes[i].name) < 0)
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
			      unsigned int count)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (mtime->tv_sec >= now.tv_sec - LIST_CACHE_SETTLE_SECS)
		return;
	buffer_t buf;
	buffer_init(&buf, LIST_CACHE_MAX_SIZE);
	if (cache_format(&buf, mtime, nodes, count))
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
}
