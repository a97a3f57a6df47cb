/* THREAD and UID THREAD (RFC 5256): ORDEREDSUBJECT and REFERENCES. The
   arguments are parsed fully first; the search, the reading of each
   match's keys (mail-sort-keys.h: from the cache, else its header once)
   and the answer run in slices. The threading itself (imap-thread.c)
   runs in one go: it is O(n log n) over compact entries. The answer
   of a folder in the same state as at the last THREAD is sent from
   imap-thread-cache.h without any of that. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-uidonly.h"
#include "imap-search.h"
#include "imap-sort.h"
#include "imap-thread.h"
#include "imap-thread-cache.h"

#include <strings.h>

/* Bytes of the answer written to the output per step. */
#define THREAD_OUTPUT_PIECE (16 * 1024)
/* Bound of the search program's text as imap-thread-cache.h's key. */
#define THREAD_PROGRAM_KEY_MAX 256

struct thread_cmd {
	struct client_command *cmd;
	struct mailbox *box;
	enum imap_thread_alg alg;

	struct imap_sort_search search;
	bool searching;
	struct mail_sort_keys_reader *reader;
	unsigned int next;          /* next match whose keys are read */
	struct imap_thread *thread;
	bool finished, output_started;
	uint64_t refs[MAIL_THREAD_REFS_MAX];

	/* imap-thread-cache.h: the key (keyed), the answer computed so far
	   (while capturing), or the kept answer being sent */
	bool keyed, capturing;
	struct imap_thread_cache_key key;
	buffer_t program_key, capture;
	struct imap_thread_answer *answer;
	size_t answer_sent;
};

static void thread_cmd_free(struct thread_cmd *ctx)
{
	imap_sort_search_deinit(&ctx->search);
	memset(&ctx->search, 0, sizeof(ctx->search));
	if (ctx->reader != NULL)
		mail_sort_keys_reader_deinit(&ctx->reader);
	if (ctx->thread != NULL)
		imap_thread_deinit(&ctx->thread);
	if (ctx->answer != NULL)
		imap_thread_answer_unref(&ctx->answer);
	buffer_free(&ctx->capture);
	buffer_free(&ctx->program_key);
	ctx->capturing = false;
	imap_sort_release_memory();
}

static void cmd_thread_cancel(struct client_command *cmd)
{
	thread_cmd_free(cmd->context);
}

/* ---- reading the keys ---- */

/* Add match i to the thread builder. Returns 0 or -1. */
static int thread_add_msg(struct thread_cmd *ctx, unsigned int i,
			  const char **error_r)
{
	uint32_t seq = ctx->search.seqs[i];
	struct imap_thread_msg msg;
	struct mail_sort_keys keys;
	struct mail_thread_refs refs;
	bool want_refs = ctx->alg == IMAP_THREAD_REFERENCES;
	int ret;

	memset(&msg, 0, sizeof(msg));
	memset(&keys, 0, sizeof(keys));
	msg.num = ctx->cmd->uid ? mailbox_msg_uid(ctx->box, seq) : seq;
	/* one cache lookup gives both (references only for REFERENCES) */
	if ((ret = mail_sort_keys_get(ctx->reader, seq, &keys,
				      want_refs ? &refs : NULL, error_r)) < 0)
		return -1;
	if (ret > 0 && want_refs) {
		msg.msgid = refs.msgid;
		for (unsigned int r = 0; r < refs.count; r++)
			ctx->refs[r] = mail_thread_refs_at(&refs, r);
		msg.refs = ctx->refs;
		msg.ref_count = refs.count;
	}
	msg.date = imap_sort_sent_date(ctx->box, seq, &keys);
	msg.subject = ret > 0 ? keys.subject_hash : 0;
	msg.reply = ret > 0 && keys.reply;
	imap_thread_add(ctx->thread, &msg);
	return 0;
}

/* Returns 1 when all matches were added, 0 if more remain, -1. */
static int thread_read_keys(struct thread_cmd *ctx, const char **error_r)
{
	struct mail_sort_keys_stats stats;

	mail_sort_keys_reader_get_stats(ctx->reader, &stats);
	uint64_t misses_end = stats.misses + IMAP_SORT_MISSES_PER_SLICE;
	for (unsigned int n = 0; n < IMAP_SORT_MSGS_PER_SLICE; n++) {
		if (ctx->next == ctx->search.count)
			break;
		if (thread_add_msg(ctx, ctx->next, error_r) < 0)
			return -1;
		ctx->next++;
		mail_sort_keys_reader_get_stats(ctx->reader, &stats);
		if (stats.misses >= misses_end)
			break;
	}
	imap_msg_fill_flush(&ctx->search.fill);
	imap_sort_cache_flush(ctx->box);
	return ctx->next == ctx->search.count ? 1 : 0;
}

/* ---- the answer ---- */

static bool thread_output(struct thread_cmd *ctx)
{
	struct client *client = ctx->cmd->client;
	buffer_t piece;

	buffer_init(&piece, THREAD_OUTPUT_PIECE + 16);
	for (;;) {
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL || client->disconnected)
			break;
		buffer_reset(&piece);
		if (!ctx->output_started) {
			ctx->output_started = true;
			if (buffer_append_str(&piece, "* THREAD ") < 0)
				i_unreached();
		}
		bool done = imap_thread_write(ctx->thread, &piece,
					      THREAD_OUTPUT_PIECE);
		if (done) {
			/* no thread: "* THREAD" without the space */
			if (piece.used == 9 && ctx->search.count == 0)
				buffer_truncate(&piece, 8);
			if (buffer_append_str(&piece, "\r\n") < 0)
				i_unreached();
		}
		if (ctx->capturing &&
		    (ctx->capture.used + piece.used >
		     imap_thread_cache_max_size() ||
		     buffer_append(&ctx->capture, piece.data, piece.used) < 0)) {
			/* too big to keep */
			buffer_free(&ctx->capture);
			ctx->capturing = false;
		}
		if (o_stream_send(client->output, piece.data, piece.used) < 0) {
			client_disconnect(client, NULL, "Output failed");
			break;
		}
		if (done) {
			buffer_free(&piece);
			return true;
		}
	}
	buffer_free(&piece);
	return false;
}

/* The kept answer, in pieces as the output takes them: true when all
   of it is out. */
static bool thread_output_kept(struct thread_cmd *ctx)
{
	struct client *client = ctx->cmd->client;
	const buffer_t *text = &ctx->answer->text;

	while (ctx->answer_sent < text->used) {
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL || client->disconnected)
			return false;
		size_t n = MIN(text->used - ctx->answer_sent,
			       (size_t)THREAD_OUTPUT_PIECE);
		if (o_stream_send(client->output, text->data + ctx->answer_sent,
				  n) < 0) {
			client_disconnect(client, NULL, "Output failed");
			return false;
		}
		ctx->answer_sent += n;
	}
	return true;
}

/* ---- running ---- */

static bool thread_fail(struct thread_cmd *ctx, const char *error)
{
	struct client_command *cmd = ctx->cmd;

	i_error("THREAD in %s: %s", mailbox_get_name(ctx->box), error);
	thread_cmd_free(ctx);
	client_send_tagline(cmd, "NO [SERVERBUG] Thread failed.");
	return true;
}

static bool cmd_thread_continue(struct client_command *cmd)
{
	struct thread_cmd *ctx = cmd->context;
	const char *error;
	int ret;

	cmd->wait = CLIENT_WAIT_NONE;
	if (ctx->answer != NULL) {
		if (!thread_output_kept(ctx)) {
			cmd->wait = CLIENT_WAIT_OUTPUT;
			return false;
		}
		i_debug("THREAD: %u messages, the answer kept from an earlier "
			"THREAD", ctx->key.count);
		thread_cmd_free(ctx);
		client_send_tagline(cmd, "OK Thread completed.");
		return true;
	}
	if (ctx->searching) {
		if ((ret = imap_sort_search_continue(&ctx->search, &error)) < 0)
			return thread_fail(ctx, error);
		if (ret == 0)
			return false;
		ctx->searching = false;
		ctx->reader = mail_sort_keys_reader_init(ctx->box,
			ctx->search.seqs, ctx->search.count);
		/* no ENVELOPE fill from the key reader: see imap_sort_init() */
		ctx->thread = imap_thread_init(ctx->alg, ctx->search.count);
		return false;
	}
	if (!ctx->finished) {
		if ((ret = thread_read_keys(ctx, &error)) < 0)
			return thread_fail(ctx, error);
		if (ret == 0)
			return false;
		imap_thread_finish(ctx->thread);
		ctx->finished = true;
	}
	if (!thread_output(ctx)) {
		cmd->wait = CLIENT_WAIT_OUTPUT;
		return false;
	}
	struct mail_sort_keys_stats stats;
	mail_sort_keys_reader_get_stats(ctx->reader, &stats);
	i_debug("THREAD: %u messages, %llu key hits, %llu headers parsed",
		ctx->search.count, (unsigned long long)stats.hits,
		(unsigned long long)stats.misses);
	/* kept only if the view did not move while the answer was
	   computed (it runs in slices) */
	if (ctx->capturing &&
	    ctx->key.highest_modseq == mailbox_get_highest_modseq(ctx->box) &&
	    ctx->key.count == mailbox_get_count(ctx->box) &&
	    ctx->key.numbering == mailbox_get_numbering_stamp(ctx->box))
		imap_thread_cache_store(&ctx->key, ctx->capture.data,
					ctx->capture.used);
	thread_cmd_free(ctx);
	client_send_tagline(cmd, "OK Thread completed.");
	return true;
}

bool cmd_thread(struct client_command *cmd)
{
	struct thread_cmd *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const struct imap_arg *args = cmd->args;
	struct mail_search_program *program;
	const char *alg, *error;

	ctx->cmd = cmd;
	ctx->box = cmd->client->mailbox;
	if (!imap_arg_get_atom(&args[0], &alg) ||
	    !imap_arg_get_astring(&args[1], &error) ||
	    args[2].type == IMAP_ARG_EOL) {
		client_send_command_error(cmd, "Invalid THREAD arguments.");
		return true;
	}
	if (strcasecmp(alg, "REFERENCES") == 0)
		ctx->alg = IMAP_THREAD_REFERENCES;
	else if (strcasecmp(alg, "ORDEREDSUBJECT") == 0)
		ctx->alg = IMAP_THREAD_ORDEREDSUBJECT;
	else {
		client_send_command_error(cmd, "Unknown threading algorithm.");
		return true;
	}
	if (!imap_sort_charset_ok(&args[1])) {
		client_send_taglinef(cmd, "NO %s Unsupported charset.",
				     MAIL_SEARCH_BADCHARSET);
		return true;
	}
	enum mail_search_parse_result ret =
		mail_search_parse(cmd->pool, &args[2],
				  imap_search_saved_get(cmd->client),
				  &program, &error);
	/* RFC 9586 3.8 */
	if (ret == MAIL_SEARCH_PARSE_OK && cmd->client->uidonly &&
	    mail_search_program_uses_seqset(program)) {
		ret = MAIL_SEARCH_PARSE_BAD;
		error = IMAP_UIDREQUIRED_TEXT;
	}
	if (ret != MAIL_SEARCH_PARSE_OK) {
		if (ret == MAIL_SEARCH_PARSE_BADCHARSET)
			client_send_taglinef(cmd, "NO %s", error);
		else
			client_send_command_error(cmd, error);
		return true;
	}
	cmd->context = ctx;
	cmd->func = cmd_thread_continue;
	cmd->cancel = cmd_thread_cancel;
	if (imap_thread_cache_max_size() > 0) {
		buffer_init(&ctx->program_key, THREAD_PROGRAM_KEY_MAX);
		ctx->keyed = imap_thread_cache_program(&args[2],
						       &ctx->program_key);
	}
	if (ctx->keyed) {
		ctx->key = (struct imap_thread_cache_key){
			.mailbox = mailbox_get_name(ctx->box),
			.uidvalidity = mailbox_get_uidvalidity(ctx->box),
			.highest_modseq = mailbox_get_highest_modseq(ctx->box),
			.count = mailbox_get_count(ctx->box),
			.numbering = mailbox_get_numbering_stamp(ctx->box),
			.alg = ctx->alg,
			.uid = cmd->uid,
			.program = ctx->program_key.data,
		};
		ctx->answer = imap_thread_cache_lookup(&ctx->key);
		if (ctx->answer != NULL)
			return cmd_thread_continue(cmd);
		buffer_init(&ctx->capture, imap_thread_cache_max_size());
		ctx->capturing = true;
	}
	imap_sort_search_init(&ctx->search, ctx->box, program);
	ctx->searching = true;
	return cmd_thread_continue(cmd);
}
