/* The manifest of a moatadm backup: writing it for a tree, reading and
   checking it (admin-backup.h). */
#include "admin-backup.h"
#include "strfuncs.h"

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#define ADMIN_BACKUP_READ_BUF (64 * 1024)

void admin_backup_hex(const unsigned char *md, unsigned int md_len,
		      char hex[ADMIN_BACKUP_SHA256_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned int i;

	for (i = 0; i < md_len && i * 2 < ADMIN_BACKUP_SHA256_HEX; i++) {
		hex[i * 2] = digits[md[i] >> 4];
		hex[i * 2 + 1] = digits[md[i] & 15];
	}
	hex[i * 2] = '\0';
}

int admin_backup_hash_fd(int fd, char hex[ADMIN_BACKUP_SHA256_HEX + 1],
			 uint64_t *size_r)
{
	unsigned char buf[ADMIN_BACKUP_READ_BUF], md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	uint64_t size = 0;
	ssize_t n;
	int ret = 0;

	EVP_MD_CTX *md_ctx = EVP_MD_CTX_new();
	if (md_ctx == NULL || EVP_DigestInit_ex(md_ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md_ctx);
		errno = ENOMEM;
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -1;
			break;
		}
		(void)EVP_DigestUpdate(md_ctx, buf, (size_t)n);
		size += (uint64_t)n;
	}
	if (ret == 0 && EVP_DigestFinal_ex(md_ctx, md, &md_len) != 1) {
		errno = EIO;
		ret = -1;
	}
	EVP_MD_CTX_free(md_ctx);
	if (ret < 0)
		return -1;
	admin_backup_hex(md, md_len, hex);
	*size_r = size;
	return 0;
}

bool admin_backup_path_is_valid(const char *path)
{
	const char *p = path;

	if (*p == '\0' || strlen(p) >= ADMIN_BACKUP_LINE_MAX - 128)
		return false;
	while (*p != '\0') {
		size_t len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < len; i++) {
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return false;
		}
		p += len;
		if (*p == '/') {
			p++;
			if (*p == '\0')
				return false;   /* a trailing slash */
		}
	}
	return true;
}

struct manifest_walk {
	FILE *out;
	pool_t pool;
	unsigned int records, files;
	const char *error;
};

/* rel: the directory below root ("" for root itself). Paths are built
   in buffers on the stack: the walk's memory does not grow with the
   number of files (depth is at most ADMIN_BACKUP_DEPTH_MAX). */
static int walk_dir(struct manifest_walk *w, const char *root,
		    const char *rel, unsigned int depth)
{
	char path[PATH_MAX], sub[PATH_MAX], full[PATH_MAX];
	struct dirent *de;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s%s%s", root, rel[0] == '\0' ?
		     "" : "/", rel) >= (int)sizeof(path)) {
		w->error = p_strdup_printf(w->pool, "%s/%s: path too long",
					   root, rel);
		return -1;
	}
	DIR *d = opendir(path);
	if (d == NULL) {
		w->error = p_strdup_printf(w->pool, "opendir %s: %s", path,
					   strerror(errno));
		return -1;
	}
	while (ret == 0 && (errno = 0, de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		struct stat st;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (depth == 0 && str_begins(name, ADMIN_BACKUP_MANIFEST_NAME, NULL))
			continue;   /* the manifest and its temporary file */
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] == '\0' ?
			     "" : "/", name) >= (int)sizeof(sub) ||
		    snprintf(full, sizeof(full), "%s/%s", root, sub) >=
		    (int)sizeof(full)) {
			w->error = p_strdup_printf(w->pool, "%s/%s: path too "
						   "long", path, name);
			ret = -1;
		} else if (!admin_backup_path_is_valid(sub) ||
			   lstat(full, &st) < 0) {
			w->error = p_strdup_printf(w->pool, "%s: %s", full,
				errno != 0 ? strerror(errno) : "unusable name");
			ret = -1;
		} else if (S_ISDIR(st.st_mode) && depth < ADMIN_BACKUP_DEPTH_MAX) {
			fprintf(w->out, "dir %s\n", sub);
			w->records++;
			ret = walk_dir(w, root, sub, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			char hex[ADMIN_BACKUP_SHA256_HEX + 1];
			uint64_t size;
			int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0 || admin_backup_hash_fd(fd, hex, &size) < 0) {
				w->error = p_strdup_printf(w->pool, "%s: %s",
							   full, strerror(errno));
				ret = -1;
			} else {
				fprintf(w->out, "file %s %llu %lld %s\n", hex,
					(unsigned long long)size,
					(long long)st.st_mtim.tv_sec, sub);
				w->records++;
				w->files++;
			}
			if (fd >= 0)
				close(fd);
		} else {
			w->error = p_strdup_printf(w->pool, "%s: not a file or "
				"a directory of a Maildir tree", full);
			ret = -1;
		}
	}
	if (ret == 0 && errno != 0) {
		w->error = p_strdup_printf(w->pool, "readdir %s: %s", path,
					   strerror(errno));
		ret = -1;
	}
	closedir(d);
	return ret;
}

int admin_backup_manifest_write(const char *dir, const char *user,
				pool_t pool, unsigned int *files_r,
				const char **error_r)
{
	const char *path = p_strdup_printf(pool, "%s/%s", dir,
					   ADMIN_BACKUP_MANIFEST_NAME);
	const char *tmp = p_strdup_printf(pool, "%s.tmp", path);
	struct manifest_walk w = { .pool = pool };

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0 || (w.out = fdopen(fd, "w")) == NULL) {
		*error_r = p_strdup_printf(pool, "%s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(w.out, "moat-backup %d\nuser %s\ncreated %lld\n",
		ADMIN_BACKUP_VERSION, user, (long long)time(NULL));
	int ret = walk_dir(&w, dir, "", 0);
	if (ret == 0)
		fprintf(w.out, "end %u\n", w.records);
	bool ok = ret == 0 && fflush(w.out) == 0 && fsync(fileno(w.out)) == 0;
	if (fclose(w.out) != 0)
		ok = false;
	if (ok && rename(tmp, path) < 0)
		ok = false;
	if (!ok) {
		*error_r = w.error != NULL ? w.error :
			p_strdup_printf(pool, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	*files_r = w.files;
	return 0;
}

/* One line without its LF into buf; 1, 0 at EOF, -1 if too long or
   without its LF (a torn file). */
static int manifest_line(FILE *f, char *buf, size_t size)
{
	if (fgets(buf, (int)size, f) == NULL)
		return 0;
	size_t len = strlen(buf);
	if (len == 0 || buf[len - 1] != '\n')
		return -1;
	buf[len - 1] = '\0';
	return 1;
}

int admin_backup_manifest_open(const char *dir, pool_t pool,
			       struct admin_backup_manifest *m_r,
			       const char **error_r)
{
	char line[ADMIN_BACKUP_LINE_MAX];
	const char *p;
	uint64_t created;
	unsigned int version;

	memset(m_r, 0, sizeof(*m_r));
	const char *path = p_strdup_printf(pool, "%s/%s", dir, ADMIN_BACKUP_MANIFEST_NAME);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || (m_r->f = fdopen(fd, "r")) == NULL) {
		*error_r = p_strdup_printf(pool, "%s: %s (not a complete moatadm "
					   "backup)", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (manifest_line(m_r->f, line, sizeof(line)) <= 0 ||
	    !str_begins(line, "moat-backup ", &p) ||
	    str_to_uint(p, &version) < 0 || version != ADMIN_BACKUP_VERSION ||
	    manifest_line(m_r->f, line, sizeof(line)) <= 0 ||
	    !str_begins(line, "user ", &p) || p[0] == '\0' ||
	    strlen(p) >= sizeof(m_r->user) ||
	    (strcpy(m_r->user, p), manifest_line(m_r->f, line, sizeof(line))) <= 0 ||
	    !str_begins(line, "created ", &p) ||
	    str_to_uint64(p, &created) < 0) {
		*error_r = p_strdup_printf(pool, "%s: not a moat-backup %d manifest",
					   path, ADMIN_BACKUP_VERSION);
		admin_backup_manifest_close(m_r);
		return -1;
	}
	m_r->created = created;
	return 0;
}

/* A decimal number and the space after it at *p (moved past both). */
static int manifest_number(const char **p, uint64_t *value_r)
{
	char digits[21];
	size_t len = strspn(*p, "0123456789");

	if (len == 0 || len >= sizeof(digits) || (*p)[len] != ' ')
		return -1;
	memcpy(digits, *p, len);
	digits[len] = '\0';
	if (str_to_uint64(digits, value_r) < 0)
		return -1;
	*p += len + 1;
	return 0;
}

int admin_backup_manifest_next(struct admin_backup_manifest *m,
			       struct admin_backup_record *r_r,
			       pool_t pool, const char **error_r)
{
	char line[ADMIN_BACKUP_LINE_MAX];
	const char *p;
	unsigned int count;

	if (m->ended)
		return 0;
	int ret = manifest_line(m->f, line, sizeof(line));
	if (ret <= 0) {
		*error_r = ret == 0 ? "the manifest ends without its end record "
			"(truncated)" : "a manifest line is torn or too long";
		return -1;
	}
	memset(r_r, 0, sizeof(*r_r));
	if (str_begins(line, "end ", &p)) {
		if (str_to_uint(p, &count) < 0 || count != m->records ||
		    manifest_line(m->f, line, sizeof(line)) != 0) {
			*error_r = p_strdup_printf(pool, "the manifest's end "
				"record does not match its %u records",
				m->records);
			return -1;
		}
		m->ended = true;
		return 0;
	}
	if (++m->records > ADMIN_BACKUP_RECORDS_MAX) {
		*error_r = "the manifest has too many records";
		return -1;
	}
	if (str_begins(line, "dir ", &p)) {
		r_r->dir = true;
	} else if (str_begins(line, "file ", &p)) {
		uint64_t size;
		if (strspn(p, "0123456789abcdef") != ADMIN_BACKUP_SHA256_HEX ||
		    p[ADMIN_BACKUP_SHA256_HEX] != ' ') {
			*error_r = p_strdup_printf(pool, "record %u: a bad "
						   "SHA-256", m->records);
			return -1;
		}
		memcpy(r_r->sha256, p, ADMIN_BACKUP_SHA256_HEX);
		p += ADMIN_BACKUP_SHA256_HEX + 1;
		if (manifest_number(&p, &size) < 0) {
			*error_r = p_strdup_printf(pool, "record %u: a bad size",
						   m->records);
			return -1;
		}
		r_r->size = size;
		uint64_t mtime;
		if (manifest_number(&p, &mtime) < 0 || mtime > INT64_MAX) {
			*error_r = p_strdup_printf(pool, "record %u: a bad mtime",
						   m->records);
			return -1;
		}
		r_r->mtime = (int64_t)mtime;
	} else {
		*error_r = p_strdup_printf(pool, "record %u: unknown", m->records);
		return -1;
	}
	if (!admin_backup_path_is_valid(p) || strlen(p) >= sizeof(r_r->path)) {
		*error_r = p_strdup_printf(pool, "record %u: a path that is not "
					   "a plain relative one", m->records);
		return -1;
	}
	strcpy(r_r->path, p);
	return 1;
}

void admin_backup_manifest_close(struct admin_backup_manifest *m)
{
	if (m->f != NULL)
		fclose(m->f);
	m->f = NULL;
}
