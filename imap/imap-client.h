#ifndef IMAP_CLIENT_H
#define IMAP_CLIENT_H
/* One IMAP connection after login: its streams, parser, the command in
   progress and the selected mailbox. A client owns a pool for its whole
   life and each command owns a pool freed when the command ends. */

#include "imap-common.h"

/* Bytes read from the socket but not parsed yet. The parser consumes
   everything it is fed, so this only needs room for one read plus the
   bytes imap-login passed along (at most an IPC record). */
#define CLIENT_INPUT_BUFFER_MAX (128 * 1024)
/* Untagged updates and one slice of a FETCH answer. Sliced commands keep
   well below it (they wait for the client to read); the rest are lines. */
#define CLIENT_OUTPUT_BUFFER_MAX (1024 * 1024)
/* A sliced command continues only when this much room is left. */
#define CLIENT_OUTPUT_SLICE_MIN_AVAIL (64 * 1024)
/* No new command starts while this much output waits for the client
   (besides imap_max_pipelined_commands): the next reply must fit. */
#define CLIENT_OUTPUT_PIPELINE_MAX (CLIENT_OUTPUT_BUFFER_MAX / 4)
/* Enough of a line to see "tag SP command" (decides literal streaming). */
#define CLIENT_LINE_HEAD_MAX 128
/* Our own reply lines (tagged replies, untagged data) are short. */
#define CLIENT_REPLY_LINE_MAX 4096

struct client_command;
/* Returns true when the command is done (it sent its tagged reply), false
   when it waits (cmd->wait says for what) and must be called again. */
typedef bool command_func_t(struct client_command *cmd);

enum client_command_wait {
	CLIENT_WAIT_NONE = 0,     /* call again from the loop soon */
	CLIENT_WAIT_OUTPUT,       /* call again when output drained */
	CLIENT_WAIT_INPUT,        /* call again when input arrives */
	CLIENT_WAIT_WAKEUP,       /* call again after client_command_wakeup() */
};

struct command;

struct client_command {
	struct client *client;
	pool_t pool;                  /* freed when the command ends */
	const char *tag;
	const char *name;             /* as the client wrote it */
	const struct imap_arg *args;  /* after the name (and UID) */
	const struct command *def;
	uint64_t started_us;          /* imap_stats_now_us() at its start */
	bool uid;                     /* UID FETCH etc. */
	/* The tagged OK carries [HIGHESTMODSEQ n] (RFC 7162 3.2.7: an
	   EXPUNGE that removed something, with QRESYNC). */
	bool reply_highestmodseq;
	bool literal_size;            /* args end in IMAP_ARG_LITERAL_SIZE */
	command_func_t *func;
	/* Called if the client goes away while the command waits. */
	void (*cancel)(struct client_command *cmd);
	void *context;
	enum client_command_wait wait;
};

struct client {
	struct client *prev, *next;
	struct imap_user *user;
	pool_t pool;
	int fd;
	struct istream *input;
	struct ostream *output;
	struct io *io;
	struct timeout *to_idle, *to_continue, *to_destroy;
	struct imap_parser *parser;
	char line_head[CLIENT_LINE_HEAD_MAX];
	size_t line_head_len;

	struct client_command *cmd;
	unsigned int bad_counter;
	/* Commands answered since the output buffer was last empty; at
	   imap_max_pipelined_commands input waits (pipeline_blocked) until
	   the client has read them. */
	unsigned int unread_replies;
	bool pipeline_blocked;

	struct mailbox *mailbox;      /* selected, or NULL */
	uint32_t exists_sent;         /* EXISTS count the client knows */
	uint32_t recent_sent;
	uint32_t keywords_sent;       /* keywords listed in the last FLAGS */
	struct mailbox *append_box;   /* kept open for repeated APPENDs */
	/* SEARCHRES "$" of the selected mailbox (imap-search.h) */
	struct imap_search_saved *search_saved;
	/* CONTEXT=SEARCH updates of the selected mailbox (imap-context.h) */
	struct imap_contexts *contexts;
	/* previews PREVIEW (LAZY) missed, computed later (imap-preview-lazy.h) */
	struct imap_preview_lazy *preview_lazy;

	/* ENABLE IMAP4rev2 (RFC 9051): ESEARCH for SEARCH, no RECENT,
	   [CLOSED] and LIST on SELECT, UID in unsolicited FETCH */
	bool imap4rev2;
	/* RFC 7162: a CONDSTORE enabling command was seen (MODSEQ and UID
	   in every FETCH update), and ENABLE QRESYNC (VANISHED instead of
	   EXPUNGE; QRESYNC select parameter, UID FETCH VANISHED) */
	bool condstore;
	bool qresync;
	/* ENABLE UTF8=ACCEPT (RFC 6855): mailbox names are UTF-8 both ways
	   (imap-mailbox.h; IMAP4rev2 mode too: client_utf8_names()),
	   quoted strings are checked UTF-8 (also in IMAP4rev2 mode), APPEND
	   takes UTF8 (~{n}), SEARCH no CHARSET */
	bool utf8;
	/* ENABLE UIDONLY (RFC 9586, imap-uidonly.h) */
	bool uidonly;
	/* a MODSEQ went out since the last tagged reply */
	bool modseq_sent;
	/* NOTIFY SET (imap-notify.h), NULL before one and after NONE */
	struct imap_notify_state *notify;

	/* COMPRESS=DEFLATE (imap-compress.h): the streams run over it */
	struct imap_compress *compress;
	/* set by COMPRESS when it finishes with its OK on the socket (the
	   output buffer empty): the streams switch to deflate when the
	   command is freed; bytes already buffered as input are the
	   client's first compressed ones */
	bool compress_start;
	/* client_handle_input() holds a cork over a batch of commands:
	   COMPRESS waits for its end to switch streams */
	bool batch_corked;
	/* the buffer was empty when the batch began: it holds whole
	   lines of this batch only */
	bool batch_clean;
	/* a deferred flag sync of this batch's STOREs failed (logged):
	   their OKs must not go out (client_flags_sync()) */
	bool flags_sync_failed;
	/* the batch's end waits for the turn's flag sync (imap-flag-sync.h):
	   output corked, input not taken; next in the user's list; this
	   session's sync of this turn succeeded */
	bool flag_sync_wait, flag_sync_done;
	struct client *flag_sync_next;
	/* reads again when inflate holds input the fd will not signal */
	struct timeout *to_input;

	const char *session;          /* for log lines */
	/* A kernel TLS socket from imap-login (lib/ktls.h): read through
	   recvmsg, closed with a close_notify. */
	bool ktls;
	bool disconnected;
};

/* Takes fd. prefix: bytes imap-login already read after LOGIN. tag: the
   LOGIN command's tag ("" = no tagged reply). */
struct client *client_create(struct imap_user *user, int fd, const char *tag,
			     const void *prefix, size_t prefix_size,
			     const char *remote_ip);
/* Send "* BYE <bye>" (if bye != NULL), close and free from the loop.
   Safe to call from any callback; the client is dead afterwards. */
void client_disconnect(struct client *client, const char *bye,
		       const char *log_reason);
/* Immediate free (process exit). */
void client_destroy(struct client *client);

/* A command in CLIENT_WAIT_WAKEUP runs again soon, from the loop (never
   from inside this call). No-op for a command waiting for something else
   or a disconnected client. */
void client_command_wakeup(struct client_command *cmd);

/* One line; CRLF is added. Failure (buffer overflow) disconnects. */
void client_send_line(struct client *client, const char *line);
void client_send_linef(struct client *client, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* "tag <text>". For OK and NO the untagged updates of the selected
   mailbox are sent first (RFC 3501 5.2). */
void client_send_tagline(struct client_command *cmd, const char *text);
void client_send_taglinef(struct client_command *cmd, const char *fmt, ...)
	ATTR_FORMAT(2, 3);
/* "tag BAD <text>" and count a bad command. */
void client_send_command_error(struct client_command *cmd, const char *text);

/* For commands that read their own input (APPEND): feed the parser what
   is buffered. */
enum imap_parse_result
client_parse_input(struct client *client, enum imap_parser_flags flags,
		   const struct imap_arg **args_r);
/* Answer a parse error of the command's line (BAD or BYE). */
void client_command_parse_error(struct client_command *cmd);

/* Run cmd (pool, args, def and tag "" set by the caller) as the client's
   command while none runs: it continues and is freed as any command,
   without a tagged reply (NOTIFY's MessageNew FETCH, imap-notify.h). */
void client_command_run_internal(struct client *client,
				 struct client_command *cmd);

/* Mailbox names go UTF-8 on the wire, not modified UTF-7: after ENABLE
   UTF8=ACCEPT (RFC 6855 3) or ENABLE IMAP4rev2 (RFC 9051 5.1: names are
   Net-Unicode; modified UTF-7 is for IMAP4rev1 sessions, Appendix A). */
static inline bool client_utf8_names(const struct client *client)
{
	return client->utf8 || client->imap4rev2;
}

/* Close the selected mailbox (no expunge). */
void client_unselect(struct client *client);
/* The end of a batch of commands (client_handle_input()) once its flag
   changes are durable: the replies leave, and what waited for them goes
   on (imap-flag-sync.c calls it after the turn's sync). */
void client_batch_finish(struct client *client);

#endif
