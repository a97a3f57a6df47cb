/* Base names -> uids in one streaming pass over moat.uidlist
   (maildir-uidlist-find.h). */
#include "lib.h"
#include "maildir-uidlist.h"
#include "maildir-uidlist-find.h"
#include "hash.h"

#include <fcntl.h>

/* Read size: a line never straddles more than one refill. */
#define FIND_READ_SIZE (64U * 1024)

struct find_table {
	struct maildir_uidlist_find_item *items;
	uint32_t *slots;         /* item index + 1; 0 = empty */
	uint32_t mask;
};

/* The slot holding base, or the empty slot where it would go. */
static uint32_t *find_slot(struct find_table *t, const char *base, size_t len)
{
	uint32_t i = hash_fnv1a32(base, len) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		uint32_t s = t->slots[i];
		if (s == 0)
			return &t->slots[i];
		const struct maildir_uidlist_find_item *it = &t->items[s - 1];
		if (it->base_len == len && memcmp(it->base, base, len) == 0)
			return &t->slots[i];
	}
}

/* "<uid> <base>[ ...]": 1 with the fields, 0 for other lines. */
static int line_parse(const char *p, const char *end, uint32_t *uid_r,
		      const char **base_r, size_t *len_r)
{
	uint64_t uid = 0;

	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		uid = uid * 10 + (uint64_t)(*p - '0');
		if (uid > UINT32_MAX)
			return 0;
	}
	if (uid == 0 || p == end || *p != ' ')
		return 0;
	const char *base = ++p;
	while (p < end && *p != ' ')
		p++;
	*uid_r = (uint32_t)uid;
	*base_r = base;
	*len_r = (size_t)(p - base);
	return 1;
}

/* 1, 0 (a base twice), per complete line of buf. */
static int find_lines(struct find_table *t, const char *buf, size_t len,
		      size_t *done_r)
{
	const char *p = buf, *end = buf + len, *nl;
	uint32_t uid;
	const char *base;
	size_t blen;

	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (line_parse(p, nl, &uid, &base, &blen) > 0) {
			uint32_t s = *find_slot(t, base, blen);
			if (s != 0) {
				if (t->items[s - 1].uid != 0)
					return 0;
				t->items[s - 1].uid = uid;
			}
		}
		p = nl + 1;
	}
	*done_r = (size_t)(p - buf);
	return 1;
}

static int find_read(struct find_table *t, int fd)
{
	char *buf = i_malloc(FIND_READ_SIZE);
	size_t used = 0;
	uint64_t offset = 0;
	ssize_t ret;
	int found = 1;

	while (found > 0 && (ret = pread(fd, buf + used, FIND_READ_SIZE - used,
					 (off_t)(offset + used))) != 0) {
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			found = -1;
			break;
		}
		used += (size_t)ret;
		size_t done;
		found = find_lines(t, buf, used, &done);
		if (found > 0 && done == 0 && used == FIND_READ_SIZE)
			found = 0;   /* a line longer than any we write */
		memmove(buf, buf + done, used - done);
		used -= done;
		offset += done;
	}
	/* an incomplete last line: an append in progress, or torn */
	i_free(buf);
	return found;
}

int maildir_uidlist_find(const char *dir,
			 struct maildir_uidlist_find_item *items,
			 unsigned int count, const char **error_r)
{
	/* the path and strerror() */
	static char error[PATH_MAX + 256];
	char path[PATH_MAX];
	struct find_table t;
	uint32_t size = 1;

	i_assert(count <= MAILDIR_UIDLIST_FIND_MAX);
	while (size < 2 * count)
		size *= 2;
	t.items = items;
	t.mask = size - 1;
	t.slots = i_malloc(i_mul_size(size, sizeof(*t.slots)));
	for (unsigned int i = 0; i < count; i++) {
		uint32_t *slot = find_slot(&t, items[i].base, items[i].base_len);
		if (*slot == 0)
			*slot = i + 1;
		items[i].first = *slot - 1;
		items[i].uid = 0;
	}
	int ret = 1;
	int fd = -1;
	if (snprintf(path, sizeof(path), "%s/%s", dir, MAILDIR_UIDLIST_NAME) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		ret = -1;
	} else if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		ret = errno == ENOENT ? 1 : -1;
	} else {
		ret = find_read(&t, fd);
	}
	if (ret < 0) {
		snprintf(error, sizeof(error), "reading %s failed: %s", path,
			 strerror(errno));
		*error_r = error;
	}
	if (fd != -1)
		i_close_fd(&fd);
	/* the later items of a base have its uid too */
	for (unsigned int i = 0; i < count; i++)
		items[i].uid = items[items[i].first].uid;
	i_free(t.slots);
	return ret;
}
