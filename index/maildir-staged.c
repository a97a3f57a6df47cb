/* All or nothing for a set of messages published together (COPY and
   MULTIAPPEND of more than one message), even across a crash.

   Each message reaches cur/ by its own rename, so a crash between two of
   them would leave part of the set. Before the first rename the publisher
   writes every (tmp/ name, cur/ name) pair to MAILBOX_STAGED_NAME in cur/
   (a dot file: no Maildir reader takes it for a message), durably; when
   the set is published the journal is removed. Being in cur/, creating it
   moves cur/'s mtime, so whoever reads the folder after a crash (a SELECT,
   STATUS, another process) finds the directories changed, scans, and the
   scan finishes the set first (mailbox_staged_recover()). A
   journal found later belongs to a publisher that died: the rest of its
   set is renamed into cur/ too (rolled forward, never back: some of it may
   have been seen by clients already, and every file in tmp/ is complete,
   fsynced before its name was journaled). The journal is read under the
   uidlist lock, which a publisher holds throughout, so a publish still
   running in another process is never touched. */
#include "lib.h"
#include "safe-open.h"
#include "log.h"
#include "mailbox-private.h"

#include <fcntl.h>
#include <sys/stat.h>

#define MAILBOX_STAGED_NAME ".moat.staged"
#define MAILBOX_STAGED_HEADER "moat-staged 1\n"
/* Journal bytes read back: a bigger one is not ours. */
#define MAILBOX_STAGED_MAX_SIZE (64U * 1024 * 1024)

static bool staged_fsync(struct mailbox *box)
{
	/* a group commit defers the publish's syncs to its syncfs, never
	   the journal's: it must be on disk before the first rename */
	return (box->flags & MAILBOX_OPEN_NO_FSYNC) == 0 || box->fsync_deferred;
}

static int staged_path(struct mailbox *box, const char *suffix, char *buf,
		       size_t size)
{
	return snprintf(buf, size, "%s/%s%s", box->cur_dir, MAILBOX_STAGED_NAME,
			suffix) < (int)size ? 0 : -1;
}

int mailbox_staged_begin(struct mailbox *box, mailbox_staged_pair_func_t *pair,
			 void *context, unsigned int count,
			 const char **error_r)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	const char *tmp_name, *cur_name;

	if (count < 2)
		return 0;   /* one rename is atomic by itself */
	if (staged_path(box, "", path, sizeof(path)) < 0 ||
	    staged_path(box, ".tmp", tmp, sizeof(tmp)) < 0) {
		*error_r = "Path too long";
		return -1;
	}
	/* our own entries in cur/: announced, so no rescan follows */
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR,
			     MAILBOX_STAGED_NAME ".tmp");
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR,
			     MAILBOX_STAGED_NAME ".tmp");
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, MAILBOX_STAGED_NAME);
	FILE *f = safe_fopen_nofollow(tmp, "w");
	if (f == NULL) {
		*error_r = mailbox_set_error(box, "fopen(%s) failed: %m", tmp);
		maildir_watch_settle(box->watch);
		return -1;
	}
	fputs(MAILBOX_STAGED_HEADER, f);
	for (unsigned int i = 0; i < count; i++) {
		pair(context, i, &tmp_name, &cur_name);
		fprintf(f, "%s %s\n", tmp_name, cur_name);
	}
	bool failed = fflush(f) != 0 ||
		(staged_fsync(box) && fsync(fileno(f)) < 0);
	if (fclose(f) != 0)
		failed = true;
	if (failed || rename(tmp, path) < 0 ||
	    (staged_fsync(box) && maildir_fsync_dir(box->cur_dir) < 0)) {
		*error_r = mailbox_set_error(box, "writing %s failed: %m", path);
		(void)unlink(tmp);
		maildir_watch_settle(box->watch);
		return -1;
	}
	maildir_watch_settle(box->watch);
	box->staged_journaled = true;
	return 1;
}

FILE *mailbox_staged_spool_create(struct mailbox *box, const char *unique,
				   char *path_r, size_t path_size,
				   const char **error_r)
{
	if (snprintf(path_r, path_size, "%s/%s.copy", box->tmp_dir, unique) >=
	    (int)path_size) {
		*error_r = "Path too long";
		return NULL;
	}
	/* O_EXCL: a unique name; never through a planted symlink */
	int fd = open(path_r, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		      O_CLOEXEC,
		      0600);
	FILE *f = fd == -1 ? NULL : fdopen(fd, "w+");
	if (f == NULL) {
		*error_r = mailbox_set_error(box, "open(%s) failed: %m", path_r);
		if (fd != -1)
			i_close_fd(&fd);
		return NULL;
	}
	if (fputs(MAILBOX_STAGED_HEADER, f) < 0) {
		*error_r = mailbox_set_error(box, "write(%s) failed: %m", path_r);
		fclose(f);
		(void)unlink(path_r);
		return NULL;
	}
	return f;
}

void mailbox_staged_spool_rewind(FILE *spool)
{
	char header[sizeof(MAILBOX_STAGED_HEADER)];

	rewind(spool);
	if (fgets(header, sizeof(header), spool) == NULL)
		clearerr(spool);
}

int mailbox_staged_begin_spool(struct mailbox *box, FILE *spool,
			       const char *spool_path, const char **error_r)
{
	char path[PATH_MAX];

	if (staged_path(box, "", path, sizeof(path)) < 0) {
		*error_r = "Path too long";
		return -1;
	}
	if (fflush(spool) != 0 ||
	    (staged_fsync(box) && fsync(fileno(spool)) < 0)) {
		*error_r = mailbox_set_error(box, "writing %s failed: %m",
					     spool_path);
		return -1;
	}
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, MAILBOX_STAGED_NAME);
	int ret = rename(spool_path, path);
	if (ret == 0 && staged_fsync(box) && maildir_fsync_dir(box->cur_dir) < 0)
		ret = -1;
	int saved = errno;
	maildir_watch_settle(box->watch);
	if (ret < 0) {
		errno = saved;
		*error_r = mailbox_set_error(box, "renaming %s to %s failed: %m",
					     spool_path, path);
		return -1;
	}
	box->staged_journaled = true;
	return 0;
}

int mailbox_staged_end(struct mailbox *box, const char **error_r)
{
	char path[PATH_MAX];

	if (!box->staged_journaled)
		return 0;
	box->staged_journaled = false;
	/* No fsync: a journal that survives a power loss only renames
	   files that are no longer in tmp/. */
	if (staged_path(box, "", path, sizeof(path)) < 0)
		return 0;
	maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, MAILBOX_STAGED_NAME);
	int ret = unlink(path);
	int saved_errno = errno;
	maildir_watch_settle(box->watch);
	if (ret < 0 && saved_errno != ENOENT) {
		errno = saved_errno;
		*error_r = mailbox_set_error(box, "unlink(%s) failed: %m",
					     path);
		return -1;
	}
	return 0;
}

/* A name from the journal: a plain file name, nothing that walks out of
   the folder. */
static bool staged_name_ok(const char *name)
{
	struct maildir_filename fn;

	return maildir_filename_parse(name, &fn);
}

/* Rename into cur/ what is still in tmp/. Returns how many. */
static unsigned int staged_roll_forward(struct mailbox *box, char *lines)
{
	char src[PATH_MAX], dest[PATH_MAX];
	unsigned int moved = 0;
	char *line, *save = NULL;

	for (line = strtok_r(lines, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *cur_name = strchr(line, ' ');
		if (cur_name == NULL)
			continue;
		*cur_name++ = '\0';
		/* COPY's journal has a third field (the INTERNALDATE) */
		char *extra = strchr(cur_name, ' ');
		if (extra != NULL)
			*extra = '\0';
		if (!staged_name_ok(line) || !staged_name_ok(cur_name) ||
		    snprintf(src, sizeof(src), "%s/%s", box->tmp_dir, line) >=
		    (int)sizeof(src) ||
		    snprintf(dest, sizeof(dest), "%s/%s", box->cur_dir,
			     cur_name) >= (int)sizeof(dest))
			continue;
		maildir_watch_expect(box->watch, MAILDIR_WATCH_CUR, cur_name);
		if (rename(src, dest) == 0)
			moved++;
		else if (errno != ENOENT)
			i_error("rename(%s, %s) failed: %m", src, dest);
		maildir_watch_settle(box->watch);
	}
	return moved;
}

/* Read the journal (NUL-terminated, header checked). 1, 0 = none, -1 =
   not ours. */
static int staged_read(const char *path, char **buf_r)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0 || st.st_size > MAILBOX_STAGED_MAX_SIZE) {
		i_close_fd(&fd);
		return -1;
	}
	char *buf = i_malloc((size_t)st.st_size + 1);
	ssize_t ret = read(fd, buf, (size_t)st.st_size);
	i_close_fd(&fd);
	size_t hlen = strlen(MAILBOX_STAGED_HEADER);
	if (ret != st.st_size || (size_t)ret < hlen ||
	    memcmp(buf, MAILBOX_STAGED_HEADER, hlen) != 0) {
		i_free(buf);
		return -1;
	}
	buf[ret] = '\0';
	*buf_r = buf;
	return 1;
}

int mailbox_staged_recover_locked(struct mailbox *box, const char **error_r)
{
	char path[PATH_MAX];
	char *buf;

	if (staged_path(box, "", path, sizeof(path)) < 0)
		return 0;
	int ret = staged_read(path, &buf);
	if (ret == 0)
		return 0;
	if (ret < 0) {
		i_warning("%s: removing a %s that is not ours", box->path,
			  MAILBOX_STAGED_NAME);
	} else {
		unsigned int moved = staged_roll_forward(box,
			buf + strlen(MAILBOX_STAGED_HEADER));
		i_free(buf);
		if (staged_fsync(box) && maildir_fsync_dir(box->cur_dir) < 0) {
			*error_r = mailbox_set_error(box, "fsync(%s) failed: %m",
						     box->cur_dir);
			return -1;
		}
		i_warning("%s: finished a COPY or MULTIAPPEND that was "
			  "interrupted (%u more files published)", box->path,
			  moved);
	}
	box->staged_journaled = true;
	return mailbox_staged_end(box, error_r);
}

int mailbox_staged_recover(struct mailbox *box, const char **error_r)
{
	char path[PATH_MAX];
	struct stat st;

	/* also for EXAMINE and STATUS: nobody may see the half set */
	if (staged_path(box, "", path, sizeof(path)) < 0 ||
	    stat(path, &st) < 0)
		return 0;
	if (maildir_uidlist_lock_append(box->uidlist, error_r) < 0)
		return -1;
	int ret = mailbox_staged_recover_locked(box, error_r);
	maildir_uidlist_unlock(box->uidlist);
	return ret;
}
