/* import and export of Maildir++ trees (doc/moatadm.8 "MAILDIR")
   through a session of the user's imap process, one message in memory
   at a time: the folder of a mailbox is the root for INBOX and ".a.b"
   for "a/b" (mailbox-name.h, as moat and Dovecot write them); flags are
   the file name's ":2," letters, keywords the letters a-z that the
   folder's dovecot-keywords file names; the internal date is the file's
   mtime. */
#include "admin-common.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-maildir.h"
#include "admin-mbox.h"
#include "admin-output.h"
#include "admin-progress.h"
#include "mailbox-name.h"
#include "maildir-import.h"
#include "strfuncs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <utime.h>

/* Keyword letters of Maildir file names: a-z. */
#define ADMIN_MAILDIR_KEYWORDS_MAX 26
/* A flag or keyword in a FETCH's FLAGS: moat's keywords are at most
   MAIL_INDEX_KEYWORD_MAX_LEN (128) bytes; a longer word is dropped. */
#define ADMIN_MAILDIR_FLAG_MAX 255
/* UIDs fetched by one UID FETCH of an export (streamed one by one). */
#define ADMIN_MAILDIR_UID_RANGE 100

/* The standard letters, in the ASCII order a name lists them. */
static const struct {
	char letter;
	const char *flag;
} admin_maildir_flags[] = {
	{ 'D', "\\Draft" }, { 'F', "\\Flagged" },
	{ 'R', "\\Answered" }, { 'S', "\\Seen" }, { 'T', "\\Deleted" },
};

struct admin_maildir_keywords {
	char *names[ADMIN_MAILDIR_KEYWORDS_MAX];
	unsigned int count;
};

/* dir/dovecot-keywords: "N name" lines (N < 26); missing is no keywords. */
static void admin_maildir_keywords_read(pool_t pool, const char *dir,
					struct admin_maildir_keywords *kw)
{
	char line[512];
	unsigned int num;

	memset(kw, 0, sizeof(*kw));
	FILE *f = fopen(p_strdup_printf(pool, "%s/dovecot-keywords", dir), "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *sp = strchr(line, ' ');
		line[strcspn(line, "\r\n")] = '\0';
		if (sp == NULL)
			continue;
		*sp = '\0';
		if (str_to_uint(line, &num) < 0 || num >= ADMIN_MAILDIR_KEYWORDS_MAX)
			continue;
		kw->names[num] = p_strdup(pool, sp + 1);
		kw->count = MAX(kw->count, num + 1);
	}
	fclose(f);
}

/* A file name's flags as IMAP writes them. */
static void admin_maildir_name_flags(const char *fname,
				     const struct admin_maildir_keywords *kw,
				     char *buf, size_t size)
{
	const char *info = strstr(fname, ":2,");

	buf[0] = '\0';
	for (const char *p = info == NULL ? "" : info + 3; *p != '\0'; p++) {
		const char *flag = NULL;
		for (unsigned int i = 0; i < N_ELEMENTS(admin_maildir_flags); i++) {
			if (admin_maildir_flags[i].letter == *p)
				flag = admin_maildir_flags[i].flag;
		}
		if (*p >= 'a' && *p <= 'z')
			flag = kw->names[*p - 'a'];
		if (flag != NULL && strlen(buf) + strlen(flag) + 2 < size) {
			if (buf[0] != '\0')
				strcat(buf, " ");
			strcat(buf, flag);
		}
	}
}

/* ---- import ---- */

struct admin_maildir_import {
	struct admin_ctx *ctx;
	struct admin_imap *imap;
	buffer_t msg;
	struct admin_progress *progress;
	unsigned int count;
};

static int admin_maildir_read_file(int dirfd, const char *fname, buffer_t *msg,
				   time_t *mtime_r, const char **error_r)
{
	struct stat st;

	buffer_reset(msg);
	int fd = openat(dirfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		*error_r = strerror(errno);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > msg->max_size) {
		close(fd);
		*error_r = S_ISREG(st.st_mode) ? "message larger than the limit "
			"(imap_max_append_size)" : "not a file";
		return -1;
	}
	char *dest = buffer_reserve(msg, (size_t)st.st_size);
	size_t got = 0;
	ssize_t n = 1;
	while (got < (size_t)st.st_size && n > 0) {
		n = read(fd, dest + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n > 0)
			got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		*error_r = n < 0 ? strerror(errno) : "file changed while read";
		return -1;
	}
	buffer_commit(msg, got);
	*mtime_r = st.st_mtime;
	return 0;
}

/* Every file of folder/sub (new or cur) appended to name (quoted). */
static int admin_maildir_import_dir(struct admin_maildir_import *im,
				    const char *folder, const char *sub,
				    const char *name,
				    const struct admin_maildir_keywords *kw)
{
	struct admin_ctx *ctx = im->ctx;
	const char *path = p_strdup_printf(ctx->pool, "%s/%s", folder, sub);
	struct admin_mbox_meta meta;
	const char *error, *text, *code;
	struct dirent *d;
	int ret = 0;

	DIR *dir = opendir(path);
	if (dir == NULL)
		return errno == ENOENT ? 0 : admin_fail(ctx, ADMIN_EXIT_FAILED,
			"failed", "%s: %s", path, strerror(errno));
	while (ret == 0 && (d = readdir(dir)) != NULL) {
		time_t mtime;
		struct tm tm;
		if (d->d_name[0] == '.')
			continue;
		if (admin_maildir_read_file(dirfd(dir), d->d_name, &im->msg,
					    &mtime, &error) < 0) {
			ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
					 "%s/%s: %s", path, d->d_name, error);
			break;
		}
		admin_maildir_name_flags(d->d_name, kw, meta.flags,
					 sizeof(meta.flags));
		if (gmtime_r(&mtime, &tm) == NULL ||
		    strftime(meta.date, sizeof(meta.date),
			     "%d-%b-%Y %H:%M:%S +0000", &tm) == 0)
			meta.date[0] = '\0';
		int r = admin_import_append(ctx, im->imap, name, &im->msg, &meta,
					    &text);
		if (r != 0) {
			ret = admin_mail_exit(r, text, &code);
			ret = admin_fail(ctx, ret, code, "%s/%s: %s", path,
					 d->d_name, text);
			break;
		}
		im->count++;
		admin_progress_add(im->progress, 1);
	}
	closedir(dir);
	return ret;
}

static int admin_maildir_import_folder(struct admin_maildir_import *im,
				       const char *folder, const char *mailbox,
				       struct admin_output *out)
{
	struct admin_ctx *ctx = im->ctx;
	struct admin_maildir_keywords kw;
	const char *name, *text;
	char num[32];

	if (admin_mailbox_names(ctx, 1, (char **)&mailbox, &name) != 0)
		return ADMIN_EXIT_USAGE;
	if (strcasecmp(mailbox, "INBOX") != 0 &&
	    admin_imap_run(im->imap, p_strdup_printf(ctx->pool, "CREATE %s",
			   name), NULL, NULL, &text) < 0)
		return admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error", "create: %s",
				  text);
	admin_maildir_keywords_read(ctx->pool, folder, &kw);
	unsigned int before = im->count;
	int ret = admin_maildir_import_dir(im, folder, "cur", name, &kw);
	if (ret == 0)
		ret = admin_maildir_import_dir(im, folder, "new", name, &kw);
	snprintf(num, sizeof(num), "%u", im->count - before);
	admin_output_rowv(out, "mailbox", mailbox, "format", "maildir",
			  "messages", num, NULL);
	return ret;
}

/* prefix/name: where a subfolder goes when -m gave a parent. */
static const char *admin_maildir_target(pool_t pool, const char *prefix,
					const char *name)
{
	return prefix == NULL ? name : p_strdup_printf(pool, "%s/%s", prefix, name);
}

int admin_maildir_import(struct admin_ctx *ctx, struct admin_imap *imap,
			 const char *root, const char *mailbox,
			 struct admin_output *out)
{
	struct admin_maildir_import im = { .ctx = ctx, .imap = imap };
	char name[MAILBOX_NAME_MAX + 1];
	struct dirent *d;

	buffer_init(&im.msg, (size_t)MIN(ctx->set->imap_max_append_size,
					 SIZE_MAX / 4));
	im.progress = admin_progress_begin(ctx, "messages", 0);
	int ret = admin_maildir_import_folder(&im, root, mailbox != NULL ?
					      mailbox : "INBOX", out);
	DIR *dir = ret != 0 ? NULL : opendir(root);
	while (dir != NULL && ret == 0 && (d = readdir(dir)) != NULL) {
		/* Maildir++ folders: ".a.b" (not ".", "..", dot files) */
		if (d->d_name[0] != '.' || d->d_name[1] == '\0' ||
		    strcmp(d->d_name, "..") == 0 ||
		    mailbox_name_from_dir(d->d_name, name) < 0)
			continue;
		const char *folder = p_strdup_printf(ctx->pool, "%s/%s", root,
						     d->d_name);
		struct stat st;
		if (stat(p_strdup_printf(ctx->pool, "%s/cur", folder), &st) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		ret = admin_maildir_import_folder(&im, folder,
			admin_maildir_target(ctx->pool, mailbox, name), out);
	}
	if (dir != NULL)
		closedir(dir);
	admin_progress_end(&im.progress);
	buffer_free(&im.msg);
	return ret;
}

/* ---- export ---- */

struct admin_maildir_export {
	struct admin_ctx *ctx;
	const char *folder;
	int tmp_fd, cur_fd;
	/* backups: the folder's UIDs as a dovecot-uidlist, which moat reads
	   when it first opens the folder (index/maildir-import.h) */
	FILE *uidlist;
	uint32_t uidvalidity;
	struct admin_maildir_keywords kw;
	bool kw_dropped, failed;
	unsigned int count, seq;
	uint32_t uidnext, exists;
	struct admin_progress *progress;
};

/* IMAP flags to the ":2," letters, keywords through ex->kw. */
static void admin_maildir_letters(struct admin_maildir_export *ex,
				  const char *flags, char *buf, size_t size)
{
	bool set[128] = { false };
	size_t n = 0;

	for (const char *p = flags; *p != '\0';) {
		while (*p == ' ')
			p++;
		size_t len = strcspn(p, " ");
		if (len == 0)
			break;
		/* on the stack: the run's pool keeps only new keywords */
		char flag[ADMIN_MAILDIR_FLAG_MAX + 1];
		if (len > ADMIN_MAILDIR_FLAG_MAX) {
			p += len;
			ex->kw_dropped = true;
			continue;
		}
		memcpy(flag, p, len);
		flag[len] = '\0';
		p += len;
		bool known = false;
		for (unsigned int i = 0; i < N_ELEMENTS(admin_maildir_flags); i++) {
			if (strcasecmp(flag, admin_maildir_flags[i].flag) == 0) {
				set[(int)admin_maildir_flags[i].letter] = true;
				known = true;
			}
		}
		if (known || flag[0] == '\\')
			continue;   /* \Recent is no letter */
		unsigned int k;
		for (k = 0; k < ex->kw.count; k++) {
			if (strcmp(ex->kw.names[k], flag) == 0)
				break;
		}
		if (k == ex->kw.count && k < ADMIN_MAILDIR_KEYWORDS_MAX)
			ex->kw.names[ex->kw.count++] = p_strdup(ex->ctx->pool, flag);
		if (k < ADMIN_MAILDIR_KEYWORDS_MAX)
			set['a' + k] = true;
		else
			ex->kw_dropped = true;
	}
	for (int c = 'A'; c <= 'z' && n + 1 < size; c++) {
		if (set[c])
			buf[n++] = (char)c;
	}
	buf[n] = '\0';
}

static void admin_maildir_write_msg(struct admin_maildir_export *ex,
				    uint32_t uid, time_t t, const char *flags,
				    const void *data, size_t size)
{
	char letters[64], tmp_name[128], cur_name[128 + 64 + 4];

	admin_maildir_letters(ex, flags, letters, sizeof(letters));
	snprintf(tmp_name, sizeof(tmp_name), "%lld.M%uP%d.moatadm,S=%zu",
		 (long long)t, ++ex->seq, (int)getpid(), size);
	snprintf(cur_name, sizeof(cur_name), "%s:2,%s", tmp_name, letters);
	int fd = openat(ex->tmp_fd, tmp_name, O_WRONLY | O_CREAT | O_EXCL |
			O_CLOEXEC, 0600);
	if (fd < 0) {
		ex->failed = true;
		return;
	}
	struct timespec times[2] = { { .tv_sec = t }, { .tv_sec = t } };
	bool ok = (size == 0 || write(fd, data, size) == (ssize_t)size) &&
		fsync(fd) == 0 && futimens(fd, times) == 0;
	close(fd);
	if (!ok || renameat(ex->tmp_fd, tmp_name, ex->cur_fd, cur_name) < 0) {
		(void)unlinkat(ex->tmp_fd, tmp_name, 0);
		ex->failed = true;
		return;
	}
	if (ex->uidlist != NULL &&
	    (uid == 0 || fprintf(ex->uidlist, "%u :%s\n", uid, tmp_name) < 0))
		ex->failed = true;
}

/* EXAMINE's EXISTS and UIDNEXT; FETCH's messages to files. */
static void admin_maildir_untagged(void *context, const char *resp, size_t len)
{
	struct admin_maildir_export *ex = context;
	pool_t pool = pool_create("admin maildir response", 4096);
	struct admin_export_resp r;

	admin_export_resp_parse(pool, resp, len, &r);
	if (r.has_uidnext)
		ex->uidnext = r.uidnext;
	if (r.has_uidvalidity)
		ex->uidvalidity = r.uidvalidity;
	if (r.has_exists)
		ex->exists = r.exists;
	if (r.message) {
		admin_maildir_write_msg(ex, r.uid, r.internaldate, r.flags,
					r.body, r.body_size);
		ex->count++;
		admin_progress_add(ex->progress, 1);
	}
	pool_unref(&pool);
}

static int admin_maildir_mkdirs(struct admin_ctx *ctx, const char *folder)
{
	static const char *const subs[] = { "", "/cur", "/new", "/tmp" };

	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		const char *path = p_strdup_printf(ctx->pool, "%s%s", folder, subs[i]);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
					  "mkdir %s: %s", path, strerror(errno));
	}
	return 0;
}

/* The folder's keywords file, written after its messages. */
static int admin_maildir_keywords_write(struct admin_maildir_export *ex)
{
	const char *path = p_strdup_printf(ex->ctx->pool, "%s/dovecot-keywords",
					   ex->folder);
	if (ex->kw.count == 0)
		return 0;
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	for (unsigned int i = 0; i < ex->kw.count; i++)
		fprintf(f, "%u %s\n", i, ex->kw.names[i]);
	bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The dovecot-uidlist header, once EXAMINE gave UIDVALIDITY and
   UIDNEXT; the records follow as the messages are written. */
static int admin_maildir_uidlist_begin(struct admin_maildir_export *ex)
{
	const char *path = p_strdup_printf(ex->ctx->pool, "%s/%s", ex->folder,
					   MAILDIR_DOVECOT_UIDLIST_NAME);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		      O_CLOEXEC, 0600);
	if (fd < 0 || ex->uidvalidity == 0 || ex->uidnext == 0 ||
	    (ex->uidlist = fdopen(fd, "w")) == NULL) {
		if (fd >= 0)
			close(fd);
		return admin_fail(ex->ctx, ADMIN_EXIT_FAILED, "failed",
				  "%s: %s", path, fd < 0 ? strerror(errno) :
				  "EXAMINE gave no UIDVALIDITY or UIDNEXT");
	}
	fprintf(ex->uidlist, "3 V%u N%u\n", ex->uidvalidity, ex->uidnext);
	return 0;
}

static int admin_maildir_uidlist_end(struct admin_maildir_export *ex)
{
	if (ex->uidlist == NULL)
		return 0;
	bool ok = fflush(ex->uidlist) == 0 && fsync(fileno(ex->uidlist)) == 0;
	return fclose(ex->uidlist) == 0 && ok ? 0 : -1;
}

int admin_maildir_export(struct admin_ctx *ctx, struct admin_imap *imap,
			 const char *root, const char *mailbox,
			 struct admin_output *out)
{
	return admin_maildir_export_uids(ctx, imap, root, mailbox, false, out);
}

int admin_maildir_export_uids(struct admin_ctx *ctx, struct admin_imap *imap,
			      const char *root, const char *mailbox,
			      bool uidlist, struct admin_output *out)
{
	struct admin_maildir_export ex = { .ctx = ctx, .tmp_fd = -1, .cur_fd = -1 };
	char dir[MAILBOX_NAME_DISK_MAX + 1], num[32];
	const char *name;

	if (admin_mailbox_names(ctx, 1, (char **)&mailbox, &name) != 0)
		return ADMIN_EXIT_USAGE;
	if (mailbox_name_to_dir(mailbox, dir) < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				  "mailbox %s: no Maildir++ folder name for it",
				  str_sanitize(ctx->pool, mailbox, 64));
	ex.folder = p_strdup_printf(ctx->pool, "%s%s%s", root,
				    dir[0] == '\0' ? "" : "/", dir);
	int ret = admin_maildir_mkdirs(ctx, root);
	if (ret == 0)
		ret = admin_maildir_mkdirs(ctx, ex.folder);
	if (ret != 0)
		return ret;
	ex.tmp_fd = open(p_strdup_printf(ctx->pool, "%s/tmp", ex.folder),
			 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ex.cur_fd = open(p_strdup_printf(ctx->pool, "%s/cur", ex.folder),
			 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ex.tmp_fd < 0 || ex.cur_fd < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				 ex.folder, strerror(errno));
	if (ret == 0)
		ret = admin_mail_run(ctx, imap, mailbox, p_strdup_printf(ctx->pool,
			"EXAMINE %s", name), admin_maildir_untagged, &ex);
	if (ret == 0 && uidlist)
		ret = admin_maildir_uidlist_begin(&ex);
	if (ret == 0)
		ex.progress = admin_progress_begin(ctx, "messages", ex.exists);
	for (uint32_t lo = 1; ret == 0 && lo < ex.uidnext;
	     lo += ADMIN_MAILDIR_UID_RANGE) {
		uint32_t hi = MIN(lo + ADMIN_MAILDIR_UID_RANGE - 1, ex.uidnext - 1);
		ret = admin_mail_run(ctx, imap, "fetch", p_strdup_printf(ctx->pool,
			"UID FETCH %u:%u (UID FLAGS INTERNALDATE BODY.PEEK[])",
			lo, hi), admin_maildir_untagged, &ex);
		if (ret == 0 && ex.failed)
			ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
					 "%s: writing a message failed: %s",
					 ex.folder, strerror(errno));
	}
	admin_progress_end(&ex.progress);
	if (admin_maildir_uidlist_end(&ex) < 0 && ret == 0)
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail", "%s: %s",
				 ex.folder, strerror(errno));
	if (ret == 0 && (fsync(ex.cur_fd) < 0 ||
			 admin_maildir_keywords_write(&ex) < 0))
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail", "%s: %s",
				 ex.folder, strerror(errno));
	if (ex.kw_dropped)
		i_warning("%s: more than %u keywords: the others were dropped",
			  ex.folder, ADMIN_MAILDIR_KEYWORDS_MAX);
	if (ex.tmp_fd >= 0)
		close(ex.tmp_fd);
	if (ex.cur_fd >= 0)
		close(ex.cur_fd);
	if (ret == 0) {
		snprintf(num, sizeof(num), "%u", ex.count);
		admin_output_rowv(out, "mailbox", mailbox, "file", ex.folder,
				  "messages", num, NULL);
	}
	return ret;
}
