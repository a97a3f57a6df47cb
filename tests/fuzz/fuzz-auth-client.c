/* libFuzzer target for the moat-auth-client records
   (lib/auth-client-protocol.c): the AUTH and CONT records imap-login
   sends auth, and the CONT, OK and FAIL records auth answers with, which
   imap-login takes apart. A compromised imap-login speaks this to auth
   (and a compromised auth to every imap-login), so each end must take a
   record apart safely whatever it holds. Built and run by
   tests/fuzz/run.sh.

   Input: records separated by NUL bytes, each sent after the handshake
   through a SOCK_SEQPACKET pair into an ipc_conn (lib/ipc.c: the framing
   both ends read it with; as many as the socket buffer takes), then EOF.
   Every record that arrives goes to both parsers. Checked: a parsed
   request or reply keeps the protocol's bounds (ids, addresses,
   cert_user, the token's form, FAIL's optional text), and written back
   as fields it parses again to the same record. */

#include "lib.h"
#include "ioloop.h"
#include "ipc.h"
#include "auth-client-protocol.h"
#include "master-service.h"
#include "log.h"

#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* AUTH with both optional fields, and NULL */
#define FUZZ_MAX_FIELDS (7 + AUTH_PROTO_MAX_OPTIONAL + 1)
/* "cert_user=" and the longest user */
#define FUZZ_OPTIONAL_MAX (16 + AUTH_PROTO_USER_MAX_LEN)

struct fuzz_state {
	struct ioloop *ioloop;
	struct ipc_conn *conn;
	bool ended;
};

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
		(a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool requests_equal(const struct auth_proto_request *a,
			   const struct auth_proto_request *b)
{
	return a->type == b->type && str_eq(a->id, b->id) &&
		str_eq(a->mech, b->mech) && str_eq(a->remote_ip, b->remote_ip) &&
		str_eq(a->local_ip, b->local_ip) &&
		str_eq(a->initial_b64, b->initial_b64) &&
		a->secured == b->secured &&
		str_eq(a->cbind_b64, b->cbind_b64) &&
		str_eq(a->cert_user, b->cert_user) &&
		str_eq(a->response, b->response);
}

/* The fields imap-login would send for req (login-auth.c's order). */
static void request_write(const struct auth_proto_request *req,
			  const char *fields[FUZZ_MAX_FIELDS],
			  char cbind[], size_t cbind_size,
			  char cert[FUZZ_OPTIONAL_MAX])
{
	unsigned int n = 0;

	if (req->type == AUTH_PROTO_REQUEST_CONT) {
		fields[n++] = "CONT";
		fields[n++] = req->id;
		fields[n++] = req->response;
		fields[n] = NULL;
		return;
	}
	fields[n++] = "AUTH";
	fields[n++] = req->id;
	fields[n++] = req->mech;
	fields[n++] = req->remote_ip;
	fields[n++] = req->local_ip;
	fields[n++] = req->secured ? "1" : "0";
	fields[n++] = req->initial_b64;
	if (req->cbind_b64 != NULL) {
		(void)snprintf(cbind, cbind_size, "cbind=%s", req->cbind_b64);
		fields[n++] = cbind;
	}
	if (req->cert_user != NULL) {
		(void)snprintf(cert, FUZZ_OPTIONAL_MAX, "cert_user=%s",
			       req->cert_user);
		fields[n++] = cert;
	}
	fields[n] = NULL;
}

static void fuzz_request(const char *const *args)
{
	struct auth_proto_request req, again;
	const char *error;

	if (auth_proto_parse_request(args, &req, &error) < 0) {
		check(error != NULL && error[0] != '\0', "an error text");
		return;
	}
	check(req.id != NULL && strlen(req.id) <= AUTH_PROTO_ID_MAX_LEN,
	      "request id within bounds");
	if (req.type == AUTH_PROTO_REQUEST_AUTH) {
		check(req.id[0] != '\0', "AUTH id not empty");
		check(strlen(req.remote_ip) <= AUTH_PROTO_IP_MAX_LEN &&
		      strlen(req.local_ip) <= AUTH_PROTO_IP_MAX_LEN,
		      "addresses within bounds");
		check(req.mech != NULL && req.initial_b64 != NULL, "AUTH fields");
		check(req.response == NULL, "no CONT field in AUTH");
		if (req.cbind_b64 != NULL)
			check(req.cbind_b64[0] != '\0', "cbind not empty");
		if (req.cert_user != NULL) {
			size_t len = strlen(req.cert_user);
			check(len > 0 && len <= AUTH_PROTO_USER_MAX_LEN,
			      "cert_user within bounds");
			for (size_t i = 0; i < len; i++)
				check((unsigned char)req.cert_user[i] >= 0x20 &&
				      req.cert_user[i] != 0x7f,
				      "cert_user without control characters");
		}
	} else {
		check(req.response != NULL && req.mech == NULL, "CONT fields");
	}
	/* written back, it parses to the same request */
	const char *fields[FUZZ_MAX_FIELDS];
	size_t cbind_size = req.cbind_b64 == NULL ? 1 :
		strlen(req.cbind_b64) + sizeof("cbind=");
	char *cbind = i_malloc(cbind_size);
	char cert[FUZZ_OPTIONAL_MAX];
	request_write(&req, fields, cbind, cbind_size, cert);
	check(auth_proto_parse_request(fields, &again, &error) == 0,
	      "a written request parses");
	check(requests_equal(&req, &again), "the same request");
	i_free(cbind);
}

static void fuzz_reply(const char *const *args)
{
	struct auth_proto_reply reply, again;
	const char *fields[5];
	char id[16];

	if (auth_proto_parse_reply(args, &reply) < 0)
		return;
	check(reply.id != 0, "reply id not 0");
	(void)snprintf(id, sizeof(id), "%u", reply.id);
	switch (reply.type) {
	case AUTH_PROTO_REPLY_CONT:
		check(reply.challenge != NULL, "CONT challenge");
		fields[0] = "CONT"; fields[2] = reply.challenge; fields[3] = NULL;
		break;
	case AUTH_PROTO_REPLY_OK:
		check(reply.user != NULL && reply.user[0] != '\0', "OK user");
		check(reply.token != NULL &&
		      strlen(reply.token) == AUTH_TOKEN_BYTES * 2 &&
		      auth_proto_token_valid(reply.token), "OK token");
		fields[0] = "OK"; fields[2] = reply.user;
		fields[3] = reply.token; fields[4] = NULL;
		break;
	case AUTH_PROTO_REPLY_FAIL:
		check(reply.code != NULL, "FAIL code");
		fields[0] = "FAIL"; fields[2] = reply.code;
		fields[3] = reply.text; fields[4] = NULL;
		break;
	default:
		check(false, "a known reply type");
	}
	fields[1] = id;
	check(auth_proto_parse_reply(fields, &again) == 0, "a written reply parses");
	check(again.type == reply.type && again.id == reply.id &&
	      str_eq(again.challenge, reply.challenge) &&
	      str_eq(again.user, reply.user) && str_eq(again.token, reply.token) &&
	      str_eq(again.code, reply.code) && str_eq(again.text, reply.text),
	      "the same reply");
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
	fuzz_request(args);
	fuzz_reply(args);
}

/* Returns false once the socket is full: the rest of the input is
   dropped (the reader runs only after everything is sent). */
static bool send_record(int fd, const uint8_t *data, size_t size)
{
	if (size > IPC_MAX_RECORD_SIZE + 16)
		size = IPC_MAX_RECORD_SIZE + 16;
	return send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char hello[] = "VERSION\tfuzz\t1\t0\n";
	struct fuzz_state st = { .ended = false };
	int fds[2];

	log_set_fd(-1);
	check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0,
	      "socketpair");
	st.ioloop = io_loop_create();
	st.conn = ipc_conn_create(st.ioloop, fds[0], "fuzz", "fuzz", 1, 0,
				  fuzz_input, &st);
	check(send_record(fds[1], (const uint8_t *)hello, sizeof(hello) - 1),
	      "handshake sent");
	for (size_t start = 0; start < size;) {
		const uint8_t *nul = memchr(data + start, '\0', size - start);
		size_t end = nul == NULL ? size : (size_t)(nul - data);
		if (!send_record(fds[1], data + start, end - start))
			break;
		start = end + 1;
	}
	close(fds[1]);
	io_loop_run(st.ioloop);
	check(st.ended && st.conn == NULL, "the end was reported");
	io_loop_destroy(&st.ioloop);
	return 0;
}
