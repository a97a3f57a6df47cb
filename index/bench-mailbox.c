/* Micro-benchmark of mailbox_open() on a Maildir of N small files:
   first open (no index yet: scan, uidlist, index build), second open
   (index only), open after another client renamed 1% of cur/ (rescan),
   and the open after that; then the memory of a process holding 1 and 10
   sessions of the mailbox (each read every message's uid and flags, as a
   FETCH 1:* FLAGS does), measured in a fresh child process each.
   Usage: bench-mailbox [N...] (default 10000 100000); the Maildir is made
   in a fresh /tmp directory and removed. */
#include "lib.h"
#include "mailbox.h"
#include "mail-index.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define BENCH_NAME_MAX 128
#define BENCH_BODY "Subject: bench\n\nsmall body\n"
/* Most sessions one process holds in the memory test. */
#define BENCH_SESSIONS_MAX 10

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-mailbox: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void bench_name(char *buf, uint32_t i, const char *flags)
{
	size_t size = strlen(BENCH_BODY);

	snprintf(buf, BENCH_NAME_MAX, "%u.M%uP1.bench,S=%zu,W=%zu:2,%s",
		 1600000000 + i, i, size, size + 3, flags);
}

/* Old directory mtimes (a settled mailbox); offset makes them differ. */
static void dirs_backdate(const char *root, long offset)
{
	char path[PATH_MAX];
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 3600 - offset;
	ts[0].tv_nsec = 0;
	ts[1] = ts[0];
	snprintf(path, sizeof(path), "%s/cur", root);
	if (utimensat(AT_FDCWD, path, ts, 0) < 0)
		die(path);
	snprintf(path, sizeof(path), "%s/new", root);
	if (utimensat(AT_FDCWD, path, ts, 0) < 0)
		die(path);
}

static void bench_create(const char *root, uint32_t n)
{
	const char *const subs[] = { "", "/cur", "/new", "/tmp" };
	char path[PATH_MAX], name[BENCH_NAME_MAX];

	for (unsigned int i = 0; i < N_ELEMENTS(subs); i++) {
		snprintf(path, sizeof(path), "%s%s", root, subs[i]);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			die(path);
	}
	for (uint32_t i = 0; i < n; i++) {
		bench_name(name, i, i % 2 == 0 ? "S" : "");
		snprintf(path, sizeof(path), "%s/cur/%s", root, name);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd == -1 || write(fd, BENCH_BODY, strlen(BENCH_BODY)) < 0)
			die(path);
		close(fd);
	}
	dirs_backdate(root, 0);
}

static double bench_open(const char *root, uint32_t n)
{
	struct mailbox *box;
	const char *error;
	double start = now_sec();

	if (mailbox_open(root, "INBOX", 0, &box, &error) != 1) {
		fprintf(stderr, "bench-mailbox: open failed: %s\n", error);
		exit(1);
	}
	double secs = now_sec() - start;
	if (mailbox_get_count(box) != n) {
		fprintf(stderr, "bench-mailbox: %u messages, expected %u\n",
			mailbox_get_count(box), n);
		exit(1);
	}
	mailbox_close(&box);
	return secs;
}

/* Another Maildir client marks 1% of the messages \Flagged. */
static void bench_rename(const char *root, uint32_t n)
{
	char from[PATH_MAX], to[PATH_MAX], name[BENCH_NAME_MAX];

	for (uint32_t i = 0; i < n; i += 100) {
		bench_name(name, i, i % 2 == 0 ? "S" : "");
		snprintf(from, sizeof(from), "%s/cur/%s", root, name);
		bench_name(name, i, i % 2 == 0 ? "FS" : "F");
		snprintf(to, sizeof(to), "%s/cur/%s", root, name);
		if (rename(from, to) < 0)
			die(from);
	}
	dirs_backdate(root, 10);
}

struct bench_rss {
	long total_kb, anon_kb, file_kb;
};

static long status_field_kb(const char *buf, const char *name)
{
	const char *p = strstr(buf, name);

	return p == NULL ? -1 : strtol(p + strlen(name), NULL, 10);
}

static void rss_get(struct bench_rss *rss_r)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t ret = fd == -1 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd != -1)
		close(fd);
	buf[ret < 0 ? 0 : ret] = '\0';
	rss_r->total_kb = status_field_kb(buf, "VmRSS:");
	rss_r->anon_kb = status_field_kb(buf, "RssAnon:");
	rss_r->file_kb = status_field_kb(buf, "RssFile:");
}

/* In a child: open sessions, read every message, report the RSS
   growth over the child's start through a pipe. */
static void bench_rss_child(const char *root, uint32_t n,
			    unsigned int sessions, int fd)
{
	struct mailbox *boxes[BENCH_SESSIONS_MAX];
	struct bench_rss before, after, diff;
	const char *error;
	uint32_t sum = 0;

	/* the parent's freed heap would hide what the sessions take */
	(void)malloc_trim(0);
	rss_get(&before);
	for (unsigned int i = 0; i < sessions; i++) {
		if (mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				 &boxes[i], &error) != 1 ||
		    mailbox_get_count(boxes[i]) != n)
			_exit(1);
		for (uint32_t seq = 1; seq <= n; seq++) {
			sum += mailbox_msg_uid(boxes[i], seq) +
				mailbox_msg_flags(boxes[i], seq);
		}
	}
	rss_get(&after);
	diff.total_kb = after.total_kb - before.total_kb + (sum == 0);
	diff.anon_kb = after.anon_kb - before.anon_kb;
	diff.file_kb = after.file_kb - before.file_kb;
	if (write(fd, &diff, sizeof(diff)) != sizeof(diff))
		_exit(1);
	for (unsigned int i = 0; i < sessions; i++)
		mailbox_close(&boxes[i]);
	_exit(0);
}

/* Write moat.index with every change of the log in it: a session then
   maps it without copying pages it changed from the log tail. */
static void bench_checkpoint(const char *root)
{
	struct mail_index *index;
	const char *error;

	if (mail_index_open(root, 0, &index, &error) != 1 ||
	    mail_index_checkpoint(index, &error) < 0) {
		fprintf(stderr, "bench-mailbox: checkpoint: %s\n", error);
		exit(1);
	}
	mail_index_close(&index);
}

static void bench_rss(const char *root, uint32_t n, unsigned int sessions,
		      const char *state)
{
	struct bench_rss rss;
	int fds[2], status;

	if (pipe(fds) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(fds[0]);
		bench_rss_child(root, n, sessions, fds[1]);
	}
	close(fds[1]);
	ssize_t ret = read(fds[0], &rss, sizeof(rss));
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0 || ret != sizeof(rss)) {
		fprintf(stderr, "bench-mailbox: memory test child failed\n");
		return;
	}
	printf("N=%-7u %2u session(s), %s: RSS +%ld kB (anon +%ld kB, "
	       "file-backed +%ld kB)\n", n, sessions, state, rss.total_kb,
	       rss.anon_kb, rss.file_kb);
}

static void bench_one(uint32_t n)
{
	char tmpl[] = "/tmp/moat-bench-mailbox-XXXXXX";
	char cmd[PATH_MAX + 16];

	if (mkdtemp(tmpl) == NULL)
		die("mkdtemp");
	bench_create(tmpl, n);
	double first = bench_open(tmpl, n);
	double second = bench_open(tmpl, n);
	bench_rename(tmpl, n);
	double touched = bench_open(tmpl, n);
	double after = bench_open(tmpl, n);
	printf("N=%-7u first open %.4f s, second %.4f s, after renames in "
	       "cur/ %.4f s, next %.4f s\n", n, first, second, touched, after);
	fflush(stdout);
	bench_rss(tmpl, n, 1, "log tail");
	bench_rss(tmpl, n, BENCH_SESSIONS_MAX, "log tail");
	bench_checkpoint(tmpl);
	bench_rss(tmpl, n, 1, "checkpointed");
	bench_rss(tmpl, n, BENCH_SESSIONS_MAX, "checkpointed");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-mailbox: could not remove %s\n", tmpl);
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		bench_one(10000);
		bench_one(100000);
	}
	for (int i = 1; i < argc; i++)
		bench_one((uint32_t)strtoul(argv[i], NULL, 10));
	return 0;
}
