/* libFuzzer target: arbitrary bytes as a logged-in client's whole session
   with the imap process (imap-client.c, imap-commands.c, every cmd-*.c,
   the index/ storage below them: every imap source but main.c is linked
   in; tests/fuzz/run.sh builds it).

   The user's Maildir lives in a scratch directory on tmpfs
   (scratch-dir.h: one per fuzzer process, removed at exit) and is
   rebuilt for every input from a template kept in memory: the default
   folders and FUZZ_SEED_COUNT small messages in INBOX, so SELECT, FETCH,
   SEARCH, STORE, COPY and EXPUNGE have something to work on. Commands
   that write (APPEND, CREATE, RENAME, ...) are fine: the next input
   starts afresh.

   Per input, the imap user state is built on a fresh ioloop as main.c
   does, and one client is created as for master's CONN record, on a
   socketpair that session-feed.c writes the input into, then EOF, while
   it drains the replies. The loop runs until the client is gone, bounded
   by FUZZ_IMAP_DEADLINE_MSECS: a session still alive then is stuck (it
   would never notice its client left) and aborts. Everything is then
   freed; LeakSanitizer and the descriptor count check that nothing
   stays.

   Input layout: byte 0 selects options (FUZZ_MODE_* below); the rest is
   the client's bytes. */

#include "imap-common.h"
#include "imap-client.h"
#include "imap-commit.h"
#include "imap-mailbox.h"
#include "imap-status.h"
#include "imap-stats.h"
#include "mailbox-list.h"
#include "maildir-watch.h"
#include "scratch-dir.h"
#include "session-feed.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* Sessions end within milliseconds; generous for loaded sanitizer runs. */
#define FUZZ_IMAP_DEADLINE_MSECS 5000
/* Small limits keep every input fast: an APPEND is at most this big. */
#define FUZZ_MAX_APPEND_SIZE (64 * 1024)
#define FUZZ_MAX_LINE_LENGTH 8192
/* Bytes given to client_create() as what imap-login read after LOGIN. */
#define FUZZ_PREFIX_MAX 512
/* Open descriptors nftw() may use while reading a template. */
#define FUZZ_NFTW_FDS 16
/* The templates: the default folders' directories and files (about
   35) and the seed messages; a path relative to the Maildir. */
#define FUZZ_TEMPLATE_MAX_ENTRIES 64
#define FUZZ_TEMPLATE_MAX_FILE (64 * 1024)
#define FUZZ_ENTRY_PATH_MAX 128
/* Directory entries read per getdents64() call when resetting: a
   folder's few entries at once (as scratch-dir.c's remover). */
#define FUZZ_DIRENT_BUF 2048

/* byte 0 */
#define FUZZ_MODE_PREFIX 0x01     /* first bytes come as handoff prefix */
#define FUZZ_MODE_NO_TAG 0x02     /* no tagged LOGIN reply */
#define FUZZ_MODE_NO_SEED 0x04    /* INBOX starts empty */
#define FUZZ_MODE_NO_BAD_LIMIT 0x08  /* imap_max_bad_commands = 0 */

#define FUZZ_SEED_COUNT 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct moat_settings *fuzz_set;
static char *fuzz_root;

/* Maildir file name (without ",S=") and contents of each seed message. */
static const char *const fuzz_seeds[FUZZ_SEED_COUNT][2] = {
	{ "1700000001.M1P1.fuzz", "From: Alice <alice@example.org>\r\n"
	  "To: bob@example.org, \"Carol\" <carol@example.org>\r\n"
	  "Subject: =?UTF-8?Q?caf=C3=A9?= hello\r\n"
	  "Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"
	  "Message-ID: <1@example.org>\r\n"
	  "\r\n"
	  "Hello Bob,\r\nsee you at the cafe.\r\n" },
	{ "1700000002.M2P1.fuzz", "From: bob@example.org\r\n"
	  "To: alice@example.org\r\n"
	  "Subject: Re: hello\r\n"
	  "Date: Wed, 15 Nov 2023 08:00:00 +0100\r\n"
	  "MIME-Version: 1.0\r\n"
	  "Content-Type: multipart/mixed; boundary=\"b1\"\r\n"
	  "\r\n"
	  "preamble\r\n"
	  "--b1\r\n"
	  "Content-Type: text/plain; charset=utf-8\r\n"
	  "Content-Transfer-Encoding: quoted-printable\r\n"
	  "\r\n"
	  "caf=C3=A9 at noon\r\n"
	  "--b1\r\n"
	  "Content-Type: message/rfc822\r\n"
	  "\r\n"
	  "Subject: inner\r\n"
	  "\r\n"
	  "inner body\r\n"
	  "--b1\r\n"
	  "Content-Type: application/octet-stream; name=\"a.bin\"\r\n"
	  "Content-Disposition: attachment; filename*=utf-8''a%20b.bin\r\n"
	  "Content-Transfer-Encoding: base64\r\n"
	  "\r\n"
	  "AAECAwQFBgcICQ==\r\n"
	  "--b1--\r\n" },
	{ "1700000003.M3P1.fuzz", "Subject: no body\r\n" },
};
/* Flags of the seeds: seen, flagged+answered, none. */
static const char *const fuzz_seed_flags[FUZZ_SEED_COUNT] = { "S", "FR", "" };

static const char *const fuzz_maildir_subdirs[] = { "cur", "new", "tmp" };

struct fuzz_session {
	struct ioloop *ioloop;
	struct imap_user user;
	struct session_feed *feed;
	struct timeout *to_deadline;
};

static struct fuzz_session *fuzz_current;

/* Stands in for main.c: the process ends with its last client, once its
   replies were all read. */
void imap_user_client_gone(struct imap_user *user)
{
	struct fuzz_session *s = fuzz_current;

	if (user->client_count == 0 && s != NULL &&
	    (s->feed == NULL || session_feed_done(s->feed)))
		io_loop_stop(user->ioloop);
}

static void fuzz_feed_done(void *context)
{
	struct fuzz_session *s = context;

	if (s->user.client_count == 0)
		io_loop_stop(s->ioloop);
}

static void fuzz_write_file(const char *path, const char *contents)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t len = strlen(contents);

	if (fd < 0 || write(fd, contents, len) != (ssize_t)len)
		i_fatal("fuzz: writing %s failed: %s", path, strerror(errno));
	close(fd);
}

/* A Maildir as login leaves it (mailbox_list_autocreate()), with the
   seed messages in INBOX if seed. */
static void fuzz_template_create(const char *root, bool seed)
{
	struct imap_mailbox_specials specials;
	const char *error;
	char path[PATH_MAX];

	imap_mailbox_specials_get(fuzz_set, &specials);
	if (mailbox_list_autocreate(root, &specials.names, &error) < 0)
		i_fatal("fuzz: creating the Maildir failed: %s", error);
	if (!seed)
		return;
	/* INBOX's own directories, as the first delivery would make them */
	for (unsigned int i = 0; i < N_ELEMENTS(fuzz_maildir_subdirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", root,
			 fuzz_maildir_subdirs[i]);
		if (mkdir(path, 0700) < 0)
			i_fatal("fuzz: mkdir(%s) failed: %s", path, strerror(errno));
	}
	for (unsigned int i = 0; i < FUZZ_SEED_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/cur/%s,S=%zu:2,%s", root,
			 fuzz_seeds[i][0], strlen(fuzz_seeds[i][1]),
			 fuzz_seed_flags[i]);
		fuzz_write_file(path, fuzz_seeds[i][1]);
	}
}

/* One file or directory of a template, relative to the Maildir. */
struct fuzz_entry {
	char path[FUZZ_ENTRY_PATH_MAX];
	mode_t mode;            /* S_IFDIR or S_IFREG, and the permissions */
	char *data;             /* a file's contents */
	size_t size;
	/* a directory's inode as the last reset left it (0: none), and
	   whether this reset found it so */
	ino_t ino;
	bool kept;
};

struct fuzz_template {
	struct fuzz_entry entries[FUZZ_TEMPLATE_MAX_ENTRIES];
	unsigned int count;
};

static struct fuzz_template fuzz_seeded, fuzz_empty;
/* The template the scratch Maildir was last reset to (NULL: none). */
static struct fuzz_template *fuzz_made;

/* nftw() has no context argument. */
static struct fuzz_template *load_template;
static size_t load_prefix_len;

static void load_file(struct fuzz_entry *entry, const char *path,
		      const struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (st->st_size > FUZZ_TEMPLATE_MAX_FILE)
		i_fatal("fuzz: template file %s is too big", path);
	entry->size = (size_t)st->st_size;
	entry->data = i_malloc(entry->size + 1);
	if (fd < 0 || read(fd, entry->data, entry->size) != (ssize_t)entry->size)
		i_fatal("fuzz: reading %s failed: %s", path, strerror(errno));
	close(fd);
}

static int load_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	struct fuzz_template *t = load_template;

	if (ftw->level == 0)
		return 0;       /* the Maildir itself: made by the reset */
	if ((type != FTW_D && type != FTW_F) ||
	    (type == FTW_F && !S_ISREG(st->st_mode)))
		i_fatal("fuzz: unexpected entry %s in the template", path);
	if (t->count == FUZZ_TEMPLATE_MAX_ENTRIES)
		i_fatal("fuzz: more than %u entries in the template",
			FUZZ_TEMPLATE_MAX_ENTRIES);
	struct fuzz_entry *entry = &t->entries[t->count++];
	int len = snprintf(entry->path, sizeof(entry->path), "%s",
			   path + load_prefix_len);
	if (len < 0 || (size_t)len >= sizeof(entry->path))
		i_fatal("fuzz: template path %s too long", path);
	entry->mode = st->st_mode & (S_IFMT | 07777);
	if (type == FTW_F)
		load_file(entry, path, st);
	return 0;
}

/* The Maildir made at root, read into memory (parents before their
   entries, as nftw() walks without FTW_DEPTH), then removed. */
static void fuzz_template_load(struct fuzz_template *t, const char *root)
{
	load_template = t;
	load_prefix_len = strlen(root) + 1;
	if (nftw(root, load_one, FUZZ_NFTW_FDS, FTW_PHYS) < 0)
		i_fatal("fuzz: reading %s failed: %s", root, strerror(errno));
	scratch_remove_tree(root);
}

static void fuzz_entry_create(int root_fd, const struct fuzz_entry *entry)
{
	mode_t perm = entry->mode & 07777;

	if (S_ISDIR(entry->mode)) {
		if (mkdirat(root_fd, entry->path, perm) < 0)
			i_fatal("fuzz: mkdir(%s) failed: %s", entry->path,
				strerror(errno));
		return;
	}
	int fd = openat(root_fd, entry->path,
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, perm);
	if (fd < 0 || (entry->size > 0 &&
		       write(fd, entry->data, entry->size) != (ssize_t)entry->size))
		i_fatal("fuzz: writing %s failed: %s", entry->path,
			strerror(errno));
	close(fd);
}

static struct fuzz_entry *
fuzz_template_find_dir(struct fuzz_template *t, const char *path)
{
	for (unsigned int i = 0; i < t->count; i++) {
		if (S_ISDIR(t->entries[i].mode) &&
		    strcmp(t->entries[i].path, path) == 0)
			return &t->entries[i];
	}
	return NULL;
}

/* Empty the directory open as fd (closed here; rel is its path in the
   Maildir, "" for the Maildir) of all but the template's directories
   the last reset made (the same inode: not removed and made again
   since, not a folder renamed into its place), which are emptied the
   same way. Every file goes: a kept one could have been written. */
static void fuzz_prune_dir(struct fuzz_template *t, int fd, const char *rel,
			   unsigned int depth)
{
	char buf[FUZZ_DIRENT_BUF] __attribute__((aligned(8)));
	char path[FUZZ_ENTRY_PATH_MAX];
	ssize_t len;

	if (depth > SCRATCH_MAX_DEPTH)
		i_fatal("fuzz: %s is deeper than %u levels", fuzz_root,
			SCRATCH_MAX_DEPTH);
	while ((len = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t pos = 0; pos < len; ) {
			const struct dirent64 *d = (const void *)(buf + pos);
			struct fuzz_entry *entry = NULL;

			pos += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			int plen = snprintf(path, sizeof(path), "%s%s%s", rel,
					    rel[0] == '\0' ? "" : "/", d->d_name);
			if (d->d_type == DT_DIR && plen > 0 &&
			    (size_t)plen < sizeof(path))
				entry = fuzz_template_find_dir(t, path);
			if (entry == NULL || entry->ino != d->d_ino) {
				scratch_remove_at(fd, d->d_name, fuzz_root);
				continue;
			}
			int child = openat(fd, d->d_name, O_RDONLY | O_DIRECTORY |
					   O_NOFOLLOW | O_CLOEXEC);
			if (child < 0)
				i_fatal("fuzz: open(%s/%s) failed: %s", fuzz_root,
					path, strerror(errno));
			entry->kept = true;
			fuzz_prune_dir(t, child, entry->path, depth + 1);
		}
	}
	if (len < 0)
		i_fatal("fuzz: getdents64(%s/%s) failed: %s", fuzz_root, rel,
			strerror(errno));
	close(fd);
}

/* A fresh Maildir for each input, as the template (the same names,
   contents, modes and UIDVALIDITY every time, and none of the fsync()
   calls mailbox_list_autocreate() makes): everything the last input
   left removed but the template's directories, which are emptied, and
   the rest written back from memory. Removing and making those ~30
   directories again was most of the reset's time. */
static void fuzz_maildir_reset(bool seed)
{
	struct fuzz_template *t = seed ? &fuzz_seeded : &fuzz_empty;
	struct stat st;

	if (fuzz_made != t) {
		/* the other template's directories: all new */
		scratch_remove_tree(fuzz_root);
		for (unsigned int i = 0; i < t->count; i++)
			t->entries[i].ino = 0;
		fuzz_made = t;
	}
	for (unsigned int i = 0; i < t->count; i++)
		t->entries[i].kept = false;
	/* as mailbox_list_autocreate() makes it */
	if (mkdir(fuzz_root, 0700) < 0 && errno != EEXIST)
		i_fatal("fuzz: mkdir(%s) failed: %s", fuzz_root, strerror(errno));
	int root_fd = open(fuzz_root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			   O_CLOEXEC);
	if (root_fd < 0)
		i_fatal("fuzz: open(%s) failed: %s", fuzz_root, strerror(errno));
	fuzz_prune_dir(t, dup(root_fd), "", 0);
	/* parents come before their entries */
	for (unsigned int i = 0; i < t->count; i++) {
		struct fuzz_entry *entry = &t->entries[i];

		if (entry->kept)
			continue;
		fuzz_entry_create(root_fd, entry);
		if (!S_ISDIR(entry->mode))
			continue;
		if (fstatat(root_fd, entry->path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			i_fatal("fuzz: stat(%s) failed: %s", entry->path,
				strerror(errno));
		entry->ino = st.st_ino;
	}
	close(root_fd);
}

static void fuzz_init_once(void)
{
	log_init("", false);
	session_feed_quiet_log();
	signal(SIGPIPE, SIG_IGN);
	umask(0077);
	const char *dir = scratch_dir_create("imap");
	fuzz_root = i_strdup_printf("%s/Maildir", dir);

	fuzz_set = moat_settings_defaults();
	fuzz_set->imap_max_line_length = FUZZ_MAX_LINE_LENGTH;
	fuzz_set->imap_max_literal_size = FUZZ_MAX_APPEND_SIZE;
	fuzz_set->imap_max_append_size = FUZZ_MAX_APPEND_SIZE;
	/* tmpfs or not, a sync per message only costs time here */
	fuzz_set->mail_fsync = MOAT_FSYNC_NEVER;
	/* made on disk as login makes them, then kept in memory */
	fuzz_template_create(fuzz_root, true);
	fuzz_template_load(&fuzz_seeded, fuzz_root);
	fuzz_template_create(fuzz_root, false);
	fuzz_template_load(&fuzz_empty, fuzz_root);
	session_feed_fds_baseline();
}

static void fuzz_deadline(void *context)
{
	(void)context;
	fprintf(stderr, "fuzz: the imap session did not end within %u ms\n",
		FUZZ_IMAP_DEADLINE_MSECS);
	abort();
}

static void fuzz_session_run(struct fuzz_session *s, unsigned int mode,
			     const uint8_t *data, size_t size)
{
	size_t prefix_size = 0;
	int fds[2];

	if ((mode & FUZZ_MODE_PREFIX) != 0)
		prefix_size = size < FUZZ_PREFIX_MAX ? size : FUZZ_PREFIX_MAX;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       fds) < 0)
		i_fatal("socketpair() failed: %s", strerror(errno));
	s->feed = session_feed_create(s->ioloop, fds[1], data + prefix_size,
				      size - prefix_size, fuzz_feed_done, s);
	(void)client_create(&s->user, fds[0],
			    (mode & FUZZ_MODE_NO_TAG) != 0 ? "" : "L1",
			    data, prefix_size, "192.0.2.7");
	s->to_deadline = timeout_add(s->ioloop, FUZZ_IMAP_DEADLINE_MSECS,
				     fuzz_deadline, s);
	if (s->user.client_count > 0 || !session_feed_done(s->feed))
		io_loop_run(s->ioloop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool initialized = false;
	struct fuzz_session s;

	if (!initialized) {
		fuzz_init_once();
		initialized = true;
	}
	if (size < 1)
		return 0;
	unsigned int mode = data[0];
	fuzz_set->imap_max_bad_commands =
		(mode & FUZZ_MODE_NO_BAD_LIMIT) != 0 ? 0 : 20;
	fuzz_maildir_reset((mode & FUZZ_MODE_NO_SEED) == 0);

	memset(&s, 0, sizeof(s));
	s.ioloop = io_loop_create();
	s.user.ioloop = s.ioloop;
	s.user.set = fuzz_set;
	s.user.username = "fuzzuser";
	s.user.mail_root = fuzz_root;
	imap_commit_init(&s.user);
	fuzz_current = &s;
	fuzz_session_run(&s, mode, data + 1, size - 1);

	/* A stopped loop may leave the client mid-command (the deadline
	   aborts first, so this is only for safety). */
	while (s.user.clients != NULL)
		client_destroy(s.user.clients);
	imap_commit_deinit(&s.user);
	/* as imap's main.c does when the user's last client is gone */
	imap_status_cache_free(&s.user.status_cache);
	/* the command counters master would have been sent */
	imap_stats_deinit(&s.user);
	session_feed_destroy(&s.feed);
	timeout_remove(&s.to_deadline);
	io_loop_destroy(&s.ioloop);
	fuzz_current = NULL;
	/* the process-wide inotify instance outlives the handles (maildir-
	   watch.h): this input's folders are deleted before the next one */
	maildir_watch_deinit();
	session_feed_fds_check();
	return 0;
}
