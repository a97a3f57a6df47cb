/* Connecting to master's admin socket and one request/answer over it. */
#include "admin-conn.h"
#include "ioloop.h"
#include "ipc.h"
#include "master-service.h"
#include "strfuncs.h"

#include <sys/socket.h>
#include <sys/un.h>

#define IPC_PROTO_ADMIN "moat-admin"

struct admin_conn_state {
	struct admin_ctx *ctx;
	struct ioloop *ioloop;
	struct ipc_conn *conn;
	admin_row_callback_t *row;
	void *context;
	struct timeout *to;
	int fd;
	int exit_code;
	const char *code, *text;
	bool finished;
};

static void admin_conn_finish(struct admin_conn_state *st, int exit_code,
			      const char *code, const char *text)
{
	if (st->finished)
		return;
	st->finished = true;
	st->exit_code = exit_code;
	st->code = p_strdup(st->ctx->pool, code);
	st->text = p_strdup(st->ctx->pool, text);
	io_loop_stop(st->ioloop);
}

static void admin_conn_input(void *context, const char *const *args, int fd)
{
	struct admin_conn_state *st = context;

	if (args == NULL) {
		ipc_conn_destroy(&st->conn);
		admin_conn_finish(st, ADMIN_EXIT_TEMPFAIL, "tempfail",
				  "master closed the admin connection");
		return;
	}
	unsigned int count = str_array_length(args);
	if (strcmp(args[0], "MAIL-OK") == 0 && fd >= 0 && st->fd < 0) {
		st->fd = fd;
		return;
	}
	if (fd >= 0)
		close(fd);
	if (st->finished)
		return;
	if (strcmp(args[0], "ROW") == 0 && count % 2 == 1) {
		if (st->row != NULL)
			st->row(st->context, args + 1);
	} else if (strcmp(args[0], "DONE") == 0) {
		admin_conn_finish(st, ADMIN_EXIT_OK, NULL, NULL);
	} else if (strcmp(args[0], "FAIL") == 0 && count == 3) {
		admin_conn_finish(st, admin_exit_code(args[1]), args[1], args[2]);
	} else {
		admin_conn_finish(st, ADMIN_EXIT_SOFTWARE, "tempfail",
				  "master sent an unexpected record");
	}
}

static void admin_conn_timeout(void *context)
{
	struct admin_conn_state *st = context;

	st->to = NULL;
	admin_conn_finish(st, ADMIN_EXIT_TEMPFAIL, "tempfail",
			  "master did not answer in time");
}

static int admin_conn_connect(struct admin_ctx *ctx, const char **code_r,
			      const char **text_r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = p_strdup_printf(ctx->pool, "%s/admin",
					   ctx->set->base_dir);

	if (strlen(path) >= sizeof(sa.sun_path)) {
		*code_r = "usage";
		*text_r = "base_dir is too long for a unix socket";
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*code_r = "tempfail";
		*text_r = p_strdup_printf(ctx->pool, "socket() failed: %s",
					  strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;
		close(fd);
		*code_r = err == EACCES || err == EPERM ? "refused" : "tempfail";
		*text_r = err == EACCES || err == EPERM ?
			p_strdup_printf(ctx->pool, "%s: permission denied "
					"(root or admin_group only)", path) :
			p_strdup_printf(ctx->pool, "%s: %s (is moat running?)",
					path, strerror(err));
		return -1;
	}
	(void)fd_set_nonblock(fd, true);
	return fd;
}

int admin_conn_request(struct admin_ctx *ctx, const char *const *args,
		       admin_row_callback_t *row, void *context, int *fd_r,
		       const char **code_r, const char **text_r)
{
	struct admin_conn_state st = {
		.ctx = ctx, .row = row, .context = context, .fd = -1,
	};

	int fd = admin_conn_connect(ctx, code_r, text_r);
	if (fd < 0)
		return admin_exit_code(*code_r);
	st.ioloop = io_loop_create();
	st.conn = ipc_conn_create(st.ioloop, fd, "master", IPC_PROTO_ADMIN,
				  IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
				  admin_conn_input, &st);
	st.to = timeout_add(st.ioloop, ADMIN_CONN_TIMEOUT_MSECS,
			    admin_conn_timeout, &st);
	/* A failed send is not the answer: master may have refused us
	   (FAIL refused, then close) before reading; read what it sent. */
	(void)ipc_send(st.conn, args, -1);
	io_loop_run(st.ioloop);
	timeout_remove(&st.to);
	if (st.conn != NULL)
		ipc_conn_destroy(&st.conn);
	io_loop_destroy(&st.ioloop);
	if (st.exit_code == ADMIN_EXIT_OK && fd_r != NULL) {
		*fd_r = st.fd;
	} else if (st.fd >= 0) {
		close(st.fd);
	}
	*code_r = st.code;
	*text_r = st.text;
	return st.exit_code;
}
