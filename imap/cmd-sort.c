/* SORT and UID SORT (RFC 5256), with the DISPLAYFROM/DISPLAYTO keys of
   RFC 5957 and ESORT's RETURN options (RFC 5267 3.1: MIN MAX ALL COUNT,
   SAVE of RFC 5182, PARTIAL of RFC 9394, and CONTEXT and UPDATE of
   CONTEXT=SORT, 4.3: imap-context.h). Arguments are parsed fully first; then the
   search, the key reading and the answer each run in slices, yielding
   to the loop. Keys come from the mail cache (mail-sort-keys.h), so a
   second SORT of a big mailbox opens no message file. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-uidonly.h"
#include "imap-search.h"
#include "imap-condstore.h"
#include "imap-sort.h"
#include "imap-context.h"
#include "imap-notify-set.h"

#include <stdlib.h>

/* Bytes of numbers written to the output per step. */
#define SORT_OUTPUT_PIECE (16 * 1024)

struct sort_cmd {
	struct client_command *cmd;
	struct mailbox *box;
	struct imap_sort_criterion crit[IMAP_SORT_MAX_KEYS];
	unsigned int crit_count;
	bool esort;
	enum imap_search_return ret;
	struct imap_search_partial partial;   /* RETURN (PARTIAL ...) */
	/* PARTIAL: the results at sorted positions win_first..win_last */
	bool window_found;
	uint32_t win_first, win_last;

	struct imap_sort_search search;
	bool searching;
	struct imap_sort_ctx *sort;
	const uint32_t *sorted;
	const uint32_t *sorted_uids;   /* UID SORT: the uids of sorted */
	unsigned int out_next, out_end;   /* positions still to list */
	bool output_started;
	bool modseq;           /* a MODSEQ key: RFC 7162 3.1.9, 3.1.10 */
	/* RETURN (UPDATE): the program lives in update_pool, which the
	   update context takes over (imap-context.h) */
	pool_t update_pool;
	/* UPDATE (fetch-att ...): FETCH for new matches (RFC 5465 7) */
	const char *update_fetch;
	struct mail_search_program *program;
};

static void sort_cmd_free(struct sort_cmd *ctx)
{
	imap_sort_search_deinit(&ctx->search);
	memset(&ctx->search, 0, sizeof(ctx->search));
	if (ctx->sort != NULL)
		imap_sort_deinit(&ctx->sort);
	if (ctx->update_pool != NULL)
		pool_unref(&ctx->update_pool);
	imap_sort_release_memory();
}

static void cmd_sort_cancel(struct client_command *cmd)
{
	sort_cmd_free(cmd->context);
}

/* ---- the answer ---- */

static uint32_t sort_number(struct sort_cmd *ctx, unsigned int i)
{
	return ctx->cmd->uid ? ctx->sorted_uids[i] : ctx->sorted[i];
}

static void sort_esort_head(struct sort_cmd *ctx, buffer_t *piece)
{
	unsigned int count = ctx->search.count;
	int ret = buffer_append_str(piece, "* ESEARCH (TAG ");

	ret |= imap_append_quoted(piece, ctx->cmd->tag);
	ret |= buffer_append_str(piece, ctx->cmd->uid ? ") UID" : ")");
	if (count > 0 && (ctx->ret & IMAP_SEARCH_RETURN_MIN) != 0)
		ret |= buffer_printf(piece, " MIN %u", sort_number(ctx, 0));
	if (count > 0 && (ctx->ret & IMAP_SEARCH_RETURN_MAX) != 0)
		ret |= buffer_printf(piece, " MAX %u",
				     sort_number(ctx, count - 1));
	if ((ctx->ret & IMAP_SEARCH_RETURN_COUNT) != 0)
		ret |= buffer_printf(piece, " COUNT %u", count);
	if (count > 0 && (ctx->ret & IMAP_SEARCH_RETURN_ALL) != 0)
		ret |= buffer_append_str(piece, " ALL ");
	if ((ctx->ret & IMAP_SEARCH_RETURN_PARTIAL) != 0) {
		/* RFC 9394 3.1 (and RFC 5267 4.4): positions in sort order */
		ret |= imap_search_partial_head(&ctx->partial, piece);
		if (!ctx->window_found) {
			ret |= buffer_append_str(piece, "NIL)");
			ctx->out_end = 0;
		} else {
			ctx->out_next = ctx->win_first;
			ctx->out_end = ctx->win_last + 1;
		}
	} else if ((ctx->ret & IMAP_SEARCH_RETURN_ALL) == 0) {
		ctx->out_end = 0;
	}
	i_assert(ret == 0);
}

/* Append the next numbers: "* SORT" lists each; ESORT ALL is a
   sequence-set in sort order whose ranges only ever ascend
   (RFC 5267 3.2). Returns false when all were written. */
static bool sort_output_numbers(struct sort_cmd *ctx, buffer_t *piece)
{
	unsigned int count = ctx->out_end;
	unsigned int start = ctx->window_found ? ctx->win_first : 0;

	while (ctx->out_next < count) {
		if (piece->used + 32 > SORT_OUTPUT_PIECE)
			return true;
		unsigned int first = ctx->out_next, last = first;
		uint32_t num = sort_number(ctx, first);
		while (ctx->esort && last + 1 < count &&
		       sort_number(ctx, last + 1) == num + (last - first) + 1)
			last++;
		const char *sep = !ctx->esort ? " " : first == start ? "" : ",";
		int ret = buffer_append_str(piece, sep) < 0 ||
			buffer_append_u32(piece, num) < 0 ||
			(last != first &&
			 (buffer_append_c(piece, ':') < 0 ||
			  buffer_append_u32(piece, num + (last - first)) < 0));
		i_assert(ret == 0);
		ctx->out_next = last + 1;
	}
	return false;
}

/* Write the untagged answer as output room allows. Returns true when
   it is complete. */
static bool sort_output(struct sort_cmd *ctx)
{
	struct client *client = ctx->cmd->client;
	buffer_t piece;

	/* as SEARCH: SAVE alone answers nothing */
	if (ctx->esort && (ctx->ret & (IMAP_SEARCH_RETURN_DATA |
				       IMAP_SEARCH_RETURN_UPDATE)) == 0)
		return true;
	buffer_init(&piece, i_add_size(SORT_OUTPUT_PIECE + CLIENT_REPLY_LINE_MAX,
				       2 * strlen(ctx->cmd->tag)));
	if (!ctx->output_started) {
		ctx->out_end = ctx->search.count;
		if ((ctx->ret & IMAP_SEARCH_RETURN_PARTIAL) != 0)
			ctx->window_found = imap_search_partial_window(
				&ctx->partial, ctx->search.count,
				&ctx->win_first, &ctx->win_last);
	}
	for (;;) {
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL || client->disconnected)
			break;
		buffer_reset(&piece);
		if (!ctx->output_started) {
			ctx->output_started = true;
			if (ctx->esort)
				sort_esort_head(ctx, &piece);
			else if (buffer_append_str(&piece, "* SORT") < 0)
				i_unreached();
		}
		bool more = sort_output_numbers(ctx, &piece);
		if (!more && ctx->window_found &&
		    buffer_append_c(&piece, ')') < 0)
			i_unreached();
		if (!more && ctx->modseq && ctx->search.count > 0) {
			/* RFC 4731 3.2: of the MIN/MAX messages when only
			   they are returned, else of every match (a PARTIAL
			   window is a page of all of them: cmd-search.c) */
			unsigned int n = ctx->search.count;
			bool ends = ctx->esort &&
				(ctx->ret & (IMAP_SEARCH_RETURN_MIN |
					     IMAP_SEARCH_RETURN_MAX)) != 0 &&
				(ctx->ret & (IMAP_SEARCH_RETURN_ALL |
					     IMAP_SEARCH_RETURN_COUNT |
					     IMAP_SEARCH_RETURN_PARTIAL)) == 0;
			uint64_t max = 0;
			for (unsigned int i = 0; i < n; i++) {
				if (ends && !(i == 0 && (ctx->ret &
				      IMAP_SEARCH_RETURN_MIN) != 0) &&
				    !(i == n - 1 && (ctx->ret &
				      IMAP_SEARCH_RETURN_MAX) != 0))
					continue;
				max = MAX(max, mailbox_msg_modseq(ctx->box,
							ctx->sorted[i]));
			}
			if (buffer_printf(&piece, ctx->esort ? " MODSEQ %llu" :
					  " (MODSEQ %llu)",
					  (unsigned long long)max) < 0)
				i_unreached();
		}
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

static int uid_cmp(const void *p1, const void *p2)
{
	uint32_t a = *(const uint32_t *)p1, b = *(const uint32_t *)p2;

	return a < b ? -1 : a > b ? 1 : 0;
}

/* RETURN (SAVE): "$" becomes the matches (RFC 5182), or with MIN/MAX/
   PARTIAL but neither ALL nor COUNT only those (RFC 9394 3.2). */
static void sort_save(struct sort_cmd *ctx)
{
	unsigned int count = ctx->search.count, n = 0, ranges = 0;
	bool only_ends = (ctx->ret & (IMAP_SEARCH_RETURN_MIN | IMAP_SEARCH_RETURN_MAX |
				      IMAP_SEARCH_RETURN_PARTIAL)) != 0 &&
		(ctx->ret & (IMAP_SEARCH_RETURN_ALL | IMAP_SEARCH_RETURN_COUNT)) == 0;
	uint32_t *uids = i_malloc(i_mul_size(count + 1, sizeof(*uids)));
	struct mail_search_range *r =
		i_malloc(i_mul_size(count + 1, sizeof(*r)));

	for (unsigned int i = 0; i < count; i++) {
		bool in_window = ctx->window_found && i >= ctx->win_first &&
			i <= ctx->win_last;
		if (only_ends && !in_window &&
		    !(i == 0 && (ctx->ret & IMAP_SEARCH_RETURN_MIN) != 0) &&
		    !(i == count - 1 && (ctx->ret & IMAP_SEARCH_RETURN_MAX) != 0))
			continue;
		uids[n++] = ctx->cmd->uid ? ctx->sorted_uids[i] :
			mailbox_msg_uid(ctx->box, ctx->sorted[i]);
	}
	if (n > 1)
		qsort(uids, n, sizeof(*uids), uid_cmp);
	for (unsigned int i = 0; i < n; i++) {
		if (ranges > 0 && r[ranges - 1].hi + 1 >= uids[i]) {
			r[ranges - 1].hi = uids[i];
		} else {
			r[ranges].lo = r[ranges].hi = uids[i];
			ranges++;
		}
	}
	imap_search_saved_set(ctx->cmd->client, r, ranges);
	i_free(uids);
	i_free(r);
}

/* RFC 5267 4.3: keep the sorted result updated, or say why not
   (4.3.1: the other options were honoured all the same). */
static void sort_start_update(struct sort_cmd *ctx)
{
	struct client_command *cmd = ctx->cmd;
	if (imap_context_refuse(cmd, ctx->program))
		return;
	imap_context_add_sort(cmd->client, cmd->tag, cmd->uid,
			      &ctx->update_pool, ctx->program,
			      ctx->update_fetch, ctx->crit,
			      ctx->crit_count, ctx->sorted, ctx->search.count);
}

/* ---- running ---- */

static bool sort_fail(struct sort_cmd *ctx, const char *error)
{
	struct client_command *cmd = ctx->cmd;

	i_error("SORT in %s: %s", mailbox_get_name(ctx->box), error);
	if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
		imap_search_saved_clear(cmd->client);
	sort_cmd_free(ctx);
	client_send_tagline(cmd, "NO [SERVERBUG] Sort failed.");
	return true;
}

static bool cmd_sort_continue(struct client_command *cmd)
{
	struct sort_cmd *ctx = cmd->context;
	const char *error;
	int ret;

	cmd->wait = CLIENT_WAIT_NONE;
	if (ctx->searching) {
		if ((ret = imap_sort_search_continue(&ctx->search, &error)) < 0)
			return sort_fail(ctx, error);
		if (ret == 0)
			return false;
		ctx->searching = false;
		ctx->sort = imap_sort_init(ctx->box, ctx->crit, ctx->crit_count,
					   ctx->search.seqs, ctx->search.count);
		if (cmd->uid)
			imap_sort_want_uids(ctx->sort);
		return false;
	}
	if (ctx->sorted == NULL) {
		if ((ret = imap_sort_read_keys(ctx->sort, &error)) < 0)
			return sort_fail(ctx, error);
		if (ret == 0)
			return false;
		imap_sort_run(ctx->sort);
		ctx->sorted = imap_sort_get_seqs(ctx->sort);
		ctx->sorted_uids = imap_sort_get_uids(ctx->sort);
	}
	if (!sort_output(ctx)) {
		cmd->wait = CLIENT_WAIT_OUTPUT;
		return false;
	}
	if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
		sort_save(ctx);
	if (ctx->update_pool != NULL)
		sort_start_update(ctx);
	struct mail_sort_keys_stats stats;
	imap_sort_get_stats(ctx->sort, &stats);
	i_debug("SORT: %u messages, %llu key hits, %llu headers parsed",
		  ctx->search.count, (unsigned long long)stats.hits,
		  (unsigned long long)stats.misses);
	sort_cmd_free(ctx);
	client_send_tagline(cmd, "OK Sort completed.");
	return true;
}

/* Parse "[RETURN (...)] (criteria) charset search-key...". Returns the
   search keys, or NULL after answering. */
static const struct imap_arg *
sort_parse_args(struct client_command *cmd, struct sort_cmd *ctx)
{
	const struct imap_arg *args = cmd->args, *list, *update_atts = NULL;
	unsigned int count;
	const char *error, *charset;

	if (!imap_search_parse_return(&args, &ctx->esort, &ctx->ret,
				      &ctx->partial, &update_atts)) {
		client_send_command_error(cmd, "Invalid RETURN options.");
		return NULL;
	}
	if (update_atts != NULL &&
	    !imap_notify_fetch_atts(cmd, update_atts, cmd->pool,
				    &ctx->update_fetch)) {
		client_send_command_error(cmd, "Invalid UPDATE fetch attributes.");
		return NULL;
	}
	if (!imap_arg_get_list(args, &list, &count) ||
	    imap_sort_parse(list, count, ctx->crit, &ctx->crit_count,
			    &error) < 0) {
		client_send_command_error(cmd, "Invalid sort criteria.");
		return NULL;
	}
	if (!imap_arg_get_astring(&args[1], &charset) ||
	    args[2].type == IMAP_ARG_EOL) {
		client_send_command_error(cmd, "Missing charset or search keys.");
		return NULL;
	}
	if (!imap_sort_charset_ok(&args[1])) {
		client_send_taglinef(cmd, "NO %s Unsupported charset.",
				     MAIL_SEARCH_BADCHARSET);
		return NULL;
	}
	return &args[2];
}

bool cmd_sort(struct client_command *cmd)
{
	struct sort_cmd *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const struct imap_arg *keys;
	struct mail_search_program *program;
	const char *error;

	ctx->cmd = cmd;
	ctx->box = cmd->client->mailbox;
	if ((keys = sort_parse_args(cmd, ctx)) == NULL) {
		if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
			imap_search_saved_clear(cmd->client);
		return true;
	}
	/* an updated sort outlives the command: its own pool */
	if ((ctx->ret & IMAP_SEARCH_RETURN_UPDATE) != 0)
		ctx->update_pool = pool_create("sort update", 1024);
	enum mail_search_parse_result ret =
		mail_search_parse(ctx->update_pool != NULL ? ctx->update_pool :
				  cmd->pool, keys,
				  imap_search_saved_get(cmd->client),
				  &program, &error);
	/* RFC 9586 3.5, 3.8 */
	if (ret == MAIL_SEARCH_PARSE_OK && cmd->client->uidonly &&
	    mail_search_program_uses_seqset(program)) {
		ret = MAIL_SEARCH_PARSE_BAD;
		error = IMAP_UIDREQUIRED_TEXT;
	}
	/* RFC 5267 4.3: a tag is the correlator of its updates */
	if (ret == MAIL_SEARCH_PARSE_OK && ctx->update_pool != NULL &&
	    imap_context_exists(cmd->client, cmd->tag)) {
		ret = MAIL_SEARCH_PARSE_BAD;
		error = "Tag reuse: that tag has updates.";
	}
	if (ret != MAIL_SEARCH_PARSE_OK) {
		if ((ctx->ret & IMAP_SEARCH_RETURN_SAVE) != 0)
			imap_search_saved_clear(cmd->client);
		if (ret == MAIL_SEARCH_PARSE_BADCHARSET)
			client_send_taglinef(cmd, "NO %s", error);
		else
			client_send_command_error(cmd, error);
		/* after the reply: error may live in the update pool */
		if (ctx->update_pool != NULL)
			pool_unref(&ctx->update_pool);
		return true;
	}
	ctx->program = program;
	if (mail_search_program_uses_modseq(program)) {
		ctx->modseq = true;
		imap_condstore_enable(cmd->client);
	}
	imap_sort_search_init(&ctx->search, ctx->box, program);
	ctx->searching = true;
	cmd->context = ctx;
	cmd->func = cmd_sort_continue;
	cmd->cancel = cmd_sort_cancel;
	return cmd_sort_continue(cmd);
}
