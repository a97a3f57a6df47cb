/* Crash test for the index files: a child commits random appends, flag
   changes, expunges and cache adds in a loop and reports each one on a
   pipe before ("P ...") and after it is acknowledged. The parent SIGKILLs
   it at a random moment, reopens the index and checks: it opens; every
   acknowledged change is there (the one in flight may or may not be); no
   uid is duplicated, resurrected or reused; cache hits hold the right
   value. Some rounds also write garbage after the log's last record (a
   torn write).

   Usage: crash-index [rounds [dir]]   (default 200 rounds, a temp dir)
   MOAT_CRASH_SEED=n repeats a run; MOAT_CRASH_FSYNC=1 fsyncs commits. */
#include "lib.h"
#include "log.h"
#include "mail-index.h"
#include "mail-cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_UID (4U * 1024 * 1024)
#define LINE_MAX_LEN 128
/* What the parent reads from one child round (lines are short). */
#define PIPE_BUF_MAX (4U * 1024 * 1024)

enum uid_state { UID_UNKNOWN = 0, UID_ALIVE, UID_EXPUNGED };

static unsigned char *state, *flags_of;
static uint32_t floor_uid;       /* every uid ever seen is <= this */
static unsigned int seed;

static unsigned int rnd(void)
{
	return (unsigned int)rand_r(&seed);
}

static void report(int fd, const char *fmt, ...) ATTR_FORMAT(2, 3);
static void report(int fd, const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	va_list args;

	va_start(args, fmt);
	int len = vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	/* One write per line: shorter than PIPE_BUF, so never split. */
	if (write(fd, line, (size_t)len) != len)
		_exit(3);
}

static void child_commit(struct mail_index_transaction **t,
			 struct mail_index_commit_result *res)
{
	const char *error;
	bool do_fsync = getenv("MOAT_CRASH_FSYNC") != NULL;

	if (mail_index_transaction_commit(t, do_fsync ? MAIL_INDEX_FSYNC_ALWAYS :
					  MAIL_INDEX_FSYNC_NEVER, res, &error) < 0)
		i_fatal("child commit: %s", error);
}

static uint32_t child_pick_uid(struct mail_index_view *view)
{
	uint32_t count = mail_index_view_count(view);

	return count == 0 ? 0 : mail_index_view_lookup(view, 1 + rnd() % count)->uid;
}

static void child_step(struct mail_index *index, struct mail_index_view *view,
		       int fd)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(index);
	struct mail_index_commit_result res;
	unsigned int op = rnd() % 10;
	uint32_t uid = child_pick_uid(view);
	uint8_t flags = (uint8_t)(rnd() & MAIL_FLAGS_PERMANENT);

	if (op < 4 || uid == 0) {
		unsigned int n = 1 + rnd() % 3;
		for (unsigned int i = 0; i < n; i++)
			mail_index_append(t, 0, flags, 0, 100, 100);
		report(fd, "P A\n");
		child_commit(&t, &res);
		/* One line for all: the kill may not split the report. */
		report(fd, "A %u %u %u\n", res.first_uid, res.last_uid, flags);
	} else if (op < 7) {
		mail_index_update_flags(t, uid, uid, flags,
					(uint8_t)(~flags & MAIL_FLAGS_PERMANENT), 0, 0);
		report(fd, "P F %u\n", uid);
		child_commit(&t, &res);
		report(fd, "F %u %u\n", uid, flags);
	} else if (op < 9) {
		mail_index_expunge(t, uid, uid);
		report(fd, "P E %u\n", uid);
		child_commit(&t, &res);
		report(fd, "E %u\n", uid);
	} else {
		char value[32];
		int len = snprintf(value, sizeof(value), "c%u", uid);
		if (mail_cache_add(t, uid, "v", value, (size_t)len) < 0)
			i_fatal("cache add");
		child_commit(&t, &res);
	}
}

static void ATTR_NORETURN child_main(const char *dir, int fd)
{
	struct mail_index *index;
	const char *error;

	if (mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) != 1)
		i_fatal("child open: %s", error);
	/* Small limits: checkpoints and rotations happen every few commits,
	   so kills land inside them too. */
	mail_index_set_limits(index, 16384, 2048);
	struct mail_index_view *view = mail_index_view_open(index);
	for (;;) {
		if (mail_index_view_sync(view, NULL, NULL, &error) < 0)
			i_fatal("child sync: %s", error);
		child_step(index, view, fd);
	}
}

/* ---- parent ---- */

struct round {
	char pending_op;            /* 'A', 'F', 'E' or 0 */
	uint32_t pending_uid;
	unsigned int acks;
};

static bool parse_line(struct round *r, const char *line)
{
	unsigned int uid = 0, flags = 0, last = 0;

	if (line[0] == 'P') {
		r->pending_op = line[2];
		r->pending_uid = line[2] == 'A' ? 0 : (uint32_t)strtoul(line + 4, NULL, 10);
		return true;
	}
	if (sscanf(line + 1, "%u %u %u", &uid, &flags, &last) < 1 || uid == 0 ||
	    uid >= MAX_UID)
		return false;
	r->acks++;
	switch (line[0]) {
	case 'A':
		/* "A first last flags" */
		if (flags < uid || flags >= MAX_UID)
			return false;
		for (uint32_t u = uid; u <= flags; u++) {
			if (u <= floor_uid || state[u] != UID_UNKNOWN) {
				fprintf(stderr, "uid %u reused (floor %u)\n", u, floor_uid);
				return false;
			}
			state[u] = UID_ALIVE;
			flags_of[u] = (unsigned char)last;
		}
		break;
	case 'F':
		if (state[uid] == UID_ALIVE)
			flags_of[uid] = (unsigned char)flags;
		break;
	case 'E':
		state[uid] = UID_EXPUNGED;
		break;
	default:
		return false;
	}
	r->pending_op = 0;
	return true;
}

static bool read_reports(int fd, struct round *r)
{
	static char buf[PIPE_BUF_MAX + 1];
	size_t used = 0;
	ssize_t ret;

	while ((ret = read(fd, buf + used, PIPE_BUF_MAX - used)) > 0)
		used += (size_t)ret;
	buf[used] = '\0';
	char *line = buf, *nl;
	while ((nl = strchr(line, '\n')) != NULL) {
		*nl = '\0';
		if (!parse_line(r, line))
			return false;
		line = nl + 1;
	}
	return true;
}

static bool check_cache(struct mail_index_view *view, uint32_t seq, uint32_t uid)
{
	const void *data;
	size_t size;
	char want[32];

	if (mail_cache_lookup(view, seq, "v", &data, &size) != 1)
		return true;
	int len = snprintf(want, sizeof(want), "c%u", uid);
	return size == (size_t)len && memcmp(data, want, size) == 0;
}

/* Compare the index with what was acknowledged, then adopt its state. */
static bool check_index(const char *dir, const struct round *r)
{
	struct mail_index *index;
	struct mail_index_status st;
	const char *error;
	bool ok = true;

	if (mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &index, &error) != 1) {
		fprintf(stderr, "open failed: %s\n", error);
		return false;
	}
	struct mail_index_view *view = mail_index_view_open(index);
	mail_index_view_get_status(view, &st);
	if (!mail_index_view_check(view, &error)) {
		fprintf(stderr, "index check: %s\n", error);
		ok = false;
	}
	uint32_t count = mail_index_view_count(view), seq = 1;
	for (uint32_t uid = 1; ok && uid < st.next_uid && uid < MAX_UID; uid++) {
		const struct mail_index_record *rec = seq <= count ?
			mail_index_view_lookup(view, seq) : NULL;
		bool present = rec != NULL && rec->uid == uid;
		bool in_flight = r->pending_uid == uid ||
			(r->pending_op == 'A' && uid > floor_uid && state[uid] == UID_UNKNOWN);
		if (present && !check_cache(view, seq, uid)) {
			fprintf(stderr, "uid %u: wrong cached value\n", uid);
			ok = false;
		}
		if (in_flight) {
			/* Either outcome is right: adopt what the index says. */
		} else if (state[uid] == UID_ALIVE && !present) {
			fprintf(stderr, "acknowledged uid %u lost\n", uid);
			ok = false;
		} else if (state[uid] != UID_ALIVE && present) {
			fprintf(stderr, "uid %u present but %s\n", uid,
				state[uid] == UID_EXPUNGED ? "expunged" : "never acknowledged");
			ok = false;
		} else if (present && rec->flags != flags_of[uid]) {
			fprintf(stderr, "uid %u flags %u, acknowledged %u\n",
				uid, rec->flags, flags_of[uid]);
			ok = false;
		}
		if (present) {
			state[uid] = UID_ALIVE;
			flags_of[uid] = rec->flags;
			seq++;
		} else if (state[uid] == UID_ALIVE || in_flight) {
			state[uid] = UID_EXPUNGED;
		}
	}
	if (seq != count + 1) {
		fprintf(stderr, "index has uids >= next_uid %u\n", st.next_uid);
		ok = false;
	}
	if (st.next_uid - 1 > floor_uid)
		floor_uid = st.next_uid - 1;
	mail_index_view_close(&view);
	mail_index_close(&index);
	return ok;
}

/* Where the log's records end: a torn append lands there, over the zeros
   written ahead of them (doc/index-format.md), not at the file's end. */
static off_t log_records_end(int fd)
{
	unsigned char b[4];
	off_t pos;

	if (pread(fd, b, 2, 6) != 2)
		return -1;
	pos = b[0] | (b[1] << 8);   /* header_size */
	while (pread(fd, b, 4, pos) == 4) {
		uint32_t size = (uint32_t)b[0] | ((uint32_t)b[1] << 8) |
			((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
		if (size == 0)
			break;
		pos += size;
	}
	return pos;
}

static void add_torn_tail(const char *dir)
{
	char path[PATH_MAX];
	unsigned char junk[64];

	snprintf(path, sizeof(path), "%s/%s", dir, MAIL_INDEX_LOG_FILE_NAME);
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return;
	off_t end = log_records_end(fd);
	if (end < 0) {
		i_close_fd(&fd);
		return;
	}
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rnd();
	junk[0] = 0x40;   /* a plausible size: looks like a record start */
	junk[1] = junk[2] = junk[3] = 0;
	if (pwrite(fd, junk, 1 + rnd() % sizeof(junk), end) < 0)
		i_fatal("pwrite(%s): %m", path);
	i_close_fd(&fd);
}

static bool run_round(const char *dir, unsigned int round)
{
	struct round r;
	int fds[2];

	memset(&r, 0, sizeof(r));
	if (pipe(fds) < 0)
		i_fatal("pipe: %m");
	unsigned int child_seed = rnd();
	pid_t pid = fork();
	if (pid < 0)
		i_fatal("fork: %m");
	if (pid == 0) {
		close(fds[0]);
		seed = child_seed;
		child_main(dir, fds[1]);
	}
	close(fds[1]);
	struct timespec ts = { 0, (long)(1 + rnd() % 25) * 1000000L };
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	int status;
	(void)waitpid(pid, &status, 0);
	bool ok = read_reports(fds[0], &r);
	close(fds[0]);
	if (WIFEXITED(status)) {
		fprintf(stderr, "round %u: child exited with %d\n", round,
			WEXITSTATUS(status));
		ok = false;
	}
	if (rnd() % 10 == 0)
		add_torn_tail(dir);
	return check_index(dir, &r) && ok;
}

int main(int argc, char *argv[])
{
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 200;
	char tmpl[] = "/tmp/moat-crash-XXXXXX";
	const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);
	const char *env = getenv("MOAT_CRASH_SEED");

	if (dir == NULL)
		i_fatal("mkdtemp: %m");
	seed = env != NULL ? (unsigned int)strtoul(env, NULL, 10) :
		(unsigned int)time(NULL) ^ (unsigned int)getpid();
	printf("crash-index: %u rounds in %s, seed %u (MOAT_CRASH_SEED to repeat)\n",
	       rounds, dir, seed);
	fflush(stdout);
	state = i_malloc(MAX_UID);
	flags_of = i_malloc(MAX_UID);
	unsigned int failed = 0, first_seed = seed;
	for (unsigned int i = 0; i < rounds && failed == 0; i++) {
		if (!run_round(dir, i)) {
			fprintf(stderr, "crash-index: round %u FAILED (MOAT_CRASH_SEED=%u)\n",
				i, first_seed);
			failed++;
		}
	}
	printf("crash-index: %u rounds, %s, last uid %u\n", rounds,
	       failed == 0 ? "ok" : "FAILED", floor_uid);
	if (failed == 0 && argc <= 2) {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return failed == 0 ? 0 : 1;
}
