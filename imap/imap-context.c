/* Update contexts of CONTEXT=SEARCH (imap-context.h, RFC 5267 4.3). */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-context.h"
#include "imap-condstore.h"
#include "imap-fetch-now.h"
#include "imap-sort.h"
#include "mailbox-uidset.h"

#include <time.h>

struct imap_context {
	struct imap_context *next;
	pool_t pool;              /* the tag and the program */
	const char *tag;
	bool uid;                 /* UID SEARCH: updates carry UIDs */
	struct mail_search_program *program;
	/* UPDATE (fetch-att ...): "(UID ...)" for the messages that join
	   the result when they arrive (RFC 5465 7), or NULL */
	const char *fetch_atts;
	/* messages from this UID on are new to the context: judged at the
	   next sync end */
	uint32_t uid_next;
	/* the result the client has been told about */
	struct uidset result;
	/* changes judged but not sent yet (SEARCH only: SORT's go out as
	   they are made, their positions depend on the order) */
	struct uidset added, removed;

	/* UPDATE of SORT: the criteria and the result in sort order */
	bool sort;
	struct imap_sort_criterion crit[IMAP_SORT_MAX_KEYS];
	unsigned int crit_count;
	uint32_t *sorted;         /* UIDs */
	unsigned int sorted_count, sorted_alloc;
};

struct imap_contexts {
	struct imap_context *head;
	unsigned int count;
	/* UIDs whose flags changed since the last sync end */
	struct uidset dirty;
	/* a sync end runs (its FETCH may sync again: that one waits) */
	bool updating;
};

static struct imap_context *context_find(struct client *client,
					 const char *tag)
{
	if (client->contexts == NULL)
		return NULL;
	for (struct imap_context *ctx = client->contexts->head; ctx != NULL;
	     ctx = ctx->next) {
		if (strcmp(ctx->tag, tag) == 0)
			return ctx;
	}
	return NULL;
}

bool imap_context_exists(struct client *client, const char *tag)
{
	return context_find(client, tag) != NULL;
}

bool imap_context_can_add(struct client *client)
{
	unsigned int count = client->contexts == NULL ? 0 :
		client->contexts->count;

	return count < client->user->set->imap_max_update_contexts;
}

const char *imap_context_refusal(struct client *client,
				 const struct mail_search_program *program)
{
	(void)program;
	if (!imap_context_can_add(client))
		return "Too many update contexts.";
	return NULL;
}

bool imap_context_refuse(struct client_command *cmd,
			 const struct mail_search_program *program)
{
	const char *refusal = imap_context_refusal(cmd->client, program);
	buffer_t line;

	if (refusal == NULL)
		return false;
	/* the tag is up to a line long, quoted */
	buffer_init(&line, i_add_size(CLIENT_REPLY_LINE_MAX,
				      2 * strlen(cmd->tag)));
	int ret = buffer_append_str(&line, "* NO [NOUPDATE ");
	ret |= imap_append_quoted(&line, cmd->tag);
	ret |= buffer_printf(&line, "] %s", refusal);
	i_assert(ret == 0);
	client_send_line(cmd->client, line.data);
	buffer_free(&line);
	return true;
}

void imap_context_add(struct client *client, const char *tag, bool uid,
		      pool_t *pool, struct mail_search_program *program,
		      const char *fetch_atts, const struct seq_range *matches,
		      unsigned int count)
{
	struct mailbox *box = client->mailbox;
	struct imap_context *ctx = p_malloc(*pool, sizeof(*ctx));
	uint32_t msgs = mailbox_get_count(box);

	i_assert(imap_context_can_add(client) && box != NULL);
	if (client->contexts == NULL)
		client->contexts = p_malloc(client->pool,
					    sizeof(*client->contexts));
	ctx->pool = *pool;
	*pool = NULL;
	ctx->tag = p_strdup(ctx->pool, tag);
	ctx->uid = uid;
	/* RFC 5267 4.3: message numbers in the program name the messages
	   of the command's time, whatever later expunges do to them */
	mail_search_program_seqs_to_uids(program, box);
	ctx->program = program;
	ctx->fetch_atts = fetch_atts == NULL ? NULL :
		p_strdup(ctx->pool, fetch_atts);
	/* the search saw the messages up to the count */
	ctx->uid_next = msgs == 0 ? 1 : mailbox_msg_uid(box, msgs) + 1;
	for (unsigned int i = 0; i < count; i++) {
		for (uint32_t seq = matches[i].seq1; seq <= matches[i].seq2;
		     seq++)
			uidset_add(&ctx->result, mailbox_msg_uid(box, seq));
	}
	ctx->next = client->contexts->head;
	client->contexts->head = ctx;
	client->contexts->count++;
}

void imap_context_add_sort(struct client *client, const char *tag, bool uid,
			   pool_t *pool, struct mail_search_program *program,
			   const char *fetch_atts,
			   const struct imap_sort_criterion *crit,
			   unsigned int crit_count, const uint32_t *sorted,
			   unsigned int count)
{
	struct mailbox *box = client->mailbox;
	struct imap_context *ctx;

	imap_context_add(client, tag, uid, pool, program, fetch_atts, NULL, 0);
	ctx = client->contexts->head;
	ctx->sort = true;
	memcpy(ctx->crit, crit, crit_count * sizeof(*crit));
	ctx->crit_count = crit_count;
	ctx->sorted_alloc = count + 16;
	ctx->sorted = i_malloc(i_mul_size(ctx->sorted_alloc,
					  sizeof(*ctx->sorted)));
	for (unsigned int i = 0; i < count; i++) {
		uint32_t u = mailbox_msg_uid(box, sorted[i]);
		ctx->sorted[i] = u;
		uidset_add(&ctx->result, u);
	}
	ctx->sorted_count = count;
}

static void context_free(struct imap_context **_ctx)
{
	struct imap_context *ctx = *_ctx;
	pool_t pool = ctx->pool;

	*_ctx = NULL;
	uidset_free(&ctx->result);
	uidset_free(&ctx->added);
	uidset_free(&ctx->removed);
	i_free(ctx->sorted);
	pool_unref(&pool);
}

bool imap_context_cancel(struct client *client, const char *tag)
{
	if (client->contexts == NULL)
		return false;
	for (struct imap_context **p = &client->contexts->head; *p != NULL;
	     p = &(*p)->next) {
		if (strcmp((*p)->tag, tag) == 0) {
			struct imap_context *ctx = *p;
			*p = ctx->next;
			context_free(&ctx);
			client->contexts->count--;
			return true;
		}
	}
	return false;
}

void imap_context_clear(struct client *client)
{
	struct imap_contexts *list = client->contexts;

	if (list == NULL)
		return;
	while (list->head != NULL) {
		struct imap_context *ctx = list->head;
		list->head = ctx->next;
		context_free(&ctx);
	}
	list->count = 0;
	uidset_free(&list->dirty);
}

/* ---- sending updates ---- */

/* Builds ESEARCH lines of about IMAP_VANISHED_LINE_MAX for one context:
   a longer update is cut into several responses, each complete. */
struct context_out {
	struct client *client;
	struct imap_context *ctx;
	buffer_t line;
	const char *item;         /* "ADDTO" or "REMOVEFROM" */
	bool item_open;           /* "ITEM (0 " written, a number follows */
	uint32_t run_lo, run_hi;  /* numbers waiting to be written */
	bool run;
};

static void out_head(struct context_out *out)
{
	int ret = buffer_append_str(&out->line, "* ESEARCH (TAG ");

	ret |= imap_append_quoted(&out->line, out->ctx->tag);
	ret |= buffer_append_str(&out->line, out->ctx->uid ? ") UID" : ")");
	i_assert(ret == 0);
}

static void out_send(struct context_out *out)
{
	if (out->item_open && buffer_append_c(&out->line, ')') < 0)
		i_unreached();
	out->item_open = false;
	if (out->line.used > 0)
		client_send_line(out->client, out->line.data);
	buffer_reset(&out->line);
}

static void out_write_run(struct context_out *out)
{
	int ret;

	if (!out->run)
		return;
	out->run = false;
	if (out->line.used >= IMAP_VANISHED_LINE_MAX)
		out_send(out);
	if (out->line.used == 0)
		out_head(out);
	if (!out->item_open) {
		ret = buffer_printf(&out->line, " %s (0 ", out->item);
		out->item_open = true;
	} else {
		ret = buffer_append_c(&out->line, ',');
	}
	ret |= out->run_lo == out->run_hi ?
		buffer_printf(&out->line, "%u", out->run_lo) :
		buffer_printf(&out->line, "%u:%u", out->run_lo, out->run_hi);
	i_assert(ret == 0);
}

static void out_add(struct context_out *out, uint32_t lo, uint32_t hi)
{
	if (out->run && out->run_hi + 1 == lo) {
		out->run_hi = hi;
		return;
	}
	out_write_run(out);
	out->run = true;
	out->run_lo = lo;
	out->run_hi = hi;
}

/* SORT: one "position number" pair of item, after the ones before. */
static void out_pair(struct context_out *out, const char *item,
		     unsigned int pos, uint32_t num)
{
	int ret = 0;

	if (out->line.used >= IMAP_VANISHED_LINE_MAX)
		out_send(out);
	if (out->line.used == 0)
		out_head(out);
	if (out->item_open && strcmp(out->item, item) != 0) {
		ret |= buffer_append_c(&out->line, ')');
		out->item_open = false;
	}
	if (!out->item_open) {
		out->item = item;
		ret |= buffer_printf(&out->line, " %s (", item);
		out->item_open = true;
	} else {
		ret |= buffer_append_c(&out->line, ' ');
	}
	ret |= buffer_printf(&out->line, "%u %u", pos, num);
	i_assert(ret == 0);
}

static void out_init(struct context_out *out, struct client *client,
		     struct imap_context *ctx)
{
	memset(out, 0, sizeof(*out));
	out->client = client;
	out->ctx = ctx;
	/* the ESEARCH head holds the tag (up to a line long) */
	buffer_init(&out->line, i_add_size(IMAP_VANISHED_LINE_MAX +
					   CLIENT_REPLY_LINE_MAX,
					   2 * strlen(ctx->tag)));
}

static void out_deinit(struct context_out *out)
{
	out_send(out);
	buffer_free(&out->line);
}

/* SORT: the position (0-based) of uid in the kept order. */
static bool sort_find(struct imap_context *ctx, uint32_t uid,
		      unsigned int *idx_r)
{
	for (unsigned int i = 0; i < ctx->sorted_count; i++) {
		if (ctx->sorted[i] == uid) {
			*idx_r = i;
			return true;
		}
	}
	return false;
}

static void sort_remove(struct imap_context *ctx, unsigned int idx)
{
	memmove(&ctx->sorted[idx], &ctx->sorted[idx + 1],
		(ctx->sorted_count - idx - 1) * sizeof(*ctx->sorted));
	ctx->sorted_count--;
}

/* One item (ADDTO or REMOVEFROM) of set, in mailbox order. */
static void out_item(struct context_out *out, const char *item,
		     const struct uidset *set)
{
	struct mailbox *box = out->client->mailbox;

	out->item = item;
	for (unsigned int i = 0; i < set->count; i++) {
		uint32_t lo = set->ranges[i].lo, hi = set->ranges[i].hi;
		if (!out->ctx->uid) {
			/* every UID of a range is a message of the view
			   (each was judged), so the numbers are a run */
			lo = mailbox_uid_to_seq_ge(box, lo);
			hi = mailbox_uid_to_seq_ge(box, hi);
			if (lo == 0 || hi < lo) {
				i_error("SEARCH update: UIDs %u:%u not in "
					"the view", set->ranges[i].lo,
					set->ranges[i].hi);
				continue;
			}
		}
		out_add(out, lo, hi);
	}
	out_write_run(out);
	if (out->item_open) {
		if (buffer_append_c(&out->line, ')') < 0)
			i_unreached();
		out->item_open = false;
	}
}

/* Send what ctx has pending. */
static void context_flush(struct client *client, struct imap_context *ctx)
{
	struct context_out out;

	if (ctx->added.count == 0 && ctx->removed.count == 0)
		return;
	out_init(&out, client, ctx);
	out_item(&out, "REMOVEFROM", &ctx->removed);
	out_item(&out, "ADDTO", &ctx->added);
	out_deinit(&out);
	uidset_clear(&ctx->added);
	uidset_clear(&ctx->removed);
}

/* ---- the hooks ---- */

/* SORT: the message leaves the order at its position, before its
   EXPUNGE (both numbers are valid until then). */
static void context_expunge_sort(struct client *client,
				 struct imap_context *ctx, uint32_t seq,
				 uint32_t uid)
{
	struct context_out out;
	unsigned int idx;

	if (!uidset_contains(&ctx->result, uid))
		return;
	uidset_remove(&ctx->result, uid);
	if (!sort_find(ctx, uid, &idx))
		i_unreached();
	sort_remove(ctx, idx);
	out_init(&out, client, ctx);
	out_pair(&out, "REMOVEFROM", idx + 1, ctx->uid ? uid : seq);
	out_deinit(&out);
}

void imap_context_expunge(struct client *client, uint32_t seq, uint32_t uid)
{
	if (client->contexts == NULL)
		return;
	uidset_remove(&client->contexts->dirty, uid);
	for (struct imap_context *ctx = client->contexts->head; ctx != NULL;
	     ctx = ctx->next) {
		if (ctx->sort) {
			context_expunge_sort(client, ctx, seq, uid);
			continue;
		}
		/* what the client believes: the result as it was told */
		bool told = (uidset_contains(&ctx->result, uid) &&
			     !uidset_contains(&ctx->added, uid)) ||
			uidset_contains(&ctx->removed, uid);
		uidset_remove(&ctx->result, uid);
		uidset_remove(&ctx->added, uid);
		uidset_remove(&ctx->removed, uid);
		if (!told)
			continue;
		if (ctx->uid) {
			/* UIDs stay valid: sent with the others at the end */
			uidset_add(&ctx->removed, uid);
			continue;
		}
		/* the number is valid only until its EXPUNGE: what is
		   pending goes first, numbered as the client knows it */
		context_flush(client, ctx);
		struct context_out out;
		out_init(&out, client, ctx);
		out.item = "REMOVEFROM";
		out_add(&out, seq, seq);
		out_write_run(&out);
		out_deinit(&out);
	}
}

void imap_context_flags_changed(struct client *client, uint32_t seq)
{
	if (client->contexts == NULL || client->contexts->count == 0)
		return;
	uidset_add(&client->contexts->dirty,
		   mailbox_msg_uid(client->mailbox, seq));
}

/* SORT: where seq goes in the kept order (binary search; the keys come
   from the mail cache). Returns false on an error (logged). */
static bool sort_position(struct client *client, struct imap_context *ctx,
			  uint32_t seq, unsigned int *idx_r)
{
	struct mailbox *box = client->mailbox;
	unsigned int lo = 0, hi = ctx->sorted_count;
	const char *error;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		uint32_t other = mailbox_uid_to_seq_ge(box, ctx->sorted[mid]);
		int cmp;
		if (other == 0 ||
		    imap_sort_compare(box, ctx->crit, ctx->crit_count, seq,
				      other, &cmp, &error) < 0) {
			i_error("SORT update in %s: %s", mailbox_get_name(box),
				other == 0 ? "a kept UID vanished" : error);
			return false;
		}
		if (cmp < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*idx_r = lo;
	return true;
}

/* SORT: seq (uid) starts or stops matching; the change goes out with
   its position at once, so that each pair holds after the ones before
   (RFC 5267 4.3.2). */
static void context_judged_sort(struct client *client,
				struct imap_context *ctx,
				struct context_out *out, uint32_t seq,
				uint32_t uid, bool match)
{
	unsigned int idx;
	uint32_t num = ctx->uid ? uid : seq;

	if (!match) {
		uidset_remove(&ctx->result, uid);
		if (!sort_find(ctx, uid, &idx))
			i_unreached();
		sort_remove(ctx, idx);
		out_pair(out, "REMOVEFROM", idx + 1, num);
		return;
	}
	if (!sort_position(client, ctx, seq, &idx))
		return;
	if (ctx->sorted_count == ctx->sorted_alloc) {
		ctx->sorted_alloc = i_mul_size(ctx->sorted_alloc, 2);
		ctx->sorted = i_realloc(ctx->sorted, i_mul_size(
			ctx->sorted_alloc, sizeof(*ctx->sorted)));
	}
	memmove(&ctx->sorted[idx + 1], &ctx->sorted[idx],
		(ctx->sorted_count - idx) * sizeof(*ctx->sorted));
	ctx->sorted[idx] = uid;
	ctx->sorted_count++;
	uidset_add(&ctx->result, uid);
	out_pair(out, "ADDTO", idx + 1, num);
}

/* seq (uid) starts (match) or stops matching ctx: note the change. */
static void context_set_match(struct client *client, struct imap_context *ctx,
			      struct context_out *out, uint32_t seq,
			      uint32_t uid, bool match)
{
	if (ctx->sort) {
		context_judged_sort(client, ctx, out, seq, uid, match);
		return;
	}
	if (match) {
		uidset_add(&ctx->result, uid);
		if (uidset_contains(&ctx->removed, uid))
			uidset_remove(&ctx->removed, uid);
		else
			uidset_add(&ctx->added, uid);
	} else {
		uidset_remove(&ctx->result, uid);
		if (uidset_contains(&ctx->added, uid))
			uidset_remove(&ctx->added, uid);
		else
			uidset_add(&ctx->removed, uid);
	}
}

/* Whether seq matches ctx's program: 1, 0, or -1 on an error (logged;
   the client keeps the old state of this message). */
static int context_match(struct client *client, struct imap_context *ctx,
			 struct mail_search_ctx **search, uint32_t seq,
			 time_t now)
{
	struct mailbox *box = client->mailbox;
	const char *error;

	if (*search == NULL)
		*search = mail_search_init(box, ctx->program, now);
	int ret = mail_search_match(*search, seq, &error);
	if (ret < 0)
		i_error("SEARCH update in %s: %s", mailbox_get_name(box),
			error);
	return ret;
}

/* RFC 5465 7: the fetch-atts of the new messages that joined (UIDs,
   each a message of the view), by sequence sets of at most
   IMAP_FETCH_NOW_SET_MAX. Returns false if the session was ended. */
static bool context_fetch_joined(struct client *client,
				 struct imap_context *ctx,
				 const struct uidset *joined)
{
	struct mailbox *box = client->mailbox;
	char set[IMAP_FETCH_NOW_SET_MAX + 1];
	size_t used = 0;

	for (unsigned int i = 0; i <= joined->count; i++) {
		char range[32] = "";
		if (i < joined->count) {
			uint32_t lo = mailbox_uid_to_seq_ge(box,
				joined->ranges[i].lo);
			uint32_t hi = mailbox_uid_to_seq_ge(box,
				joined->ranges[i].hi);
			i_assert(lo != 0 && lo <= hi);
			snprintf(range, sizeof(range), lo == hi ? "%u" :
				 "%u:%u", lo, hi);
		}
		size_t len = strlen(range);
		if (used > 0 && (len == 0 || used + 1 + len > sizeof(set) - 1)) {
			set[used] = '\0';
			if (!imap_fetch_now(client, set, ctx->fetch_atts)) {
				/* what was written cannot be taken back, and
				   the output ends inside the cut FETCH: a BYE
				   would be read as its literal's bytes */
				client_disconnect(client, NULL,
					"SEARCH UPDATE FETCH does not fit the "
					"output buffer");
				return false;
			}
			used = 0;
		}
		if (len == 0)
			continue;
		if (used > 0)
			set[used++] = ',';
		memcpy(set + used, range, len);
		used += len;
	}
	return true;
}

static void context_update(struct client *client, struct imap_context *ctx,
			   const struct uidset *dirty, time_t now)
{
	struct mailbox *box = client->mailbox;
	uint32_t count = mailbox_get_count(box);
	struct mail_search_ctx *search = NULL;
	struct context_out out;   /* SORT's changes */
	struct uidset joined = { 0 };

	out_init(&out, client, ctx);

	/* flag changes of the messages the context has seen */
	for (unsigned int i = 0; i < dirty->count; i++) {
		uint32_t seq = mailbox_uid_to_seq_ge(box, dirty->ranges[i].lo);
		for (; seq != 0 && seq <= count; seq++) {
			uint32_t uid = mailbox_msg_uid(box, seq);
			if (uid > dirty->ranges[i].hi || uid >= ctx->uid_next)
				break;
			/* an expunge reports it (REMOVEFROM before EXPUNGE) */
			if (mailbox_msg_is_expunged(box, seq))
				continue;
			int ret = context_match(client, ctx, &search, seq, now);
			if (ret >= 0 && (ret > 0) != uidset_contains(
						&ctx->result, uid))
				context_set_match(client, ctx, &out, seq, uid,
						  ret > 0);
		}
	}
	/* the new messages: none was in the result */
	uint32_t seq = mailbox_uid_to_seq_ge(box, ctx->uid_next);
	for (; seq != 0 && seq <= count; seq++) {
		if (!mailbox_msg_is_expunged(box, seq) &&
		    context_match(client, ctx, &search, seq, now) > 0)
			uidset_add(&joined, mailbox_msg_uid(box, seq));
	}
	if (count > 0 && mailbox_msg_uid(box, count) >= ctx->uid_next)
		ctx->uid_next = mailbox_msg_uid(box, count) + 1;
	if (search != NULL)
		mail_search_deinit(&search);
	/* RFC 5465 7: EXISTS, then the FETCHes, then the ESEARCH that adds
	   them (what the flag changes gave may go first) */
	if (ctx->fetch_atts != NULL && joined.count > 0) {
		out_send(&out);
		if (!context_fetch_joined(client, ctx, &joined)) {
			uidset_free(&joined);
			out_deinit(&out);
			return;
		}
	}
	for (unsigned int i = 0; i < joined.count; i++) {
		for (uint32_t uid = joined.ranges[i].lo;
		     uid <= joined.ranges[i].hi; uid++) {
			seq = mailbox_uid_to_seq_ge(box, uid);
			context_set_match(client, ctx, &out, seq, uid, true);
			if (uid == joined.ranges[i].hi)
				break;
		}
	}
	uidset_free(&joined);
	out_deinit(&out);
	context_flush(client, ctx);
}

void imap_context_sync_end(struct client *client)
{
	struct imap_contexts *list = client->contexts;

	if (list == NULL || list->count == 0 || client->mailbox == NULL ||
	    list->updating)
		return;
	/* flag changes a FETCH below reports (its own sync) wait for the
	   next sync end */
	struct uidset dirty = list->dirty;
	memset(&list->dirty, 0, sizeof(list->dirty));
	list->updating = true;
	time_t now = time(NULL);
	for (struct imap_context *ctx = list->head;
	     ctx != NULL && !client->disconnected; ctx = ctx->next)
		context_update(client, ctx, &dirty, now);
	list->updating = false;
	uidset_free(&dirty);
}
