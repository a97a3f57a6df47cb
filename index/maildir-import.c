/* Reading Dovecot's and Courier's UID lists (maildir-import.h). */
#include "lib.h"
#include "log.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-import.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Digits of str[0..len) as a u32; -1 if empty, not digits, or too big. */
static int import_parse_u32(const char *str, size_t len, uint32_t *num_r)
{
	uint64_t num = 0;

	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (str[i] < '0' || str[i] > '9')
			return -1;
		num = num * 10 + (uint64_t)(str[i] - '0');
	}
	if (num > UINT32_MAX)
		return -1;
	*num_r = (uint32_t)num;
	return 0;
}

/* The next space-separated token of *pos: start and length. */
static bool import_next_token(const char **pos, const char **tok_r,
			      size_t *len_r)
{
	const char *p = *pos;

	while (*p == ' ')
		p++;
	if (*p == '\0')
		return false;
	const char *start = p;
	while (*p != '\0' && *p != ' ')
		p++;
	*tok_r = start;
	*len_r = (size_t)(p - start);
	*pos = p;
	return true;
}

int maildir_foreign_uidlist_header(const char *line, uint32_t *uidvalidity_r,
				   uint32_t *next_uid_r)
{
	const char *pos = line, *tok;
	size_t len;
	uint32_t uidvalidity = 0, next_uid = 1;

	if (!import_next_token(&pos, &tok, &len) || len != 1)
		return -1;
	int version = tok[0] - '0';
	if (version == 1) {
		/* Courier's (and Dovecot 1.0's): "1 <uidvalidity> <nextuid>" */
		if (!import_next_token(&pos, &tok, &len) ||
		    import_parse_u32(tok, len, &uidvalidity) < 0 ||
		    !import_next_token(&pos, &tok, &len) ||
		    import_parse_u32(tok, len, &next_uid) < 0 ||
		    import_next_token(&pos, &tok, &len))
			return -1;
	} else if (version == 3) {
		/* "3 V<uidvalidity> N<nextuid> G<guid> ...": any order,
		   unknown fields are skipped */
		while (import_next_token(&pos, &tok, &len)) {
			if (tok[0] == 'V' &&
			    import_parse_u32(tok + 1, len - 1, &uidvalidity) < 0)
				return -1;
			if (tok[0] == 'N' &&
			    import_parse_u32(tok + 1, len - 1, &next_uid) < 0)
				return -1;
		}
	} else {
		return -1;
	}
	if (uidvalidity == 0 || next_uid == 0)
		return -1;
	*uidvalidity_r = uidvalidity;
	*next_uid_r = next_uid;
	return version;
}

int maildir_foreign_uidlist_record(int version, const char *line,
				   uint32_t *uid_r, const char **base_r,
				   size_t *base_len_r)
{
	const char *pos = line, *tok, *base = NULL;
	size_t len;
	uint32_t uid;

	if (!import_next_token(&pos, &tok, &len) ||
	    import_parse_u32(tok, len, &uid) < 0 || uid == 0)
		return -1;
	if (version == 1) {
		/* "<uid> <file name>" (Courier keeps the info part) */
		if (!import_next_token(&pos, &tok, &len))
			return -1;
		base = tok;
	} else {
		/* "<uid> [<ext>...] :<base>": extension fields (W<vsize>,
		   S<size>, G<guid>, O<order>, P<pop3 uidl>...) never start
		   with ':' */
		while (import_next_token(&pos, &tok, &len)) {
			if (tok[0] == ':') {
				base = tok + 1;
				len--;
				break;
			}
		}
		if (base == NULL)
			return -1;
	}
	const char *rest;
	size_t rest_len;
	if (import_next_token(&pos, &rest, &rest_len))
		return -1;   /* something after the name */
	const char *colon = memchr(base, ':', len);
	if (colon != NULL)
		len = (size_t)(colon - base);
	if (!maildir_uidlist_base_is_valid(base, len))
		return -1;
	*uid_r = uid;
	*base_r = base;
	*base_len_r = len;
	return 0;
}

/* One line of f into buf (NUL-terminated, LF removed). Returns 1, 0 at
   the end (a last line without its LF is a torn write: ignored), -1 if
   a line is too long. */
static int import_read_line(FILE *f, char *buf, size_t size)
{
	if (fgets(buf, (int)size, f) == NULL)
		return 0;
	size_t len = strlen(buf);
	if (len > 0 && buf[len - 1] == '\n') {
		buf[len - 1] = '\0';
		return 1;
	}
	return feof(f) ? 0 : -1;
}

static int import_uidlist_file(struct maildir_uidlist *ul, const char *path,
			       uint32_t *foreign_uidvalidity_r)
{
	char buf[MAILDIR_IMPORT_LINE_MAX + 2];
	uint32_t uidvalidity, next_uid, uid;
	const char *base;
	size_t base_len;
	unsigned int lineno = 1, count = 0;
	struct stat st;

	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	FILE *f = fdopen(fd, "r");
	if (f == NULL) {
		i_close_fd(&fd);
		return -1;
	}
	int ret = -1;
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MAILDIR_UIDLIST_MAX_FILE_SIZE)
		goto out;
	if (import_read_line(f, buf, sizeof(buf)) <= 0)
		goto out;
	int version = maildir_foreign_uidlist_header(buf, &uidvalidity,
						     &next_uid);
	if (version < 0)
		goto out;
	*foreign_uidvalidity_r = uidvalidity;
	maildir_uidlist_import_begin(ul, uidvalidity, next_uid);
	int lret;
	while ((lret = import_read_line(f, buf, sizeof(buf))) > 0) {
		lineno++;
		if (maildir_foreign_uidlist_record(version, buf, &uid, &base,
						   &base_len) < 0 ||
		    maildir_uidlist_add_uid(ul, uid, base, base_len,
					    MAILDIR_SIZE_UNKNOWN,
					    MAILDIR_SIZE_UNKNOWN) < 0) {
			i_error("%s: line %u is not a valid record", path,
				lineno);
			goto out;
		}
		count++;
	}
	if (lret < 0) {
		i_error("%s: line %u is too long", path, lineno + 1);
		goto out;
	}
	i_info("%s: kept UIDVALIDITY %u, %u UIDs, next UID %u", path,
	       uidvalidity, count, maildir_uidlist_get_next_uid(ul));
	ret = 1;
out:
	fclose(f);
	return ret;
}

int maildir_import_uidlist(struct maildir_uidlist *ul, const char *dir,
			   enum maildir_import_source *source_r,
			   uint32_t *foreign_uidvalidity_r)
{
	static const struct {
		const char *name;
		enum maildir_import_source source;
	} lists[] = {
		{ MAILDIR_DOVECOT_UIDLIST_NAME, MAILDIR_IMPORT_DOVECOT },
		{ MAILDIR_COURIER_UIDLIST_NAME, MAILDIR_IMPORT_COURIER },
	};
	char path[PATH_MAX];

	*source_r = MAILDIR_IMPORT_NONE;
	*foreign_uidvalidity_r = 0;
	for (unsigned int i = 0; i < N_ELEMENTS(lists); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir,
			     lists[i].name) >= (int)sizeof(path))
			return 0;
		errno = 0;
		int ret = import_uidlist_file(ul, path, foreign_uidvalidity_r);
		if (ret == 0)
			continue;
		*source_r = lists[i].source;
		if (ret > 0)
			return 1;
		if (errno != 0)
			i_error("%s: cannot be read: %m", path);
		i_error("%s: corrupt, numbering the messages by file name "
			"under a new UIDVALIDITY (clients download them again)",
			path);
		return -1;
	}
	return 0;
}
