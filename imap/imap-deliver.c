/* Delivery connections from lmtp (imap-deliver.h). lmtp parses the MTA's
   bytes, so its records are checked like a client's: a malformed one
   ends that connection, never the process. */
#include "imap-common.h"
#include "imap-deliver.h"
#include "imap-notify.h"
#include "master-service.h"

#include <sys/stat.h>

/* DELIVER <id> <mailbox> <return-path> <delivered-to> */
#define DELIVER_ARGS 5
/* lmtp's id: a number it chose. */
#define DELIVER_ID_MAX 20
/* An address as lmtp checked it (RFC 5321 4.5.3.1.3: a path is at most
   256 octets; a little more for what real MTAs send). */
#define DELIVER_ADDRESS_MAX 512
/* Bytes copied from the memfd per read. */
#define DELIVER_COPY_CHUNK (64 * 1024)

struct deliver_conn {
	struct deliver_conn *next, *prev;
	struct imap_user *user;
	struct ipc_conn *ipc;
};

static void deliver_conn_destroy(struct deliver_conn *conn)
{
	struct imap_user *user = conn->user;

	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		user->deliver_conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	user->deliver_conn_count--;
	ipc_conn_destroy(&conn->ipc);
	i_free(conn);
	imap_user_client_gone(user);
}

static bool field_ok(const char *value, size_t max, bool allow_empty)
{
	size_t len = strlen(value);

	if (len > max || (len == 0 && !allow_empty))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

static void deliver_fail(struct deliver_conn *conn, const char *id,
			 const char *code, const char *enhanced,
			 const char *text)
{
	(void)ipc_sendv(conn->ipc, -1, "FAIL", id, code, enhanced, text, NULL);
}

/* The folder to deliver to: name if it exists, else INBOX. */
static int deliver_open_box(struct imap_user *user, const char *name,
			    struct mailbox **box_r, const char **error_r)
{
	enum mailbox_open_flags flags =
		user->set->mail_fsync == MOAT_FSYNC_NEVER ?
		MAILBOX_OPEN_NO_FSYNC : 0;
	int ret = 0;

	if (name[0] != '\0' && !mailbox_name_is_inbox(name))
		ret = mailbox_open(user->mail_root, name, flags, box_r, error_r);
	if (ret == 0)
		ret = mailbox_open(user->mail_root, "INBOX", flags, box_r,
				   error_r);
	if (ret == 0) {
		*error_r = "INBOX does not exist";
		return -1;
	}
	return ret < 0 ? -1 : 0;
}

/* Return-Path and Delivered-To, then the message from fd. */
static int deliver_write(struct mailbox_append_ctx *save, int fd,
			 uint64_t size, const char *return_path,
			 const char *delivered_to, const char **error_r)
{
	char head[2 * DELIVER_ADDRESS_MAX + 64];
	int len = snprintf(head, sizeof(head),
			   "Return-Path: <%s>\r\nDelivered-To: %s\r\n",
			   return_path, delivered_to);
	i_assert(len > 0 && (size_t)len < sizeof(head));
	if (mailbox_append_write(save, head, (size_t)len, error_r) < 0)
		return -1;

	char *buf = i_malloc(DELIVER_COPY_CHUNK);
	uint64_t pos = 0;
	int ret = 0;
	while (pos < size && ret == 0) {
		size_t want = (size_t)MIN(size - pos, (uint64_t)DELIVER_COPY_CHUNK);
		ssize_t got = pread(fd, buf, want, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			*error_r = got < 0 ? "reading the message failed" :
				"the message is shorter than announced";
			ret = -1;
			break;
		}
		pos += (uint64_t)got;
		ret = mailbox_append_write(save, buf, (size_t)got, error_r);
	}
	i_free(buf);
	return ret;
}

static void deliver_message(struct deliver_conn *conn,
			    const char *const *args, int fd)
{
	struct imap_user *user = conn->user;
	const char *id = args[1], *error;
	uint64_t limit = user->set->message_size_limit;
	struct mailbox *box;
	struct stat st;

	if (limit == 0 || limit > IMAP_DELIVER_SIZE_MAX)
		limit = IMAP_DELIVER_SIZE_MAX;
	if (fstat(fd, &st) < 0) {
		i_error("delivery: fstat() of the message failed: %m");
		deliver_fail(conn, id, "451", "4.3.0", "Internal error");
		return;
	}
	if ((uint64_t)st.st_size > limit) {
		deliver_fail(conn, id, "552", "5.3.4", "Message too big");
		return;
	}
	if (deliver_open_box(user, args[2], &box, &error) < 0) {
		i_error("delivery: opening the mailbox failed: %s", error);
		deliver_fail(conn, id, "451", "4.3.0",
			     "Temporary internal error opening the mailbox");
		return;
	}
	struct mailbox_append_ctx *save;
	uint32_t uid = 0;
	int ret = mailbox_append_begin(box, 0, (time_t)-1, &save, &error);
	if (ret == 0 &&
	    deliver_write(save, fd, (uint64_t)st.st_size, args[3], args[4],
			  &error) < 0) {
		mailbox_append_abort(&save);
		ret = -1;
	}
	if (ret == 0)
		ret = mailbox_append_finish(&save, &uid, &error);
	/* errno is still the failed system call's unless the storage layer
	   made another one after it; a wrong guess only swaps 451 and 452 */
	bool full = ret < 0 && (errno == ENOSPC || errno == EDQUOT);
	if (ret < 0) {
		i_error("delivery to %s failed: %s", mailbox_get_name(box), error);
		if (full)
			deliver_fail(conn, id, "452", "4.3.1",
				     "Insufficient system storage");
		else
			deliver_fail(conn, id, "451", "4.3.0",
				     "Temporary internal error saving the message");
	} else {
		char uid_str[16];
		snprintf(uid_str, sizeof(uid_str), "%u", uid);
		i_info("delivered: mailbox=%s, uid=%u, size=%llu, from=<%s>",
		       mailbox_get_name(box), uid,
		       (unsigned long long)st.st_size, args[3]);
		imap_notify_path(user, mailbox_get_path(box));
		(void)ipc_sendv(conn->ipc, -1, "OK", id, uid_str, NULL);
	}
	mailbox_close(&box);
}

static void deliver_input(void *context, const char *const *args, int fd)
{
	struct deliver_conn *conn = context;

	if (args == NULL) {
		deliver_conn_destroy(conn);
		return;
	}
	if (strcmp(args[0], "DELIVER") != 0 || fd < 0 ||
	    str_array_length(args) != DELIVER_ARGS ||
	    !field_ok(args[1], DELIVER_ID_MAX, false) ||
	    !field_ok(args[2], MAILBOX_NAME_MAX, true) ||
	    !field_ok(args[3], DELIVER_ADDRESS_MAX, true) ||
	    !field_ok(args[4], DELIVER_ADDRESS_MAX, false)) {
		i_error("lmtp sent a malformed delivery record; closing it");
		if (fd >= 0)
			close(fd);
		deliver_conn_destroy(conn);
		return;
	}
	deliver_message(conn, args, fd);
	close(fd);
}

void imap_deliver_conn_create(struct imap_user *user, int fd)
{
	if (user->deliver_conn_count >= IMAP_DELIVER_CONNS_MAX) {
		i_error("delivery refused: %u delivery connections already",
			user->deliver_conn_count);
		close(fd);
		return;
	}
	struct deliver_conn *conn = i_malloc(sizeof(*conn));
	conn->user = user;
	conn->ipc = ipc_conn_create(user->ioloop, fd, "lmtp delivery",
				    IPC_PROTO_DELIVER, IPC_PROTO_MAJOR,
				    IPC_PROTO_MINOR, deliver_input, conn);
	conn->next = user->deliver_conns;
	if (user->deliver_conns != NULL)
		user->deliver_conns->prev = conn;
	user->deliver_conns = conn;
	user->deliver_conn_count++;
}

void imap_deliver_conns_destroy_all(struct imap_user *user)
{
	while (user->deliver_conns != NULL)
		deliver_conn_destroy(user->deliver_conns);
}
