/* passwd-file reader: see passwd-file.h. Entries live in one pool per
   load, sorted by user name for binary search. */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "passwd-file.h"

#include <strings.h>
#include <sys/stat.h>

#define PASSWD_FILE_FIELDS 8

struct passwd_file {
	char *path;
	pool_t pool;                    /* entries of the current load */
	struct passwd_file_entry *entries;
	unsigned int count, alloc;

	bool loaded;                    /* entries match the file below */
	bool failed;                    /* last refresh failed (logged) */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct passwd_file *passwd_file_create(const char *path)
{
	struct passwd_file *pf = i_malloc(sizeof(*pf));

	pf->path = i_strdup(path);
	return pf;
}

static void passwd_file_clear(struct passwd_file *pf)
{
	if (pf->pool != NULL)
		pool_unref(&pf->pool);
	i_free(pf->entries);
	pf->count = pf->alloc = 0;
	pf->loaded = false;
}

void passwd_file_destroy(struct passwd_file **_pf)
{
	struct passwd_file *pf = *_pf;

	*_pf = NULL;
	passwd_file_clear(pf);
	i_free(pf->path);
	free(pf);
}

const char *passwd_file_get_path(const struct passwd_file *pf)
{
	return pf->path;
}

unsigned int passwd_file_get_count(const struct passwd_file *pf)
{
	return pf->count;
}

static bool user_name_valid(const char *user)
{
	size_t len = strlen(user);

	if (len == 0 || len > PASSWD_FILE_MAX_USER)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = user[i];
		if (c <= ' ' || c == 0x7f)
			return false;
	}
	return true;
}

static struct passwd_file_entry *passwd_file_new_entry(struct passwd_file *pf)
{
	if (pf->count == pf->alloc) {
		pf->alloc = pf->alloc == 0 ? 64 : pf->alloc * 2;
		pf->entries = i_realloc(pf->entries,
			i_mul_size(pf->alloc, sizeof(*pf->entries)));
	}
	return &pf->entries[pf->count++];
}

/* Parse one line (without its LF) into a new entry. */
static void passwd_file_parse_line(struct passwd_file *pf, char *line,
				   unsigned int linenum)
{
	const char *fields[PASSWD_FILE_FIELDS];
	struct passwd_file_entry *entry;
	unsigned int n = 0;
	char *p = line;
	size_t len = strlen(line);

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '#')
		return;

	/* The last field takes the rest of the line, ':' included. */
	fields[n++] = line;
	while (n < PASSWD_FILE_FIELDS && (p = strchr(fields[n - 1], ':')) != NULL) {
		*p = '\0';
		fields[n++] = p + 1;
	}
	if (n < 2 || !user_name_valid(fields[0])) {
		i_warning("passwd-file %s:%u: malformed line ignored "
			  "(expected user:password:...)", pf->path, linenum);
		return;
	}
	for (unsigned int i = n; i < PASSWD_FILE_FIELDS; i++)
		fields[i] = "";

	entry = passwd_file_new_entry(pf);
	entry->user = p_strdup(pf->pool, fields[0]);
	entry->password = p_strdup(pf->pool, fields[1]);
	entry->uid = p_strdup(pf->pool, fields[2]);
	entry->gid = p_strdup(pf->pool, fields[3]);
	entry->home = p_strdup(pf->pool, fields[5]);
	entry->extra_fields = p_strdup(pf->pool, fields[7]);
	entry->line = linenum;
}

static int entry_cmp(const void *p1, const void *p2)
{
	const struct passwd_file_entry *e1 = p1, *e2 = p2;
	int ret = strcasecmp(e1->user, e2->user);

	if (ret != 0)
		return ret;
	return e1->line < e2->line ? -1 : (e1->line > e2->line ? 1 : 0);
}

/* Sort, then keep the first line of each duplicated user. */
static void passwd_file_sort(struct passwd_file *pf)
{
	unsigned int dest = 0;

	if (pf->count == 0)
		return;
	qsort(pf->entries, pf->count, sizeof(*pf->entries), entry_cmp);
	for (unsigned int i = 1; i < pf->count; i++) {
		if (strcasecmp(pf->entries[dest].user, pf->entries[i].user) == 0) {
			i_warning("passwd-file %s:%u: duplicate user ignored "
				  "(first defined at line %u)", pf->path,
				  pf->entries[i].line, pf->entries[dest].line);
			continue;
		}
		pf->entries[++dest] = pf->entries[i];
	}
	pf->count = dest + 1;
}

/* Skip the rest of an overlong line. Returns false at EOF. */
static bool skip_rest_of_line(FILE *f)
{
	int c;

	while ((c = getc(f)) != EOF) {
		if (c == '\n')
			return true;
	}
	return false;
}

static int passwd_file_read(struct passwd_file *pf, FILE *f)
{
	/* +2: the LF and the NUL fgets() adds */
	char *line = i_malloc(PASSWD_FILE_MAX_LINE + 2);
	unsigned int linenum = 0;

	while (fgets(line, PASSWD_FILE_MAX_LINE + 2, f) != NULL) {
		size_t len = strlen(line);

		linenum++;
		if (len > 0 && line[len - 1] == '\n') {
			line[len - 1] = '\0';
		} else if (len > PASSWD_FILE_MAX_LINE) {
			i_warning("passwd-file %s:%u: line longer than %u bytes "
				  "ignored", pf->path, linenum,
				  PASSWD_FILE_MAX_LINE);
			if (!skip_rest_of_line(f))
				break;
			continue;
		}
		passwd_file_parse_line(pf, line, linenum);
	}
	safe_memset(line, 0, PASSWD_FILE_MAX_LINE + 2);
	free(line);
	if (ferror(f)) {
		i_error("passwd-file %s: read failed: %s", pf->path,
			strerror(errno));
		return -1;
	}
	passwd_file_sort(pf);
	return 0;
}

static bool passwd_file_changed(const struct passwd_file *pf,
				const struct stat *st)
{
	return !pf->loaded || st->st_dev != pf->dev || st->st_ino != pf->ino ||
		st->st_size != pf->size ||
		st->st_mtim.tv_sec != pf->mtime.tv_sec ||
		st->st_mtim.tv_nsec != pf->mtime.tv_nsec;
}

static void passwd_file_fail(struct passwd_file *pf, const char *what)
{
	if (!pf->failed)
		i_error("passwd-file %s: %s: %s", pf->path, what, strerror(errno));
	pf->failed = true;
}

static int passwd_file_load(struct passwd_file *pf)
{
	struct stat st;
	FILE *f = fopen(pf->path, "re");

	if (f == NULL) {
		passwd_file_fail(pf, "open failed");
		return -1;
	}
	if (fstat(fileno(f), &st) < 0) {
		passwd_file_fail(pf, "fstat failed");
		fclose(f);
		return -1;
	}
	passwd_file_clear(pf);
	pf->pool = pool_create("passwd-file", 4096);
	if (passwd_file_read(pf, f) < 0) {
		passwd_file_clear(pf);
		pf->failed = true;
		fclose(f);
		return -1;
	}
	fclose(f);
	pf->dev = st.st_dev;
	pf->ino = st.st_ino;
	pf->size = st.st_size;
	pf->mtime = st.st_mtim;
	pf->loaded = true;
	if (pf->failed)
		i_info("passwd-file %s: readable again", pf->path);
	pf->failed = false;
	i_debug("passwd-file %s: %u users", pf->path, pf->count);
	return 0;
}

int passwd_file_refresh(struct passwd_file *pf)
{
	struct stat st;

	if (stat(pf->path, &st) < 0) {
		passwd_file_fail(pf, "stat failed");
		return -1;
	}
	if (!passwd_file_changed(pf, &st) && !pf->failed)
		return 0;
	return passwd_file_load(pf);
}

static int entry_key_cmp(const void *key, const void *p)
{
	const struct passwd_file_entry *entry = p;

	return strcasecmp(key, entry->user);
}

int passwd_file_lookup(struct passwd_file *pf, const char *user,
		       const struct passwd_file_entry **entry_r)
{
	const struct passwd_file_entry *entry;

	if (passwd_file_refresh(pf) < 0)
		return -1;
	if (!user_name_valid(user) || pf->count == 0)
		return 0;
	entry = bsearch(user, pf->entries, pf->count, sizeof(*pf->entries),
			entry_key_cmp);
	if (entry == NULL)
		return 0;
	*entry_r = entry;
	return 1;
}
