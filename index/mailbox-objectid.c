/* RFC 8474 MAILBOXID, EMAILID and THREADID (mailbox-objectid.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-objectid.h"
#include "mailbox-private.h"
#include "mailbox-list-private.h"
#include "maildir-uidlist-lookup.h"
#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* EMAILIDs computed and queued for the cache before the queue is
   written: a FETCH or SEARCH over a big mailbox holds at most this many
   (about 60 bytes each). */
#define MAILBOX_EMAILID_FLUSH 1000

bool mailbox_objectid_is_valid(const char *id)
{
	size_t len = 0;

	for (; id[len] != '\0'; len++) {
		unsigned char c = (unsigned char)id[len];
		if (len == MAILBOX_OBJECTID_MAX ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return len > 0;
}

/* Whether data[0..len) is prefix and hex_len lowercase hex digits. */
static bool id_has_form(const char *data, size_t len, char prefix,
			size_t hex_len)
{
	if (len != 1 + hex_len || data[0] != prefix)
		return false;
	for (size_t i = 1; i < len; i++) {
		if (!((data[i] >= '0' && data[i] <= '9') ||
		      (data[i] >= 'a' && data[i] <= 'f')))
			return false;
	}
	return true;
}

uint64_t mailbox_objectid_hash(const void *data, size_t size)
{
	uint64_t h = hash_fnv1a64(data, size);

	/* FNV's low bits mix poorly on short inputs: spread every bit over
	   the whole value (the murmur3 finalizer's constants) */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* ---- MAILBOXID ---- */

static void id_generate(char id_r[MAILBOX_ID_LEN + 1])
{
	unsigned char rnd[MAILBOX_ID_RANDOM_BYTES];

	random_fill(rnd, sizeof(rnd));
	id_r[0] = 'F';
	for (unsigned int i = 0; i < sizeof(rnd); i++)
		snprintf(id_r + 1 + 2 * i, 3, "%02x", rnd[i]);
}

/* Returns 1 with a valid id, 2 if the file holds something else, 0 if
   there is none, -1 on error. */
static int id_read(const char *file, char id_r[MAILBOX_ID_LEN + 1],
		   const char **error_r)
{
	/* an id and a newline, plus one byte to see that nothing follows */
	char buf[MAILBOX_ID_LEN + 2];
	ssize_t ret;
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1) {
		if (errno == ENOENT)
			return 0;
		*error_r = mailbox_list_set_error("open(%s) failed: %m", file);
		return -1;
	}
	do {
		ret = pread(fd, buf, sizeof(buf), 0);
	} while (ret < 0 && errno == EINTR);
	i_close_fd(&fd);
	if (ret < 0) {
		*error_r = mailbox_list_set_error("read(%s) failed: %m", file);
		return -1;
	}
	size_t len = (size_t)ret;
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (!id_has_form(buf, len, 'F', 2 * MAILBOX_ID_RANDOM_BYTES))
		return 2;
	memcpy(id_r, buf, len);
	id_r[len] = '\0';
	return 1;
}

/* Write id into a new temporary file next to file, fsynced. */
static int id_write_tmp(const char *file, const char *id,
			char tmp_r[PATH_MAX], const char **error_r)
{
	char line[MAILBOX_ID_LEN + 2];
	int len = snprintf(line, sizeof(line), "%s\n", id);

	/* ".tmp" keeps it out of RENAME INBOX's move (mailbox-list-ops.c) */
	if (snprintf(tmp_r, PATH_MAX, "%s.%ld.tmp", file, (long)getpid()) >=
	    PATH_MAX) {
		*error_r = mailbox_list_set_error("Path too long: %s", file);
		return -1;
	}
	int fd = open(tmp_r, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd == -1) {
		*error_r = mailbox_list_set_error("open(%s) failed: %m", tmp_r);
		return -1;
	}
	if (write(fd, line, (size_t)len) != len || fsync(fd) < 0) {
		*error_r = mailbox_list_set_error("write(%s) failed: %m", tmp_r);
		i_close_fd(&fd);
		(void)unlink(tmp_r);
		return -1;
	}
	i_close_fd(&fd);
	return 0;
}

static int id_file_path(const char *path, char file_r[PATH_MAX],
			const char **error_r)
{
	if (snprintf(file_r, PATH_MAX, "%s/" MAILBOX_ID_FILE, path) >=
	    PATH_MAX) {
		*error_r = mailbox_list_set_error("Path too long: %s", path);
		return -1;
	}
	return 0;
}

/* rename (replace: true) or link (only if there is none) tmp to file,
   then make the directory entry durable. Returns 1, 0 if link found a
   file there already, -1 on error. */
static int id_install(const char *path, const char *tmp, const char *file,
		      bool replace, const char **error_r)
{
	int ret = replace ? rename(tmp, file) : link(tmp, file);

	if (ret < 0 && !replace && errno == EEXIST) {
		(void)unlink(tmp);
		return 0;
	}
	if (ret < 0) {
		*error_r = mailbox_list_set_error("%s(%s, %s) failed: %m",
					   replace ? "rename" : "link",
					   tmp, file);
		(void)unlink(tmp);
		return -1;
	}
	if (!replace && unlink(tmp) < 0 && errno != ENOENT)
		i_error("unlink(%s) failed: %m", tmp);
	/* an id once reported must not come back different after a crash */
	if (maildir_fsync_dir(path) < 0) {
		*error_r = mailbox_list_set_error("fsync(%s) failed: %m", path);
		return -1;
	}
	return 1;
}

int mailbox_id_create(const char *path, const char **error_r)
{
	char file[PATH_MAX], tmp[PATH_MAX], id[MAILBOX_ID_LEN + 1];

	id_generate(id);
	if (id_file_path(path, file, error_r) < 0 ||
	    id_write_tmp(file, id, tmp, error_r) < 0 ||
	    id_install(path, tmp, file, true, error_r) < 0)
		return -1;
	return 0;
}

int mailbox_id_get(const char *path, char id_r[MAILBOX_ID_LEN + 1],
		   const char **error_r)
{
	char file[PATH_MAX], tmp[PATH_MAX], id[MAILBOX_ID_LEN + 1];
	int ret;

	if (id_file_path(path, file, error_r) < 0 ||
	    (ret = id_read(file, id_r, error_r)) < 0)
		return -1;
	if (ret == 1)
		return 0;
	/* A folder moat did not make (or an id file it cannot read): a new
	   id. Linked, not renamed, when there was none, so of two processes
	   racing here the first one's id is everyone's. */
	if (ret == 2)
		i_warning("%s: not a mailbox id, replaced by a new one", file);
	id_generate(id);
	if (id_write_tmp(file, id, tmp, error_r) < 0 ||
	    (ret = id_install(path, tmp, file, ret == 2, error_r)) < 0)
		return -1;
	if (ret == 1) {
		memcpy(id_r, id, sizeof(id));
		return 0;
	}
	if ((ret = id_read(file, id_r, error_r)) == 1)
		return 0;
	if (ret >= 0)
		*error_r = mailbox_list_set_error("%s: no valid mailbox id", file);
	return -1;
}

/* ---- EMAILID ---- */

void mailbox_emailid_from_base(const char *base, size_t base_len,
			       char id_r[MAILBOX_MSG_OBJECTID_LEN + 1])
{
	const char *end = base + base_len, *p = base, *field;
	const size_t flen = strlen(MAILBOX_EMAILID_FIELD);

	/* a copy: the id its source had */
	while ((field = memchr(p, ',', (size_t)(end - p))) != NULL) {
		p = field + 1;
		if ((size_t)(end - field) <= flen ||
		    memcmp(field, MAILBOX_EMAILID_FIELD, flen) != 0)
			continue;
		const char *value = field + flen;
		const char *vend = memchr(value, ',', (size_t)(end - value));
		size_t vlen = (size_t)((vend == NULL ? end : vend) - value);
		if (id_has_form(value, vlen, 'M', MAILBOX_MSG_OBJECTID_LEN - 1)) {
			memcpy(id_r, value, vlen);
			id_r[vlen] = '\0';
			return;
		}
	}
	/* the unique part: what the Maildir writer made unique */
	const char *comma = memchr(base, ',', base_len);
	size_t unique_len = comma == NULL ? base_len : (size_t)(comma - base);
	snprintf(id_r, MAILBOX_MSG_OBJECTID_LEN + 1, "M%016llx",
		 (unsigned long long)mailbox_objectid_hash(base, unique_len));
}

int mailbox_msg_emailid(struct mailbox *box, uint32_t seq,
			char id_r[MAILBOX_MSG_OBJECTID_LEN + 1],
			const char **error_r)
{
	char base[MAILDIR_UIDLIST_MAX_LINE + 1];
	const void *data;
	const char *error;
	size_t size;
	uint64_t fsize;

	if (mailbox_msg_cache_lookup(box, seq, MAILBOX_CACHE_EMAILID,
				     &data, &size) > 0 &&
	    id_has_form(data, size, 'M', MAILBOX_MSG_OBJECTID_LEN - 1)) {
		memcpy(id_r, data, size);
		id_r[size] = '\0';
		return 1;
	}
	int ret = maildir_uidlist_lookup(box->uidlookup,
					 mailbox_msg_uid(box, seq), base,
					 &fsize, error_r);
	if (ret < 0) {
		*error_r = mailbox_set_error(box, "%s", *error_r);
		return -1;
	}
	if (ret == 0)
		return 0;
	mailbox_emailid_from_base(base, strlen(base), id_r);
	/* only a cache: an expunged message has no record to add to */
	if (mailbox_msg_cache_add(box, seq, MAILBOX_CACHE_EMAILID, id_r,
				  MAILBOX_MSG_OBJECTID_LEN, &error) == 0 &&
	    ++box->emailid_queued >= MAILBOX_EMAILID_FLUSH) {
		box->emailid_queued = 0;
		if (mailbox_cache_flush(box, &error) < 0)
			i_error("%s", error);
	}
	return 1;
}
