/* The keyword names file of a Maildir folder (maildir-keywords.h). */
#include "lib.h"
#include "log.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

#define KEYWORDS_ERROR_MAX 512

struct maildir_keywords {
	char *path, *tmp_path, *dir;
	bool fsync;
	char *names[MAILDIR_KEYWORDS_MAX];   /* i_malloc'd or NULL */
	bool have_stat;
	struct stat st;
	char error[KEYWORDS_ERROR_MAX];
};

struct maildir_keywords *maildir_keywords_init(const char *dir, bool fsync)
{
	return maildir_keywords_init_file(dir, MAILDIR_KEYWORDS_NAME, fsync);
}

struct maildir_keywords *
maildir_keywords_init_file(const char *dir, const char *file_name, bool fsync)
{
	struct maildir_keywords *kw = i_malloc(sizeof(*kw));

	kw->dir = i_strdup(dir);
	kw->path = i_strdup_printf("%s/%s", dir, file_name);
	kw->tmp_path = i_strdup_printf("%s/%s.tmp", dir, file_name);
	kw->fsync = fsync;
	return kw;
}

static void keywords_clear(struct maildir_keywords *kw)
{
	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++)
		i_free(kw->names[i]);
}

void maildir_keywords_deinit(struct maildir_keywords **_kw)
{
	struct maildir_keywords *kw = *_kw;

	*_kw = NULL;
	keywords_clear(kw);
	i_free(kw->path);
	i_free(kw->tmp_path);
	i_free(kw->dir);
	i_free(kw);
}

bool maildir_keyword_is_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > MAILDIR_KEYWORD_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c <= ' ' || c >= 0x7f || strchr("(){%*\"\\]", c) != NULL)
			return false;
	}
	return true;
}

/* One "<index> <name>" line; broken lines are skipped. */
static void keywords_parse_line(struct maildir_keywords *kw, char *line)
{
	char *sp = strchr(line, ' ');

	if (sp == NULL || sp == line || sp - line > 2)
		return;
	*sp = '\0';
	unsigned int idx = 0;
	for (const char *p = line; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return;
		idx = idx * 10 + (unsigned int)(*p - '0');
	}
	if (idx >= MAILDIR_KEYWORDS_MAX || kw->names[idx] != NULL ||
	    !maildir_keyword_is_valid(sp + 1) ||
	    maildir_keywords_lookup(kw, sp + 1) != -1)
		return;
	kw->names[idx] = i_strdup(sp + 1);
}

static int keywords_read(struct maildir_keywords *kw, int fd,
			 const struct stat *st, const char **error_r)
{
	char data[MAILDIR_KEYWORDS_FILE_MAX + 1];
	size_t size = MIN((size_t)st->st_size, MAILDIR_KEYWORDS_FILE_MAX);
	ssize_t ret;

	do {
		ret = pread(fd, data, size, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		snprintf(kw->error, sizeof(kw->error), "read(%s) failed: %m",
			 kw->path);
		*error_r = kw->error;
		return -1;
	}
	data[ret] = '\0';
	keywords_clear(kw);
	char *line = data, *end;
	while ((end = strchr(line, '\n')) != NULL) {
		*end = '\0';
		keywords_parse_line(kw, line);
		line = end + 1;
	}
	return 0;
}

static bool keywords_stat_equals(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
		a->st_size == b->st_size &&
		a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
		a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
		a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
		a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int maildir_keywords_refresh(struct maildir_keywords *kw,
			     const char **error_r)
{
	struct stat st;

	/* checked every command: unchanged costs one stat(), not an open */
	if (kw->have_stat && stat(kw->path, &st) == 0 &&
	    keywords_stat_equals(&st, &kw->st))
		return 0;
	int fd = open(kw->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1) {
		if (errno != ENOENT) {
			snprintf(kw->error, sizeof(kw->error),
				 "open(%s) failed: %m", kw->path);
			*error_r = kw->error;
			return -1;
		}
		bool had = kw->have_stat;
		kw->have_stat = false;
		keywords_clear(kw);
		return had ? 1 : 0;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(kw->error, sizeof(kw->error), "fstat(%s) failed: %m",
			 kw->path);
		*error_r = kw->error;
		i_close_fd(&fd);
		return -1;
	}
	if (kw->have_stat && keywords_stat_equals(&st, &kw->st)) {
		i_close_fd(&fd);
		return 0;
	}
	int ret = keywords_read(kw, fd, &st, error_r);
	i_close_fd(&fd);
	if (ret < 0)
		return -1;
	kw->st = st;
	kw->have_stat = true;
	return 1;
}

int maildir_keywords_lookup(struct maildir_keywords *kw, const char *name)
{
	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if (kw->names[i] != NULL && strcasecmp(kw->names[i], name) == 0)
			return (int)i;
	}
	return -1;
}

const char *maildir_keywords_name(struct maildir_keywords *kw,
				  unsigned int idx)
{
	return idx < MAILDIR_KEYWORDS_MAX ? kw->names[idx] : NULL;
}

uint32_t maildir_keywords_defined(struct maildir_keywords *kw)
{
	uint32_t mask = 0;

	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if (kw->names[i] != NULL)
			mask |= 1U << i;
	}
	return mask;
}

static int keywords_write(struct maildir_keywords *kw, const char **error_r)
{
	char data[MAILDIR_KEYWORDS_FILE_MAX];
	size_t len = 0;

	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if (kw->names[i] == NULL)
			continue;
		int n = snprintf(data + len, sizeof(data) - len, "%u %s\n", i,
				 kw->names[i]);
		i_assert(n > 0 && (size_t)n < sizeof(data) - len);
		len += (size_t)n;
	}
	int fd = open(kw->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd == -1) {
		snprintf(kw->error, sizeof(kw->error), "open(%s) failed: %m",
			 kw->tmp_path);
		*error_r = kw->error;
		return -1;
	}
	bool failed = write(fd, data, len) != (ssize_t)len ||
		(kw->fsync && fsync(fd) < 0);
	if (failed)
		snprintf(kw->error, sizeof(kw->error), "write(%s) failed: %m",
			 kw->tmp_path);
	i_close_fd(&fd);
	if (!failed && rename(kw->tmp_path, kw->path) < 0) {
		snprintf(kw->error, sizeof(kw->error), "rename(%s) failed: %m",
			 kw->tmp_path);
		failed = true;
	}
	if (!failed && kw->fsync && maildir_fsync_dir(kw->dir) < 0) {
		snprintf(kw->error, sizeof(kw->error), "fsync(%s) failed: %m",
			 kw->dir);
		failed = true;
	}
	if (failed) {
		(void)unlink(kw->tmp_path);
		*error_r = kw->error;
		return -1;
	}
	return 0;
}

int maildir_keywords_add(struct maildir_keywords *kw, const char *name,
			 unsigned int *idx_r, const char **error_r)
{
	i_assert(maildir_keyword_is_valid(name));
	if (maildir_keywords_refresh(kw, error_r) < 0)
		return -1;
	int idx = maildir_keywords_lookup(kw, name);
	if (idx >= 0) {
		*idx_r = (unsigned int)idx;
		return 1;
	}
	unsigned int i;
	for (i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if (kw->names[i] == NULL)
			break;
	}
	if (i == MAILDIR_KEYWORDS_MAX)
		return 0;
	kw->names[i] = i_strdup(name);
	if (keywords_write(kw, error_r) < 0) {
		i_free(kw->names[i]);
		return -1;
	}
	/* our own write: the next refresh need not re-read it */
	kw->have_stat = stat(kw->path, &kw->st) == 0;
	*idx_r = i;
	return 1;
}

int maildir_keywords_replace(struct maildir_keywords *kw,
			     const char *const names[MAILDIR_KEYWORDS_MAX],
			     const char **error_r)
{
	keywords_clear(kw);
	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if (names[i] != NULL && maildir_keyword_is_valid(names[i]) &&
		    maildir_keywords_lookup(kw, names[i]) == -1)
			kw->names[i] = i_strdup(names[i]);
	}
	if (keywords_write(kw, error_r) < 0) {
		kw->have_stat = false;   /* read the file again */
		return -1;
	}
	kw->have_stat = stat(kw->path, &kw->st) == 0;
	return 0;
}

uint32_t maildir_keywords_from_letters(const char *letters)
{
	uint32_t mask = 0;

	for (; *letters != '\0'; letters++) {
		if (*letters >= 'a' && *letters <= 'z')
			mask |= 1U << (*letters - 'a');
	}
	return mask;
}

void maildir_keywords_to_letters(uint32_t keywords,
				 char buf[MAILDIR_KEYWORDS_MAX + 1])
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < MAILDIR_KEYWORDS_MAX; i++) {
		if ((keywords & (1U << i)) != 0)
			buf[n++] = (char)('a' + i);
	}
	buf[n] = '\0';
}
