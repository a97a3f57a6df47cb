/* Update contexts of CONTEXT=SEARCH (imap-context.h, RFC 5267 4.3). */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-context.h"
#include "imap-condstore.h"
#include "imap-sort.h"
#include "mailbox-uidset.h"

#include <time.h>

struct imap_context {
	struct imap_context *next;
	pool_t pool;              /* the tag and the program */
	const char *tag;
	bool uid;                 /* UID SEARCH: updates carry UIDs */
	struct mail_search_program *program;
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
	if (!imap_context_can_add(client))
		return "Too many update contexts.";
	/* RFC 5267 4.3: sequence numbers are taken as they were when the
	   command came; we do not keep that numbering */
	if (mail_search_program_uses_seqset(program))
		return "Searches by message number are not updated.";
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
		      const struct seq_range *matches, unsigned int count)
{
	struct mailbox *box = client->mailbox;
	struct imap_context *ctx = p_malloc(*pool, sizeof(*ctx));

	i_assert(imap_context_can_add(client) && box != NULL);
	if (client->contexts == NULL)
		client->contexts = p_malloc(client->pool,
					    sizeof(*client->contexts));
	ctx->pool = *pool;
	*pool = NULL;
	ctx->tag = p_strdup(ctx->pool, tag);
	ctx->uid = uid;
	ctx->program = program;
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
			   const struct imap_sort_criterion *crit,
			   unsigned int crit_count, const uint32_t *sorted,
			   unsigned int count)
{
	struct mailbox *box = client->mailbox;
	struct imap_context *ctx;

	imap_context_add(client, tag, uid, pool, program, NULL, 0);
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

/* Judge seq for ctx and note a change of its membership. */
static void context_judge(struct client *client, struct imap_context *ctx,
			  struct mail_search_ctx *search,
			  struct context_out *out, uint32_t seq)
{
	struct mailbox *box = client->mailbox;
	uint32_t uid = mailbox_msg_uid(box, seq);
	const char *error;

	int ret = mail_search_match(search, seq, &error);
	if (ret < 0) {
		/* the client keeps the old state of this message */
		i_error("SEARCH update in %s: %s", mailbox_get_name(box),
			error);
		return;
	}
	bool was = uidset_contains(&ctx->result, uid);
	if ((ret > 0) == was)
		return;
	if (ctx->sort) {
		context_judged_sort(client, ctx, out, seq, uid, ret > 0);
		return;
	}
	if (ret > 0) {
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

static void context_update(struct client *client, struct imap_context *ctx,
			   const struct uidset *dirty, uint32_t first_new,
			   time_t now)
{
	struct mailbox *box = client->mailbox;
	uint32_t count = mailbox_get_count(box);
	struct mail_search_ctx *search = NULL;
	struct context_out out;   /* SORT's changes */

	out_init(&out, client, ctx);

	for (unsigned int i = 0; i < dirty->count; i++) {
		uint32_t seq = mailbox_uid_to_seq_ge(box, dirty->ranges[i].lo);
		for (; seq != 0 && seq < first_new && seq <= count &&
		     mailbox_msg_uid(box, seq) <= dirty->ranges[i].hi; seq++) {
			/* an expunge reports it (REMOVEFROM before EXPUNGE) */
			if (mailbox_msg_is_expunged(box, seq))
				continue;
			if (search == NULL)
				search = mail_search_init(box, ctx->program, now);
			context_judge(client, ctx, search, &out, seq);
		}
	}
	for (uint32_t seq = first_new; seq <= count; seq++) {
		if (mailbox_msg_is_expunged(box, seq))
			continue;
		if (search == NULL)
			search = mail_search_init(box, ctx->program, now);
		context_judge(client, ctx, search, &out, seq);
	}
	if (search != NULL)
		mail_search_deinit(&search);
	out_deinit(&out);
	context_flush(client, ctx);
}

void imap_context_sync_end(struct client *client, uint32_t first_new_seq)
{
	struct imap_contexts *list = client->contexts;

	if (list == NULL || list->count == 0 || client->mailbox == NULL)
		return;
	if (first_new_seq == 0)
		first_new_seq = 1;
	time_t now = time(NULL);
	for (struct imap_context *ctx = list->head; ctx != NULL;
	     ctx = ctx->next)
		context_update(client, ctx, &list->dirty, first_new_seq, now);
	uidset_clear(&list->dirty);
}
