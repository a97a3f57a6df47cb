/* SEARCH and UID SEARCH (RFC 3501 / RFC 9051 6.4.4), with ESEARCH's
   RETURN options (RFC 4731), SEARCHRES (RFC 5182), PARTIAL (RFC 9394)
   and CONTEXT=SEARCH's CONTEXT and UPDATE (RFC 5267 4.2, 4.3:
   imap-context.h); in IMAP4rev2 mode the answer is always ESEARCH. The program is
   parsed fully first (mail-search.h); the messages are then judged in
   slices, yielding to the loop so the user's other connections are
   served, and the answer is written in slices too, as output drains.
   No EXPUNGE is sent meanwhile: the command is CMD_FLAG_USES_SEQS and
   the view is only synced when the tagged reply goes out. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-uidonly.h"
#include "imap-search.h"
#include "imap-condstore.h"
#include "imap-context.h"
#include "imap-notify-set.h"
#include "imap-fetch-cache.h"

#include <strings.h>

/* Messages judged per slice, and file bytes read per slice: a slice of
   header or body searching ends early so one big mailbox cannot hold
   the process for long. */
#define SEARCH_MSGS_PER_SLICE 1000
#define SEARCH_BYTES_PER_SLICE (4 * 1024 * 1024)
/* Bytes of result numbers written to the output per step. */
#define SEARCH_OUTPUT_PIECE (16 * 1024)

struct search_cmd {
	struct client_command *cmd;
	struct mailbox *box;
	struct mail_search_ctx *search;
	/* ENVELOPEs filled from the files the search reads */
	struct imap_msg_fill fill;
	enum imap_search_return ret;
	struct imap_search_partial partial;   /* RETURN (PARTIAL ...) */
	bool esearch;          /* RETURN was given */
	/* RETURN (UPDATE): the program lives in update_pool, which the
	   update context takes over (imap-context.h) */
	pool_t update_pool;
	/* UPDATE (fetch-att ...): FETCH for new matches (RFC 5465 7) */
	const char *update_fetch;
	struct mail_search_program *program;
	uint32_t next_seq;     /* next message to judge */
	bool failed;

	/* matching sequence numbers as merged ranges (grows; bounded by
	   the message count) */
	struct seq_range *matches;
	unsigned int match_count, match_alloc;
	uint32_t total;
	/* RFC 7162 3.1.6: with a MODSEQ key, the highest modseq matched */
	bool modseq;
	uint64_t max_modseq;

	/* writing the answer: the ranges listed (the matches, or the
	   PARTIAL window of them, i_malloc'd) */
	const struct seq_range *out_ranges;
	unsigned int out_count;
	struct seq_range *window;
	bool window_found;     /* PARTIAL selected some results */
	uint32_t win_first, win_last;   /* their positions, 0-based */
	bool output_prepared, output_started;
	unsigned int out_range;
	uint32_t out_seq;
	bool out_any;          /* a number was written (a set needs ",") */
};

static void search_add_match(struct search_cmd *ctx, uint32_t seq)
{
	ctx->total++;
	if (ctx->modseq)
		ctx->max_modseq = MAX(ctx->max_modseq,
				      mailbox_msg_modseq(ctx->box, seq));
	if (ctx->match_count > 0 &&
	    ctx->matches[ctx->match_count - 1].seq2 + 1 == seq) {
		ctx->matches[ctx->match_count - 1].seq2 = seq;
		return;
	}
	if (ctx->match_count == ctx->match_alloc) {
		ctx->match_alloc = ctx->match_alloc == 0 ? 64 :
			ctx->match_alloc * 2;
		ctx->matches = i_realloc(ctx->matches, i_mul_size(
			ctx->match_alloc, sizeof(*ctx->matches)));
	}
	ctx->matches[ctx->match_count].seq1 = seq;
	ctx->matches[ctx->match_count].seq2 = seq;
	ctx->match_count++;
}

static void search_cmd_free(struct search_cmd *ctx)
{
	if (ctx->search != NULL)
		mail_search_deinit(&ctx->search);
	imap_msg_fill_deinit(&ctx->fill);
	i_free(ctx->matches);
	i_free(ctx->window);
	if (ctx->update_pool != NULL)
		pool_unref(&ctx->update_pool);
}

static void cmd_search_cancel(struct client_command *cmd)
{
	search_cmd_free(cmd->context);
}

/* ---- the answer ---- */

static uint32_t search_number(struct search_cmd *ctx, uint32_t seq)
{
	return ctx->cmd->uid ? mailbox_msg_uid(ctx->box, seq) : seq;
}

/* Append the next numbers to piece: "* SEARCH" lists each one, ALL of
   ESEARCH a sequence-set. Returns false when all were written. */
static bool search_output_numbers(struct search_cmd *ctx, buffer_t *piece,
				  bool as_set)
{
	while (ctx->out_range < ctx->out_count) {
		const struct seq_range *r = &ctx->out_ranges[ctx->out_range];
		if (ctx->out_seq < r->seq1)
			ctx->out_seq = r->seq1;
		if (piece->used + 32 > SEARCH_OUTPUT_PIECE)
			return true;
		uint32_t first = ctx->out_seq, num = search_number(ctx, first);
		uint32_t last = first;
		/* a run of consecutive numbers is one range in a set */
		while (as_set && last < r->seq2 &&
		       search_number(ctx, last + 1) == num + (last - first) + 1)
			last++;
		const char *sep = !as_set ? " " : ctx->out_any ? "," : "";
		ctx->out_any = true;
		int ret = last == first ?
			buffer_printf(piece, "%s%u", sep, num) :
			buffer_printf(piece, "%s%u:%u", sep, num,
				      num + (last - first));
		i_assert(ret == 0);
		if (last >= r->seq2) {
			ctx->out_range++;
			ctx->out_seq = 0;
		} else {
			ctx->out_seq = last + 1;
		}
	}
	return false;
}

static void search_esearch_head(struct search_cmd *ctx, buffer_t *piece)
{
	int ret = buffer_append_str(piece, "* ESEARCH (TAG ");

	ret |= imap_append_quoted(piece, ctx->cmd->tag);
	ret |= buffer_append_str(piece, ctx->cmd->uid ? ") UID" : ")");
	if (ctx->total > 0 && (ctx->ret & IMAP_SEARCH_RETURN_MIN) != 0)
		ret |= buffer_printf(piece, " MIN %u",
				     search_number(ctx, ctx->matches[0].seq1));
	if (ctx->total > 0 && (ctx->ret & IMAP_SEARCH_RETURN_MAX) != 0)
		ret |= buffer_printf(piece, " MAX %u", search_number(ctx,
				ctx->matches[ctx->match_count - 1].seq2));
	if ((ctx->ret & IMAP_SEARCH_RETURN_COUNT) != 0)
		ret |= buffer_printf(piece, " COUNT %u", ctx->total);
	if (ctx->total > 0 && (ctx->ret & IMAP_SEARCH_RETURN_ALL) != 0)
		ret |= buffer_append_str(piece, " ALL ");
	if ((ctx->ret & IMAP_SEARCH_RETURN_PARTIAL) != 0) {
		ret |= imap_search_partial_head(&ctx->partial, piece);
		if (!ctx->window_found)
			ret |= buffer_append_str(piece, "NIL)");
	}
	i_assert(ret == 0);
}

/* RFC 9394 3.1: the matches at positions win_first..win_last. */
static void search_partial_window(struct search_cmd *ctx)
{
	uint32_t pos = 0;
	unsigned int n = 0;

	ctx->window_found = imap_search_partial_window(&ctx->partial,
		ctx->total, &ctx->win_first, &ctx->win_last);
	if (!ctx->window_found)
		return;
	ctx->window = i_malloc(i_mul_size(ctx->match_count + 1,
					  sizeof(*ctx->window)));
	for (unsigned int i = 0; i < ctx->match_count; i++) {
		const struct seq_range *r = &ctx->matches[i];
		uint32_t len = r->seq2 - r->seq1 + 1;
		uint32_t lo = MAX(pos, ctx->win_first);
		uint32_t hi = MIN(pos + len - 1, ctx->win_last);
		if (lo <= hi) {
			ctx->window[n].seq1 = r->seq1 + (lo - pos);
			ctx->window[n].seq2 = r->seq1 + (hi - pos);
			n++;
		}
		pos += len;
		if (pos > ctx->win_last)
			break;
	}
	ctx->out_ranges = ctx->window;
	ctx->out_count = n;
}

/* What the answer lists: every match (SEARCH, ALL), the PARTIAL window,
   or nothing. */
static void search_output_prepare(struct search_cmd *ctx)
{
	ctx->out_ranges = ctx->matches;
	ctx->out_count = ctx->match_count;
	if (ctx->esearch && (ctx->ret & IMAP_SEARCH_RETURN_PARTIAL) != 0)
		search_partial_window(ctx);
	else if (ctx->esearch && (ctx->ret & IMAP_SEARCH_RETURN_ALL) == 0)
		ctx->out_count = 0;   /* no list */
}

/* RFC 4731 3.2: with MIN and/or MAX but neither ALL nor COUNT, the
   highest modseq of the messages returned; else of all matches. PARTIAL
   counts as ALL here: its window is a page of all matches (RFC 9394
   3.1), and a client paging through them needs one MODSEQ for all. */
static uint64_t search_result_modseq(struct search_cmd *ctx)
{
	enum imap_search_return ends = ctx->ret &
		(IMAP_SEARCH_RETURN_MIN | IMAP_SEARCH_RETURN_MAX);
	uint64_t modseq = 0;

	if (!ctx->esearch || ends == 0 ||
	    (ctx->ret & (IMAP_SEARCH_RETURN_ALL | IMAP_SEARCH_RETURN_COUNT |
			 IMAP_SEARCH_RETURN_PARTIAL)) != 0)
		return ctx->max_modseq;
	if ((ends & IMAP_SEARCH_RETURN_MIN) != 0)
		modseq = mailbox_msg_modseq(ctx->box, ctx->matches[0].seq1);
	if ((ends & IMAP_SEARCH_RETURN_MAX) != 0)
		modseq = MAX(modseq, mailbox_msg_modseq(ctx->box,
				ctx->matches[ctx->match_count - 1].seq2));
	return modseq;
}

/* Write the untagged answer as output room allows. Returns true when
   it is complete. */
static bool search_output(struct search_cmd *ctx)
{
	struct client *client = ctx->cmd->client;
	bool as_set = ctx->esearch;
	buffer_t piece;

	/* RFC 5182 2.1: SAVE alone answers nothing; UPDATE without data
	   options an ESEARCH with just the tag */
	if (ctx->esearch && (ctx->ret & (IMAP_SEARCH_RETURN_DATA |
					 IMAP_SEARCH_RETURN_UPDATE)) == 0)
		return true;
	/* the ESEARCH head holds the tag (up to a line long) and numbers */
	buffer_init(&piece, i_add_size(SEARCH_OUTPUT_PIECE +
				       CLIENT_REPLY_LINE_MAX,
				       2 * strlen(ctx->cmd->tag)));
	for (;;) {
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL || client->disconnected)
			break;
		buffer_reset(&piece);
		if (!ctx->output_started) {
			ctx->output_started = true;
			if (ctx->esearch)
				search_esearch_head(ctx, &piece);
			else if (buffer_append_str(&piece, "* SEARCH") < 0)
				i_unreached();
		}
		bool more = search_output_numbers(ctx, &piece, as_set);
		if (!more && ctx->window_found &&
		    buffer_append_c(&piece, ')') < 0)
			i_unreached();
		/* RFC 7162 3.1.6, 3.1.10: after a non-empty result */
		if (!more && ctx->modseq && ctx->total > 0 &&
		    buffer_printf(&piece, ctx->esearch ? " MODSEQ %llu" :
				  " (MODSEQ %llu)", (unsigned long long)
				  search_result_modseq(ctx)) < 0)
			i_unreached();
		if (!more && buffer_append_str(&piece, "\r\n") < 0)
			i_unreached();
		if (o_stream_send(client->output, piece.data, piece.used) < 0) {
			client_disconnect(client, NULL, "Output failed");
			break;
		}
		if (!more) {
			buffer_free(&piece);
			return true;
		}
	}
	buffer_free(&piece);
	return false;
}

/* ---- SAVE ---- */

/* The UIDs to save: all matches, or with MIN/MAX/PARTIAL but neither
   ALL nor COUNT only the lowest and/or highest and/or the PARTIAL window
   (RFC 5182 2.4, RFC 9394 3.2 table 1). */
static void search_save(struct search_cmd *ctx)
{
	struct client *client = ctx->cmd->client;
	bool only_ends = (ctx->ret & (IMAP_SEARCH_RETURN_MIN | IMAP_SEARCH_RETURN_MAX |
				      IMAP_SEARCH_RETURN_PARTIAL)) != 0 &&
		(ctx->ret & (IMAP_SEARCH_RETURN_ALL | IMAP_SEARCH_RETURN_COUNT)) == 0;
	uint32_t pos = 0;
	struct mail_search_range *uids;
	unsigned int count = 0;

	if (ctx->total == 0) {
		imap_search_saved_set(client, NULL, 0);
		return;
	}
	uids = i_malloc(i_mul_size(ctx->total, sizeof(*uids)));
	for (unsigned int i = 0; i < ctx->match_count; i++) {
		for (uint32_t seq = ctx->matches[i].seq1;
		     seq <= ctx->matches[i].seq2; seq++) {
			uint32_t uid = mailbox_msg_uid(ctx->box, seq);
			bool first = i == 0 && seq == ctx->matches[0].seq1;
			bool last = i == ctx->match_count - 1 &&
				seq == ctx->matches[i].seq2;
			bool in_window = ctx->window_found &&
				pos >= ctx->win_first && pos <= ctx->win_last;
			pos++;
			if (only_ends && !in_window &&
			    !(first && (ctx->ret & IMAP_SEARCH_RETURN_MIN) != 0) &&
			    !(last && (ctx->ret & IMAP_SEARCH_RETURN_MAX) != 0))
				continue;
			if (count > 0 && uids[count - 1].hi + 1 == uid) {
				uids[count - 1].hi = uid;
			} else {
				uids[count].lo = uids[count].hi = uid;
				count++;
			}
		}
	}
	imap_search_saved_set(client, uids, count);
	i_free(uids);
}

/* ---- UPDATE ---- */

/* RFC 5267 4.3: keep the result updated, or say why not (4.3.1: the
   other options were honoured all the same). */
static void search_start_update(struct search_cmd *ctx)
{
	struct client_command *cmd = ctx->cmd;
	if (imap_context_refuse(cmd, ctx->program))
		return;
	imap_context_add(cmd->client, cmd->tag, cmd->uid, &ctx->update_pool,
			 ctx->program, ctx->update_fetch, ctx->matches,
			 ctx->match_count);
}

/* ---- running ---- */

static bool search_finish(struct search_cmd *ctx)
{
	struct client_command *cmd = ctx->cmd;

	if (!ctx->output_prepared) {
		ctx->output_prepared = true;
		search_output_prepare(ctx);
	}
	if (!search_output(ctx)) {
		cmd->wait = CLIENT_WAIT_OUTPUT;
		return false;
	}
	if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
		search_save(ctx);
	if (ctx->update_pool != NULL)
		search_start_update(ctx);
	search_cmd_free(ctx);
	client_send_tagline(cmd, "OK Search completed.");
	return true;
}

static bool cmd_search_continue(struct client_command *cmd)
{
	struct search_cmd *ctx = cmd->context;
	uint32_t count = mailbox_get_count(ctx->box);
	const char *error;

	if (ctx->search == NULL)
		return search_finish(ctx);
	uint64_t bytes_end = mail_search_get_bytes_read(ctx->search) +
		SEARCH_BYTES_PER_SLICE;
	for (unsigned int n = 0; n < SEARCH_MSGS_PER_SLICE; n++) {
		if (ctx->next_seq > count)
			break;
		int ret = mail_search_match(ctx->search, ctx->next_seq, &error);
		if (ret < 0) {
			i_error("SEARCH in %s: %s", mailbox_get_name(ctx->box),
				error);
			if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
				imap_search_saved_clear(cmd->client);
			search_cmd_free(ctx);
			client_send_tagline(cmd, "NO [SERVERBUG] Search failed.");
			return true;
		}
		if (ret > 0)
			search_add_match(ctx, ctx->next_seq);
		ctx->next_seq++;
		if (mail_search_get_bytes_read(ctx->search) >= bytes_end)
			break;
	}
	/* nothing queued waits for the client or the next slice */
	imap_msg_fill_flush(&ctx->fill);
	if (ctx->next_seq <= count) {
		cmd->wait = CLIENT_WAIT_NONE;
		return false;
	}
	mail_search_deinit(&ctx->search);
	return search_finish(ctx);
}

static bool search_parse_error(struct client_command *cmd,
			       struct search_cmd *ctx,
			       enum mail_search_parse_result ret,
			       const char *error)
{
	/* RFC 5182 2.1: a failed SEARCH ... SAVE empties "$" */
	if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
		imap_search_saved_clear(cmd->client);
	if (ret == MAIL_SEARCH_PARSE_BADCHARSET)
		client_send_taglinef(cmd, "NO %s", error);
	else
		client_send_command_error(cmd, error);
	/* after the reply: error may live in the update pool */
	search_cmd_free(ctx);
	return true;
}

bool cmd_search(struct client_command *cmd)
{
	struct search_cmd *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const struct imap_arg *args = cmd->args;
	const struct imap_arg *update_atts = NULL;
	struct mail_search_program *program;
	const char *error;

	ctx->cmd = cmd;
	ctx->box = cmd->client->mailbox;
	ctx->next_seq = 1;
	if (!imap_search_parse_return(&args, &ctx->esearch, &ctx->ret,
				      &ctx->partial, &update_atts)) {
		client_send_command_error(cmd, "Invalid RETURN options.");
		return true;
	}
	if (update_atts != NULL &&
	    !imap_notify_fetch_atts(cmd, update_atts, cmd->pool,
				    &ctx->update_fetch)) {
		client_send_command_error(cmd, "Invalid UPDATE fetch attributes.");
		return true;
	}
	/* RFC 9051 6.4.4: IMAP4rev2 answers with ESEARCH; no RETURN is
	   RETURN (ALL) */
	if (!ctx->esearch && cmd->client->imap4rev2) {
		ctx->esearch = true;
		ctx->ret = IMAP_SEARCH_RETURN_ALL;
	}
	/* RFC 6855 section 3: after ENABLE UTF8=ACCEPT strings are UTF-8,
	   and a CHARSET conflicts with that */
	if (cmd->client->utf8 && imap_arg_atom_equals(args, "CHARSET"))
		return search_parse_error(cmd, ctx, MAIL_SEARCH_PARSE_BAD,
			"SEARCH CHARSET is not allowed after ENABLE UTF8=ACCEPT.");
	/* an updated search outlives the command: its own pool */
	if ((ctx->ret & IMAP_SEARCH_RETURN_UPDATE) != 0)
		ctx->update_pool = pool_create("search update", 1024);
	enum mail_search_parse_result ret =
		mail_search_parse(ctx->update_pool != NULL ? ctx->update_pool :
				  cmd->pool, args,
				  imap_search_saved_get(cmd->client),
				  &program, &error);
	if (ret != MAIL_SEARCH_PARSE_OK)
		return search_parse_error(cmd, ctx, ret, error);
	/* RFC 9586 3.5 */
	if (cmd->client->uidonly && mail_search_program_uses_seqset(program))
		return search_parse_error(cmd, ctx, MAIL_SEARCH_PARSE_BAD,
					  IMAP_UIDREQUIRED_TEXT);
	/* RFC 5267 4.3: a tag is the correlator of its updates */
	if (ctx->update_pool != NULL && imap_context_exists(cmd->client,
							    cmd->tag))
		return search_parse_error(cmd, ctx, MAIL_SEARCH_PARSE_BAD,
					  "Tag reuse: that tag has updates.");
	ctx->program = program;
	if (mail_search_program_uses_modseq(program)) {
		/* a CONDSTORE enabling command (RFC 7162 3.1) */
		ctx->modseq = true;
		imap_condstore_enable(cmd->client);
	}
	ctx->search = mail_search_init(ctx->box, program, time(NULL));
	imap_msg_fill_init(&ctx->fill, ctx->box);
	mail_search_set_read_callback(ctx->search, imap_msg_fill_read_callback,
				      &ctx->fill);
	cmd->context = ctx;
	cmd->func = cmd_search_continue;
	cmd->cancel = cmd_search_cancel;
	return cmd_search_continue(cmd);
}
