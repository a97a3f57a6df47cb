/* Courier's keywords (courierimapkeywords/) into moat-keywords and the
   file names (maildir-import.h). */
#include "lib.h"
#include "log.h"
#include "mempool.h"
#include "maildir-filename.h"
#include "maildir-uidlist.h"
#include "maildir-keywords.h"
#include "maildir-import.h"

#include <dirent.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

/* Names Courier's :list may define before its message lines; past this
   the list is taken as corrupt (moat keeps 26 of them anyway). */
#define COURIER_NAMES_MAX 1024

struct courier_msg {
	const char *base;        /* in courier_ctx.pool */
	uint32_t keywords;       /* moat's bits */
	unsigned int seq;        /* order added: a later entry wins */
};

/* A per-message update file: "<base>" wins over ".<n>.<base>", and of
   those the highest n. */
struct courier_update {
	const char *base, *fname;
	uint64_t n;              /* UINT64_MAX for the plain "<base>" */
};

struct courier_ctx {
	const char *dir;
	char kwdir[PATH_MAX];
	pool_t pool;
	/* Courier's index -> moat's (-1: a name moat cannot keep) */
	int courier_to_moat[COURIER_NAMES_MAX];
	unsigned int courier_names;
	const char *names[MAILDIR_KEYWORDS_MAX];
	struct courier_msg *msgs;
	unsigned int msgs_count, msgs_alloc;
	bool dropped_names;
};

/* moat's index of name, defining it if there is room; -1 if not. */
static int courier_name_index(struct courier_ctx *ctx, const char *name)
{
	unsigned int i;

	if (!maildir_keyword_is_valid(name))
		return -1;
	for (i = 0; i < MAILDIR_KEYWORDS_MAX && ctx->names[i] != NULL; i++) {
		if (strcasecmp(ctx->names[i], name) == 0)
			return (int)i;
	}
	if (i == MAILDIR_KEYWORDS_MAX) {
		ctx->dropped_names = true;
		return -1;
	}
	ctx->names[i] = p_strdup(ctx->pool, name);
	return (int)i;
}

static struct courier_msg *courier_msg_add(struct courier_ctx *ctx,
					   const char *base, size_t len)
{
	if (ctx->msgs_count == ctx->msgs_alloc) {
		ctx->msgs_alloc = ctx->msgs_alloc == 0 ? 64 : ctx->msgs_alloc * 2;
		ctx->msgs = i_realloc(ctx->msgs, i_mul_size(ctx->msgs_alloc,
							     sizeof(*ctx->msgs)));
	}
	struct courier_msg *msg = &ctx->msgs[ctx->msgs_count++];
	char *copy = p_malloc(ctx->pool, len + 1);
	memcpy(copy, base, len);
	msg->base = copy;
	msg->keywords = 0;
	msg->seq = ctx->msgs_count;
	return msg;
}

/* "<base>:<index> <index>..." Returns 0 or -1. */
static int courier_parse_msg_line(struct courier_ctx *ctx, const char *line)
{
	const char *colon = strrchr(line, ':');

	if (colon == NULL ||
	    !maildir_uidlist_base_is_valid(line, (size_t)(colon - line)))
		return -1;
	struct courier_msg *msg =
		courier_msg_add(ctx, line, (size_t)(colon - line));
	for (const char *p = colon + 1; *p != '\0';) {
		if (*p == ' ') {
			p++;
			continue;
		}
		unsigned int idx = 0, digits = 0;
		for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
			idx = idx * 10 + (unsigned int)(*p - '0');
		if (digits == 0 || (*p != ' ' && *p != '\0'))
			return -1;
		if (idx < ctx->courier_names && ctx->courier_to_moat[idx] >= 0)
			msg->keywords |= 1U << ctx->courier_to_moat[idx];
	}
	return 0;
}

static int courier_read_line(FILE *f, char *buf, size_t size)
{
	if (fgets(buf, (int)size, f) == NULL)
		return 0;
	size_t len = strlen(buf);
	if (len > 0 && buf[len - 1] == '\n') {
		buf[len - 1] = '\0';
		return 1;
	}
	return feof(f) ? 1 : -1;
}

/* :list: the names, an empty line, the messages. Returns 1, 0 if
   missing, -1 if corrupt. */
static int courier_read_list(struct courier_ctx *ctx)
{
	char path[PATH_MAX], buf[MAILDIR_IMPORT_LINE_MAX + 2];
	struct stat st;
	bool in_names = true;
	int ret;

	if (snprintf(path, sizeof(path), "%s/" MAILDIR_COURIER_KEYWORDS_LIST,
		     ctx->kwdir) >= (int)sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	FILE *f = fdopen(fd, "r");
	if (f == NULL) {
		i_close_fd(&fd);
		return -1;
	}
	if (fstat(fileno(f), &st) < 0 ||
	    (uint64_t)st.st_size > MAILDIR_UIDLIST_MAX_FILE_SIZE) {
		fclose(f);
		return -1;
	}
	while ((ret = courier_read_line(f, buf, sizeof(buf))) > 0) {
		if (in_names && buf[0] == '\0') {
			in_names = false;
		} else if (in_names) {
			if (ctx->courier_names == COURIER_NAMES_MAX) {
				ret = -1;
				break;
			}
			ctx->courier_to_moat[ctx->courier_names++] =
				courier_name_index(ctx, buf);
		} else if (buf[0] != '\0' &&
			   courier_parse_msg_line(ctx, buf) < 0) {
			i_warning("%s: broken line skipped", path);
		}
	}
	fclose(f);
	if (ret < 0)
		i_error("%s: too long a line, or too many names", path);
	return ret < 0 ? -1 : 1;
}

static int update_cmp(const void *p1, const void *p2)
{
	const struct courier_update *u1 = p1, *u2 = p2;
	int ret = strcmp(u1->base, u2->base);

	if (ret != 0)
		return ret;
	/* the winner of each base first */
	return u1->n > u2->n ? -1 : u1->n < u2->n ? 1 : 0;
}

/* ".<n>.<base>" or "<base>" -> u. Returns false for other names. */
static bool courier_update_parse(struct courier_ctx *ctx, const char *fname,
				 struct courier_update *u)
{
	const char *base = fname;
	uint64_t n = UINT64_MAX;

	if (fname[0] == ':' || strcmp(fname, ".") == 0 ||
	    strcmp(fname, "..") == 0)
		return false;
	if (fname[0] == '.') {
		const char *p = fname + 1;
		n = 0;
		for (; *p >= '0' && *p <= '9' && n < UINT64_MAX / 10 - 10; p++)
			n = n * 10 + (uint64_t)(*p - '0');
		if (p == fname + 1 || *p != '.')
			return false;
		base = p + 1;
	}
	if (!maildir_uidlist_base_is_valid(base, strlen(base)))
		return false;
	u->fname = p_strdup(ctx->pool, fname);
	u->base = u->fname + (base - fname);
	u->n = n;
	return true;
}

/* The keyword names of one update file. */
static uint32_t courier_read_update(struct courier_ctx *ctx, const char *fname)
{
	char path[PATH_MAX], buf[MAILDIR_KEYWORD_NAME_MAX + 2];
	uint32_t keywords = 0;
	unsigned int lines = 0;

	if (snprintf(path, sizeof(path), "%s/%s", ctx->kwdir, fname) >=
	    (int)sizeof(path))
		return 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd == -1 ? NULL : fdopen(fd, "r");
	if (f == NULL) {
		if (fd != -1)
			i_close_fd(&fd);
		return 0;
	}
	/* a message has at most as many keywords as Courier names */
	while (lines++ < COURIER_NAMES_MAX &&
	       courier_read_line(f, buf, sizeof(buf)) > 0) {
		int idx = buf[0] == '\0' ? -1 : courier_name_index(ctx, buf);
		if (idx >= 0)
			keywords |= 1U << idx;
	}
	fclose(f);
	return keywords;
}

/* The per-message files newer than :list replace its entries. */
static void courier_read_updates(struct courier_ctx *ctx)
{
	struct courier_update *updates = NULL;
	unsigned int count = 0, alloc = 0;
	struct dirent *d;
	DIR *dir = opendir(ctx->kwdir);

	if (dir == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		struct courier_update u;
		if (!courier_update_parse(ctx, d->d_name, &u))
			continue;
		if (count == MAILDIR_IMPORT_COURIER_UPDATES_MAX) {
			i_warning("%s: more than %u keyword files, the rest "
				  "ignored", ctx->kwdir, count);
			break;
		}
		if (count == alloc) {
			alloc = alloc == 0 ? 64 : alloc * 2;
			updates = i_realloc(updates,
					    i_mul_size(alloc, sizeof(*updates)));
		}
		updates[count++] = u;
	}
	closedir(dir);
	if (count > 0)
		qsort(updates, count, sizeof(*updates), update_cmp);
	for (unsigned int i = 0; i < count; i++) {
		if (i > 0 && strcmp(updates[i - 1].base, updates[i].base) == 0)
			continue;
		struct courier_msg *msg = courier_msg_add(ctx, updates[i].base,
							  strlen(updates[i].base));
		msg->keywords = courier_read_update(ctx, updates[i].fname);
	}
	i_free(updates);
}

/* Sort by base; of equal bases the last added (an update) wins. */
static int msg_cmp(const void *p1, const void *p2)
{
	const struct courier_msg *m1 = p1, *m2 = p2;
	int ret = strcmp(m1->base, m2->base);

	if (ret != 0)
		return ret;
	return m1->seq < m2->seq ? 1 : m1->seq > m2->seq ? -1 : 0;
}

static const struct courier_msg *
courier_find(struct courier_ctx *ctx, const char *base, size_t len)
{
	unsigned int lo = 0, hi = ctx->msgs_count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const char *mb = ctx->msgs[mid].base;
		int ret = strncmp(mb, base, len);
		if (ret == 0 && mb[len] != '\0')
			ret = 1;
		if (ret == 0) {
			/* the first of equal bases is the winner */
			while (mid > 0 && strcmp(ctx->msgs[mid - 1].base, mb) == 0)
				mid--;
			return &ctx->msgs[mid];
		}
		if (ret < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Rename each file of cur/ that has keywords to carry their letters
   (other letters a-z are dropped: in a Courier Maildir they mean
   nothing). */
static int courier_rename_files(struct courier_ctx *ctx, unsigned int *renamed_r)
{
	char cur[PATH_MAX], old_path[PATH_MAX], new_path[PATH_MAX];
	char new_name[MAILDIR_FILENAME_MAX + 1];
	char other[MAILDIR_OTHER_FLAGS_MAX + MAILDIR_KEYWORDS_MAX + 1];
	struct dirent *d;

	*renamed_r = 0;
	if (snprintf(cur, sizeof(cur), "%s/cur", ctx->dir) >= (int)sizeof(cur))
		return -1;
	DIR *dir = opendir(cur);
	if (dir == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((d = readdir(dir)) != NULL) {
		struct maildir_filename fn;
		if (!maildir_filename_parse(d->d_name, &fn))
			continue;
		const struct courier_msg *msg =
			courier_find(ctx, d->d_name, fn.base_len);
		if (msg == NULL || msg->keywords == 0)
			continue;
		size_t n = 0;
		for (const char *p = fn.other_flags; *p != '\0'; p++) {
			if (*p < 'a' || *p > 'z')
				other[n++] = *p;
		}
		char letters[MAILDIR_KEYWORDS_MAX + 1];
		maildir_keywords_to_letters(msg->keywords, letters);
		memcpy(other + n, letters, strlen(letters) + 1);
		if (maildir_filename_make(new_name, sizeof(new_name), d->d_name,
					  fn.base_len, fn.flags, other) < 0 ||
		    strcmp(new_name, d->d_name) == 0 ||
		    snprintf(old_path, sizeof(old_path), "%s/%s", cur,
			     d->d_name) >= (int)sizeof(old_path) ||
		    snprintf(new_path, sizeof(new_path), "%s/%s", cur,
			     new_name) >= (int)sizeof(new_path))
			continue;
		if (rename(old_path, new_path) < 0) {
			if (errno != ENOENT)
				i_error("rename(%s, %s) failed: %m", old_path,
					new_path);
			continue;
		}
		(*renamed_r)++;
	}
	closedir(dir);
	return 0;
}

int maildir_import_courier_keywords(struct maildir_keywords *kw,
				    const char *dir, const char **error_r)
{
	struct courier_ctx ctx;
	unsigned int renamed;

	memset(&ctx, 0, sizeof(ctx));
	ctx.dir = dir;
	if (snprintf(ctx.kwdir, sizeof(ctx.kwdir), "%s/"
		     MAILDIR_COURIER_KEYWORDS_DIR, dir) >= (int)sizeof(ctx.kwdir)) {
		*error_r = "Path too long";
		return -1;
	}
	struct stat st;
	if (stat(ctx.kwdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	ctx.pool = pool_create("courier keywords", 16384);
	int ret = courier_read_list(&ctx);
	if (ret >= 0) {
		courier_read_updates(&ctx);
		if (ctx.msgs_count > 0)
			qsort(ctx.msgs, ctx.msgs_count, sizeof(*ctx.msgs), msg_cmp);
		ret = maildir_keywords_replace(kw, ctx.names, error_r);
	} else {
		*error_r = "courierimapkeywords/:list is corrupt";
	}
	if (ret == 0 && courier_rename_files(&ctx, &renamed) < 0) {
		*error_r = "Can't read cur/";
		ret = -1;
	}
	if (ret == 0) {
		i_info("%s: %u files renamed to carry Courier's keywords",
		       dir, renamed);
		ret = 1;
	}
	if (ctx.dropped_names)
		i_warning("%s: Courier has more than %u keywords, the rest "
			  "are dropped", dir, MAILDIR_KEYWORDS_MAX);
	i_free(ctx.msgs);
	pool_unref(&ctx.pool);
	return ret;
}
