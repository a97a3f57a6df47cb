/* Delivery connections from lmtp (imap-deliver.h). lmtp parses the MTA's
   bytes, so its records are checked like a client's: a malformed one
   ends that connection, never the process. */
#include "imap-common.h"
#include "imap-deliver.h"
#include "imap-commit.h"
#include "imap-mailbox.h"
#include "imap-notify.h"
#include "imap-quota.h"
#include "mailbox-append-multi.h"
#include "maildir-filename.h"
#include "master-service.h"
#include "sha256.h"
#include "hash.h"

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
/* Folders whose deliveries the process remembers (the oldest is
   forgotten, and read again if mail comes for it). Per folder it keeps
   lmtp_retry_window deliveries: an MTA retries a delivery whose answer
   it did not get within minutes, or after the restart of a crashed
   server, so the newest deliveries are the ones a retry can match. */
#define DELIVER_FOLDERS_MAX 32
/* Messages read for each delivery id to find when the process first
   delivers into a folder: a folder that gets much mail from IMAP
   APPENDs, COPYs or another program and few deliveries is not read to
   its first message. */
#define DELIVER_SCAN_PER_DELIVERY 100

struct deliver_seen_entry {
	uint32_t uid;
	char id[MAILDIR_DELIVERY_ID_LEN + 1];
};

/* One folder's newest deliveries, unordered: when full, the lowest uid
   (the oldest) makes room. */
struct deliver_seen_folder {
	uint64_t folder;          /* hash of the folder's path */
	struct deliver_seen_entry *entries;
	unsigned int count, alloc;
};

/* What this process knows was delivered (imap-deliver.h: a retry of a
   delivery whose answer was lost is answered, not saved twice). */
struct imap_deliver_seen {
	struct deliver_seen_folder folders[DELIVER_FOLDERS_MAX];
	unsigned int folder_next, folder_count;
	unsigned int window;      /* lmtp_retry_window */
};

struct deliver_conn {
	struct deliver_conn *next, *prev;
	struct imap_user *user;
	struct ipc_conn *ipc;
};

/* How long a folder stays open after its last delivery: under a steady
   stream of mail every group commit would otherwise close it and the
   next delivery reopen it (a mailbox_open() with its sync each time);
   a quiet folder is given back soon. */
#define DELIVER_BOX_LINGER_MSECS 2000
/* Folders kept open with no delivery pending: each holds descriptors
   and its index mapped; a stream into more folders closes the rest. */
#define DELIVER_BOX_IDLE_MAX 16

/* A folder open for the pending deliveries into it (name as lmtp sent
   it), shared by them and kept open for DELIVER_BOX_LINGER_MSECS after
   the last. */
struct deliver_box {
	struct deliver_box *next;
	struct imap_user *user;
	char *name;
	struct mailbox *box;
	unsigned int refs;
	struct timeout *to_close;   /* while refs == 0 */
	/* INBOX for a folder that did not exist: not kept (the folder may
	   be created before the next delivery) */
	bool fallback;
};

/* A DELIVER staged in tmp/ and queued for the group commit
   (imap-commit.h), or the same delivery as one queued earlier. */
struct deliver_req {
	struct deliver_req *next;      /* user->deliver_pending */
	struct imap_user *user;
	struct deliver_conn *conn;     /* NULL once it went away */
	char id[DELIVER_ID_MAX + 1];
	char *mailbox, *return_path, *delivered_to;
	int fd;
	uint64_t size;          /* the memfd's */
	uint64_t stored;        /* with our header lines */
	char delivery_id[MAILDIR_DELIVERY_ID_LEN + 1];
	struct mailbox *box;    /* a deliver_box's */
	struct imap_commit_req commit;
	struct deliver_req *dup_of;    /* answered with that one */
};

static void pending_remove(struct imap_user *user, struct deliver_req *req)
{
	struct deliver_req **p = &user->deliver_pending;

	while (*p != req)
		p = &(*p)->next;
	*p = req->next;
	req->next = NULL;
	user->deliver_pending_count--;
}

static void pending_add(struct imap_user *user, struct deliver_req *req)
{
	req->next = user->deliver_pending;
	user->deliver_pending = req;
	user->deliver_pending_count++;
}

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
	/* its pending deliveries are still saved (lmtp gave up on them, the
	   MTA will retry: the retry finds them), their answers go nowhere */
	for (struct deliver_req *r = user->deliver_pending; r != NULL;
	     r = r->next) {
		if (r->conn == conn)
			r->conn = NULL;
	}
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

	if (name[0] != '\0' && !mailbox_name_is_inbox(name)) {
		/* a detail may name a SPECIAL-USE folder (user+Junk) */
		imap_mailbox_autocreate(user);
		ret = mailbox_open(user->mail_root, name, flags, box_r, error_r);
	}
	if (ret == 0)
		ret = mailbox_open(user->mail_root, "INBOX", flags, box_r,
				   error_r);
	if (ret == 0) {
		*error_r = "INBOX does not exist";
		return -1;
	}
	return ret < 0 ? -1 : 0;
}

static void deliver_box_close(struct imap_user *user, struct deliver_box *db)
{
	struct deliver_box **p = &user->deliver_boxes;

	i_assert(db->refs == 0);
	while (*p != db)
		p = &(*p)->next;
	*p = db->next;
	timeout_remove(&db->to_close);
	mailbox_close(&db->box);
	i_free(db->name);
	i_free(db);
}

static void deliver_box_linger_end(void *context)
{
	struct deliver_box *db = context;

	db->to_close = NULL;
	deliver_box_close(db->user, db);
}

/* A folder kept open since its last delivery, made current again; false
   (and closed) when it is gone or cannot be read: opened anew then. */
static bool deliver_box_reuse(struct imap_user *user, struct deliver_box *db)
{
	const char *error;

	timeout_remove(&db->to_close);
	/* deleted or renamed meanwhile: the name may be another folder
	   now (or INBOX, the fallback) */
	if (!mailbox_is_stale(db->box) &&
	    mailbox_sync(db->box, true, NULL, NULL, &error) == 0)
		return true;
	deliver_box_close(user, db);
	return false;
}

/* The open folder for name, shared with the other pending deliveries
   there. */
static int deliver_box_get(struct imap_user *user, const char *name,
			   struct mailbox **box_r, const char **error_r)
{
	struct deliver_box *db;

	for (db = user->deliver_boxes; db != NULL; db = db->next) {
		if (strcmp(db->name, name) == 0)
			break;
	}
	if (db != NULL && (db->refs > 0 || deliver_box_reuse(user, db))) {
		db->refs++;
		*box_r = db->box;
		return 0;
	}
	struct mailbox *box;
	if (deliver_open_box(user, name, &box, error_r) < 0)
		return -1;
	db = i_malloc(sizeof(*db));
	db->user = user;
	db->fallback = name[0] != '\0' && !mailbox_name_is_inbox(name) &&
		mailbox_name_is_inbox(mailbox_get_name(box));
	db->name = i_strdup(name);
	db->box = box;
	db->refs = 1;
	db->next = user->deliver_boxes;
	user->deliver_boxes = db;
	*box_r = box;
	return 0;
}

static void deliver_box_put(struct imap_user *user, struct mailbox **_box)
{
	struct deliver_box **p = &user->deliver_boxes;

	if (*_box == NULL)
		return;
	while ((*p)->box != *_box)
		p = &(*p)->next;
	*_box = NULL;
	struct deliver_box *db = *p;
	if (--db->refs > 0)
		return;
	unsigned int idle = 0;
	for (struct deliver_box *d = user->deliver_boxes; d != NULL; d = d->next)
		idle += d->refs == 0 ? 1 : 0;
	if (db->fallback || idle > DELIVER_BOX_IDLE_MAX) {
		deliver_box_close(user, db);
		return;
	}
	db->to_close = timeout_add(user->ioloop, DELIVER_BOX_LINGER_MSECS,
				   deliver_box_linger_end, db);
}

static uint64_t folder_hash(const char *path)
{
	/* only tells this process's folders apart */
	return hash_fnv1a64(path, strlen(path));
}

static struct deliver_seen_folder *
seen_folder_find(struct imap_deliver_seen *seen, uint64_t folder)
{
	for (unsigned int i = 0; i < seen->folder_count; i++) {
		if (seen->folders[i].folder == folder)
			return &seen->folders[i];
	}
	return NULL;
}

static void seen_folder_add(struct imap_deliver_seen *seen,
			    struct deliver_seen_folder *f, const char *id,
			    uint32_t uid)
{
	struct deliver_seen_entry *e;

	if (f->count < f->alloc) {
		e = &f->entries[f->count++];
	} else if (f->alloc < seen->window) {
		f->alloc = f->alloc == 0 ? 16 : f->alloc * 2;
		if (f->alloc > seen->window)
			f->alloc = seen->window;
		f->entries = i_realloc(f->entries,
				       f->alloc * sizeof(*f->entries));
		e = &f->entries[f->count++];
	} else {
		/* full: the oldest delivery gives way, unless this one is
		   older still (a scan reads newest first) */
		e = &f->entries[0];
		for (unsigned int i = 1; i < f->count; i++) {
			if (f->entries[i].uid < e->uid)
				e = &f->entries[i];
		}
		if (e->uid > uid)
			return;
	}
	e->uid = uid;
	memcpy(e->id, id, sizeof(e->id));
}

/* After a delivery: remembered if its folder is (otherwise the folder is
   read when mail next comes for it). */
static void seen_add(struct imap_deliver_seen *seen, uint64_t folder,
		     const char *id, uint32_t uid)
{
	struct deliver_seen_folder *f;

	if (seen != NULL && (f = seen_folder_find(seen, folder)) != NULL)
		seen_folder_add(seen, f, id, uid);
}

struct seen_scan_ctx {
	struct imap_deliver_seen *seen;
	struct deliver_seen_folder *f;
};

static void seen_scan_found(const char *id, uint32_t uid, void *context)
{
	struct seen_scan_ctx *ctx = context;

	seen_folder_add(ctx->seen, ctx->f, id, uid);
}

/* The folder's remembered deliveries: its newest messages are read the
   first time (after a crash the earlier delivery may be on disk while
   nobody heard of it). */
static struct deliver_seen_folder *
seen_folder_get(struct imap_user *user, struct mailbox *box)
{
	if (user->deliver_seen == NULL) {
		user->deliver_seen = i_malloc(sizeof(*user->deliver_seen));
		user->deliver_seen->window = user->set->lmtp_retry_window;
	}
	struct imap_deliver_seen *seen = user->deliver_seen;
	uint64_t folder = folder_hash(mailbox_get_path(box));
	struct deliver_seen_folder *f = seen_folder_find(seen, folder);
	const char *error;

	if (f != NULL)
		return f;
	f = &seen->folders[seen->folder_next];
	seen->folder_next = (seen->folder_next + 1) % DELIVER_FOLDERS_MAX;
	if (seen->folder_count < DELIVER_FOLDERS_MAX)
		seen->folder_count++;
	f->folder = folder;
	f->count = 0;

	struct seen_scan_ctx ctx = { seen, f };
	unsigned int max_messages = seen->window * DELIVER_SCAN_PER_DELIVERY;
	if (mailbox_scan_deliveries(box, seen->window, max_messages,
				    seen_scan_found, &ctx, &error) < 0)
		i_error("delivery: reading earlier deliveries failed: %s",
			error);
	return f;
}

/* The uid of an earlier delivery of id into box, or 0. */
static uint32_t seen_lookup(struct imap_user *user, struct mailbox *box,
			    const char *id)
{
	const struct deliver_seen_folder *f = seen_folder_get(user, box);

	for (unsigned int i = 0; i < f->count; i++) {
		if (strcmp(f->entries[i].id, id) == 0)
			return f->entries[i].uid;
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
	unsigned char md[SHA256_DIGEST_LEN];
	struct sha256_ctx md_ctx;
	const char *parts[] = { folder, return_path, delivered_to };
	int ret = 0;

	sha256_init(&md_ctx);
	for (unsigned int i = 0; i < N_ELEMENTS(parts); i++) {
		/* with its NUL: fields cannot run into each other */
		sha256_update(&md_ctx, parts[i], strlen(parts[i]) + 1);
	}
	char *buf = i_malloc(DELIVER_COPY_CHUNK);
	for (uint64_t pos = 0; pos < size;) {
		size_t want = (size_t)MIN(size - pos, (uint64_t)DELIVER_COPY_CHUNK);
		ssize_t got = pread(fd, buf, want, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			ret = -1;
			break;
		}
		sha256_update(&md_ctx, buf, (size_t)got);
		pos += (uint64_t)got;
	}
	i_free(buf);
	if (ret < 0)
		return -1;
	sha256_final(&md_ctx, md);
	static const char hex[] = "0123456789abcdef";
	for (unsigned int i = 0; i < MAILDIR_DELIVERY_ID_LEN / 2; i++) {
		id_r[i * 2] = hex[md[i] >> 4];
		id_r[i * 2 + 1] = hex[md[i] & 15];
	}
	id_r[MAILDIR_DELIVERY_ID_LEN] = '\0';
	return 0;
}

static void req_free(struct imap_user *user, struct deliver_req *req)
{
	deliver_box_put(user, &req->box);
	i_close_fd(&req->fd);
	i_free(req->mailbox);
	i_free(req->return_path);
	i_free(req->delivered_to);
	i_free(req);
}

static void req_fail(struct deliver_req *req, const char *code,
		     const char *enhanced, const char *text)
{
	if (req->conn != NULL)
		deliver_fail(req->conn, req->id, code, enhanced, text);
}

static void req_ok(struct deliver_req *req, uint32_t uid)
{
	char uid_str[16];

	snprintf(uid_str, sizeof(uid_str), "%u", uid);
	if (req->conn != NULL)
		(void)ipc_sendv(req->conn->ipc, -1, "OK", req->id, uid_str, NULL);
}

static void req_fail_saving(struct deliver_req *req, bool full)
{
	if (full)
		req_fail(req, "452", "4.3.1", "Insufficient system storage");
	else
		req_fail(req, "451", "4.3.0",
			 "Temporary internal error saving the message");
}

static void req_fail_quota(struct imap_user *user, struct deliver_req *req)
{
	i_info("delivery to %s refused: over quota", mailbox_get_name(req->box));
	if (user->set->quota_full_tempfail)
		req_fail(req, "452", "4.2.2", "Mailbox is full");
	else
		req_fail(req, "552", "5.2.2", "Mailbox is full");
}

/* The answer of a committed (or refused) delivery. */
static void req_answer(struct imap_user *user, struct deliver_req *req,
		       enum imap_commit_result result, uint32_t uid)
{
	switch (result) {
	case IMAP_COMMIT_OK:
		req_ok(req, uid);
		break;
	case IMAP_COMMIT_OVERQUOTA:
		req_fail_quota(user, req);
		break;
	case IMAP_COMMIT_FAILED:
		req_fail_saving(req, false);
		break;
	case IMAP_COMMIT_NOSPACE:
		req_fail_saving(req, true);
		break;
	}
}

/* Writes the message with our header lines to a staged file. */
static int deliver_stage(struct mailbox_append_multi *multi,
			 struct deliver_req *req, const char **error_r)
{
	char head[2 * DELIVER_ADDRESS_MAX + 64];
	int len = snprintf(head, sizeof(head),
			   "Return-Path: <%s>\r\nDelivered-To: %s\r\n",
			   req->return_path, req->delivered_to);
	i_assert(len > 0 && (size_t)len < sizeof(head));
	if (mailbox_append_multi_next_delivery(multi, req->delivery_id,
					       error_r) < 0 ||
	    mailbox_append_multi_write(multi, head, (size_t)len, error_r) < 0)
		return -1;
	char *buf = i_malloc(DELIVER_COPY_CHUNK);
	int ret = 0;
	for (uint64_t pos = 0; pos < req->size && ret == 0;) {
		size_t want = (size_t)MIN(req->size - pos,
					  (uint64_t)DELIVER_COPY_CHUNK);
		ssize_t got = pread(req->fd, buf, want, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			*error_r = "reading the message failed";
			ret = -1;
		} else {
			pos += (uint64_t)got;
			ret = mailbox_append_multi_write(multi, buf, (size_t)got,
							 error_r);
		}
	}
	i_free(buf);
	return ret < 0 ? -1 : mailbox_append_multi_end(multi, error_r);
}

/* The group commit is done with req (it is on disk, or refused): its
   answer, and that of the same delivery repeated meanwhile. */
static void deliver_committed(void *context, enum imap_commit_result result,
			      uint32_t first_uid)
{
	struct deliver_req *req = context;
	struct imap_user *user = req->user;

	pending_remove(user, req);
	if (result == IMAP_COMMIT_OK) {
		i_info("delivered: mailbox=%s, uid=%u, size=%llu, from=<%s>",
		       mailbox_get_name(req->box), first_uid,
		       (unsigned long long)req->size, req->return_path);
		seen_add(user->deliver_seen,
			 folder_hash(mailbox_get_path(req->box)),
			 req->delivery_id, first_uid);
		imap_notify_message_new(user, NULL, mailbox_get_name(req->box),
					mailbox_get_path(req->box));
	}
	req_answer(user, req, result, first_uid);
	for (struct deliver_req *r = user->deliver_pending, *next; r != NULL;
	     r = next) {
		next = r->next;
		if (r->dup_of != req)
			continue;
		pending_remove(user, r);
		req_answer(user, r, result, first_uid);
		req_free(user, r);
	}
	req_free(user, req);
	imap_user_client_gone(user);
}

/* The same delivery staged already and not answered yet, or NULL. */
static struct deliver_req *pending_find(struct imap_user *user,
					struct deliver_req *req)
{
	const char *path = mailbox_get_path(req->box);

	for (struct deliver_req *r = user->deliver_pending; r != NULL;
	     r = r->next) {
		if (r->dup_of == NULL &&
		    strcmp(r->delivery_id, req->delivery_id) == 0 &&
		    strcmp(mailbox_get_path(r->box), path) == 0)
			return r;
	}
	return NULL;
}

/* Stage req and queue it for the group commit; or answer it now (a
   retry of a saved message, over quota, a failure). Takes req. */
static void deliver_start(struct imap_user *user, struct deliver_req *req)
{
	const char *error;

	if (deliver_box_get(user, req->mailbox, &req->box, &error) < 0) {
		i_error("delivery: opening the mailbox failed: %s", error);
		req_fail(req, "451", "4.3.0",
			 "Temporary internal error opening the mailbox");
		req_free(user, req);
		return;
	}
	if (deliver_id(req->fd, req->size, mailbox_get_name(req->box),
		       req->return_path, req->delivered_to,
		       req->delivery_id) < 0) {
		i_error("delivery: reading the message failed");
		req_fail(req, "451", "4.3.0", "Temporary internal error");
		req_free(user, req);
		return;
	}
	uint32_t uid = seen_lookup(user, req->box, req->delivery_id);
	if (uid != 0) {
		i_info("delivery: mailbox=%s, uid=%u has this message from an "
		       "earlier try whose answer was lost: not saved again",
		       mailbox_get_name(req->box), uid);
		req_ok(req, uid);
		req_free(user, req);
		return;
	}
	req->dup_of = pending_find(user, req);
	if (req->dup_of != NULL) {
		/* the same delivery twice at once: answered with the first */
		pending_add(user, req);
		return;
	}
	/* the group commit checks again with what the batch adds before it */
	if (imap_quota_allows(user, req->stored, 1) == 0) {
		req_fail_quota(user, req);
		req_free(user, req);
		return;
	}
	struct mailbox_append_multi *multi =
		mailbox_append_multi_begin_group(req->box);
	if (deliver_stage(multi, req, &error) < 0) {
		/* errno is still the failed call's, or near enough: a wrong
		   guess only swaps 451 and 452 */
		bool full = errno == ENOSPC || errno == EDQUOT;
		i_error("delivery to %s failed: %s", mailbox_get_name(req->box),
			error);
		mailbox_append_multi_abort(&multi);
		req_fail_saving(req, full);
		req_free(user, req);
		return;
	}
	/* the memfd is no longer needed: the staged file has it all */
	i_close_fd(&req->fd);
	pending_add(user, req);
	imap_commit_queue(user, &req->commit, req->box, &multi,
			  deliver_committed, req);
}

static void deliver_enqueue(struct deliver_conn *conn, const char *const *args,
			    int fd)
{
	struct imap_user *user = conn->user;
	uint64_t limit = user->set->message_size_limit;
	struct stat st;

	if (limit == 0 || limit > IMAP_DELIVER_SIZE_MAX)
		limit = IMAP_DELIVER_SIZE_MAX;
	if (fstat(fd, &st) < 0) {
		i_error("delivery: fstat() of the message failed: %m");
		deliver_fail(conn, args[1], "451", "4.3.0", "Internal error");
		close(fd);
		return;
	}
	if ((uint64_t)st.st_size > limit) {
		deliver_fail(conn, args[1], "552", "5.3.4", "Message too big");
		close(fd);
		return;
	}
	if (user->deliver_pending_count >= IMAP_DELIVER_PENDING_MAX) {
		/* lmtp sends one DELIVER per connection at a time: only a
		   misbehaving peer gets here */
		deliver_fail(conn, args[1], "451", "4.3.2",
			     "Too many deliveries at once");
		close(fd);
		return;
	}
	struct deliver_req *req = i_malloc(sizeof(*req));
	req->user = user;
	req->conn = conn;
	snprintf(req->id, sizeof(req->id), "%s", args[1]);
	req->mailbox = i_strdup(args[2]);
	req->return_path = i_strdup(args[3]);
	req->delivered_to = i_strdup(args[4]);
	req->fd = fd;
	req->size = (uint64_t)st.st_size;
	req->stored = req->size + strlen(args[3]) + strlen(args[4]) +
		strlen("Return-Path: <>\r\nDelivered-To: \r\n");
	deliver_start(user, req);
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
	deliver_enqueue(conn, args, fd);
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
	/* nobody waits for these any more: a queued one is dropped, one
	   whose batch syncs now is completed (the others' callbacks may
	   free entries of the list: start from its head each time) */
	while (user->deliver_pending != NULL) {
		struct deliver_req *req = user->deliver_pending;
		if (req->dup_of == NULL)
			imap_commit_cancel(user, &req->commit);
		pending_remove(user, req);
		for (struct deliver_req *r = user->deliver_pending, *next;
		     r != NULL; r = next) {
			next = r->next;
			if (r->dup_of == req) {
				pending_remove(user, r);
				req_free(user, r);
			}
		}
		req_free(user, req);
	}
	/* what is left is kept open for the next delivery */
	while (user->deliver_boxes != NULL)
		deliver_box_close(user, user->deliver_boxes);
	if (user->deliver_seen != NULL) {
		for (unsigned int i = 0; i < DELIVER_FOLDERS_MAX; i++)
			i_free(user->deliver_seen->folders[i].entries);
		i_free(user->deliver_seen);
	}
}
