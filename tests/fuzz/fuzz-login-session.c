/* libFuzzer target: arbitrary bytes as a client's whole pre-auth session
   with imap-login (login-client.c, login-cmds.c, login-client-auth.c,
   login-auth.c, login-master.c, ...: every imap-login source but main.c
   is linked in; tests/fuzz/run.sh builds it).

   Per input, one login process state is built on a fresh ioloop, as
   main.c does, but with this file standing in for master and auth: both
   are ipc connections on socketpairs in the same loop, answering at once.
   The client's socket is a socketpair too; session-feed.c writes the input
   into it, then EOF, and drains the replies. The loop runs until the
   client is gone (handed off, logged out, or closed at EOF), bounded by
   FUZZ_LOGIN_DEADLINE_MSECS: a client still alive then is a bug (it
   would hold a slot forever) and aborts. Then everything is torn down;
   LeakSanitizer and the descriptor count check that nothing stays.

   Input layout: byte 0 selects how the fake auth and master answer and
   a few settings (FUZZ_MODE_* below); the rest is the client's bytes,
   where the first letter of the tag that logs in selects the records
   master sends besides its answer to the handoff (FUZZ_TAG_*).
   TLS is not covered (no certificate: STARTTLS is refused). */

#include "imap-login-common.h"
#include "login-client.h"
#include "login-auth.h"
#include "login-master.h"
#include "login-listen.h"
#include "login-proxy.h"
#include "session-feed.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

/* Every answer is immediate: the session ends within milliseconds. The
   bound is generous for slow sanitizer builds on a loaded machine. */
#define FUZZ_LOGIN_DEADLINE_MSECS 5000
/* Auth connections one input may see (each AUTH-RECONNECT adds one). */
#define FUZZ_MAX_AUTH_CONNS 8
/* CONT rounds the fake auth asks before it answers OK. */
#define FUZZ_MAX_CONT_ROUNDS 2

/* byte 0 */
#define FUZZ_MODE_AUTH_MASK 0x03      /* enum fuzz_auth_answer */
#define FUZZ_MODE_HANDOFF_FAIL 0x04   /* master answers HANDOFF-FAIL */
#define FUZZ_MODE_AUTH_DROP 0x08      /* auth closes on its first request */
#define FUZZ_MODE_PLAINTEXT 0x10      /* disable_plaintext_auth = no */
#define FUZZ_MODE_SSL_REQUIRED 0x20   /* ssl = required */
#define FUZZ_MODE_NO_BAD_LIMIT 0x40   /* imap_max_bad_commands = 0 */
#define FUZZ_MODE_MASTER_DROP 0x80    /* master closes at the HANDOFF */
/* Both: master refuses the client's CONNECT (login_max_connections_per_ip). */
#define FUZZ_MODE_CONNECT_FAIL (FUZZ_MODE_HANDOFF_FAIL | FUZZ_MODE_MASTER_DROP)

/* The first character of the tag of the command that logs in: master
   sends one more record at its HANDOFF (fuzz_master_handoff_by_tag()). */
#define FUZZ_TAG_RETRY 'R'       /* auth is lost: HANDOFF-RETRY (the first
				    HANDOFF only), and a new auth when
				    imap-login asks */
#define FUZZ_TAG_RETRY_AUTH_FIRST 'Q'  /* the same with the new auth before
					  the RETRY, at every HANDOFF */
#define FUZZ_TAG_SHUTDOWN 'S'    /* SHUTDOWN, then the usual answer */
#define FUZZ_TAG_KEYD 'K'        /* KEYD-CONN, then the usual answer */

enum fuzz_auth_answer {
	FUZZ_AUTH_FAIL = 0,     /* FAIL authfailed */
	FUZZ_AUTH_OK,           /* OK user token */
	FUZZ_AUTH_CONT,         /* CONT rounds, then OK ("*" aborts) */
	FUZZ_AUTH_OTHER,        /* the other FAIL codes in turn */
};

struct fuzz_session;

/* Stands in for lib/master-service.c (not linked): imap-login calls only
   these three functions of it outside main.c. */
struct master_service {
	struct fuzz_session *s;
	int master_fd;
};

/* Our end of one auth connection. */
struct fuzz_auth_conn {
	struct fuzz_session *s;
	struct ipc_conn *conn;
};

struct fuzz_session {
	unsigned int mode;
	struct ioloop *ioloop;
	struct login_process lp;
	struct master_service service;
	struct ipc_conn *master;                  /* our end */
	struct fuzz_auth_conn auth[FUZZ_MAX_AUTH_CONNS];
	unsigned int auth_count;
	unsigned int auth_requests, cont_rounds, fail_codes, handoff_retries;
	struct session_feed *feed;
	struct timeout *to_deadline;
	bool stop_requested;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct moat_settings *fuzz_set;
/* Built once from the settings, which never change between inputs (as
   main.c builds them once per process): the 32 capability strings were
   a fifth of each input's time. */
static pool_t fuzz_pool;
static struct login_mechs fuzz_mechs;
static const char *fuzz_capabilities[LOGIN_CAP_VARIANTS];

const char *master_service_getenv(const char *name)
{
	/* No listening sockets: the client is created here. */
	if (strcmp(name, "MOAT_LISTENERS") == 0)
		return "";
	i_fatal("fuzz: unexpected master_service_getenv(%s)", name);
}

/* The process ends: its last client is gone (login_process_check_exit()
   with shutting_down set) or master was lost. */
void master_service_stop(struct master_service *service)
{
	struct fuzz_session *s = service->s;

	s->stop_requested = true;
	/* Read the replies to the last commands before ending. */
	if (s->lp.client_count > 0 || s->feed == NULL ||
	    session_feed_done(s->feed))
		io_loop_stop(s->ioloop);
}

static void fuzz_feed_done(void *context)
{
	struct fuzz_session *s = context;

	if (s->stop_requested)
		io_loop_stop(s->ioloop);
}

struct ipc_conn *
master_service_connect_master(struct master_service *service,
			      const char *protocol,
			      ipc_input_callback_t *callback, void *context)
{
	int fd = service->master_fd;

	service->master_fd = -1;
	return ipc_conn_create(service->s->ioloop, fd, "master", protocol,
			       IPC_PROTO_MAJOR, IPC_PROTO_MINOR, callback,
			       context);
}

static void fuzz_auth_send(struct fuzz_session *s, struct ipc_conn *conn,
			   const char *id)
{
	static const char *const codes[] = {
		"tempfail", "nologin", "aborted", "limit", "bogus"
	};
	/* 32 bytes in hex, as auth issues them */
	static const char token[] =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

	switch (s->mode & FUZZ_MODE_AUTH_MASK) {
	case FUZZ_AUTH_FAIL:
		(void)ipc_sendv(conn, -1, "FAIL", id, "authfailed", NULL);
		break;
	case FUZZ_AUTH_CONT:
		if (s->cont_rounds++ < FUZZ_MAX_CONT_ROUNDS) {
			(void)ipc_sendv(conn, -1, "CONT", id, "Zm9vYmFy", NULL);
			break;
		}
		/* fall through */
	case FUZZ_AUTH_OK:
		(void)ipc_sendv(conn, -1, "OK", id, "fuzzuser", token, NULL);
		break;
	case FUZZ_AUTH_OTHER:
		(void)ipc_sendv(conn, -1, "FAIL", id,
				codes[s->fail_codes++ % N_ELEMENTS(codes)],
				"Account\tdisabled\x01.", NULL);
		break;
	}
}

static void fuzz_auth_input(void *context, const char *const *args, int fd)
{
	struct fuzz_auth_conn *ac = context;
	struct fuzz_session *s = ac->s;

	if (fd != -1)
		abort();        /* imap-login never sends auth a descriptor */
	if (args == NULL) {
		ipc_conn_destroy(&ac->conn);
		return;
	}
	if (str_array_length(args) < 2)
		abort();
	if (strcmp(args[0], "AUTH") == 0) {
		s->cont_rounds = 0;
		if ((s->mode & FUZZ_MODE_AUTH_DROP) != 0 &&
		    s->auth_requests++ == 0) {
			ipc_conn_destroy(&ac->conn);
			return;
		}
	} else if (strcmp(args[0], "CONT") == 0) {
		if (str_array_length(args) != 3)
			abort();
		if (strcmp(args[2], "*") == 0) {
			(void)ipc_sendv(ac->conn, -1, "FAIL", args[1], "aborted",
					NULL);
			return;
		}
	} else {
		abort();
	}
	fuzz_auth_send(s, ac->conn, args[1]);
}

static void fuzz_auth_add(struct fuzz_session *s, int fd)
{
	struct fuzz_auth_conn *ac = &s->auth[s->auth_count++];

	ac->s = s;
	ac->conn = ipc_conn_create(s->ioloop, fd, "fuzz-auth",
		IPC_PROTO_AUTH_CLIENT, IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
		fuzz_auth_input, ac);
}

static void fuzz_master_reconnect(struct fuzz_session *s)
{
	int fds[2];

	if (s->auth_count == FUZZ_MAX_AUTH_CONNS)
		return;         /* stays without auth: tempfail from now on */
	if (ipc_socketpair(fds) < 0)
		i_fatal("socketpair() failed: %s", strerror(errno));
	fuzz_auth_add(s, fds[1]);
	(void)ipc_sendv(s->master, fds[0], "AUTH-CONN", NULL);
	close(fds[0]);
}

/* auth went away (it crashed or was reloaded): master offers a new one
   when imap-login asks (AUTH-RECONNECT). */
static void fuzz_auth_die(struct fuzz_session *s)
{
	for (unsigned int i = 0; i < s->auth_count; i++)
		ipc_conn_destroy(&s->auth[i].conn);
}

/* The records master sends besides the answers byte 0 selects, chosen
   by the first character of the client's LOGIN or AUTHENTICATE tag
   (FUZZ_TAG_*): returns true if the HANDOFF was answered. */
static bool fuzz_master_handoff_by_tag(struct fuzz_session *s, const char *id,
				       char tag)
{
	int fds[2];

	switch (tag) {
	case FUZZ_TAG_RETRY:
	case FUZZ_TAG_RETRY_AUTH_FIRST:
		/* A request is sent again once: a second RETRY fails it. */
		if (tag == FUZZ_TAG_RETRY && s->handoff_retries > 0)
			return false;
		/* Room for the new auth and the one a lost auth makes
		   imap-login ask for: a parked request without any would
		   wait out login_auth_park_timeout, past the deadline. */
		if (s->auth_count + 2 > FUZZ_MAX_AUTH_CONNS)
			return false;
		/* as handoff_fail_all() when auth is gone: the request is
		   parked and sent again to the next auth */
		s->handoff_retries++;
		fuzz_auth_die(s);
		if (tag == FUZZ_TAG_RETRY_AUTH_FIRST)
			fuzz_master_reconnect(s);
		(void)ipc_sendv(s->master, -1, "HANDOFF-RETRY", id,
				"Authentication\tservice unavailable", NULL);
		return true;
	case FUZZ_TAG_SHUTDOWN:
		(void)ipc_sendv(s->master, -1, "SHUTDOWN", NULL);
		return false;
	case FUZZ_TAG_KEYD:
		/* imap-login without key isolation closes it */
		if (ipc_socketpair(fds) < 0)
			i_fatal("socketpair() failed: %s", strerror(errno));
		(void)ipc_sendv(s->master, fds[0], "KEYD-CONN", NULL);
		close(fds[0]);
		close(fds[1]);
		return false;
	default:
		return false;
	}
}

static void fuzz_master_input(void *context, const char *const *args, int fd)
{
	struct fuzz_session *s = context;

	if (args == NULL) {
		ipc_conn_destroy(&s->master);
		return;
	}
	if (strcmp(args[0], "HANDOFF") == 0) {
		/* The login process keeps its copy until HANDOFF-OK. The
		   fields are master's business (doc/architecture.md). */
		if (fd < 0 || str_array_length(args) < 4)
			abort();
		close(fd);
		if (fuzz_master_handoff_by_tag(s, args[1], args[3][0]))
			return;
		if ((s->mode & FUZZ_MODE_MASTER_DROP) != 0)
			ipc_conn_destroy(&s->master);
		else if ((s->mode & FUZZ_MODE_HANDOFF_FAIL) != 0)
			(void)ipc_sendv(s->master, -1, "HANDOFF-FAIL", args[1],
					"No\tprocess\r\nfor you", NULL);
		else
			(void)ipc_sendv(s->master, -1, "HANDOFF-OK", args[1], NULL);
		return;
	}
	if (fd != -1)
		abort();
	if (strcmp(args[0], "AUTH-RECONNECT") == 0)
		fuzz_master_reconnect(s);
	else if (strcmp(args[0], "CONNECT") == 0) {
		/* login_max_connections_per_ip: refused in the one mode
		   where the HANDOFF bits would mean nothing together */
		if (str_array_length(args) != 3)
			abort();
		(void)ipc_sendv(s->master, -1,
			(s->mode & FUZZ_MODE_CONNECT_FAIL) == FUZZ_MODE_CONNECT_FAIL ?
			"CONNECT-FAIL" : "CONNECT-OK", args[1], NULL);
	} else if (strcmp(args[0], "DISCONNECT") == 0) {
		if (str_array_length(args) != 2)
			abort();
	} else if (strcmp(args[0], "LOAD") != 0 &&
		 strcmp(args[0], "LISTEN-DONE") != 0)
		abort();
}

static void fuzz_deadline(void *context)
{
	(void)context;
	fprintf(stderr, "fuzz: the login session did not end within %u ms\n",
		FUZZ_LOGIN_DEADLINE_MSECS);
	abort();
}

static void fuzz_init_once(void)
{
	const char *error;

	log_init("", false);
	session_feed_quiet_log();
	signal(SIGPIPE, SIG_IGN);
	fuzz_set = moat_settings_defaults();
	/* A request parked with no auth to come (all FUZZ_MAX_AUTH_CONNS
	   used) waits this long, within the deadline. */
	fuzz_set->login_auth_park_timeout = 1;
	/* Every mechanism name imap-login knows, so AUTHENTICATE reaches
	   each path (the fake auth does not care which). */
	fuzz_set->auth_mechanisms = "plain login cram-md5 scram-sha-1 "
		"scram-sha-256 scram-sha-256-plus oauthbearer xoauth2";
	fuzz_pool = pool_create("fuzz imap-login capabilities", 4096);
	if (login_mechs_parse(fuzz_set->auth_mechanisms, &fuzz_mechs,
			      &error) < 0)
		i_fatal("fuzz: %s", error);
	for (unsigned int i = 0; i < LOGIN_CAP_VARIANTS; i++) {
		fuzz_capabilities[i] =
			login_capability_build(fuzz_pool, &fuzz_mechs, i);
	}
	session_feed_fds_baseline();
}

static void fuzz_process_init(struct fuzz_session *s)
{
	struct login_process *lp = &s->lp;
	int fds[2];

	fuzz_set->disable_plaintext_auth = (s->mode & FUZZ_MODE_PLAINTEXT) == 0;
	fuzz_set->ssl = (s->mode & FUZZ_MODE_SSL_REQUIRED) != 0 ?
		MOAT_SSL_REQUIRED : MOAT_SSL_NO;
	fuzz_set->imap_max_bad_commands =
		(s->mode & FUZZ_MODE_NO_BAD_LIMIT) != 0 ? 0 : 20;

	s->ioloop = io_loop_create();
	s->service.s = s;
	lp->service = &s->service;
	lp->ioloop = s->ioloop;
	lp->set = fuzz_set;
	lp->pool = pool_create("fuzz imap-login", 4096);
	lp->client_limit = LOGIN_DEFAULT_CLIENT_LIMIT;
	lp->reported_accepting = lp->reported_idle = -1;
	lp->mechs = fuzz_mechs;
	memcpy(lp->capabilities, fuzz_capabilities, sizeof(lp->capabilities));
	login_listen_init(lp);
	/* The process ends with its last client (login-process.c). */
	lp->shutting_down = true;

	if (ipc_socketpair(fds) < 0)
		i_fatal("socketpair() failed: %s", strerror(errno));
	s->service.master_fd = fds[0];
	login_master_connect(lp);
	s->master = ipc_conn_create(s->ioloop, fds[1], "fuzz-master",
		IPC_PROTO_LOGIN_MASTER, IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
		fuzz_master_input, s);

	if (ipc_socketpair(fds) < 0)
		i_fatal("socketpair() failed: %s", strerror(errno));
	login_auth_connect(lp, fds[0]);
	fuzz_auth_add(s, fds[1]);
}

static void fuzz_process_deinit(struct fuzz_session *s)
{
	struct login_process *lp = &s->lp;

	lp->stopping = true;
	login_clients_destroy_all(lp);
	login_proxies_destroy_all(lp);
	login_listen_deinit(lp);
	login_auth_deinit(lp);
	login_master_deinit(lp);
	pool_unref(&lp->pool);

	session_feed_destroy(&s->feed);
	timeout_remove(&s->to_deadline);
	ipc_conn_destroy(&s->master);
	for (unsigned int i = 0; i < s->auth_count; i++)
		ipc_conn_destroy(&s->auth[i].conn);
	io_loop_destroy(&s->ioloop);
}

/* A client that logs in waits for the answer before it closes: at its
   EOF imap-login drops a login auth still works on. Only where auth
   says OK, so the handoff is reached; where it says FAIL the drop is
   what is fuzzed. */
static bool fuzz_hold_eof(void *context)
{
	struct fuzz_session *s = context;
	unsigned int answer = s->mode & FUZZ_MODE_AUTH_MASK;

	if (answer != FUZZ_AUTH_OK && answer != FUZZ_AUTH_CONT)
		return false;
	for (struct login_client *c = s->lp.clients; c != NULL; c = c->next) {
		if (!c->destroyed &&
		    (c->state == LOGIN_CLIENT_STATE_AUTH_WAIT ||
		     c->state == LOGIN_CLIENT_STATE_HANDOFF))
			return true;
	}
	return false;
}

/* The client's socket as accept() would give it: non-blocking, with a
   TEST-NET-1 peer address. */
static void fuzz_client_create(struct fuzz_session *s, const uint8_t *data,
			       size_t size)
{
	struct sockaddr_in remote;
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       fds) < 0)
		i_fatal("socketpair() failed: %s", strerror(errno));
	memset(&remote, 0, sizeof(remote));
	remote.sin_family = AF_INET;
	remote.sin_port = htons(40143);
	remote.sin_addr.s_addr = htonl(0xc0000207);    /* 192.0.2.7 */
	s->feed = session_feed_create(s->ioloop, fds[1], data, size,
				      fuzz_feed_done, s);
	session_feed_set_hold_eof(s->feed, fuzz_hold_eof);
	s->lp.accepted_count++;
	(void)login_client_create(&s->lp, fds[0], (struct sockaddr *)&remote,
				  sizeof(remote), false, false);
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
	memset(&s, 0, sizeof(s));
	s.mode = data[0];
	fuzz_process_init(&s);
	fuzz_client_create(&s, data + 1, size - 1);
	s.to_deadline = timeout_add(s.ioloop, FUZZ_LOGIN_DEADLINE_MSECS,
				    fuzz_deadline, &s);
	/* Unless everything ended before the loop ran (io_loop_run() would
	   forget a stop requested before it). */
	if (!s.stop_requested || !session_feed_done(s.feed))
		io_loop_run(s.ioloop);
	fuzz_process_deinit(&s);
	session_feed_fds_check();
	return 0;
}
