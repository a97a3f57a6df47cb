/* Dovecot's keyword names, and keeping dovecot-uidlist and
   dovecot-keywords in step for a switch back (maildir-import.h). */
#include "lib.h"
#include "log.h"
#include "maildir-keywords.h"
#include "maildir-import.h"

#include <fcntl.h>
#include <sys/stat.h>

/* The names of kw as a table for maildir_keywords_replace(). */
static void keywords_table(struct maildir_keywords *kw,
			   const char *names[MAILDIR_KEYWORDS_MAX])
{
	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++)
		names[i] = maildir_keywords_name(kw, i);
}

int maildir_import_dovecot_keywords(struct maildir_keywords *kw,
				    const char *dir, const char **error_r)
{
	const char *names[MAILDIR_KEYWORDS_MAX];
	/* the same "<index> <name>" lines as moat-keywords: one parser
	   reads both, so a letter means the same name to both servers */
	struct maildir_keywords *dkw =
		maildir_keywords_init_file(dir, MAILDIR_DOVECOT_KEYWORDS_NAME,
					   false);
	int ret = maildir_keywords_refresh(dkw, error_r);

	if (ret > 0) {
		keywords_table(dkw, names);
		ret = maildir_keywords_replace(kw, names, error_r) < 0 ? -1 : 1;
	}
	maildir_keywords_deinit(&dkw);
	return ret;
}

/* Whether the first line of fd is a dovecot-uidlist header naming this
   UIDVALIDITY. */
static bool dovecot_uidlist_fd_matches(int fd, uint32_t uidvalidity)
{
	char buf[MAILDIR_IMPORT_LINE_MAX + 1];
	uint32_t file_uidvalidity, next_uid;
	ssize_t ret;

	do {
		ret = pread(fd, buf, sizeof(buf) - 1, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret <= 0)
		return false;
	buf[ret] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl == NULL)
		return false;
	*nl = '\0';
	return maildir_foreign_uidlist_header(buf, &file_uidvalidity,
					      &next_uid) == 3 &&
		file_uidvalidity == uidvalidity;
}

int maildir_dovecot_uidlist_open_append(const char *path, uint32_t uidvalidity,
					int *fd_r)
{
	struct stat st;
	char last;

	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;
		i_error("open(%s) failed: %m", path);
		return -1;
	}
	if (!dovecot_uidlist_fd_matches(fd, uidvalidity)) {
		i_close_fd(&fd);
		return 0;
	}
	if (fstat(fd, &st) < 0 || st.st_size == 0 ||
	    pread(fd, &last, 1, st.st_size - 1) != 1) {
		i_error("reading %s failed: %m", path);
		i_close_fd(&fd);
		return -1;
	}
	if (last != '\n' && pwrite(fd, "\n", 1, st.st_size) != 1) {
		i_error("write(%s) failed: %m", path);
		i_close_fd(&fd);
		return -1;
	}
	*fd_r = fd;
	return 1;
}

void maildir_dovecot_keywords_mirror(const char *dir, uint32_t uidvalidity,
				     struct maildir_keywords *kw)
{
	char path[PATH_MAX];
	const char *names[MAILDIR_KEYWORDS_MAX], *error;

	if (snprintf(path, sizeof(path), "%s/" MAILDIR_DOVECOT_UIDLIST_NAME,
		     dir) >= (int)sizeof(path))
		return;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return;
	bool matches = dovecot_uidlist_fd_matches(fd, uidvalidity);
	i_close_fd(&fd);
	if (!matches)
		return;
	/* moat-keywords began as a copy of dovecot-keywords and only ever
	   gains names, so writing it whole keeps every old letter */
	struct maildir_keywords *dkw =
		maildir_keywords_init_file(dir, MAILDIR_DOVECOT_KEYWORDS_NAME,
					   true);
	keywords_table(kw, names);
	if (maildir_keywords_replace(dkw, names, &error) < 0)
		i_warning("%s: keeping dovecot-keywords in step failed: %s",
			  dir, error);
	maildir_keywords_deinit(&dkw);
}
