/* import and export of mbox files (admin-mbox.h), and the commands'
   Maildir side (admin-maildir.h), through a session of
   the user's imap process: an import is one APPEND per message, so the
   user's sessions see the mail at once and each message is on disk when
   its OK comes; an export reads with UID FETCH in ranges, one message in
   memory at a time. */
#include "admin-common.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-maildir.h"
#include "admin-mbox.h"
#include "admin-output.h"
#include "admin-progress.h"
#include "strfuncs.h"

#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

/* UIDs fetched by one UID FETCH of an export: the answer is streamed
   message by message, this only bounds one command's run. */
#define ADMIN_EXPORT_UID_RANGE 100

struct admin_mbox_opts {
	const char *user, *mailbox, *path;
	enum admin_mbox_format format;
	bool maildir;             /* export --format maildir */
};

/* -u USER [-m MAILBOX] [--format F] PATH. Returns 0 or the usage exit. */
static int admin_mbox_parse(struct admin_ctx *ctx, int argc, char **argv,
			    bool export, struct admin_mbox_opts *opts_r)
{
	static const struct option long_opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	const char *usage = export ?
		"export -u USER [-m MAILBOX] [--format mboxrd|mboxcl2|maildir] DEST" :
		"import -u USER [-m MAILBOX] MBOX|MAILDIR";
	int c;

	memset(opts_r, 0, sizeof(*opts_r));
	opts_r->format = ADMIN_MBOX_RD;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+u:m:", long_opts, NULL)) != -1) {
		if (c == 'u')
			opts_r->user = optarg;
		else if (c == 'm')
			opts_r->mailbox = optarg;
		else if (c == 'f' && export && strcmp(optarg, "mboxrd") == 0)
			opts_r->format = ADMIN_MBOX_RD;
		else if (c == 'f' && export && strcmp(optarg, "mboxcl2") == 0)
			opts_r->format = ADMIN_MBOX_CL2;
		else if (c == 'f' && export && strcmp(optarg, "maildir") == 0)
			opts_r->maildir = true;
		else
			return admin_usage(ctx, usage);
	}
	if (opts_r->user == NULL || argc - optind != 1)
		return admin_usage(ctx, usage);
	opts_r->path = argv[optind];
	return 0;
}

/* ---- import ---- */

int admin_import_append(struct admin_ctx *ctx, struct admin_imap *imap,
			const char *name, const buffer_t *msg,
			const struct admin_mbox_meta *meta, const char **text_r)
{
	pool_t pool = pool_create("admin import", 1024);
	const char *cmd = p_strdup_printf(pool, "APPEND %s (%s)%s%s%s {%zu+}\r\n",
		name, meta->flags, meta->date[0] != '\0' ? " \"" : "",
		meta->date, meta->date[0] != '\0' ? "\"" : "", msg->used);
	int ret = admin_imap_run_data(imap, cmd, msg->data, msg->used, NULL,
				      NULL, text_r);
	*text_r = p_strdup(ctx->pool, *text_r);
	pool_unref(&pool);
	return ret;
}

static int admin_import_file(struct admin_ctx *ctx, struct admin_imap *imap,
			     const struct admin_mbox_opts *opts, int fd,
			     const char *name, unsigned int *count_r,
			     enum admin_mbox_format *format_r)
{
	size_t max = (size_t)MIN(ctx->set->imap_max_append_size, SIZE_MAX / 4);
	struct admin_mbox_reader *reader = admin_mbox_reader_init(fd, max);
	struct admin_mbox_meta meta;
	struct stat st;
	buffer_t msg;
	const char *error, *text, *code;
	int ret, exit_code = 0;
	uint64_t done = 0;

	buffer_init(&msg, max);
	struct admin_progress *progress = admin_progress_begin(ctx, "bytes",
		fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
	while ((ret = admin_mbox_read(reader, &msg, &meta, &error)) > 0) {
		ret = admin_import_append(ctx, imap, name, &msg, &meta, &text);
		if (ret != 0) {
			exit_code = admin_mail_exit(ret, text, &code);
			exit_code = admin_fail(ctx, exit_code, code,
				"%s: message %u (before byte %llu): %s",
				opts->path, *count_r + 1, (unsigned long long)
				admin_mbox_reader_offset(reader), text);
			break;
		}
		(*count_r)++;
		uint64_t offset = admin_mbox_reader_offset(reader);
		admin_progress_add(progress, offset - done);
		done = offset;
	}
	if (ret < 0)
		exit_code = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				       opts->path, error);
	admin_progress_end(&progress);
	*format_r = admin_mbox_reader_format(reader);
	buffer_free(&msg);
	admin_mbox_reader_deinit(&reader);
	return exit_code;
}

static int admin_import_maildir(struct admin_ctx *ctx,
				const struct admin_mbox_opts *opts)
{
	static const char *const numeric[] = { "messages", NULL };
	struct admin_imap *imap;

	int ret = admin_mail_open(ctx, opts->user, &imap);
	if (ret != 0)
		return ret;
	struct admin_output *out =
		admin_output_begin(ctx, ADMIN_OUTPUT_TABLE, numeric);
	ctx->errors_to_stderr = true;   /* the rows say how far it got */
	ret = admin_maildir_import(ctx, imap, opts->path, opts->mailbox, out);
	admin_imap_close(&imap);
	return admin_output_end(&out, ret, "failed",
				"the import stopped (see above)");
}

int admin_cmd_import(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = { "messages", NULL };
	struct admin_mbox_opts opts;
	struct admin_imap *imap;
	const char *name, *text;
	enum admin_mbox_format format = ADMIN_MBOX_UNKNOWN;
	unsigned int count = 0;

	int ret = admin_mbox_parse(ctx, argc, argv, false, &opts);
	if (ret != 0)
		return ret;
	struct stat st;
	if (stat(opts.path, &st) == 0 && S_ISDIR(st.st_mode))
		return admin_import_maildir(ctx, &opts);
	const char *mailbox = opts.mailbox != NULL ? opts.mailbox : "INBOX";
	if (admin_mailbox_names(ctx, 1, (char **)&mailbox, &name) != 0)
		return ADMIN_EXIT_USAGE;
	int fd = strcmp(opts.path, "-") == 0 ? dup(STDIN_FILENO) :
		open(opts.path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return admin_fail(ctx, ADMIN_EXIT_NOTFOUND, "notfound",
				  "%s: %s", opts.path, strerror(errno));
	if ((ret = admin_mail_open(ctx, opts.user, &imap)) != 0) {
		close(fd);
		return ret;
	}
	/* a mailbox that exists already is where the mail goes */
	if (strcasecmp(mailbox, "INBOX") != 0 &&
	    admin_imap_run(imap, p_strdup_printf(ctx->pool, "CREATE %s", name),
			   NULL, NULL, &text) < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error", "create: %s",
				 text);
	/* from here on failures go to stderr: the row says how far it got */
	ctx->errors_to_stderr = true;
	if (ret == 0)
		ret = admin_import_file(ctx, imap, &opts, fd, name, &count,
					&format);
	admin_imap_close(&imap);
	close(fd);
	char num[32];
	snprintf(num, sizeof(num), "%u", count);
	struct admin_output *out =
		admin_output_begin(ctx, ADMIN_OUTPUT_OBJECT, numeric);
	admin_output_rowv(out, "mailbox", mailbox, "format",
			  format == ADMIN_MBOX_CL2 ? "mboxcl2" : "mboxrd",
			  "messages", num, NULL);
	return admin_output_end(&out, ret, "failed",
				"the import stopped (see above)");
}

/* ---- export ---- */

struct admin_export_ctx {
	FILE *f;
	enum admin_mbox_format format;
	uint32_t uidnext, exists;
	unsigned int count;
	bool write_failed;
	struct admin_progress *progress;
};

/* EXAMINE's EXISTS and UIDNEXT; FETCH's messages to the file. */
static void admin_export_untagged(void *context, const char *resp, size_t len)
{
	struct admin_export_ctx *ectx = context;
	pool_t pool = pool_create("admin export response", 4096);
	struct admin_export_resp r;

	admin_export_resp_parse(pool, resp, len, &r);
	if (r.has_uidnext)
		ectx->uidnext = r.uidnext;
	if (r.has_exists)
		ectx->exists = r.exists;
	if (r.message) {
		if (admin_mbox_write(ectx->f, ectx->format, r.internaldate,
				     r.flags, r.body, r.body_size) < 0)
			ectx->write_failed = true;
		ectx->count++;
		admin_progress_add(ectx->progress, 1);
	}
	pool_unref(&pool);
}

static int admin_export_fetch(struct admin_ctx *ctx, struct admin_imap *imap,
			      const char *mailbox, struct admin_export_ctx *ectx)
{
	const char *name;

	if (admin_mailbox_names(ctx, 1, (char **)&mailbox, &name) != 0)
		return ADMIN_EXIT_USAGE;
	int ret = admin_mail_run(ctx, imap, mailbox,
		p_strdup_printf(ctx->pool, "EXAMINE %s", name),
		admin_export_untagged, ectx);
	ectx->progress = ret != 0 ? NULL :
		admin_progress_begin(ctx, "messages", ectx->exists);
	/* what arrives meanwhile (UIDs >= uidnext) is not part of it */
	for (uint32_t lo = 1; ret == 0 && lo < ectx->uidnext;
	     lo += ADMIN_EXPORT_UID_RANGE) {
		uint32_t hi = MIN(lo + ADMIN_EXPORT_UID_RANGE - 1, ectx->uidnext - 1);
		pool_t pool = pool_create("admin export range", 256);
		ret = admin_mail_run(ctx, imap, "fetch", p_strdup_printf(pool,
			"UID FETCH %u:%u (UID FLAGS INTERNALDATE BODY.PEEK[])",
			lo, hi), admin_export_untagged, ectx);
		pool_unref(&pool);
		if (ret == 0 && ectx->write_failed)
			ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
					 "write failed: %s", strerror(errno));
	}
	admin_progress_end(&ectx->progress);
	return ret;
}

/* One mailbox into a new file at path, made durable (fsync) before the
   row says so. */
static int admin_export_mailbox(struct admin_ctx *ctx, struct admin_imap *imap,
				const char *mailbox, const char *path,
				enum admin_mbox_format format,
				struct admin_output *out)
{
	struct admin_export_ctx ectx = { .format = format };
	char num[32];

	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				  path, strerror(errno));
	ectx.f = fdopen(fd, "w");
	if (ectx.f == NULL)
		i_fatal("fdopen() failed: %m");
	int ret = admin_export_fetch(ctx, imap, mailbox, &ectx);
	if (ret == 0 && (fflush(ectx.f) != 0 || fsync(fd) < 0))
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				 "%s: %s", path, strerror(errno));
	if (fclose(ectx.f) != 0 && ret == 0)
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				 "%s: %s", path, strerror(errno));
	if (ret != 0) {
		(void)unlink(path);
		return ret;
	}
	snprintf(num, sizeof(num), "%u", ectx.count);
	admin_output_rowv(out, "mailbox", mailbox, "file", path,
			  "messages", num, NULL);
	return 0;
}

/* LIST (attrs) "delim" name: the selectable ones. */
static void admin_names_untagged(void *context, const char *resp, size_t len)
{
	struct admin_names *n = context;
	struct admin_imap_value attrs, delim, name;
	const char *pos = resp + 5, *end = resp + len;

	if (len <= 5 || strncasecmp(resp, "LIST ", 5) != 0)
		return;
	admin_imap_value_next(n->pool, &pos, end, &attrs);
	admin_imap_value_next(n->pool, &pos, end, &delim);
	admin_imap_value_next(n->pool, &pos, end, &name);
	if (attrs.type != ADMIN_IMAP_VALUE_LIST ||
	    (name.type != ADMIN_IMAP_VALUE_STRING &&
	     name.type != ADMIN_IMAP_VALUE_ATOM) ||
	    strcasestr(p_strndup(n->pool, attrs.data, attrs.size),
		       "\\Noselect") != NULL ||
	    strcasestr(p_strndup(n->pool, attrs.data, attrs.size),
		       "\\NonExistent") != NULL)
		return;
	if (n->count == N_ELEMENTS(n->names)) {
		n->too_many = true;
		return;
	}
	n->names[n->count++] = admin_imap_mailbox_utf8(n->pool, name.data);
}

int admin_mailbox_list(struct admin_ctx *ctx, struct admin_imap *imap,
		       struct admin_names *names)
{
	int ret = admin_mail_run(ctx, imap, "list", "LIST \"\" \"*\"",
				 admin_names_untagged, names);
	if (ret == 0 && names->too_many)
		ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				 "more than %u mailboxes",
				 ADMIN_EXPORT_MAILBOXES_MAX);
	return ret;
}

/* DEST/<name>.mbox, the hierarchy as directories ("a/b" in DEST/a/). */
static int admin_export_path(struct admin_ctx *ctx, const char *dest,
			     const char *name, const char **path_r)
{
	if (name[0] == '.' || strstr(name, "/.") != NULL)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				  "mailbox %s: no safe file name for it",
				  str_sanitize(ctx->pool, name, 64));
	char *path = p_strdup_printf(ctx->pool, "%s/%s.mbox", dest, name);
	for (char *p = path + strlen(dest) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
					  "mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	*path_r = path;
	return 0;
}

int admin_cmd_export(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = { "messages", NULL };
	struct admin_mbox_opts opts;
	struct admin_imap *imap;
	const char *path = NULL;

	int ret = admin_mbox_parse(ctx, argc, argv, true, &opts);
	if (ret != 0)
		return ret;
	if ((opts.mailbox == NULL || opts.maildir) &&
	    mkdir(opts.path, 0700) < 0 && errno != EEXIST)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "mkdir %s: %s",
				  opts.path, strerror(errno));
	if ((ret = admin_mail_open(ctx, opts.user, &imap)) != 0)
		return ret;
	struct admin_output *out =
		admin_output_begin(ctx, ADMIN_OUTPUT_TABLE, numeric);
	ctx->errors_to_stderr = true;   /* the rows say what was written */
	if (opts.mailbox != NULL && opts.maildir) {
		ret = admin_maildir_export(ctx, imap, opts.path, opts.mailbox, out);
	} else if (opts.mailbox != NULL) {
		ret = admin_export_mailbox(ctx, imap, opts.mailbox, opts.path,
					   opts.format, out);
	} else {
		struct admin_names *names = p_malloc(ctx->pool, sizeof(*names));
		names->pool = ctx->pool;
		ret = admin_mailbox_list(ctx, imap, names);
		for (unsigned int i = 0; ret == 0 && i < names->count; i++) {
			if (opts.maildir) {
				ret = admin_maildir_export(ctx, imap, opts.path,
							   names->names[i], out);
				continue;
			}
			ret = admin_export_path(ctx, opts.path, names->names[i],
						&path);
			if (ret == 0)
				ret = admin_export_mailbox(ctx, imap,
					names->names[i], path, opts.format, out);
		}
	}
	admin_imap_close(&imap);
	return admin_output_end(&out, ret, "failed",
				"the export stopped (see above)");
}
