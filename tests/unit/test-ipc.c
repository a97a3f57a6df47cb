/* Unit tests for lib/ipc.c: raw records with fd passing, and connections
   with the VERSION handshake, escaping and malformed input. */
#include "test-common.h"
#include "ipc.h"
#include "log.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

/* A test that has not finished after this long is stuck: fail it. */
#define TEST_GUARD_MSECS 3000
/* Kills the whole program if a blocking call hangs outside the loop. */
#define TEST_ALARM_SECS 60
/* Records one test peer remembers. */
#define TEST_MAX_RECORDS 16
#define TEST_PROTOCOL "test-proto"

static int log_null_fd = -1;

/* The conn logs an error for each malformed record: expected here. */
static void log_silence(bool silence)
{
	if (log_null_fd < 0)
		log_null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	log_set_fd(silence ? log_null_fd : STDERR_FILENO);
}

static void make_pipe(int fds[2])
{
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(2);
	}
}

/* True if every write end of the pipe is closed (read sees EOF). */
static bool pipe_write_end_closed(int read_fd)
{
	char c;
	return read(read_fd, &c, 1) == 0;
}

static int count_open_fds(void)
{
	int count = 0;
	for (int fd = 0; fd < 1024; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			count++;
	}
	return count;
}

/* Sends data with fd_count fds, bypassing ipc_send_raw's limit of one. */
static int send_with_fds(int sock, const char *data, const int *fds,
			 unsigned int fd_count)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = strlen(data) };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} cmsg_buf;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cmsg_buf.buf,
		.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count),
	};
	i_assert(fd_count > 0 && fd_count <= 8);
	memset(&cmsg_buf, 0, sizeof(cmsg_buf));
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
	memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * fd_count);
	return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

/* ---- raw ---- */

static void test_ipc_raw(void)
{
	int sv[2];
	char buf[128];
	int fd;

	alarm(TEST_ALARM_SECS);
	test_assert(ipc_socketpair(sv) == 0);
	test_assert((fcntl(sv[0], F_GETFD) & FD_CLOEXEC) != 0);
	test_assert((fcntl(sv[1], F_GETFD) & FD_CLOEXEC) != 0);

	/* Nothing waiting. */
	fd = 1234;
	errno = 0;
	test_assert(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd) < 0 && errno == EAGAIN);
	test_assert_int(fd, -1);

	/* Record boundaries are kept. */
	test_assert(ipc_send_raw(sv[0], "first\n", 6, -1) == 0);
	test_assert(ipc_send_raw(sv[0], "second\n", 7, -1) == 0);
	test_assert_int(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd), 6);
	test_assert(memcmp(buf, "first\n", 6) == 0);
	test_assert_int(fd, -1);
	test_assert_int(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd), 7);
	test_assert(memcmp(buf, "second\n", 7) == 0);

	/* With an fd: the received one works and is close-on-exec. */
	int p[2];
	make_pipe(p);
	test_assert(ipc_send_raw(sv[0], "FD\n", 3, p[1]) == 0);
	test_assert_int(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd), 3);
	test_assert(fd >= 0 && fd != p[1]);
	if (fd >= 0) {
		test_assert((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
		test_assert(write(fd, "via", 3) == 3);
		test_assert(read(p[0], buf, sizeof(buf)) == 3 &&
			    memcmp(buf, "via", 3) == 0);
		close(fd);
	}
	close(p[1]);
	test_assert(pipe_write_end_closed(p[0]));
	close(p[0]);

	/* Too large for the buffer: an error, not a silent cut. */
	test_assert(ipc_send_raw(sv[0], "0123456789abcdef", 16, -1) == 0);
	errno = 0;
	test_assert(ipc_recv_raw(sv[1], buf, 10, &fd) < 0 && errno == EMSGSIZE);
	test_assert_int(fd, -1);
	/* ...and the next record is intact. */
	test_assert(ipc_send_raw(sv[0], "ok\n", 3, -1) == 0);
	test_assert_int(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd), 3);

	/* EOF. */
	close(sv[0]);
	test_assert_int(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd), 0);
	test_assert_int(fd, -1);
	/* Sending to a closed peer fails (and raises no SIGPIPE). */
	signal(SIGPIPE, SIG_DFL);
	test_assert(ipc_send_raw(sv[1], "x\n", 2, -1) < 0);
	close(sv[1]);
}

static void test_ipc_raw_extra_fds(void)
{
	int sv[2], p1[2], p2[2];
	char buf[128];
	int fd = 99;

	test_assert(ipc_socketpair(sv) == 0);
	int before = count_open_fds();

	/* Two fds with one record: rejected, and both are closed. */
	make_pipe(p1);
	make_pipe(p2);
	int two[2] = { p1[1], p2[1] };
	test_assert(send_with_fds(sv[0], "TWO\n", two, 2) == 0);
	close(p1[1]);
	close(p2[1]);
	errno = 0;
	test_assert(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd) < 0 && errno == EMSGSIZE);
	test_assert_int(fd, -1);
	test_assert(pipe_write_end_closed(p1[0]));
	test_assert(pipe_write_end_closed(p2[0]));
	close(p1[0]);
	close(p2[0]);
	test_assert_int(count_open_fds(), before);

	/* More fds than the receive side has room for: none leak. */
	int pipes[6][2], ends[6];
	for (unsigned int i = 0; i < 6; i++) {
		make_pipe(pipes[i]);
		ends[i] = pipes[i][1];
	}
	test_assert(send_with_fds(sv[0], "SIX\n", ends, 6) == 0);
	for (unsigned int i = 0; i < 6; i++)
		close(pipes[i][1]);
	errno = 0;
	test_assert(ipc_recv_raw(sv[1], buf, sizeof(buf), &fd) < 0 && errno == EMSGSIZE);
	test_assert_int(fd, -1);
	bool all_closed = true;
	for (unsigned int i = 0; i < 6; i++) {
		if (!pipe_write_end_closed(pipes[i][0]))
			all_closed = false;
		close(pipes[i][0]);
	}
	test_assert(all_closed);
	test_assert_int(count_open_fds(), before);

	/* A too large record with an fd: the fd is closed too. */
	make_pipe(p1);
	test_assert(ipc_send_raw(sv[0], "0123456789abcdef", 16, p1[1]) == 0);
	close(p1[1]);
	errno = 0;
	test_assert(ipc_recv_raw(sv[1], buf, 10, &fd) < 0 && errno == EMSGSIZE);
	test_assert_int(fd, -1);
	test_assert(pipe_write_end_closed(p1[0]));
	close(p1[0]);
	test_assert_int(count_open_fds(), before);
	close(sv[0]);
	close(sv[1]);
}

/* ---- connections ---- */

struct peer {
	struct ioloop *ioloop;
	struct ipc_conn *conn;
	pool_t pool;
	/* Each record's fields joined with '|'. */
	const char *records[TEST_MAX_RECORDS];
	unsigned int record_count;
	int fds[TEST_MAX_RECORDS];
	unsigned int closed;       /* callbacks with NULL args */
	unsigned int stop_after;   /* records; 0 = stop only when closed */
	const char *destroy_on;    /* destroy the conn in the callback of this */
	const char *const *expect_args;
	bool expect_args_ok;
};

static void peer_callback(void *context, const char *const *args, int fd)
{
	struct peer *peer = context;

	if (args == NULL) {
		test_assert(fd == -1);
		test_assert(peer->conn != NULL);   /* not after destroy */
		peer->closed++;
		ipc_conn_destroy(&peer->conn);
		io_loop_stop(peer->ioloop);
		return;
	}
	if (peer->expect_args != NULL && strcmp(args[0], peer->expect_args[0]) == 0) {
		unsigned int i;
		for (i = 0; args[i] != NULL && peer->expect_args[i] != NULL; i++) {
			if (strcmp(args[i], peer->expect_args[i]) != 0)
				break;
		}
		peer->expect_args_ok = args[i] == NULL && peer->expect_args[i] == NULL;
	}
	if (peer->record_count < TEST_MAX_RECORDS) {
		char *joined = p_strdup(peer->pool, args[0]);
		for (unsigned int i = 1; args[i] != NULL; i++)
			joined = p_strdup_printf(peer->pool, "%s|%s", joined, args[i]);
		peer->records[peer->record_count] = joined;
		peer->fds[peer->record_count] = fd;
		peer->record_count++;
	} else if (fd >= 0) {
		close(fd);
	}
	if (peer->destroy_on != NULL && strcmp(args[0], peer->destroy_on) == 0) {
		ipc_conn_destroy(&peer->conn);
		io_loop_stop(peer->ioloop);
	}
	if (peer->stop_after != 0 && peer->record_count == peer->stop_after)
		io_loop_stop(peer->ioloop);
}

static void peer_init(struct peer *peer, struct ioloop *ioloop)
{
	memset(peer, 0, sizeof(*peer));
	peer->ioloop = ioloop;
	peer->pool = pool_create("test peer", 1024);
	for (unsigned int i = 0; i < TEST_MAX_RECORDS; i++)
		peer->fds[i] = -1;
}

static void peer_deinit(struct peer *peer)
{
	ipc_conn_destroy(&peer->conn);
	for (unsigned int i = 0; i < TEST_MAX_RECORDS; i++) {
		if (peer->fds[i] >= 0)
			close(peer->fds[i]);
	}
	pool_unref(&peer->pool);
}

struct guard {
	struct ioloop *ioloop;
	struct timeout *to;
};

static void guard_cb(void *context)
{
	struct guard *guard = context;
	/* The timeout removed itself before calling us. */
	guard->to = NULL;
	test_assert(!"guard timeout expired");
	io_loop_stop(guard->ioloop);
}

static void stop_cb(void *context)
{
	io_loop_stop(context);
}

static void run_loop(struct ioloop *ioloop)
{
	struct guard guard = { .ioloop = ioloop };
	guard.to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_cb, &guard);
	io_loop_run(ioloop);
	timeout_remove(&guard.to);
}

static void test_ipc_conn_records(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer a, b;
	int sv[2];

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&a, ioloop);
	peer_init(&b, ioloop);
	a.conn = ipc_conn_create(ioloop, sv[0], "a", TEST_PROTOCOL, 1, 0, peer_callback, &a);
	/* Another minor version is compatible. */
	b.conn = ipc_conn_create(ioloop, sv[1], "b", TEST_PROTOCOL, 1, 7, peer_callback, &b);
	test_assert_int(ipc_conn_get_fd(a.conn), sv[0]);
	test_assert_str(ipc_conn_get_name(b.conn), "b");

	static const char *const tricky[] = {
		"DATA", "tab\there", "multi\nline\r\n", "back\\slash\\t",
		"", "\001soh", "\\", "plain", NULL
	};
	b.expect_args = tricky;
	b.stop_after = 3;
	test_assert(ipc_sendv(a.conn, -1, "HELLO", "world", NULL) == 0);
	test_assert(ipc_send(a.conn, tricky, -1) == 0);
	test_assert(ipc_sendv(a.conn, -1, "BARE", NULL) == 0);
	run_loop(ioloop);
	test_assert_int(b.record_count, 3);
	/* The VERSION record is handled inside and never shows up. */
	test_assert_str(b.records[0], "HELLO|world");
	test_assert(b.expect_args_ok);
	test_assert_str(b.records[2], "BARE");
	test_assert_int(b.closed, 0);

	/* The other direction, with an fd. */
	int p[2];
	make_pipe(p);
	a.stop_after = 1;
	test_assert(ipc_sendv(b.conn, p[1], "FD", "for you", NULL) == 0);
	close(p[1]);
	run_loop(ioloop);
	test_assert_int(a.record_count, 1);
	test_assert_str(a.records[0], "FD|for you");
	int fd = a.fds[0];
	test_assert(fd >= 0);
	if (fd >= 0) {
		char buf[16];
		test_assert(write(fd, "hi", 2) == 2);
		test_assert(read(p[0], buf, sizeof(buf)) == 2 && memcmp(buf, "hi", 2) == 0);
	}
	test_assert(a.record_count == 1 && a.fds[0] >= 0);
	close(p[0]);

	/* One side goes away: the other gets NULL args. */
	ipc_conn_destroy(&a.conn);
	test_assert(a.conn == NULL);
	run_loop(ioloop);
	test_assert_int(b.closed, 1);
	test_assert(b.conn == NULL);

	peer_deinit(&a);
	peer_deinit(&b);
	io_loop_destroy(&ioloop);
}

static void test_ipc_conn_limits(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer a, b;
	int sv[2];

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&a, ioloop);
	peer_init(&b, ioloop);
	a.conn = ipc_conn_create(ioloop, sv[0], "a", TEST_PROTOCOL, 1, 0, peer_callback, &a);
	b.conn = ipc_conn_create(ioloop, sv[1], "b", TEST_PROTOCOL, 1, 0, peer_callback, &b);

	/* IPC_MAX_ARGS fields and a record of exactly the maximum size are
	   fine. */
	const char *args[IPC_MAX_ARGS + 1];
	args[0] = "MANY";
	for (unsigned int i = 1; i < IPC_MAX_ARGS; i++)
		args[i] = "x";
	args[IPC_MAX_ARGS] = NULL;
	test_assert(ipc_send(a.conn, args, -1) == 0);
	/* "BIG\t" + payload + "\n" */
	size_t payload_len = IPC_MAX_RECORD_SIZE - 5;
	char *payload = i_malloc(payload_len + 1);
	memset(payload, 'y', payload_len);
	test_assert(ipc_sendv(a.conn, -1, "BIG", payload, NULL) == 0);
	b.stop_after = 2;
	run_loop(ioloop);
	test_assert_int(b.record_count, 2);
	test_assert_int(b.closed, 0);
	if (b.record_count == 2) {
		test_assert_int(strlen(b.records[0]), 4 + 2 * (IPC_MAX_ARGS - 1));
		test_assert_int(strlen(b.records[1]), 4 + payload_len);
	}
	i_free(payload);
	peer_deinit(&a);
	peer_deinit(&b);
	io_loop_destroy(&ioloop);
}

/* Two conns that must refuse each other at the handshake. */
static void check_handshake_refused(const char *proto_a, unsigned int major_a,
				    const char *proto_b, unsigned int major_b)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer a, b;
	int sv[2];

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&a, ioloop);
	peer_init(&b, ioloop);
	a.conn = ipc_conn_create(ioloop, sv[0], "a", proto_a, major_a, 0, peer_callback, &a);
	b.conn = ipc_conn_create(ioloop, sv[1], "b", proto_b, major_b, 0, peer_callback, &b);
	(void)ipc_sendv(a.conn, -1, "AFTER", NULL);
	(void)ipc_sendv(b.conn, -1, "AFTER", NULL);
	run_loop(ioloop);
	if (a.conn != NULL || b.conn != NULL)
		run_loop(ioloop);
	test_assert_int(a.closed, 1);
	test_assert_int(b.closed, 1);
	/* No record got through after the bad VERSION. */
	test_assert_int(a.record_count, 0);
	test_assert_int(b.record_count, 0);
	peer_deinit(&a);
	peer_deinit(&b);
	io_loop_destroy(&ioloop);
}

static void test_ipc_conn_bad_version(void)
{
	log_silence(true);
	check_handshake_refused("auth", 1, "master", 1);
	check_handshake_refused(TEST_PROTOCOL, 1, TEST_PROTOCOL, 2);
	check_handshake_refused(TEST_PROTOCOL, 1, TEST_PROTOCOL "x", 1);
	log_silence(false);
}

struct raw_case {
	const char *name;
	const char *data;      /* sent after the VERSION record */
	size_t size;           /* 0 = strlen(data) */
	bool with_fd;
};

/* A conn with a raw socket as its peer, which sends handshake and a good
   record (unless handshake is NULL) and then rc's raw record. */
static void run_raw_case(const char *handshake, const struct raw_case *rc,
			 unsigned int *records_r, unsigned int *closed_r)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer peer;
	int sv[2], p[2] = { -1, -1 };
	char buf[256];
	int fd;

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&peer, ioloop);
	peer.conn = ipc_conn_create(ioloop, sv[0], "raw", TEST_PROTOCOL, 1, 0,
				    peer_callback, &peer);
	/* The conn sends its VERSION first. */
	ssize_t ret = ipc_recv_raw(sv[1], buf, sizeof(buf), &fd);
	test_assert(ret > 0 && strncmp(buf, "VERSION\t" TEST_PROTOCOL "\t1\t0\n",
				       (size_t)ret) == 0);
	if (handshake != NULL) {
		/* "GOOD" and the case's record, if it is accepted. */
		peer.stop_after = 2;
		test_assert(ipc_send_raw(sv[1], handshake, strlen(handshake), -1) == 0);
		test_assert(ipc_send_raw(sv[1], "GOOD\n", 5, -1) == 0);
	}
	if (rc->with_fd)
		make_pipe(p);
	size_t size = rc->size != 0 ? rc->size : strlen(rc->data);
	test_assert(ipc_send_raw(sv[1], rc->data, size, p[1]) == 0);
	if (p[1] >= 0)
		close(p[1]);
	run_loop(ioloop);
	*records_r = peer.record_count;
	*closed_r = peer.closed;
	if (peer.closed > 0) {
		/* The conn's socket is closed: the raw side sees EOF, or a
		   reset if the conn left records unread. */
		ret = ipc_recv_raw(sv[1], buf, sizeof(buf), &fd);
		test_assert(ret == 0 || (ret < 0 && errno == ECONNRESET));
	}
	if (p[0] >= 0) {
		/* A rejected record's fd is closed, never leaked. */
		if (peer.closed > 0)
			test_assert(pipe_write_end_closed(p[0]));
		close(p[0]);
	}
	peer_deinit(&peer);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

static void test_ipc_conn_malformed(void)
{
	static const char handshake[] = "VERSION\t" TEST_PROTOCOL "\t1\t3\n";
	char *too_many = i_malloc(4 + 2 * (IPC_MAX_ARGS + 1) + 1);
	strcpy(too_many, "MANY");
	for (unsigned int i = 1; i <= IPC_MAX_ARGS; i++)
		strcat(too_many, "\tx");
	strcat(too_many, "\n");
	char *too_big = i_malloc(IPC_MAX_RECORD_SIZE + 2);
	memset(too_big, 'z', IPC_MAX_RECORD_SIZE + 1);
	too_big[IPC_MAX_RECORD_SIZE] = '\n';

	const struct raw_case cases[] = {
		{ "no trailing LF", "NOLF\targ", 0, false },
		{ "bad escape", "ESC\tbad\\xescape\n", 0, false },
		{ "lone backslash", "ESC\tend\\\n", 0, false },
		{ "NUL byte", "NUL\tab\0cd\n", 11, false },
		{ "too many args", too_many, 0, false },
		{ "over max size", too_big, IPC_MAX_RECORD_SIZE + 1, false },
		{ "bad escape with fd", "ESC\t\\q\n", 0, true },
		{ "raw LF inside", "TWO\nLINES\n", 0, false },
	};
	unsigned int records, closed;

	log_silence(true);
	for (unsigned int i = 0; i < N_ELEMENTS(cases); i++) {
		run_raw_case(handshake, &cases[i], &records, &closed);
		/* The good record before it arrived, then the close. */
		if (records != 1 || closed != 1) {
			fprintf(stderr, "case %s: records=%u closed=%u\n",
				cases[i].name, records, closed);
		}
		test_assert_int(records, 1);
		test_assert_int(closed, 1);
	}

	/* A valid record carrying an fd is accepted: the callback owns it. */
	const struct raw_case fd_ok = { "fd", "FD\n", 0, true };
	run_raw_case(handshake, &fd_ok, &records, &closed);
	test_assert_int(closed, 0);
	test_assert_int(records, 2);

	/* Bad handshakes: not VERSION first, missing fields, bad major. */
	static const char *const bad_handshakes[] = {
		"HELLO\n",
		"VERSION\t" TEST_PROTOCOL "\t1\n",
		"VERSION\t" TEST_PROTOCOL "\tone\t0\n",
		"VERSION\t" TEST_PROTOCOL "\t1\t0\textra\n",
		"VERSION\t" TEST_PROTOCOL "\t01x\t0\n",
	};
	const struct raw_case after = { "after", "AFTER\n", 0, false };
	for (unsigned int i = 0; i < N_ELEMENTS(bad_handshakes); i++) {
		run_raw_case(bad_handshakes[i], &after, &records, &closed);
		test_assert_int(records, 0);
		test_assert_int(closed, 1);
	}
	/* A VERSION record must not carry an fd. */
	const struct raw_case version_fd = {
		"version fd", "VERSION\t" TEST_PROTOCOL "\t1\t0\n", 0, true
	};
	run_raw_case(NULL, &version_fd, &records, &closed);
	test_assert_int(records, 0);
	test_assert_int(closed, 1);

	log_silence(false);
	i_free(too_many);
	i_free(too_big);
}

static void test_ipc_conn_destroy_in_callback(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer peer;
	int sv[2];

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&peer, ioloop);
	peer.destroy_on = "QUIT";
	peer.conn = ipc_conn_create(ioloop, sv[0], "d", TEST_PROTOCOL, 1, 0,
				    peer_callback, &peer);
	static const char *const records[] = {
		"VERSION\t" TEST_PROTOCOL "\t1\t0\n", "ONE\n", "QUIT\n", "LATER\n",
	};
	/* All queued before the conn reads: one wakeup sees them all. */
	for (unsigned int i = 0; i < N_ELEMENTS(records); i++) {
		test_assert(ipc_send_raw(sv[1], records[i], strlen(records[i]), -1) == 0);
	}
	run_loop(ioloop);
	test_assert(peer.conn == NULL);
	test_assert_int(peer.record_count, 2);
	test_assert_str(peer.records[0], "ONE");
	test_assert_str(peer.records[1], "QUIT");
	/* No NULL-args call after the owner destroyed it. */
	test_assert_int(peer.closed, 0);
	/* Nothing runs later for the freed conn. */
	(void)timeout_add(ioloop, 30, stop_cb, ioloop);
	io_loop_run(ioloop);
	test_assert_int(peer.record_count, 2);
	peer_deinit(&peer);
	close(sv[1]);

	/* Destroyed from the NULL-args callback of a malformed record that
	   followed a good one in the same wakeup. */
	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&peer, ioloop);
	peer.conn = ipc_conn_create(ioloop, sv[0], "d", TEST_PROTOCOL, 1, 0,
				    peer_callback, &peer);
	log_silence(true);
	test_assert(ipc_send_raw(sv[1], records[0], strlen(records[0]), -1) == 0);
	test_assert(ipc_send_raw(sv[1], "ONE\n", 4, -1) == 0);
	test_assert(ipc_send_raw(sv[1], "BAD", 3, -1) == 0);
	test_assert(ipc_send_raw(sv[1], "NEVER\n", 6, -1) == 0);
	run_loop(ioloop);
	log_silence(false);
	test_assert_int(peer.record_count, 1);
	test_assert_int(peer.closed, 1);
	test_assert(peer.conn == NULL);
	peer_deinit(&peer);
	close(sv[1]);
	io_loop_destroy(&ioloop);
}

static void resume_cb(void *context)
{
	struct peer *peer = context;
	ipc_conn_pause(peer->conn, false);
}

static void test_ipc_conn_pause_and_send_fail(void)
{
	struct ioloop *ioloop = io_loop_create();
	struct peer a, b;
	int sv[2];

	test_assert(ipc_socketpair(sv) == 0);
	peer_init(&a, ioloop);
	peer_init(&b, ioloop);
	a.conn = ipc_conn_create(ioloop, sv[0], "a", TEST_PROTOCOL, 1, 0, peer_callback, &a);
	b.conn = ipc_conn_create(ioloop, sv[1], "b", TEST_PROTOCOL, 1, 0, peer_callback, &b);

	/* While paused nothing is delivered; resuming delivers in order. */
	ipc_conn_pause(b.conn, true);
	ipc_conn_pause(b.conn, true);
	test_assert(ipc_sendv(a.conn, -1, "R1", NULL) == 0);
	test_assert(ipc_sendv(a.conn, -1, "R2", NULL) == 0);
	(void)timeout_add(ioloop, 40, resume_cb, &b);
	b.stop_after = 2;
	uint64_t start = time_monotonic_ms();
	run_loop(ioloop);
	test_assert(time_monotonic_ms() - start >= 40);
	test_assert_int(b.record_count, 2);
	test_assert_str(b.records[0], "R1");
	test_assert_str(b.records[1], "R2");

	/* Sending to a peer that is gone fails without killing us. */
	signal(SIGPIPE, SIG_DFL);
	ipc_conn_destroy(&b.conn);
	log_silence(true);
	test_assert(ipc_sendv(a.conn, -1, "LOST", NULL) < 0);
	log_silence(false);
	run_loop(ioloop);
	test_assert_int(a.closed, 1);
	/* A channel already destroyed (NULL): the same failure, no crash. */
	test_assert(b.conn == NULL);
	test_assert(ipc_sendv(b.conn, -1, "LOST", NULL) < 0);
	peer_deinit(&a);
	peer_deinit(&b);
	io_loop_destroy(&ioloop);
}

TEST_MAIN(
	TEST(test_ipc_raw),
	TEST(test_ipc_raw_extra_fds),
	TEST(test_ipc_conn_records),
	TEST(test_ipc_conn_limits),
	TEST(test_ipc_conn_bad_version),
	TEST(test_ipc_conn_malformed),
	TEST(test_ipc_conn_destroy_in_callback),
	TEST(test_ipc_conn_pause_and_send_fail),
)
