/* moat-lda: deliver one message from stdin into a user's Maildir, for
   Postfix's mailbox_command, procmail-style .forward lines and other MTAs
   that run a delivery agent (moat-lda(1)).

   SECURITY: runs as whoever invokes it, normally the recipient (Postfix's
   local(8) runs mailbox_command as the recipient), and needs no privilege:
   it writes only into that user's own Maildir, with the same index
   locking as every other writer (the user's imap process sees the message
   through its inotify watch). Started as root, it delivers only with
   -d USER, as that system user, after dropping to the user's uid and gid
   (never uid 0). It reads the config unprivileged: settings it may not
   read (the TLS key) stay empty. Before it reads the message it sets
   no_new_privs and installs the lda seccomp allowlist (lda_restrict()). The message is untrusted data and is
   only stored, never parsed beyond its first line and header start. */
#include "lib.h"
#include "log.h"
#include "strfuncs.h"
#include "utf8.h"
#include "moat-settings.h"
#include "mailbox.h"
#include "mailbox-quota.h"
#include "seccomp-filter.h"

#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sysexits.h>

/* Bytes read from stdin at a time; the first read also decides whether a
   "From " line and our headers' duplicates are at the top. */
#define LDA_READ_SIZE (64 * 1024)
/* -f / -a / -d values: an address (RFC 5321 4.5.3.1.3 path, with room). */
#define LDA_ADDRESS_MAX 512
/* Hard bound when message_size_limit is 0, as for LMTP. */
#define LDA_SIZE_MAX (1024ULL * 1024 * 1024)

struct lda_args {
	const char *config_path, *user, *sender, *address, *mailbox;
	bool config_given;
};

static void ATTR_NORETURN usage(void)
{
	fprintf(stderr, "Usage: moat-lda [-c CONFIG] [-d USER] [-f SENDER] "
		"[-a ADDRESS] [-m MAILBOX] < message\n");
	exit(EX_USAGE);
}

static void ATTR_NORETURN ATTR_FORMAT(2, 3)
lda_fail(int code, const char *fmt, ...)
{
	va_list args;
	int err = errno;   /* for %m, past the first fprintf */

	va_start(args, fmt);
	fprintf(stderr, "moat-lda: ");
	errno = err;
	vfprintf(stderr, fmt, args);
	fprintf(stderr, "\n");
	va_end(args);
	exit(code);
}

static bool address_ok(const char *value)
{
	size_t len = strlen(value);

	if (len > LDA_ADDRESS_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c < 0x20 || c == 0x7f || c == '<' || c == '>')
			return false;
	}
	/* RFC 6531 addresses are UTF-8; other 8-bit bytes are not one */
	return utf8_is_valid(value, len);
}

static void args_parse(int argc, char *argv[], struct lda_args *args)
{
	int c;

	args->config_path = MOAT_SYSCONFDIR "/moat.conf";
	while ((c = getopt(argc, argv, "c:d:f:a:m:e")) != -1) {
		switch (c) {
		case 'c': args->config_path = optarg; args->config_given = true; break;
		case 'd': args->user = optarg; break;
		case 'f': args->sender = optarg; break;
		case 'a': args->address = optarg; break;
		case 'm': args->mailbox = optarg; break;
		case 'e': break;   /* Dovecot's "reject, don't bounce": we never bounce */
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if ((args->user != NULL && (args->user[0] == '\0' ||
				    !address_ok(args->user))) ||
	    (args->sender != NULL && !address_ok(args->sender)) ||
	    (args->address != NULL && !address_ok(args->address)))
		lda_fail(EX_USAGE, "-d, -f and -a take an address (ASCII or "
			 "UTF-8) without control characters or <>, at most "
			 "%u bytes",
			 LDA_ADDRESS_MAX);
}

struct lda_user {
	const char *name, *home;
};

/* The recipient, as the process now runs: root drops to the -d user (a
   system user), anyone else is the recipient: its name is -d, $USER or
   its passwd entry's, its home $HOME (the MTA sets it, Postfix's local(8)
   does) or the passwd entry's. */
static void lda_become_user(const struct lda_args *args,
			    struct lda_user *user_r)
{
	struct passwd *pw;

	if (getuid() != 0 && geteuid() != 0) {
		pw = getpwuid(getuid());
		const char *env_user = getenv("USER");
		const char *env_home = getenv("HOME");
		user_r->name = args->user != NULL ? args->user :
			env_user != NULL && env_user[0] != '\0' ? env_user :
			pw != NULL ? pw->pw_name : NULL;
		user_r->home = env_home != NULL && env_home[0] == '/' ? env_home :
			pw != NULL ? pw->pw_dir : NULL;
		if (user_r->name == NULL || user_r->home == NULL)
			lda_fail(EX_NOUSER, "uid %u has no passwd entry and no "
				 "USER/HOME", (unsigned)getuid());
		if (pw != NULL && args->user != NULL && env_home == NULL &&
		    strcmp(args->user, pw->pw_name) != 0)
			lda_fail(EX_NOPERM, "running as %s, it can deliver to "
				 "%s only (virtual users: use LMTP)",
				 pw->pw_name, pw->pw_name);
		return;
	}
	if (args->user == NULL)
		lda_fail(EX_USAGE, "started as root: -d USER names the recipient");
	pw = getpwnam(args->user);
	if (pw == NULL)
		lda_fail(EX_NOUSER, "unknown user %s", args->user);
	if (pw->pw_uid == 0)
		lda_fail(EX_NOPERM, "mail is never delivered as root");
	if (initgroups(pw->pw_name, pw->pw_gid) < 0 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0 ||
	    setresuid(0, 0, 0) == 0)
		lda_fail(EX_TEMPFAIL, "dropping to user %s failed: %m",
			 pw->pw_name);
	/* getpwnam's buffer lives until the next NSS call: keep copies */
	static char name[LDA_ADDRESS_MAX + 1], home[PATH_MAX];
	if (strlen(pw->pw_name) >= sizeof(name) || strlen(pw->pw_dir) >= sizeof(home))
		lda_fail(EX_NOUSER, "user %s: name or home too long", args->user);
	strcpy(name, pw->pw_name);
	strcpy(home, pw->pw_dir);
	user_r->name = name;
	user_r->home = home;
}

static struct moat_settings *lda_settings(const struct lda_args *args)
{
	struct moat_settings *set;
	const char *error;

	/* no config at the default place: the built-in defaults */
	if (!args->config_given && access(args->config_path, F_OK) < 0 &&
	    errno == ENOENT)
		return moat_settings_defaults();
	if (moat_settings_parse_unprivileged(args->config_path, &set, &error) < 0)
		lda_fail(EX_CONFIG, "%s", error);
	return set;
}

/* "From sender date" (an mbox envelope line some MTAs prepend): its
   length with the line end, and the sender into sender_r; 0 if none. */
static size_t from_line(const char *data, size_t size, char *sender_r,
			size_t sender_size)
{
	if (size < 5 || memcmp(data, "From ", 5) != 0)
		return 0;
	const char *lf = memchr(data, '\n', size);
	if (lf == NULL)
		return 0;
	size_t len = strcspn(data + 5, " \r\n");
	if (len > 0 && len < sender_size && (size_t)(lf - data) > 5) {
		memcpy(sender_r, data + 5, len);
		sender_r[len] = '\0';
	}
	return (size_t)(lf - data) + 1;
}

/* True if the message's header (as far as data holds it) has the line
   "name: value" (the MTA wrote it): then ours would be a duplicate. For
   Return-Path the value is only its start, "<". */
static bool header_present(const char *data, size_t size, const char *name,
			   const char *value)
{
	char want[LDA_ADDRESS_MAX + 64];
	int len = snprintf(want, sizeof(want), "%s: %s", name, value);
	bool prefix = strcmp(value, "<") == 0;
	const char *p = data, *end = data + size;

	if (len <= 0 || (size_t)len >= sizeof(want))
		return false;
	while (p < end && *p != '\r' && *p != '\n') {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		size_t line = (size_t)((lf == NULL ? end : lf) - p);
		if (line > 0 && p[line - 1] == '\r')
			line--;
		if ((prefix ? line >= (size_t)len : line == (size_t)len) &&
		    strncasecmp(p, want, (size_t)len) == 0)
			return true;
		if (lf == NULL)
			break;
		p = lf + 1;
	}
	return false;
}

static int lda_exit_code(int err)
{
	/* 73: the mailbox cannot be made; 75: anything else may pass */
	return err == EACCES || err == EPERM || err == EROFS ? EX_CANTCREAT :
		EX_TEMPFAIL;
}

static struct mailbox *lda_open(const char *root, const char *name)
{
	struct mailbox *box;
	const char *error;
	int ret = 0;

	if (name != NULL && !mailbox_name_is_inbox(name))
		ret = mailbox_open(root, name, MAILBOX_OPEN_QUOTA, &box, &error);
	/* a folder that is not there: INBOX, as Dovecot's LDA */
	if (ret == 0)
		ret = mailbox_open(root, "INBOX", MAILBOX_OPEN_QUOTA, &box,
				   &error);
	if (ret < 0) {
		int err = errno;
		lda_fail(lda_exit_code(err), "opening the mailbox failed: %s",
			 error);
	}
	if (ret == 0)
		lda_fail(EX_CANTCREAT, "INBOX does not exist");
	return box;
}

/* The set-up is done (user, settings, mail root): from here on only stdin
   and the user's Maildir are touched. no_new_privs and the lda allowlist
   (lib/seccomp-table.c), so a bug in the storage code fed a hostile
   message cannot exec, open sockets or load code; seccomp = no in the
   config leaves the filter out. A failure defers the mail (75) rather
   than delivering unfiltered. The uid change of lda_become_user() left
   no capabilities. */
static void lda_restrict(const struct moat_settings *set)
{
	const char *error;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		lda_fail(EX_TEMPFAIL, "prctl(PR_SET_NO_NEW_PRIVS) failed: %m");
	if (moat_seccomp_install(MOAT_SECCOMP_PROFILE_LDA, set->seccomp,
				 &error) < 0)
		lda_fail(EX_TEMPFAIL, "seccomp filter lda: %s", error);
}

int main(int argc, char *argv[])
{
	struct lda_args args = { 0 };
	const char *error;
	char *root;

	log_init("moat-lda: ", false);
	args_parse(argc, argv, &args);
	struct lda_user user;
	lda_become_user(&args, &user);
	struct moat_settings *set = lda_settings(&args);
	if (mailbox_location_parse(set->mail_location, user.home, &root,
				   &error) < 0)
		lda_fail(EX_CONFIG, "mail_location: %s", error);
	uint64_t limit = set->message_size_limit == 0 ||
		set->message_size_limit > LDA_SIZE_MAX ? LDA_SIZE_MAX :
		set->message_size_limit;
	umask(0077);
	lda_restrict(set);

	char *buf = i_malloc(LDA_READ_SIZE);
	ssize_t got;
	size_t first = 0;
	while (first < LDA_READ_SIZE &&
	       (got = read(STDIN_FILENO, buf + first, LDA_READ_SIZE - first)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			lda_fail(EX_TEMPFAIL, "reading the message failed: %m");
		first += (size_t)got;
	}
	char sender[LDA_ADDRESS_MAX + 1] = "MAILER-DAEMON";
	size_t skip = from_line(buf, first, sender, sizeof(sender));
	if (args.sender != NULL)
		snprintf(sender, sizeof(sender), "%s", args.sender);
	const char *rcpt = args.address != NULL ? args.address :
		args.user != NULL ? args.user : user.name;

	struct mailbox *box = lda_open(root, args.mailbox);
	struct mailbox_append_ctx *save;
	if (mailbox_append_begin(box, 0, (time_t)-1, &save, &error) < 0)
		lda_fail(lda_exit_code(errno), "%s", error);
	char head[2 * LDA_ADDRESS_MAX + 64];
	size_t head_len = 0;
	/* the MTA may have written them already (Postfix: for commands) */
	if (!header_present(buf + skip, first - skip, "Return-Path", "<"))
		head_len += (size_t)snprintf(head, sizeof(head),
					     "Return-Path: <%s>\r\n", sender);
	if (!header_present(buf + skip, first - skip, "Delivered-To", rcpt))
		head_len += (size_t)snprintf(head + head_len,
					     sizeof(head) - head_len,
					     "Delivered-To: %s\r\n", rcpt);
	uint64_t total = first - skip;
	int ret = total > limit ? 0 :
		mailbox_append_write(save, head, head_len, &error);
	if (ret == 0 && total <= limit)
		ret = mailbox_append_write(save, buf + skip, first - skip, &error);
	while (ret == 0 && total <= limit && first == LDA_READ_SIZE &&
	       (got = read(STDIN_FILENO, buf, LDA_READ_SIZE)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			error = "reading the message failed";
			ret = -1;
			break;
		}
		total += (uint64_t)got;
		if (total > limit)
			break;
		ret = mailbox_append_write(save, buf, (size_t)got, &error);
	}
	if (total > limit) {
		mailbox_append_abort(&save);
		lda_fail(EX_NOPERM, "message too big (message_size_limit = %llu)",
			 (unsigned long long)limit);
	}
	uint32_t uid;
	if (ret < 0) {
		int err = errno;
		mailbox_append_abort(&save);
		lda_fail(lda_exit_code(err), "%s", error);
	}
	/* the quota: the limits the user's imap process wrote into
	   maildirsize (moat-lda cannot read the userdb), else the settings */
	struct mailbox_quota_limits defaults = {
		set->quota_storage, set->quota_messages
	}, limits = defaults;
	struct mailbox_quota_usage before = { 0, 0 };
	uint64_t stored = total + head_len;
	bool quota_known = false;
	if (mailbox_quota_get(root, &defaults, &limits, &before, &error) < 0) {
		/* the limit is a policy; losing mail is not */
		fprintf(stderr, "moat-lda: quota: %s\n", error);
	} else if (mailbox_quota_check(&limits, &before,
			moat_settings_quota_grace(set, limits.storage),
			stored, 1) == 0) {
		mailbox_append_abort(&save);
		lda_fail(set->quota_full_tempfail ? EX_TEMPFAIL : EX_NOPERM,
			 "quota exceeded: the mailbox is full");
	} else {
		quota_known = true;
	}
	if (mailbox_append_finish(&save, &uid, &error) < 0)
		lda_fail(lda_exit_code(errno), "%s", error);
	unsigned int percents[MOAT_SETTINGS_QUOTA_WARNINGS_MAX];
	unsigned int warn_count = moat_settings_quota_warnings(set, percents,
		N_ELEMENTS(percents));
	if (quota_known && warn_count > 0 &&
	    (limits.storage != 0 || limits.messages != 0)) {
		struct mailbox_quota_usage after = {
			before.storage + (int64_t)stored, before.messages + 1
		};
		mailbox_quota_warn(root, &limits, &before, &after, percents,
				   warn_count);
	}
	mailbox_close(&box);
	i_free(buf);
	i_free(root);
	moat_settings_free(&set);
	return EX_OK;
}
