/* The subscriptions file: one UTF-8 mailbox name per line in the mail
   root, replaced atomically on change (mailbox-list.h).

   Switching from another server (doc/migration.md): a file in Dovecot's
   format ("V\t2", an empty line, then one name per line with TAB between
   the levels, each level modified UTF-7) is read as such and written
   back in that format, so Dovecot can still read it. Without the file,
   Courier's courierimapsubscribed ("INBOX" and "INBOX.<a>.<b>", levels
   in modified UTF-7) is read; the first change writes our own file and
   leaves Courier's alone. */
#include "lib.h"
#include "safe-open.h"
#include "log.h"
#include "buffer.h"
#include "mailbox-list-private.h"

#define SUBS_DOVECOT_HEADER "V\t2\n"
#define SUBS_COURIER_FILE "courierimapsubscribed"
#define SUBS_COURIER_PREFIX "INBOX."

enum subs_format {
	SUBS_FORMAT_MOAT,
	SUBS_FORMAT_DOVECOT,
	SUBS_FORMAT_COURIER,
};

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

static int subs_path(const char *root, const char *suffix, char *path,
		     size_t size)
{
	int ret = snprintf(path, size, "%s/" MAILBOX_SUBSCRIPTIONS_FILE "%s",
			   root, suffix);
	return ret < 0 || (size_t)ret >= size ? -1 : 0;
}

/* The whole file, NUL-terminated, i_malloc'd; NULL data if missing. */
static int subs_read_file(const char *path, char **data_r)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	*data_r = NULL;
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0 || st.st_size > MAILBOX_SUBSCRIPTIONS_MAX_SIZE) {
		if (errno == 0)
			errno = EFBIG;
		i_close_fd(&fd);
		return -1;
	}
	char *data = i_malloc((size_t)st.st_size + 1);
	size_t pos = 0;
	ssize_t ret;
	while (pos < (size_t)st.st_size &&
	       (ret = read(fd, data + pos, (size_t)st.st_size - pos)) != 0) {
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			i_free(data);
			i_close_fd(&fd);
			return -1;
		}
		pos += (size_t)ret;
	}
	data[pos] = '\0';
	i_close_fd(&fd);
	*data_r = data;
	return 0;
}

/* A name of another server's file: levels separated by sep, each in
   modified UTF-7 (or, failing that, UTF-8 as it is), into moat's UTF-8
   name with '/'. line is modified. Returns 0 or -1. */
static int subs_foreign_name(char *line, char sep,
			     char name_r[MAILBOX_NAME_MAX + 1])
{
	buffer_t buf, level;
	int ret = 0;

	buffer_init(&buf, MAILBOX_NAME_MAX);
	buffer_init(&level, MAILBOX_NAME_MAX);
	for (char *p = line, *end; ret == 0; p = end + 1) {
		end = p + strcspn(p, (char[]){ sep, '\0' });
		bool last = *end == '\0';
		*end = '\0';
		buffer_reset(&level);
		if (mailbox_name_mutf7_to_utf8(p, &level) < 0) {
			buffer_reset(&level);
			if (buffer_append_str(&level, p) < 0)
				ret = -1;
		}
		if ((buf.used > 0 && buffer_append_c(&buf, MAILBOX_NAME_SEP) < 0) ||
		    buffer_append(&buf, level.data, level.used) < 0)
			ret = -1;
		if (last)
			break;
	}
	if (ret == 0)
		memcpy(name_r, buf.data, buf.used + 1);
	buffer_free(&buf);
	buffer_free(&level);
	return ret;
}

/* One line of the file as a name to normalize: NULL to skip it. */
static const char *subs_line_name(char *line, enum subs_format format,
				  char tmp[MAILBOX_NAME_MAX + 1])
{
	switch (format) {
	case SUBS_FORMAT_MOAT:
		return line;
	case SUBS_FORMAT_DOVECOT:
		return line[0] == '\0' || subs_foreign_name(line, '\t', tmp) < 0 ?
			NULL : tmp;
	case SUBS_FORMAT_COURIER:
		if (strcasecmp(line, "INBOX") == 0)
			return "INBOX";
		if (strncasecmp(line, SUBS_COURIER_PREFIX,
				strlen(SUBS_COURIER_PREFIX)) != 0)
			return NULL;
		return subs_foreign_name(line + strlen(SUBS_COURIER_PREFIX), '.',
					 tmp) < 0 ? NULL : tmp;
	}
	return NULL;
}

/* The file's data (NULL if there is none) and its format. */
static int subs_read_any(const char *root, char **data_r,
			 enum subs_format *format_r)
{
	char path[PATH_MAX];

	*format_r = SUBS_FORMAT_MOAT;
	if (subs_path(root, "", path, sizeof(path)) < 0)
		return -1;
	errno = 0;
	if (subs_read_file(path, data_r) < 0) {
		i_error("read(%s) failed: %m", path);
		return -1;
	}
	if (*data_r != NULL) {
		if (strncmp(*data_r, SUBS_DOVECOT_HEADER,
			    strlen(SUBS_DOVECOT_HEADER)) == 0)
			*format_r = SUBS_FORMAT_DOVECOT;
		return 0;
	}
	if (snprintf(path, sizeof(path), "%s/" SUBS_COURIER_FILE, root) >=
	    (int)sizeof(path))
		return 0;
	errno = 0;
	if (subs_read_file(path, data_r) < 0) {
		i_error("read(%s) failed: %m", path);
		return -1;
	}
	*format_r = SUBS_FORMAT_COURIER;
	return 0;
}

static int subs_read(const char *root, char ***names_r, unsigned int *count_r,
		     enum subs_format *format_r)
{
	char norm[MAILBOX_NAME_MAX + 1], tmp[MAILBOX_NAME_MAX + 1];
	const char *error;
	char *data, **names = NULL;
	unsigned int count = 0;

	*names_r = NULL;
	*count_r = 0;
	if (subs_read_any(root, &data, format_r) < 0)
		return -1;
	if (data == NULL)
		return 0;
	char *start = data;
	if (*format_r == SUBS_FORMAT_DOVECOT)
		start += strlen(SUBS_DOVECOT_HEADER);
	for (char *line = start, *end; *line != '\0'; line = end) {
		end = line + strcspn(line, "\n");
		if (*end != '\0')
			*end++ = '\0';
		const char *name = subs_line_name(line, *format_r, tmp);
		if (name == NULL ||
		    mailbox_name_normalize(name, norm, &error) != MAILBOX_NAME_OK)
			continue;
		names = i_realloc(names, i_mul_size(count + 1, sizeof(*names)));
		names[count++] = i_strdup(norm);
	}
	i_free(data);
	*names_r = names;
	*count_r = count;
	return 0;
}

int mailbox_subscriptions_read(const char *root, char ***names_r,
			       unsigned int *count_r)
{
	enum subs_format format;

	return subs_read(root, names_r, count_r, &format);
}

/* name in Dovecot's format: levels in modified UTF-7, TAB between them. */
static int subs_dovecot_line(const char *name, buffer_t *out)
{
	char level[MAILBOX_NAME_MAX + 1];
	buffer_t enc;
	int ret = 0;

	buffer_init(&enc, MAILBOX_NAME_MAX * 4);
	for (const char *p = name; ret == 0;) {
		size_t len = strcspn(p, "/");
		memcpy(level, p, len);
		level[len] = '\0';
		buffer_reset(&enc);
		if (mailbox_name_utf8_to_mutf7(level, &enc) < 0 ||
		    (p != name && buffer_append_c(out, '\t') < 0) ||
		    buffer_append(out, enc.data, enc.used) < 0)
			ret = -1;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	buffer_free(&enc);
	return ret;
}

static int subs_write(const char *root, char **names, unsigned int count,
		      enum subs_format format, const char **error_r)
{
	char path[PATH_MAX], tmp[PATH_MAX];

	if (subs_path(root, "", path, sizeof(path)) < 0 ||
	    subs_path(root, ".tmp", tmp, sizeof(tmp)) < 0) {
		*error_r = "Path too long";
		return -1;
	}
	FILE *f = safe_fopen_nofollow(tmp, "w");
	if (f == NULL) {
		*error_r = mailbox_list_set_error("fopen(%s) failed: %m", tmp);
		return -1;
	}
	buffer_t line;
	buffer_init(&line, MAILBOX_NAME_MAX * 4 + 1);
	if (format == SUBS_FORMAT_DOVECOT)
		fputs(SUBS_DOVECOT_HEADER "\n", f);
	for (unsigned int i = 0; i < count; i++) {
		if (names[i] == NULL)
			continue;
		buffer_reset(&line);
		if (format != SUBS_FORMAT_DOVECOT)
			fprintf(f, "%s\n", names[i]);
		else if (subs_dovecot_line(names[i], &line) == 0)
			fprintf(f, "%s\n", line.data);
	}
	buffer_free(&line);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		*error_r = mailbox_list_set_error("write(%s) failed: %m", tmp);
		fclose(f);
		unlink(tmp);
		return -1;
	}
	fclose(f);
	if (rename(tmp, path) < 0) {
		*error_r = mailbox_list_set_error("rename(%s) failed: %m", tmp);
		unlink(tmp);
		return -1;
	}
	return 0;
}

static void names_free(char **names, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		i_free(names[i]);
	i_free(names);
}

int mailbox_list_subscribe(const char *root, const char *name, bool set,
			   enum mailbox_list_error *code_r,
			   const char **error_r)
{
	char norm[MAILBOX_NAME_MAX + 1];
	char **names;
	unsigned int count, i;
	bool changed = false, found = false;

	enum mailbox_name_status st = mailbox_name_normalize(name, norm, error_r);
	if (st != MAILBOX_NAME_OK) {
		*code_r = st == MAILBOX_NAME_TOO_LONG ? MAILBOX_LIST_ERR_LIMIT :
			MAILBOX_LIST_ERR_INVALID;
		return -1;
	}
	enum subs_format format;
	if (subs_read(root, &names, &count, &format) < 0) {
		*code_r = MAILBOX_LIST_ERR_INTERNAL;
		*error_r = "Can't read the subscriptions";
		return -1;
	}
	for (i = 0; i < count; i++) {
		if (strcmp(names[i], norm) != 0)
			continue;
		found = true;
		if (!set) {
			i_free(names[i]);   /* also drops duplicates */
			changed = true;
		}
	}
	if (set && !found) {
		names = i_realloc(names, i_mul_size(count + 1, sizeof(*names)));
		names[count++] = i_strdup(norm);
		changed = true;
	}
	int ret = 0;
	/* Dovecot's file stays readable by Dovecot; Courier's is left
	   alone and ours takes over */
	if (format == SUBS_FORMAT_COURIER)
		format = SUBS_FORMAT_MOAT;
	if (changed && subs_write(root, names, count, format, error_r) < 0) {
		*code_r = MAILBOX_LIST_ERR_INTERNAL;
		ret = -1;
	}
	names_free(names, count);
	return ret;
}
