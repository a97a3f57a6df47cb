/* The subscriptions file: one UTF-8 mailbox name per line in the mail
   root, replaced atomically on change (mailbox-list.h). */
#include "lib.h"
#include "log.h"
#include "mailbox-list-private.h"

#include <fcntl.h>
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

int mailbox_subscriptions_read(const char *root, char ***names_r,
			       unsigned int *count_r)
{
	char path[PATH_MAX], norm[MAILBOX_NAME_MAX + 1];
	const char *error;
	char *data, **names = NULL;
	unsigned int count = 0;

	*names_r = NULL;
	*count_r = 0;
	if (subs_path(root, "", path, sizeof(path)) < 0)
		return -1;
	errno = 0;
	if (subs_read_file(path, &data) < 0) {
		i_error("read(%s) failed: %m", path);
		return -1;
	}
	if (data == NULL)
		return 0;
	for (char *line = data, *end; *line != '\0'; line = end) {
		end = line + strcspn(line, "\n");
		if (*end != '\0')
			*end++ = '\0';
		if (mailbox_name_normalize(line, norm, &error) != MAILBOX_NAME_OK)
			continue;
		names = i_realloc(names, i_mul_size(count + 1, sizeof(*names)));
		names[count++] = i_strdup(norm);
	}
	i_free(data);
	*names_r = names;
	*count_r = count;
	return 0;
}

static int subs_write(const char *root, char **names, unsigned int count,
		      const char **error_r)
{
	char path[PATH_MAX], tmp[PATH_MAX];

	if (subs_path(root, "", path, sizeof(path)) < 0 ||
	    subs_path(root, ".tmp", tmp, sizeof(tmp)) < 0) {
		*error_r = "Path too long";
		return -1;
	}
	FILE *f = fopen(tmp, "we");
	if (f == NULL) {
		*error_r = mailbox_list_set_error("fopen(%s) failed: %m", tmp);
		return -1;
	}
	for (unsigned int i = 0; i < count; i++) {
		if (names[i] != NULL)
			fprintf(f, "%s\n", names[i]);
	}
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
	if (mailbox_subscriptions_read(root, &names, &count) < 0) {
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
	if (changed && subs_write(root, names, count, error_r) < 0) {
		*code_r = MAILBOX_LIST_ERR_INTERNAL;
		ret = -1;
	}
	names_free(names, count);
	return ret;
}
