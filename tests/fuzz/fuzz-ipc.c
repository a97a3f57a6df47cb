/* libFuzzer target for the internal record framing (lib/ipc.c: the
   tab-escaped records every moat process reads from its peers) and the
   auth <-> auth-worker records over it (auth/auth-worker-protocol.c).
   A compromised imap-login or auth speaks this to the next process, so
   a record must be taken apart safely whatever it holds. Built and run
   by tests/fuzz/run.sh.

   Input: records separated by NUL bytes (a NUL inside a record is
   malformed anyway); if byte 0 is odd the whole input is also sent as one
   record first. They go, after the handshake, through a SOCK_SEQPACKET
   pair into an ipc_conn (as many as the socket buffer takes), then EOF. Checked: the callback sees at most
   IPC_MAX_ARGS fields, each a C string within the record's size; after a
   malformed record it hears of nothing but the end; every parsed
   auth-worker record's fields satisfy the protocol's bounds. */

#include "lib.h"
#include "ioloop.h"
#include "ipc.h"
#include "auth-worker-protocol.h"
#include "log.h"

#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_state {
	struct ioloop *ioloop;
	struct ipc_conn *conn;
	size_t max_record;
	bool ended;
};

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

static void check_field(const char *value, size_t max, bool allow_empty)
{
	check(value != NULL && auth_worker_field_valid(value, max, allow_empty),
	      "parsed auth-worker field within bounds");
}

static void fuzz_worker_records(const char *const *args)
{
	struct auth_worker_request req;
	struct auth_worker_reply reply;

	if (auth_worker_parse_request(args, &req) == 0) {
		check_field(req.driver, AUTH_WORKER_DRIVER_MAX_LEN, false);
		check_field(req.user, AUTH_WORKER_USER_MAX_LEN, false);
		if (req.type == AUTH_WORKER_PASSV) {
			check_field(req.password_b64,
				    AUTH_WORKER_PASSWORD_B64_MAX_LEN, true);
			check_field(req.rip, AUTH_WORKER_IP_MAX_LEN, true);
		}
	}
	if (auth_worker_parse_reply(args, &reply) == 0) {
		if (reply.type == AUTH_WORKER_REPLY_OK)
			check_field(reply.user, AUTH_WORKER_USER_MAX_LEN, false);
		if (reply.type == AUTH_WORKER_REPLY_USER)
			check_field(reply.home, AUTH_WORKER_HOME_MAX_LEN, true);
	}
}

static void fuzz_input(void *context, const char *const *args, int fd)
{
	struct fuzz_state *st = context;

	check(fd < 0, "no fd was sent");
	check(!st->ended, "nothing after the end");
	if (args == NULL) {
		st->ended = true;
		ipc_conn_destroy(&st->conn);
		io_loop_stop(st->ioloop);
		return;
	}
	unsigned int count = 0;
	size_t total = 0;
	for (; args[count] != NULL; count++)
		total += strlen(args[count]);
	check(count >= 1 && count <= IPC_MAX_ARGS, "field count");
	check(total <= st->max_record, "fields fit the record");
	fuzz_worker_records(args);
}

/* Returns false once the socket is full: the rest of the input is
   dropped (ipc_send_raw would wait for a reader, and the reader runs only
   after everything is sent). */
static bool send_record(int fd, const uint8_t *data, size_t size,
			size_t *max_r)
{
	if (size > IPC_MAX_RECORD_SIZE + 16)
		size = IPC_MAX_RECORD_SIZE + 16;
	ssize_t ret = send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (ret < 0)
		return false;
	if ((size_t)ret > *max_r)
		*max_r = (size_t)ret;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char hello[] = "VERSION\tfuzz\t1\t0\n";
	struct fuzz_state st = { .max_record = 0 };
	int fds[2];

	log_set_fd(-1);
	check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0,
	      "socketpair");
	st.ioloop = io_loop_create();
	st.conn = ipc_conn_create(st.ioloop, fds[0], "fuzz", "fuzz", 1, 0,
				  fuzz_input, &st);
	check(send_record(fds[1], (const uint8_t *)hello, sizeof(hello) - 1,
			  &st.max_record), "handshake sent");
	if (size > 0 && (data[0] & 1) != 0)
		(void)send_record(fds[1], data, size, &st.max_record);
	for (size_t start = 0; start < size;) {
		const uint8_t *nul = memchr(data + start, '\0', size - start);
		size_t end = nul == NULL ? size : (size_t)(nul - data);
		if (!send_record(fds[1], data + start, end - start,
				 &st.max_record))
			break;
		start = end + 1;
	}
	close(fds[1]);
	io_loop_run(st.ioloop);
	check(st.ended && st.conn == NULL, "the end was reported");
	io_loop_destroy(&st.ioloop);
	return 0;
}
