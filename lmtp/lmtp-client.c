/* One LMTP session (lmtp-client.h). */
#include "lmtp-common.h"
#include "lmtp-client.h"
#include "lmtp-data.h"
#include "lmtp-master.h"
#include "lmtp-delivery.h"
#include "sock-linger.h"
#include "lmtp-proto.h"
#include "utf8.h"

#include <sys/socket.h>

/* A reply line we build (code, enhanced code, address, text). */
#define LMTP_REPLY_MAX (LMTP_PATH_MAX + 256)
/* lmtp's userdb keys: master's RCPT field limit. */
#define LMTP_USERDB_KEY_MAX 256

enum client_state {
	CLIENT_CMD = 0,
	CLIENT_SKIP_LINE,     /* dropping the rest of a too long line */
	CLIENT_WAIT_RCPT,     /* master resolves a recipient */
	CLIENT_DATA,
	CLIENT_BDAT,
	CLIENT_DELIVER,       /* waiting for the imap processes */
	CLIENT_QUIT,          /* flushing the last reply */
};

struct lmtp_recipient {
	struct lmtp_client *client;
	unsigned int idx;
	char address[LMTP_PATH_MAX + 1];    /* as in RCPT TO */
	char mailbox[LMTP_PATH_MAX + 1];    /* detail folder, "" = INBOX */
	char user[LMTP_USERDB_KEY_MAX + 1]; /* canonical, from master */
	char key[LMTP_USERDB_KEY_MAX + 1];  /* its userdb key (RCPT) */
	struct lmtp_delivery *deliver;      /* NULL for a duplicate */
	struct lmtp_recipient *dup_of;      /* same user and folder */
	/* master's second lookup (rcpt_relookup()), and whether it was made */
	struct lmtp_rcpt_wait *relookup;
	bool relooked;
	bool waiting, answered;
	char reply[LMTP_REPLY_MAX];
};

struct lmtp_client {
	struct lmtp_client *next, *prev;
	struct lmtp_process *proc;
	int fd;
	struct istream *input;
	struct ostream *output;
	struct io *io;
	struct timeout *to_idle, *to_defer;
	enum client_state state;
	unsigned int bad_commands;
	bool lhlo, destroyed;

	/* the transaction */
	bool mail_set, used_data, used_bdat;
	struct lmtp_mail mail;
	struct lmtp_recipient **rcpts;
	unsigned int rcpt_count, rcpt_alloc, next_reply;
	struct lmtp_rcpt_wait *rcpt_wait;
	struct lmtp_rcpt_addr pending_rcpt;
	char pending_key[LMTP_USERDB_KEY_MAX + 1];
	struct lmtp_data *data;
	int msg_fd;      /* data's sealed memfd once complete, else -1 */
	uint64_t bdat_left;
	bool bdat_last, bdat_discard;
	const char *bdat_error;
};

static void client_process(struct lmtp_client *client);
static void client_io_update(struct lmtp_client *client);
static void client_schedule(struct lmtp_client *client);

/* Its delivery socket goes back to the pool when no DELIVER on it waits
   for an answer (lmtp-delivery.h). */
static void rcpt_free(struct lmtp_recipient *rcpt)
{
	lmtp_master_rcpt_abort(&rcpt->relookup);
	lmtp_delivery_release(&rcpt->deliver, !rcpt->waiting);
	i_free(rcpt);
}

static void client_destroy(struct lmtp_client *client)
{
	struct lmtp_process *proc = client->proc;

	if (client->destroyed)
		return;
	client->destroyed = true;
	if (client->prev != NULL)
		client->prev->next = client->next;
	else
		proc->clients = client->next;
	if (client->next != NULL)
		client->next->prev = client->prev;
	proc->client_count--;

	lmtp_master_rcpt_abort(&client->rcpt_wait);
	for (unsigned int i = 0; i < client->rcpt_count; i++)
		rcpt_free(client->rcpts[i]);
	i_free(client->rcpts);
	lmtp_data_destroy(&client->data);
	io_remove(&client->io);
	timeout_remove(&client->to_idle);
	timeout_remove(&client->to_defer);
	/* Our last reply (221, 421) is in the kernel and the MTA may still
	   be sending: close without a reset (lib/sock-linger.h). */
	bool linger = client->output != NULL &&
		!o_stream_is_failed(client->output) &&
		o_stream_get_buffer_used(client->output) == 0 &&
		!i_stream_is_eof(client->input) && proc->lingers != NULL;
	i_stream_destroy(&client->input);
	o_stream_destroy(&client->output);
	if (linger)
		sock_linger_close(proc->lingers, &client->fd);
	else
		i_close_fd(&client->fd);
	i_free(client);
	lmtp_process_client_gone(proc);
}

static void client_send(struct lmtp_client *client, const char *line)
{
	char buf[LMTP_REPLY_MAX + 2];
	size_t len = strlen(line);

	if (client->output == NULL)
		return;
	/* one write a line: a reply never waits for its own CRLF */
	i_assert(len <= LMTP_REPLY_MAX);
	memcpy(buf, line, len);
	memcpy(buf + len, "\r\n", 2);
	if (o_stream_send(client->output, buf, len + 2) < 0) {
		/* an MTA that does not read its replies */
		i_warning("client does not read its replies; disconnecting");
		client->state = CLIENT_QUIT;
		o_stream_destroy(&client->output);
	}
}

static void client_sendf(struct lmtp_client *client, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
static void client_sendf(struct lmtp_client *client, const char *fmt, ...)
{
	char line[LMTP_REPLY_MAX];
	va_list args;

	va_start(args, fmt);
	int len = vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	i_assert(len >= 0);
	client_send(client, line);
}

/* A client error; too many of them end the session. */
static void client_bad(struct lmtp_client *client, const char *reply)
{
	client_send(client, reply);
	if (++client->bad_commands >= LMTP_MAX_BAD_COMMANDS) {
		client_sendf(client, "421 4.7.0 %s Too many errors, closing",
			     client->proc->hostname);
		client->state = CLIENT_QUIT;
	}
}

static void transaction_reset(struct lmtp_client *client)
{
	lmtp_master_rcpt_abort(&client->rcpt_wait);
	for (unsigned int i = 0; i < client->rcpt_count; i++)
		rcpt_free(client->rcpts[i]);
	client->rcpt_count = 0;
	client->next_reply = 0;
	client->msg_fd = -1;
	lmtp_data_destroy(&client->data);
	client->mail_set = client->used_data = client->used_bdat = false;
	memset(&client->mail, 0, sizeof(client->mail));
}

/* ---- replies after the message ---- */

/* The replies that are ready, in RCPT order (RFC 2033 4.2). */
static void replies_flush(struct lmtp_client *client)
{
	while (client->next_reply < client->rcpt_count) {
		struct lmtp_recipient *rcpt = client->rcpts[client->next_reply];
		const struct lmtp_recipient *src =
			rcpt->dup_of != NULL ? rcpt->dup_of : rcpt;
		if (!src->answered)
			return;
		if (rcpt->dup_of != NULL)
			memcpy(rcpt->reply, src->reply, sizeof(rcpt->reply));
		client_send(client, rcpt->reply);
		client->next_reply++;
	}
	transaction_reset(client);
	if (client->state == CLIENT_DELIVER)
		client->state = CLIENT_CMD;
	/* pipelined commands may be buffered already: from the loop, never
	   from inside client_process() (which may be our caller) */
	client_schedule(client);
}

static void rcpt_answer(struct lmtp_recipient *rcpt, const char *code,
			const char *enhanced, const char *text)
{
	snprintf(rcpt->reply, sizeof(rcpt->reply), "%s %s <%s> %s", code,
		 enhanced, rcpt->address, text);
	lmtp_master_count_delivery(rcpt->client->proc, code);
	rcpt->answered = true;
	rcpt->waiting = false;
}

static bool reply_code_ok(const char *code, const char *enhanced)
{
	/* a failure as the imap process said it: 4xx or 5xx with a
	   matching class in the enhanced code (RFC 3463) */
	return strlen(code) == 3 && (code[0] == '4' || code[0] == '5') &&
		code[1] >= '0' && code[1] <= '9' && code[2] >= '0' &&
		code[2] <= '9' && enhanced[0] == code[0] && enhanced[1] == '.' &&
		strlen(enhanced) <= 9 &&
		strspn(enhanced + 2, "0123456789.") == strlen(enhanced + 2);
}

static void deliver_input(void *context, const char *const *args, int fd)
{
	struct lmtp_recipient *rcpt = context;
	struct lmtp_client *client = rcpt->client;
	unsigned int count = args == NULL ? 0 : str_array_length(args);
	char id[16];

	i_close_fd(&fd);
	snprintf(id, sizeof(id), "%u", rcpt->idx);
	if (args != NULL && count == 3 && strcmp(args[0], "OK") == 0 &&
	    strcmp(args[1], id) == 0 && rcpt->waiting) {
		rcpt_answer(rcpt, "250", "2.0.0", "Saved");
	} else if (args != NULL && count == 5 && strcmp(args[0], "FAIL") == 0 &&
		   strcmp(args[1], id) == 0 && rcpt->waiting &&
		   reply_code_ok(args[2], args[3])) {
		pool_t pool = pool_create("reply", 256);
		rcpt_answer(rcpt, args[2], args[3],
			    str_sanitize(pool, args[4], 200));
		pool_unref(&pool);
	} else {
		/* gone (crashed, killed) or confused: the MTA retries */
		if (args != NULL)
			i_error("user %s: malformed delivery reply", rcpt->user);
		lmtp_delivery_release(&rcpt->deliver, false);
		if (!rcpt->waiting)
			return;
		i_error("user %s: the mail process went away during delivery",
			rcpt->user);
		rcpt_answer(rcpt, "451", "4.3.0",
			    "Temporary failure: the mail process went away");
	}
	if (client->state == CLIENT_DELIVER)
		replies_flush(client);
}

static void answer_all(struct lmtp_client *client, const char *code,
		       const char *enhanced, const char *text)
{
	for (unsigned int i = 0; i < client->rcpt_count; i++) {
		if (client->rcpts[i]->dup_of == NULL)
			rcpt_answer(client->rcpts[i], code, enhanced, text);
	}
}

static void rcpt_send(struct lmtp_recipient *rcpt);

/* Master's second answer for a recipient whose socket had died. */
static void rcpt_relooked(enum lmtp_rcpt_result result, const char *user,
			  int fd, void *context)
{
	struct lmtp_recipient *rcpt = context;
	struct lmtp_client *client = rcpt->client;

	rcpt->relookup = NULL;
	/* the same user, or nothing: RCPT's 250 named that one */
	if (result == LMTP_RCPT_OK && strcmp(user, rcpt->user) == 0) {
		rcpt->deliver = lmtp_delivery_create(client->proc, fd,
						     rcpt->key, user);
		lmtp_delivery_attach(rcpt->deliver, deliver_input, rcpt);
		rcpt_send(rcpt);
	} else {
		if (fd >= 0)
			close(fd);
		rcpt_answer(rcpt, "451", "4.3.0", "Temporary failure: the mail "
			    "process went away");
	}
	if (client->state == CLIENT_DELIVER)
		replies_flush(client);
}

/* Nothing was sent on a socket that died before DATA (the imap process
   exited or was killed after RCPT; a kept socket's process may have gone
   while it was pooled): ask master again, once, which starts a new
   process. After a DELIVER was sent it stays 451: the message may be
   saved, and the MTA's retry is deduplicated by its delivery id. */
static bool rcpt_relookup(struct lmtp_recipient *rcpt)
{
	struct lmtp_client *client = rcpt->client;

	if (rcpt->relooked || rcpt->key[0] == '\0')
		return false;
	rcpt->relooked = true;
	i_info("user %s: its mail process went away before DATA; "
	       "looking the recipient up again", rcpt->user);
	rcpt->relookup = lmtp_master_rcpt(client->proc, rcpt->key,
					  rcpt_relooked, rcpt);
	return true;
}

/* DELIVER to the recipient's imap process (rcpt->waiting). */
static void rcpt_send(struct lmtp_recipient *rcpt)
{
	struct lmtp_client *client = rcpt->client;
	char id[16];

	snprintf(id, sizeof(id), "%u", rcpt->idx);
	if (rcpt->deliver != NULL &&
	    lmtp_delivery_send(rcpt->deliver, client->msg_fd, id,
			       rcpt->mailbox, client->mail.path,
			       rcpt->address) == 0)
		return;
	/* the peer is gone: the DELIVER never reached it */
	lmtp_delivery_release(&rcpt->deliver, false);
	if (rcpt_relookup(rcpt))
		return;
	rcpt_answer(rcpt, "451", "4.3.0", "Temporary "
		    "failure: the mail process went away");
}

/* The message is complete: hand it to every recipient's imap process. */
static void client_deliver(struct lmtp_client *client)
{
	int fd = lmtp_data_finish(client->data);

	client->state = CLIENT_DELIVER;
	client_io_update(client);
	if (lmtp_data_too_big(client->data)) {
		answer_all(client, "552", "5.3.4", "Message too big");
	} else if (fd < 0) {
		i_error("writing the message to memory failed: %m");
		answer_all(client, "451", "4.3.0", "Temporary internal error");
	} else {
		client->msg_fd = fd;
		for (unsigned int i = 0; i < client->rcpt_count; i++) {
			struct lmtp_recipient *rcpt = client->rcpts[i];
			if (rcpt->dup_of != NULL)
				continue;
			rcpt->waiting = true;
			rcpt_send(rcpt);
		}
	}
	replies_flush(client);
}

/* ---- commands ---- */

static void cmd_lhlo(struct lmtp_client *client, const char *args)
{
	uint64_t limit = client->proc->set->message_size_limit;

	if (args[0] == '\0') {
		client_bad(client, "501 5.5.4 Syntax: LHLO hostname");
		return;
	}
	transaction_reset(client);
	client->lhlo = true;
	client_sendf(client, "250-%s", client->proc->hostname);
	client_send(client, "250-PIPELINING");
	client_send(client, "250-ENHANCEDSTATUSCODES");
	client_send(client, "250-8BITMIME");
	client_send(client, "250-SMTPUTF8");
	client_send(client, "250-CHUNKING");
	if (limit != 0)
		client_sendf(client, "250 SIZE %llu", (unsigned long long)limit);
	else
		client_send(client, "250 SIZE");
}

static void cmd_mail(struct lmtp_client *client, const char *args)
{
	uint64_t limit = client->proc->set->message_size_limit;
	struct lmtp_error error;

	if (!client->lhlo) {
		client_bad(client, "503 5.5.1 Send LHLO first");
		return;
	}
	if (client->mail_set) {
		client_bad(client, "503 5.5.1 Nested MAIL command");
		return;
	}
	if (lmtp_parse_mail(args, &client->mail, &error) < 0) {
		client_bad(client, error.reply);
		return;
	}
	if (client->mail.body == LMTP_BODY_BINARYMIME) {
		client_bad(client, "555 5.5.4 BINARYMIME is not offered");
		return;
	}
	if (client->mail.size_set && limit != 0 && client->mail.size > limit) {
		client_send(client, "552 5.3.4 Message size exceeds fixed "
			    "maximum message size");
		return;
	}
	client->mail_set = true;
	client_send(client, "250 2.1.0 OK");
}

/* The pending RCPT is accepted for user: fd is master's new delivery
   socket, or -1 with *pooled one from the pool (lmtp-delivery.h). */
static void rcpt_accept(struct lmtp_client *client, const char *user, int fd,
			struct lmtp_delivery **pooled)
{
	const struct lmtp_rcpt_addr *addr = &client->pending_rcpt;
	struct lmtp_recipient *rcpt = i_malloc(sizeof(*rcpt));
	char local[LMTP_PATH_MAX + 1], detail[LMTP_PATH_MAX + 1];
	char domain[LMTP_PATH_MAX + 1];

	rcpt->client = client;
	rcpt->idx = client->rcpt_count;
	strcpy(rcpt->address, addr->path);
	strcpy(rcpt->user, user);
	strcpy(rcpt->key, client->pending_key);
	lmtp_address_split(addr->path, client->proc->set->recipient_delimiter,
			   local, detail, domain);
	if (client->proc->set->lmtp_save_to_detail_mailbox)
		strcpy(rcpt->mailbox, detail);
	for (unsigned int i = 0; i < client->rcpt_count; i++) {
		struct lmtp_recipient *other = client->rcpts[i];
		if (other->dup_of == NULL &&
		    strcmp(other->user, rcpt->user) == 0 &&
		    strcmp(other->mailbox, rcpt->mailbox) == 0) {
			/* one copy per user and folder */
			rcpt->dup_of = other;
			break;
		}
	}
	if (rcpt->dup_of != NULL) {
		if (fd >= 0)
			close(fd);
		else
			lmtp_delivery_release(pooled, true);
	} else {
		if (fd >= 0) {
			rcpt->deliver = lmtp_delivery_create(client->proc, fd,
				client->pending_key, user);
		} else {
			rcpt->deliver = *pooled;
			*pooled = NULL;
		}
		lmtp_delivery_attach(rcpt->deliver, deliver_input, rcpt);
	}
	if (client->rcpt_count == client->rcpt_alloc) {
		unsigned int n = MAX(client->rcpt_alloc * 2, 8u);
		struct lmtp_recipient **rcpts =
			i_malloc(i_mul_size(n, sizeof(*rcpts)));
		if (client->rcpt_count > 0)
			memcpy(rcpts, client->rcpts, client->rcpt_count *
			       sizeof(*rcpts));
		i_free(client->rcpts);
		client->rcpts = rcpts;
		client->rcpt_alloc = n;
	}
	client->rcpts[client->rcpt_count++] = rcpt;
	client_sendf(client, "250 2.1.5 <%s> OK", addr->path);
}

static void rcpt_resolved(enum lmtp_rcpt_result result, const char *user,
			  int fd, void *context)
{
	struct lmtp_client *client = context;
	const struct lmtp_rcpt_addr *addr = &client->pending_rcpt;

	client->rcpt_wait = NULL;
	client->state = CLIENT_CMD;
	if (result == LMTP_RCPT_NOTFOUND) {
		client_sendf(client, "550 5.1.1 <%s> User doesn't exist",
			     addr->path);
	} else if (result == LMTP_RCPT_TEMPFAIL ||
		   strlen(user) > LMTP_USERDB_KEY_MAX) {
		if (fd >= 0)
			close(fd);
		client_sendf(client, "451 4.3.0 <%s> Temporary user lookup "
			     "failure", addr->path);
	} else {
		rcpt_accept(client, user, fd, NULL);
	}
	client_schedule(client);
}

/* A userdb key master accepts: printable, no spaces. */
static bool userdb_key_ok(const char *key)
{
	size_t len = strlen(key);

	if (len == 0 || len > LMTP_USERDB_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
			return false;
	}
	return true;
}

/* Whether a userdb can hold a key with 8-bit bytes: passwd-file keys
   are bytes (a UTF-8 name is found as written), the "passwd" driver's
   system user names are ASCII (useradd's rules), so a UTF-8 recipient
   can never be found there. */
static bool userdb_holds_utf8(const struct moat_settings *set)
{
	for (unsigned int i = 0; i < set->userdb_count; i++) {
		if (strcmp(set->userdbs[i].driver, "passwd") != 0)
			return true;
	}
	return set->userdb_count == 0;
}

static void cmd_rcpt(struct lmtp_client *client, const char *args)
{
	const struct moat_settings *set = client->proc->set;
	char local[LMTP_PATH_MAX + 1], detail[LMTP_PATH_MAX + 1];
	char domain[LMTP_PATH_MAX + 1], key[LMTP_USERDB_KEY_MAX + 1];
	struct lmtp_error error;

	if (!client->mail_set) {
		client_bad(client, "503 5.5.1 MAIL needed first");
		return;
	}
	if (client->rcpt_count >= set->lmtp_max_recipients) {
		client_send(client, "452 4.5.3 Too many recipients");
		return;
	}
	if (lmtp_parse_rcpt(args, &client->pending_rcpt, &error) < 0) {
		client_bad(client, error.reply);
		return;
	}
	if (lmtp_address_check(client->pending_rcpt.path,
			       client->mail.smtputf8, false, &error) < 0) {
		client_send(client, error.reply);
		return;
	}
	lmtp_address_split(client->pending_rcpt.path, set->recipient_delimiter,
			   local, detail, domain);
	if (lmtp_username_format(set->lmtp_username_format, local, domain,
				 key, sizeof(key)) < 0 || !userdb_key_ok(key)) {
		client_sendf(client, "550 5.1.1 <%s> User doesn't exist",
			     client->pending_rcpt.path);
		return;
	}
	if (utf8_has_8bit(key, strlen(key)) && !userdb_holds_utf8(set)) {
		/* RFC 6531 with RFC 5248's X.6.7 */
		client_sendf(client, "553 5.6.7 <%s> Non-ASCII addresses not "
			     "permitted for that recipient",
			     client->pending_rcpt.path);
		return;
	}
	strcpy(client->pending_key, key);
	/* the user had a delivery a moment ago: its socket, no lookup */
	struct lmtp_delivery *pooled = lmtp_delivery_take(client->proc, key);
	if (pooled != NULL) {
		client->proc->rcpts_reused++;
		rcpt_accept(client, lmtp_delivery_get_user(pooled), -1, &pooled);
		return;
	}
	client->state = CLIENT_WAIT_RCPT;
	client_io_update(client);
	client->rcpt_wait = lmtp_master_rcpt(client->proc, key, rcpt_resolved,
					     client);
}

static bool transaction_ready(struct lmtp_client *client, const char **error_r)
{
	if (!client->mail_set) {
		*error_r = "503 5.5.1 MAIL needed first";
		return false;
	}
	if (client->rcpt_count == 0) {
		*error_r = "503 5.5.1 No valid recipients";
		return false;
	}
	return true;
}

static bool data_begin(struct lmtp_client *client)
{
	if (client->data != NULL)
		return true;
	client->data = lmtp_data_create(client->proc->set->message_size_limit);
	if (client->data == NULL) {
		i_error("memfd_create() failed: %m");
		return false;
	}
	return true;
}

static void cmd_data(struct lmtp_client *client, const char *args)
{
	const char *error;

	if (args[0] != '\0') {
		client_bad(client, "501 5.5.4 DATA takes no parameters");
		return;
	}
	if (!transaction_ready(client, &error)) {
		client_bad(client, error);
		return;
	}
	if (client->used_bdat) {
		client_bad(client, "503 5.5.1 DATA after BDAT");
		return;
	}
	if (!data_begin(client)) {
		client_send(client, "451 4.3.0 Temporary internal error");
		return;
	}
	client->used_data = true;
	client->state = CLIENT_DATA;
	client_send(client, "354 OK, end with <CRLF>.<CRLF>");
}

static void cmd_bdat(struct lmtp_client *client, const char *args)
{
	const char *error = NULL;

	if (lmtp_parse_bdat(args, &client->bdat_left, &client->bdat_last) < 0) {
		/* the chunk's size is unknown: nothing can be resynced */
		client_send(client, "501 5.5.4 Syntax: BDAT size [LAST]");
		client->state = CLIENT_QUIT;
		return;
	}
	client->bdat_discard = false;
	client->bdat_error = NULL;
	if (!client->mail_set)
		error = "503 5.5.1 MAIL needed first";
	else if (client->used_data)
		error = "503 5.5.1 BDAT after DATA";
	else if (client->rcpt_count == 0)
		error = client->bdat_last ? "" :
			"503 5.5.1 No valid recipients";
	else if (!data_begin(client))
		error = "451 4.3.0 Temporary internal error";
	if (error != NULL) {
		/* the chunk is read and dropped (RFC 3030 2) */
		client->bdat_discard = true;
		client->bdat_error = error;
	}
	client->used_bdat = true;
	client->state = CLIENT_BDAT;
}

static void bdat_chunk_done(struct lmtp_client *client)
{
	client->state = CLIENT_CMD;
	if (client->bdat_discard) {
		/* RFC 2033 4.3: LAST without recipients has no replies */
		if (client->bdat_error[0] != '\0')
			client_bad(client, client->bdat_error);
		if (client->bdat_last)
			transaction_reset(client);
		return;
	}
	if (client->bdat_last)
		client_deliver(client);
	else
		client_send(client, "250 2.0.0 OK, chunk received");
}

static void client_command(struct lmtp_client *client, const char *line)
{
	const char *args;
	enum lmtp_verb verb = lmtp_verb_parse(line, &args);

	switch (verb) {
	case LMTP_VERB_LHLO:
		cmd_lhlo(client, args);
		break;
	case LMTP_VERB_HELO:
	case LMTP_VERB_EHLO:
		/* RFC 2033 4.1: never a positive reply */
		client_bad(client, "500 5.5.1 This is LMTP: use LHLO");
		break;
	case LMTP_VERB_MAIL:
		cmd_mail(client, args);
		break;
	case LMTP_VERB_RCPT:
		cmd_rcpt(client, args);
		break;
	case LMTP_VERB_DATA:
		cmd_data(client, args);
		break;
	case LMTP_VERB_BDAT:
		cmd_bdat(client, args);
		break;
	case LMTP_VERB_RSET:
		transaction_reset(client);
		client_send(client, "250 2.0.0 OK");
		break;
	case LMTP_VERB_NOOP:
		client_send(client, "250 2.0.0 OK");
		break;
	case LMTP_VERB_QUIT:
		client_sendf(client, "221 2.0.0 %s Bye", client->proc->hostname);
		client->state = CLIENT_QUIT;
		break;
	case LMTP_VERB_VRFY:
		/* RFC 5321 3.5.3: 252 declines without saying no */
		client_send(client, "252 2.5.0 Cannot VRFY user; try RCPT to "
			    "attempt delivery");
		break;
	case LMTP_VERB_HELP:
		client_send(client, "214 2.0.0 Commands: LHLO MAIL RCPT DATA "
			    "BDAT RSET NOOP QUIT VRFY");
		break;
	case LMTP_VERB_STARTTLS:
		client_bad(client, "502 5.5.1 STARTTLS is not offered");
		break;
	case LMTP_VERB_UNKNOWN:
		client_bad(client, "500 5.5.2 Unknown command");
		break;
	}
}

/* ---- input ---- */

static bool client_can_process(struct lmtp_client *client)
{
	if (client->output == NULL)
		return false;
	if (o_stream_get_buffer_used(client->output) > LMTP_OUTBUF_THROTTLE)
		return false;
	return client->state == CLIENT_CMD || client->state == CLIENT_SKIP_LINE ||
		client->state == CLIENT_DATA || client->state == CLIENT_BDAT;
}

/* Handles what is buffered, as far as the state allows. */
static void client_process_buffered(struct lmtp_client *client)
{
	while (client_can_process(client)) {
		const unsigned char *data;
		size_t size;

		if (client->state == CLIENT_CMD) {
			char *line = i_stream_next_line(client->input);
			if (line != NULL) {
				client_command(client, line);
				continue;
			}
			(void)i_stream_get_data(client->input, &size);
			if (size > LMTP_LINE_MAX) {
				client_bad(client, "500 5.5.2 Line too long");
				if (client->state == CLIENT_CMD)
					client->state = CLIENT_SKIP_LINE;
				continue;
			}
			return;
		}
		if (client->state == CLIENT_BDAT && client->bdat_left == 0) {
			/* a chunk of 0 bytes ends without any input */
			bdat_chunk_done(client);
			continue;
		}
		data = i_stream_get_data(client->input, &size);
		if (size == 0)
			return;
		if (client->state == CLIENT_SKIP_LINE) {
			const unsigned char *lf = memchr(data, '\n', size);
			i_stream_skip(client->input, lf == NULL ? size :
				      (size_t)(lf - data) + 1);
			if (lf != NULL)
				client->state = CLIENT_CMD;
		} else if (client->state == CLIENT_DATA) {
			size_t n = lmtp_data_feed_dotted(client->data, data, size);
			i_stream_skip(client->input, n);
			if (lmtp_data_is_done(client->data))
				client_deliver(client);
		} else {
			size_t n = (size_t)MIN((uint64_t)size, client->bdat_left);
			if (!client->bdat_discard)
				lmtp_data_feed_raw(client->data, data, n);
			i_stream_skip(client->input, n);
			client->bdat_left -= n;
		}
	}
}

static void client_finish_quit(struct lmtp_client *client)
{
	if (client->output == NULL || o_stream_flush(client->output) != 0)
		client_destroy(client);
	/* else: the flush callback destroys it when the reply is out */
}

static void client_process(struct lmtp_client *client)
{
	if (client->destroyed)
		return;
	/* the replies to what was pipelined go out together */
	if (client->output != NULL)
		o_stream_cork(client->output);
	client_process_buffered(client);
	if (client->output != NULL)
		o_stream_uncork(client->output);
	if (client->state == CLIENT_QUIT)
		client_finish_quit(client);
	else
		client_io_update(client);
}

static void client_input(void *context)
{
	struct lmtp_client *client = context;
	ssize_t ret = i_stream_read(client->input);

	timeout_reset(client->to_idle);
	if (ret == -1) {
		if (client->mail_set)
			i_info("connection closed in a transaction: %s",
			       i_stream_get_error(client->input));
		client_destroy(client);
		return;
	}
	client_process(client);
}

static void client_io_update(struct lmtp_client *client)
{
	bool want = client_can_process(client);

	if (want && client->io == NULL)
		client->io = io_add(client->proc->ioloop, client->fd, IO_READ,
				    client_input, client);
	else if (!want)
		io_remove(&client->io);
}

static void client_defer(void *context)
{
	struct lmtp_client *client = context;

	client->to_defer = NULL;
	client_process(client);
}

static void client_schedule(struct lmtp_client *client)
{
	client_io_update(client);
	if (client->to_defer == NULL)
		client->to_defer = io_loop_defer(client->proc->ioloop,
						 client_defer, client);
}

static void client_output_flushed(void *context)
{
	struct lmtp_client *client = context;

	if (client->state == CLIENT_QUIT) {
		client_destroy(client);
		return;
	}
	/* throttled input may go on; run from the loop, not inside the
	   stream's own callback */
	client_schedule(client);
}

static void client_idle_timeout(void *context)
{
	struct lmtp_client *client = context;

	client->to_idle = NULL;
	if (client->state == CLIENT_DELIVER || client->state == CLIENT_WAIT_RCPT) {
		/* waiting for us, not for the MTA */
		client->to_idle = timeout_add(client->proc->ioloop,
			LMTP_CLIENT_IDLE_MSECS, client_idle_timeout, client);
		return;
	}
	i_info("disconnected for inactivity%s",
	       client->mail_set ? " in a transaction" : "");
	client_sendf(client, "421 4.4.2 %s Timeout, closing",
		     client->proc->hostname);
	client->state = CLIENT_QUIT;
	client_finish_quit(client);
}

struct lmtp_client *lmtp_client_create(struct lmtp_process *proc, int fd)
{
	struct lmtp_client *client = i_malloc(sizeof(*client));

	client->proc = proc;
	client->fd = fd;
	client->msg_fd = -1;
	client->input = i_stream_create_fd(fd, LMTP_MAX_INBUF_SIZE);
	client->output = o_stream_create_fd(proc->ioloop, fd,
					    LMTP_MAX_OUTBUF_SIZE);
	o_stream_set_flush_callback(client->output, client_output_flushed,
				    client);
	client->to_idle = timeout_add(proc->ioloop, LMTP_CLIENT_IDLE_MSECS,
				      client_idle_timeout, client);
	client->next = proc->clients;
	if (proc->clients != NULL)
		proc->clients->prev = client;
	proc->clients = client;
	proc->client_count++;

	client_sendf(client, "220 %s moat LMTP ready", proc->hostname);
	client_io_update(client);
	return client;
}

void lmtp_client_destroy_all(struct lmtp_process *proc, const char *reason)
{
	while (proc->clients != NULL) {
		struct lmtp_client *client = proc->clients;
		if (client->output != NULL) {
			client_sendf(client, "421 4.3.2 %s %s",
				     proc->hostname, reason);
			(void)o_stream_flush(client->output);
		}
		client_destroy(client);
	}
}
