/* moatadm backup and restore of one user (admin-backup.h; doc/moatadm.8).

   backup reads the user's mail through a session of the user's own imap
   process, folder by folder (each as of its EXAMINE), so the process
   stays the one writer and sessions and deliveries go on meanwhile.

   restore checks the whole backup against its manifest first, then
   writes the tree as the target user (a child that gave up root: a
   user's home is no place for root to create files in), into a staging
   directory beside the user's mail root, syncs it and renames it into
   place. The target must have no mail root yet and no imap process: moat
   then opens the folders as it opens a Dovecot Maildir, keeping every
   UIDVALIDITY, UID and keyword, so clients download nothing again. */
#include "admin-backup.h"
#include "admin-conn.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-maildir.h"
#include "admin-output.h"
#include "admin-progress.h"
#include "mailbox.h"
#include "strfuncs.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <openssl/evp.h>

#define ADMIN_BACKUP_COPY_BUF (64 * 1024)
/* Subscribed names one backup keeps. */
#define ADMIN_BACKUP_SUBSCRIPTIONS_MAX 100000

/* ---- backup ---- */

struct admin_backup_args {
	const char *dest;
	bool all;
};

struct admin_backup_subs {
	FILE *f;
	unsigned int count;
	bool too_many;
};

/* LSUB (attrs) "delim" name: one UTF-8 name per line, as moat's own
   subscriptions file (index/mailbox-subscriptions.c) holds them. */
static void admin_backup_lsub_untagged(void *context, const char *resp,
				       size_t len)
{
	struct admin_backup_subs *s = context;
	struct admin_imap_value attrs, delim, name;
	const char *pos = resp + 5, *end = resp + len;

	if (len <= 5 || strncasecmp(resp, "LSUB ", 5) != 0)
		return;
	/* per response: memory does not grow with the subscriptions */
	pool_t pool = pool_create("admin lsub", 1024);
	admin_imap_value_next(pool, &pos, end, &attrs);
	admin_imap_value_next(pool, &pos, end, &delim);
	admin_imap_value_next(pool, &pos, end, &name);
	const char *utf8 = name.type != ADMIN_IMAP_VALUE_STRING &&
		name.type != ADMIN_IMAP_VALUE_ATOM ? NULL :
		admin_imap_mailbox_utf8(pool, name.data);
	if (utf8 != NULL && strchr(utf8, '\n') == NULL) {
		if (s->count++ >= ADMIN_BACKUP_SUBSCRIPTIONS_MAX)
			s->too_many = true;
		else
			fprintf(s->f, "%s\n", utf8);
	}
	pool_unref(&pool);
}

static int admin_backup_subscriptions(struct admin_ctx *ctx,
				      struct admin_imap *imap, const char *dir)
{
	const char *path = p_strdup_printf(ctx->pool, "%s/subscriptions", dir);
	struct admin_backup_subs s = { .f = NULL };
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		      O_CLOEXEC, 0600);

	if (fd < 0 || (s.f = fdopen(fd, "w")) == NULL) {
		if (fd >= 0)
			close(fd);
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				  path, strerror(errno));
	}
	int ret = admin_mail_run(ctx, imap, "subscriptions",
				 "LSUB \"\" \"*\"", admin_backup_lsub_untagged, &s);
	bool ok = fflush(s.f) == 0 && fsync(fileno(s.f)) == 0;
	if (fclose(s.f) != 0)
		ok = false;
	if (ret == 0 && s.too_many)
		ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				 "more than %u subscriptions",
				 ADMIN_BACKUP_SUBSCRIPTIONS_MAX);
	if (ret == 0 && !ok)
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail", "%s: %s",
				 path, strerror(errno));
	return ret;
}

/* One row per mailbox, as export --format maildir writes them. */
static int admin_backup_user(struct admin_ctx *ctx, const char *user,
			     struct admin_output *out, void *context)
{
	struct admin_backup_args *args = context;
	struct admin_imap *imap;
	const char *error;
	unsigned int files;

	const char *dir = !args->all ? args->dest :
		p_strdup_printf(ctx->pool, "%s/%s", args->dest, user);
	if (args->all && !admin_backup_path_is_valid(user))
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				  "%s: no directory name for this user",
				  str_sanitize(ctx->pool, user, 64));
	if (mkdir(dir, 0700) < 0)
		return admin_fail(ctx, errno == EEXIST ? ADMIN_EXIT_CANTCREAT :
				  ADMIN_EXIT_FAILED, "failed", "mkdir %s: %s%s",
				  dir, strerror(errno), errno == EEXIST ?
				  " (a backup goes into a new directory)" : "");
	int ret = admin_mail_open(ctx, user, &imap);
	if (ret != 0)
		return ret;
	struct admin_names *names = p_malloc(ctx->pool, sizeof(*names));
	names->pool = ctx->pool;
	ret = admin_mailbox_list(ctx, imap, names);
	for (unsigned int i = 0; ret == 0 && i < names->count; i++)
		ret = admin_maildir_export_uids(ctx, imap, dir, names->names[i],
						true, out);
	if (ret == 0)
		ret = admin_backup_subscriptions(ctx, imap, dir);
	admin_imap_close(&imap);
	if (ret == 0 && admin_backup_manifest_write(dir, user, ctx->pool, &files,
						    &error) < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				 "%s", error);
	if (ret != 0)
		i_warning("%s: the backup is incomplete (it has no manifest, "
			  "restore refuses it); remove the directory", dir);
	return ret;
}

int admin_cmd_backup(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = { "messages", NULL };
	struct admin_backup_args args;
	const char *user;

	int first = admin_mail_user_opt_all(argc, argv, &user, &args.all);
	if (first < 0 || first != argc - 1)
		return admin_usage(ctx, "backup -u USER | -A DEST");
	args.dest = argv[first];
	if (args.all && mkdir(args.dest, 0700) < 0 && errno != EEXIST)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "mkdir %s: %s",
				  args.dest, strerror(errno));
	struct admin_output *out = admin_output_begin(ctx, ADMIN_OUTPUT_TABLE,
						      numeric);
	ctx->errors_to_stderr = true;   /* the rows say what was written */
	int ret = args.all ? admin_for_users(ctx, out, admin_backup_user, &args) :
		admin_backup_user(ctx, user, out, &args);
	return admin_output_end(&out, ret, "failed",
				args.all ? "some users failed (see above)" :
				"the backup stopped (see above)");
}

/* ---- restore: checking the backup ---- */

struct admin_restore {
	struct admin_ctx *ctx;
	const char *src, *user;
	/* the target user's, from master's USER answer */
	const char *uid, *gid, *home, *mail, *imap_pid;
	const char *root, *staging;
	/* the mail root is an empty skeleton (cur, new and tmp, all empty,
	   as /etc/skel or an account script makes them): removed just
	   before the restored tree takes its place */
	bool skeleton;
	unsigned int files, messages, folders;
};

static const char *const maildir_subdirs[] = { "cur", "new", "tmp" };

static bool record_is_message(const char *path)
{
	const char *p = strrchr(path, '/');
	size_t dir_len = p == NULL ? 0 : (size_t)(p - path);

	/* <folder>/cur/<file> or cur/<file> (and new/) */
	if (p == NULL || dir_len < 3)
		return false;
	const char *sub = p - 3;
	return (sub == path || sub[-1] == '/') &&
		(strncmp(sub, "cur", 3) == 0 || strncmp(sub, "new", 3) == 0);
}

/* Every record's file is there, a regular file, with its size and hash. */
static int admin_restore_verify(struct admin_restore *r)
{
	struct admin_ctx *ctx = r->ctx;
	struct admin_backup_manifest m;
	struct admin_backup_record rec;
	const char *error;
	int ret;

	if (admin_backup_manifest_open(r->src, ctx->pool, &m, &error) < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s", error);
	while ((ret = admin_backup_manifest_next(&m, &rec, ctx->pool, &error)) > 0) {
		char path[PATH_MAX];
		struct stat st;
		if (snprintf(path, sizeof(path), "%s/%s", r->src, rec.path) >=
		    (int)sizeof(path)) {
			error = "a path is too long";
			ret = -1;
			break;
		}
		if (rec.dir) {
			if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
				error = p_strdup_printf(ctx->pool, "%s: missing "
							"or not a directory", path);
				ret = -1;
				break;
			}
			if (strchr(rec.path, '/') == NULL && rec.path[0] == '.')
				r->folders++;
			continue;
		}
		char hex[ADMIN_BACKUP_SHA256_HEX + 1];
		uint64_t size;
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    admin_backup_hash_fd(fd, hex, &size) < 0) {
			error = p_strdup_printf(ctx->pool, "%s: %s", path,
				fd < 0 || errno != 0 ? strerror(errno) :
				"not a regular file");
			if (fd >= 0)
				close(fd);
			ret = -1;
			break;
		}
		close(fd);
		if (size != rec.size || strcmp(hex, rec.sha256) != 0) {
			error = p_strdup_printf(ctx->pool, "%s: its %s does not "
				"match the manifest", path, size != rec.size ?
				"size" : "SHA-256");
			ret = -1;
			break;
		}
		r->files++;
		if (record_is_message(rec.path))
			r->messages++;
	}
	admin_backup_manifest_close(&m);
	if (ret < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
				  "the backup %s is damaged: %s", r->src, error);
	return 0;
}

/* ---- restore: the target user ---- */

/* Only cur/, new/ and tmp/ in root, each empty. */
static bool mail_root_is_skeleton(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *de;
	bool empty = d != NULL;

	while (empty && (de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		bool sub = false;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		for (unsigned int i = 0; i < N_ELEMENTS(maildir_subdirs); i++)
			sub = sub || strcmp(name, maildir_subdirs[i]) == 0;
		char *path = i_strdup_printf("%s/%s", root, name);
		DIR *sd = sub ? opendir(path) : NULL;
		i_free(path);
		if (sd == NULL) {
			empty = false;
			break;
		}
		struct dirent *sde;
		while ((sde = readdir(sd)) != NULL) {
			if (strcmp(sde->d_name, ".") != 0 &&
			    strcmp(sde->d_name, "..") != 0)
				empty = false;
		}
		closedir(sd);
	}
	if (d != NULL)
		closedir(d);
	return empty;
}

static void admin_restore_user_row(void *context, const char *const *kv)
{
	struct admin_restore *r = context;

	for (unsigned int i = 0; kv[i] != NULL && kv[i + 1] != NULL; i += 2) {
		const char *value = p_strdup(r->ctx->pool, kv[i + 1]);
		if (strcmp(kv[i], "uid") == 0)
			r->uid = value;
		else if (strcmp(kv[i], "gid") == 0)
			r->gid = value;
		else if (strcmp(kv[i], "home") == 0)
			r->home = value;
		else if (strcmp(kv[i], "mail") == 0)
			r->mail = value;
		else if (strcmp(kv[i], "imap_pid") == 0)
			r->imap_pid = value;
	}
}

static int admin_restore_target(struct admin_restore *r)
{
	struct admin_ctx *ctx = r->ctx;
	const char *args[] = { "USER", r->user, NULL };
	const char *code, *text;
	char *root;
	struct stat st;

	int ret = admin_conn_request(ctx, args, admin_restore_user_row, r, NULL,
				     &code, &text);
	if (ret != 0)
		return admin_fail(ctx, ret, code, "%s: %s", r->user, text);
	if (r->uid == NULL || r->gid == NULL || r->home == NULL || r->mail == NULL)
		return admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error",
				  "master's answer about %s lacks a field", r->user);
	if (r->imap_pid != NULL && r->imap_pid[0] != '\0')
		return admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				  "%s has an imap process (pid %s): restore when "
				  "it has exited (moatadm kick, then "
				  "imap_process_linger seconds)", r->user,
				  r->imap_pid);
	if (mailbox_location_parse(r->mail[0] != '\0' ? r->mail :
				   ctx->set->mail_location, r->home, &root,
				   &text) < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				  r->user, text);
	r->root = p_strdup(ctx->pool, root);
	i_free(root);
	if (lstat(r->root, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !mail_root_is_skeleton(r->root))
			return admin_fail(ctx, ADMIN_EXIT_CANTCREAT, "failed",
					  "%s has a mail root already (%s): "
					  "restore into a user without mail, or "
					  "move it away while the user has no "
					  "imap process", r->user, r->root);
		r->skeleton = true;
	} else if (errno != ENOENT) {
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				  r->root, strerror(errno));
	}
	r->staging = p_strdup_printf(ctx->pool, "%s.moatadm-restore.%ld",
				     r->root, (long)getpid());
	return 0;
}

/* ---- restore: the writer, as the target user ---- */

/* The stream from the parent: "D <path>\n", "F <sha256> <size> <path>\n"
   and <size> bytes, then "E\n". */
static int restore_read_exact(FILE *in, void *buf, size_t size)
{
	return fread(buf, 1, size, in) == size ? 0 : -1;
}

static void restore_remove_tree(const char *path, unsigned int depth)
{
	DIR *d = depth > ADMIN_BACKUP_DEPTH_MAX + 1 ? NULL : opendir(path);
	struct dirent *de;

	if (d != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			char *sub = i_strdup_printf("%s/%s", path, de->d_name);
			if (unlink(sub) < 0 && (errno == EISDIR || errno == EPERM))
				restore_remove_tree(sub, depth + 1);
			i_free(sub);
		}
		closedir(d);
	}
	(void)rmdir(path);
}

static int restore_copy_file(int dirfd, const char *path, uint64_t size,
			     time_t mtime, const char *sha256, FILE *in,
			     const char **error_r)
{
	unsigned char buf[ADMIN_BACKUP_COPY_BUF], md[EVP_MAX_MD_SIZE];
	char hex[ADMIN_BACKUP_SHA256_HEX + 1];
	unsigned int md_len = 0;
	int ret = 0;

	int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0600);
	if (fd < 0) {
		*error_r = strerror(errno);
		return -1;
	}
	EVP_MD_CTX *md_ctx = EVP_MD_CTX_new();
	if (md_ctx == NULL || EVP_DigestInit_ex(md_ctx, EVP_sha256(), NULL) != 1)
		ret = -1;
	for (uint64_t left = size; ret == 0 && left > 0;) {
		size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		if (restore_read_exact(in, buf, n) < 0) {
			*error_r = "the backup stream ended early";
			ret = -1;
		} else if (write(fd, buf, n) != (ssize_t)n) {
			*error_r = strerror(errno);
			ret = -1;
		} else {
			(void)EVP_DigestUpdate(md_ctx, buf, n);
			left -= n;
		}
	}
	if (ret == 0 && EVP_DigestFinal_ex(md_ctx, md, &md_len) != 1)
		ret = -1;
	EVP_MD_CTX_free(md_ctx);
	if (ret == 0) {
		admin_backup_hex(md, md_len, hex);
		if (strcmp(hex, sha256) != 0) {
			/* the file changed after the check */
			*error_r = "its SHA-256 changed since the check";
			ret = -1;
		}
	}
	/* a Maildir message's internal date is its file's mtime */
	struct timespec times[2] = { { .tv_sec = mtime }, { .tv_sec = mtime } };
	if (ret == 0 && (futimens(fd, times) < 0 || fsync(fd) < 0)) {
		*error_r = strerror(errno);
		ret = -1;
	}
	if (close(fd) < 0 && ret == 0) {
		*error_r = strerror(errno);
		ret = -1;
	}
	if (ret < 0 && *error_r == NULL)
		*error_r = "hashing failed";
	return ret;
}

static int admin_restore_remove_skeleton(struct admin_restore *r)
{
	unsigned int i;

	for (i = 0; i < N_ELEMENTS(maildir_subdirs); i++) {
		char *path = i_strdup_printf("%s/%s", r->root, maildir_subdirs[i]);
		int ret = rmdir(path);
		i_free(path);
		if (ret < 0 && errno != ENOENT)
			break;
	}
	if (i == N_ELEMENTS(maildir_subdirs) && rmdir(r->root) == 0)
		return 0;
	/* put back what went */
	(void)mkdir(r->root, 0700);
	for (unsigned int j = 0; j < N_ELEMENTS(maildir_subdirs); j++) {
		char *path = i_strdup_printf("%s/%s", r->root, maildir_subdirs[j]);
		(void)mkdir(path, 0700);
		i_free(path);
	}
	return -1;
}

/* The child's work; returns an exit code (failures reported). */
static int admin_restore_write(struct admin_restore *r, FILE *in)
{
	struct admin_ctx *ctx = r->ctx;
	char line[ADMIN_BACKUP_LINE_MAX];
	const char *error = NULL, *p;
	int ret = 0;

	if (mkdir(r->staging, 0700) < 0)
		return admin_fail(ctx, errno == ENOENT ? ADMIN_EXIT_CANTCREAT :
				  ADMIN_EXIT_FAILED, "failed", "mkdir %s: %s",
				  r->staging, strerror(errno));
	int dirfd = open(r->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			 O_CLOEXEC);
	if (dirfd < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s: %s",
				 r->staging, strerror(errno));
	while (ret == 0) {
		if (fgets(line, sizeof(line), in) == NULL ||
		    strchr(line, '\n') == NULL) {
			ret = admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error",
					 "the backup stream broke off");
			break;
		}
		*strchr(line, '\n') = '\0';
		if (strcmp(line, "E") == 0)
			break;
		if (str_begins(line, "D ", &p)) {
			if (admin_backup_path_is_valid(p) &&
			    mkdirat(dirfd, p, 0700) < 0 && errno != EEXIST)
				ret = admin_fail(ctx, ADMIN_EXIT_FAILED, "failed",
						 "mkdir %s/%s: %s", r->staging,
						 p, strerror(errno));
			continue;
		}
		/* our own parent wrote it: "F <sha> <size> <mtime> <path>" */
		char sha[ADMIN_BACKUP_SHA256_HEX + 1];
		unsigned long long size;
		long long mtime;
		int path_at = 0;
		if (!str_begins(line, "F ", &p) ||
		    sscanf(p, "%64[0-9a-f] %llu %lld %n", sha, &size, &mtime,
			   &path_at) != 3 || path_at == 0 ||
		    strlen(sha) != ADMIN_BACKUP_SHA256_HEX ||
		    !admin_backup_path_is_valid(p + path_at)) {
			ret = admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error",
					 "a bad record in the backup stream");
			break;
		}
		error = NULL;
		if (restore_copy_file(dirfd, p + path_at, size, (time_t)mtime,
				      sha, in, &error) < 0)
			ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
					 "%s/%s: %s", r->staging, p + path_at,
					 error);
	}
	/* every file was fsync'ed; the directories with one syncfs() */
	if (ret == 0 && syncfs(dirfd) < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail",
				 "syncfs %s: %s", r->staging, strerror(errno));
	if (dirfd >= 0)
		close(dirfd);
	/* the empty skeleton goes; a file in it (a delivery started the
	   user's process meanwhile) stops the restore with the skeleton as
	   it was */
	if (ret == 0 && r->skeleton && admin_restore_remove_skeleton(r) < 0)
		ret = admin_fail(ctx, ADMIN_EXIT_CANTCREAT, "failed",
				 "%s got mail meanwhile: nothing restored",
				 r->root);
	/* RENAME_NOREPLACE: a mail root made meanwhile (a delivery started
	   the user's process) is never replaced */
	if (ret == 0 && renameat2(AT_FDCWD, r->staging, AT_FDCWD, r->root,
				  RENAME_NOREPLACE) < 0)
		ret = admin_fail(ctx, errno == EEXIST ? ADMIN_EXIT_CANTCREAT :
				 ADMIN_EXIT_FAILED, "failed", "rename %s to %s: %s",
				 r->staging, r->root, strerror(errno));
	if (ret != 0) {
		restore_remove_tree(r->staging, 0);
		return ret;
	}
	char *parent = i_strdup(r->root);
	char *slash = strrchr(parent, '/');
	if (slash != NULL) {
		*slash = '\0';
		int pfd = open(parent[0] == '\0' ? "/" : parent,
			       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0) {
			(void)fsync(pfd);
			close(pfd);
		}
	}
	i_free(parent);
	return 0;
}

static int admin_restore_child(struct admin_restore *r, int fd)
{
	unsigned int uid, gid;

	if (r->uid[0] == '\0' && r->gid[0] == '\0') {
		/* no uids in the userdb: mail runs as master's user (a
		   development set-up), which must be ours */
		uid = (unsigned int)geteuid();
		gid = (unsigned int)getegid();
	} else if (str_to_uint(r->uid, &uid) < 0 ||
		   str_to_uint(r->gid, &gid) < 0) {
		return admin_fail(r->ctx, ADMIN_EXIT_SOFTWARE, "error",
				  "%s: a bad uid or gid", r->user);
	}
	if (geteuid() != 0 && geteuid() != (uid_t)uid)
		return admin_fail(r->ctx, ADMIN_EXIT_REFUSED, "refused",
				  "restore writes %s's mail as uid %u: run it "
				  "as root", r->user, uid);
	if (geteuid() == 0 && uid == 0)
		return admin_fail(r->ctx, ADMIN_EXIT_REFUSED, "refused",
				  "%s's mail would be root's", r->user);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 || setgid((gid_t)gid) < 0 ||
	     setuid((uid_t)uid) < 0))
		return admin_fail(r->ctx, ADMIN_EXIT_FAILED, "failed",
				  "becoming uid %u: %s", uid, strerror(errno));
	umask(0077);
	FILE *in = fdopen(fd, "r");
	if (in == NULL)
		return admin_fail(r->ctx, ADMIN_EXIT_SOFTWARE, "error",
				  "fdopen: %s", strerror(errno));
	int ret = admin_restore_write(r, in);
	fclose(in);
	return ret;
}

/* ---- restore: the reader, as root ---- */

static int admin_restore_send(struct admin_restore *r, FILE *out,
			      struct admin_progress *progress)
{
	struct admin_ctx *ctx = r->ctx;
	struct admin_backup_manifest m;
	struct admin_backup_record rec;
	char buf[ADMIN_BACKUP_COPY_BUF];
	const char *error;
	int ret;

	if (admin_backup_manifest_open(r->src, ctx->pool, &m, &error) < 0)
		return admin_fail(ctx, ADMIN_EXIT_FAILED, "failed", "%s", error);
	while ((ret = admin_backup_manifest_next(&m, &rec, ctx->pool, &error)) > 0) {
		if (rec.dir) {
			fprintf(out, "D %s\n", rec.path);
			continue;
		}
		char path[PATH_MAX];
		int fd = snprintf(path, sizeof(path), "%s/%s", r->src, rec.path) >=
			(int)sizeof(path) ? (errno = ENAMETOOLONG, -1) :
			open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			error = p_strdup_printf(ctx->pool, "%s: %s", path,
						strerror(errno));
			ret = -1;
			break;
		}
		fprintf(out, "F %s %llu %lld %s\n", rec.sha256,
			(unsigned long long)rec.size, (long long)rec.mtime,
			rec.path);
		uint64_t left = rec.size;
		while (left > 0) {
			ssize_t n = read(fd, buf, left < sizeof(buf) ?
					 (size_t)left : sizeof(buf));
			if (n <= 0)
				break;   /* shrank since the check: the child sees it */
			if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
				break;
			left -= (uint64_t)n;
		}
		close(fd);
		if (left > 0) {
			/* the writer failed, or the file shrank */
			error = p_strdup_printf(ctx->pool, "%s: could not be "
						"passed on whole", path);
			ret = -1;
			break;
		}
		admin_progress_add(progress, 1);
	}
	admin_backup_manifest_close(&m);
	if (ret == 0)
		fputs("E\n", out);
	if (ret < 0)
		i_error("%s", error);
	return ret < 0 ? -1 : 0;
}

int admin_cmd_restore(struct admin_ctx *ctx, int argc, char **argv)
{
	static const char *const numeric[] = {
		"mailboxes", "messages", "files", NULL
	};
	struct admin_restore r = { .ctx = ctx };
	int pipefd[2], status;

	int first = admin_mail_user_opt(argc, argv, &r.user);
	if (first < 0 || first != argc - 1)
		return admin_usage(ctx, "restore -u USER SRC");
	r.src = argv[first];
	int ret = admin_restore_verify(&r);
	if (ret == 0)
		ret = admin_restore_target(&r);
	if (ret != 0)
		return ret;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail", "pipe: %s",
				  strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return admin_fail(ctx, ADMIN_EXIT_TEMPFAIL, "tempfail", "fork: %s",
				  strerror(errno));
	if (pid == 0) {
		close(pipefd[1]);
		ret = admin_restore_child(&r, pipefd[0]);
		fflush(stdout);
		fflush(stderr);
		_exit(ret);
	}
	close(pipefd[0]);
	/* a writer that failed and exited closes the pipe: its exit code,
	   not SIGPIPE, is the answer */
	signal(SIGPIPE, SIG_IGN);
	FILE *out = fdopen(pipefd[1], "w");
	struct admin_progress *progress =
		admin_progress_begin(ctx, "files", r.files);
	int send_ret = out == NULL ? -1 : admin_restore_send(&r, out, progress);
	admin_progress_end(&progress);
	if (out != NULL)
		fclose(out);
	else
		close(pipefd[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) ;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return WIFEXITED(status) ? WEXITSTATUS(status) :
			admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error",
				   "the restoring process died");
	if (send_ret < 0)
		return admin_fail(ctx, ADMIN_EXIT_SOFTWARE, "error",
				  "reading the backup failed (see above)");
	char folders[32], messages[32], files[32];
	snprintf(folders, sizeof(folders), "%u", r.folders + 1);
	snprintf(messages, sizeof(messages), "%u", r.messages);
	snprintf(files, sizeof(files), "%u", r.files);
	struct admin_output *out_doc = admin_output_begin(ctx, ADMIN_OUTPUT_OBJECT,
							  numeric);
	admin_output_rowv(out_doc, "user", r.user, "root", r.root,
			  "mailboxes", folders, "messages", messages,
			  "files", files, NULL);
	return admin_output_end(&out_doc, 0, NULL, NULL);
}
