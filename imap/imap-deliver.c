/* Delivery connections from lmtp (imap-deliver.h). lmtp parses the MTA's
   bytes, so its records are checked like a client's: a malformed one
   ends that connection, never the process. */
#include "imap-common.h"
#include "imap-deliver.h"
#include "imap-notify.h"
#include "imap-quota.h"
#include "maildir-filename.h"
#include "master-service.h"

#include <openssl/evp.h>
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
/* Delivery ids remembered, and the newest messages of a folder read for
   them when the process first delivers there: an MTA retries a delivery
   whose answer it did not get within minutes, far fewer messages than
   this later. */
#define DELIVER_SEEN_MAX 1024
#define DELIVER_SCAN_WINDOW 1000
#define DELIVER_SCANNED_MAX 32

struct deliver_seen_entry {
	uint64_t folder;          /* hash of the folder's path */
	uint32_t uid;
	char id[MAILDIR_DELIVERY_ID_LEN + 1];
};

/* What this process knows was delivered (imap-deliver.h: a retry of a
   delivery whose answer was lost is answered, not saved twice). */
struct imap_deliver_seen {
	struct deliver_seen_entry entries[DELIVER_SEEN_MAX];
	unsigned int next, count;
	uint64_t scanned[DELIVER_SCANNED_MAX];
	unsigned int scanned_next, scanned_count;
};

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
	enum mailbox_open_flags flags = MAILBOX_OPEN_QUOTA |
		(user->set->mail_fsync == MOAT_FSYNC_NEVER ?
		 MAILBOX_OPEN_NO_FSYNC : 0);
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

static uint64_t folder_hash(const char *path)
{
	/* FNV-1a: only tells this process's folders apart */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const unsigned char *p = (const unsigned char *)path; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static void seen_add(struct imap_deliver_seen *seen, uint64_t folder,
		     const char *id, uint32_t uid)
{
	struct deliver_seen_entry *e = &seen->entries[seen->next];

	e->folder = folder;
	e->uid = uid;
	memcpy(e->id, id, sizeof(e->id));
	seen->next = (seen->next + 1) % DELIVER_SEEN_MAX;
	if (seen->count < DELIVER_SEEN_MAX)
		seen->count++;
}

struct seen_scan_ctx {
	struct imap_deliver_seen *seen;
	uint64_t folder;
};

static void seen_scan_found(const char *id, uint32_t uid, void *context)
{
	struct seen_scan_ctx *ctx = context;

	seen_add(ctx->seen, ctx->folder, id, uid);
}

/* The uid of an earlier delivery of id into box, or 0. The folder's
   newest messages are read once per process (after a crash the earlier
   delivery may be on disk while nobody heard of it). */
static uint32_t seen_lookup(struct imap_user *user, struct mailbox *box,
			    const char *id)
{
	if (user->deliver_seen == NULL)
		user->deliver_seen = i_malloc(sizeof(*user->deliver_seen));
	struct imap_deliver_seen *seen = user->deliver_seen;
	uint64_t folder = folder_hash(mailbox_get_path(box));
	unsigned int i;
	const char *error;

	for (i = 0; i < seen->scanned_count; i++) {
		if (seen->scanned[i] == folder)
			break;
	}
	if (i == seen->scanned_count) {
		struct seen_scan_ctx ctx = { seen, folder };
		if (mailbox_scan_deliveries(box, DELIVER_SCAN_WINDOW,
					    seen_scan_found, &ctx, &error) < 0)
			i_error("delivery: reading earlier deliveries failed: %s",
				error);
		seen->scanned[seen->scanned_next] = folder;
		seen->scanned_next = (seen->scanned_next + 1) % DELIVER_SCANNED_MAX;
		if (seen->scanned_count < DELIVER_SCANNED_MAX)
			seen->scanned_count++;
	}
	for (i = 0; i < seen->count; i++) {
		const struct deliver_seen_entry *e = &seen->entries[i];
		if (e->folder == folder && strcmp(e->id, id) == 0)
			return e->uid;
	}
	return 0;
}

/* The delivery's id: a digest of the folder, the envelope and the
   message, so that the same delivery repeated by the MTA is recognised
   and anything else is not. */
static int deliver_id(int fd, uint64_t size, const char *folder,
		      const char *return_path, const char *delivered_to,
		      char id_r[MAILDIR_DELIVERY_ID_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len;
	EVP_MD_CTX *md_ctx = EVP_MD_CTX_new();
	int ret = md_ctx != NULL && EVP_DigestInit_ex(md_ctx, EVP_sha256(),
						      NULL) == 1 ? 0 : -1;
	const char *parts[] = { folder, return_path, delivered_to };

	for (unsigned int i = 0; ret == 0 && i < N_ELEMENTS(parts); i++) {
		/* with its NUL: fields cannot run into each other */
		if (EVP_DigestUpdate(md_ctx, parts[i], strlen(parts[i]) + 1) != 1)
			ret = -1;
	}
	char *buf = i_malloc(DELIVER_COPY_CHUNK);
	for (uint64_t pos = 0; ret == 0 && pos < size;) {
		size_t want = (size_t)MIN(size - pos, (uint64_t)DELIVER_COPY_CHUNK);
		ssize_t got = pread(fd, buf, want, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || EVP_DigestUpdate(md_ctx, buf, (size_t)got) != 1)
			ret = -1;
		else
			pos += (uint64_t)got;
	}
	i_free(buf);
	if (ret == 0 && EVP_DigestFinal_ex(md_ctx, md, &md_len) != 1)
		ret = -1;
	EVP_MD_CTX_free(md_ctx);
	if (ret < 0)
		return -1;
	static const char hex[] = "0123456789abcdef";
	for (unsigned int i = 0; i < MAILDIR_DELIVERY_ID_LEN / 2; i++) {
		id_r[i * 2] = hex[md[i] >> 4];
		id_r[i * 2 + 1] = hex[md[i] & 15];
	}
	id_r[MAILDIR_DELIVERY_ID_LEN] = '\0';
	return 0;
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
	char delivery_id[MAILDIR_DELIVERY_ID_LEN + 1];
	if (deliver_id(fd, (uint64_t)st.st_size, mailbox_get_name(box), args[3],
		       args[4], delivery_id) < 0) {
		i_error("delivery: reading the message failed");
		deliver_fail(conn, id, "451", "4.3.0", "Temporary internal error");
		mailbox_close(&box);
		return;
	}
	uint32_t uid = seen_lookup(user, box, delivery_id);
	if (uid != 0) {
		char uid_str[16];
		snprintf(uid_str, sizeof(uid_str), "%u", uid);
		i_info("delivery: mailbox=%s, uid=%u has this message from an "
		       "earlier try whose answer was lost: not saved again",
		       mailbox_get_name(box), uid);
		(void)ipc_sendv(conn->ipc, -1, "OK", id, uid_str, NULL);
		mailbox_close(&box);
		return;
	}
	/* the bytes as stored: our two header lines and the message */
	uint64_t total = (uint64_t)st.st_size + strlen(args[3]) + strlen(args[4]) +
		strlen("Return-Path: <>\r\nDelivered-To: \r\n");
	if (imap_quota_allows(user, total, 1) == 0) {
		i_info("delivery to %s refused: over quota", mailbox_get_name(box));
		if (user->set->quota_full_tempfail)
			deliver_fail(conn, id, "452", "4.2.2", "Mailbox is full");
		else
			deliver_fail(conn, id, "552", "5.2.2", "Mailbox is full");
		mailbox_close(&box);
		return;
	}
	struct mailbox_append_ctx *save;
	int ret = mailbox_append_begin_delivery(box, delivery_id, &save, &error);
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
		seen_add(user->deliver_seen, folder_hash(mailbox_get_path(box)),
			 delivery_id, uid);
		(void)ipc_sendv(conn->ipc, -1, "OK", id, uid_str, NULL);
		imap_quota_saved(user, total, 1);
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
	i_free(user->deliver_seen);
}
