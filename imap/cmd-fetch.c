/* FETCH and UID FETCH (RFC 3501 6.4.5, 6.4.8): parse every item first,
   then let imap-fetch.c write the answer in slices. */
#include "imap-common.h"
#include "imap-commands.h"
#include "imap-fetch.h"
#include "imap-search.h"
#include "imap-condstore.h"

#include <strings.h>

static bool fetch_add(struct imap_fetch_ctx *ctx, enum imap_fetch_item_type type,
		      const char *name)
{
	if (ctx->item_count == ctx->item_cap)
		return false;
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		/* asked twice: answer once */
		if (type != IMAP_FETCH_BODY && type != IMAP_FETCH_BINARY_SIZE &&
		    ctx->items[i].type == type &&
		    strcmp(ctx->items[i].name, name) == 0) {
			/* PREVIEW also without LAZY: not lazy */
			ctx->items[i].lazy = false;
			return true;
		}
	}
	struct imap_fetch_item *item = &ctx->items[ctx->item_count++];
	memset(item, 0, sizeof(*item));
	item->type = type;
	item->name = name;
	item->section.part = "";
	if (type == IMAP_FETCH_FLAGS)
		ctx->flags_requested = true;
	item->extended = strcmp(name, "BODYSTRUCTURE") == 0;
	/* from the cache when it has them (imap-fetch-cache.h) */
	if (type == IMAP_FETCH_ENVELOPE)
		ctx->need_texts |= 1U << IMAP_MSG_TEXT_ENVELOPE;
	else if (type == IMAP_FETCH_BODYSTRUCTURE)
		ctx->need_texts |= 1U << (item->extended ?
			IMAP_MSG_TEXT_BODYSTRUCTURE : IMAP_MSG_TEXT_BODY);
	else if (type == IMAP_FETCH_EMAILID)
		ctx->need_emailid = true;
	else if (type == IMAP_FETCH_THREADID)
		ctx->need_threadid = true;
	return true;
}

/* "<start.count>" after BODY[]; count must be nonzero. */
static bool fetch_parse_partial(const char *p, struct imap_fetch_item *item)
{
	char *end;

	if (*p == '\0')
		return true;
	if (*p != '<' || p[1] < '0' || p[1] > '9')
		return false;
	errno = 0;
	item->start = strtoull(p + 1, &end, 10);
	if (errno != 0 || *end != '.' || end[1] < '1' || end[1] > '9')
		return false;
	item->count = strtoull(end + 1, &end, 10);
	if (errno != 0 || strcmp(end, ">") != 0)
		return false;
	item->partial = true;
	return true;
}

/* BODY[section]<partial> and its BODY.PEEK, BINARY and BINARY.PEEK
   forms (RFC 3516), and BINARY.SIZE[section]. */
static const struct fetch_section_form {
	const char *prefix, *reply;
	bool peek, binary, size;
} fetch_section_forms[] = {
	{ "BODY[", "BODY", false, false, false },
	{ "BODY.PEEK[", "BODY", true, false, false },
	{ "BINARY[", "BINARY", false, true, false },
	{ "BINARY.PEEK[", "BINARY", true, true, false },
	{ "BINARY.SIZE[", "BINARY.SIZE", true, true, true },
};

static bool fetch_parse_section(struct imap_fetch_ctx *ctx, const char *atom)
{
	const struct fetch_section_form *form = NULL;
	pool_t pool = ctx->cmd->pool;
	const char *spec, *end, *echo;

	for (unsigned int i = 0; i < N_ELEMENTS(fetch_section_forms); i++) {
		if (strncasecmp(atom, fetch_section_forms[i].prefix,
				strlen(fetch_section_forms[i].prefix)) == 0)
			form = &fetch_section_forms[i];
	}
	if (form == NULL)
		return false;
	spec = atom + strlen(form->prefix);
	/* a partial after the section holds no ']' */
	if ((end = strrchr(spec, ']')) == NULL)
		return false;
	if (!fetch_add(ctx, form->size ? IMAP_FETCH_BINARY_SIZE :
		       IMAP_FETCH_BODY, form->reply))
		return false;
	struct imap_fetch_item *item = &ctx->items[ctx->item_count - 1];
	if (imap_section_parse(pool, p_strndup(pool, spec, (size_t)(end - spec)),
			       form->binary, &item->section, &echo) < 0)
		return false;
	if (form->size ? end[1] != '\0' : !fetch_parse_partial(end + 1, item))
		return false;
	/* the reply names only the origin octet: BODY[]<0> */
	item->name = item->partial ?
		p_strdup_printf(pool, "%s[%s]<%llu>", form->reply, echo,
				(unsigned long long)item->start) :
		p_strdup_printf(pool, "%s[%s]", form->reply, echo);
	if (imap_section_needs_structure(&item->section))
		ctx->need_structure = true;
	if (!form->peek)
		ctx->set_seen = true;
	return true;
}

/* RFC822, RFC822.HEADER, RFC822.TEXT: BODY[], BODY.PEEK[HEADER] and
   BODY[TEXT] under their old names. */
static bool fetch_add_rfc822(struct imap_fetch_ctx *ctx, const char *name,
			     enum imap_section_text text, bool seen)
{
	if (!fetch_add(ctx, IMAP_FETCH_BODY, name))
		return false;
	ctx->items[ctx->item_count - 1].section.text = text;
	if (text != IMAP_SECTION_BODY)
		ctx->need_structure = true;
	if (seen)
		ctx->set_seen = true;
	return true;
}

static bool fetch_parse_item(struct imap_fetch_ctx *ctx, const char *atom)
{
	static const struct {
		const char *name;
		enum imap_fetch_item_type type;
	} simple[] = {
		{ "UID", IMAP_FETCH_UID },
		{ "FLAGS", IMAP_FETCH_FLAGS },
		{ "RFC822.SIZE", IMAP_FETCH_RFC822_SIZE },
		{ "INTERNALDATE", IMAP_FETCH_INTERNALDATE },
		{ "SAVEDATE", IMAP_FETCH_SAVEDATE },
		{ "ENVELOPE", IMAP_FETCH_ENVELOPE },
		{ "BODY", IMAP_FETCH_BODYSTRUCTURE },
		{ "BODYSTRUCTURE", IMAP_FETCH_BODYSTRUCTURE },
		{ "MODSEQ", IMAP_FETCH_MODSEQ },
		{ "PREVIEW", IMAP_FETCH_PREVIEW },
		{ "EMAILID", IMAP_FETCH_EMAILID },
		{ "THREADID", IMAP_FETCH_THREADID },
	};

	for (unsigned int i = 0; i < N_ELEMENTS(simple); i++) {
		if (strcasecmp(atom, simple[i].name) == 0)
			return fetch_add(ctx, simple[i].type, simple[i].name);
	}
	if (strcasecmp(atom, "RFC822") == 0)
		return fetch_add_rfc822(ctx, "RFC822", IMAP_SECTION_BODY, true);
	if (strcasecmp(atom, "RFC822.HEADER") == 0)
		return fetch_add_rfc822(ctx, "RFC822.HEADER",
					IMAP_SECTION_HEADER, false);
	if (strcasecmp(atom, "RFC822.TEXT") == 0)
		return fetch_add_rfc822(ctx, "RFC822.TEXT",
					IMAP_SECTION_TEXT, true);
	/* the macros (RFC 3501 6.4.5) */
	if (strcasecmp(atom, "FAST") == 0 || strcasecmp(atom, "ALL") == 0 ||
	    strcasecmp(atom, "FULL") == 0) {
		if (!fetch_parse_item(ctx, "FLAGS") ||
		    !fetch_parse_item(ctx, "INTERNALDATE") ||
		    !fetch_parse_item(ctx, "RFC822.SIZE"))
			return false;
		if (strcasecmp(atom, "FAST") == 0)
			return true;
		if (!fetch_parse_item(ctx, "ENVELOPE"))
			return false;
		return strcasecmp(atom, "ALL") == 0 ||
			fetch_parse_item(ctx, "BODY");
	}
	return fetch_parse_section(ctx, atom);
}

/* PREVIEW with modifiers (RFC 8970 6: "PREVIEW" [SP "(" preview-mod
   *(SP preview-mod) ")"], LAZY the only one). Asked both with and
   without LAZY, the preview is not lazy. */
static bool fetch_parse_preview(struct imap_fetch_ctx *ctx,
				const struct imap_arg *mods_arg)
{
	const struct imap_arg *mods;
	unsigned int count;
	const char *mod;

	if (!imap_arg_get_list(mods_arg, &mods, &count) || count == 0)
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&mods[i], &mod) ||
		    strcasecmp(mod, "LAZY") != 0)
			return false;
	}
	for (unsigned int i = 0; i < ctx->item_count; i++) {
		if (ctx->items[i].type == IMAP_FETCH_PREVIEW)
			return true;
	}
	if (!fetch_add(ctx, IMAP_FETCH_PREVIEW, "PREVIEW"))
		return false;
	ctx->items[ctx->item_count - 1].lazy = true;
	return true;
}

/* Room for what atom_count atoms can add: a macro (FULL) adds five
   items, and UID FETCH one more, CONDSTORE two (UID and MODSEQ). */
#define FETCH_ITEMS_PER_ATOM 5
#define FETCH_ITEMS_EXTRA 3
static void fetch_items_alloc(struct imap_fetch_ctx *ctx,
			      unsigned int atom_count)
{
	unsigned int cap = IMAP_FETCH_MAX_ITEMS;

	if (atom_count < (IMAP_FETCH_MAX_ITEMS - FETCH_ITEMS_EXTRA) /
	    FETCH_ITEMS_PER_ATOM)
		cap = atom_count * FETCH_ITEMS_PER_ATOM + FETCH_ITEMS_EXTRA;
	ctx->items = p_malloc(ctx->cmd->pool, sizeof(*ctx->items) * cap);
	ctx->item_cap = cap;
}

/* UID FETCH answers with the UID (RFC 3501 6.4.8), but a UIDFETCH
   response starts with it (RFC 9586 3.3): there only when asked for. */
static bool fetch_wants_uid(const struct imap_fetch_ctx *ctx)
{
	return ctx->cmd->uid && !ctx->cmd->client->uidonly;
}

static bool fetch_parse_items(struct imap_fetch_ctx *ctx,
			      const struct imap_arg *arg)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *atom;

	if (imap_arg_get_atom(arg, &atom)) {
		fetch_items_alloc(ctx, 1);
		if (fetch_wants_uid(ctx) &&
		    !fetch_add(ctx, IMAP_FETCH_UID, "UID"))
			return false;
		return fetch_parse_item(ctx, atom);
	}
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return false;
	fetch_items_alloc(ctx, count);
	if (fetch_wants_uid(ctx) && !fetch_add(ctx, IMAP_FETCH_UID, "UID"))
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&list[i], &atom))
			return false;
		if (strcasecmp(atom, "PREVIEW") == 0 && i + 1 < count &&
		    list[i + 1].type == IMAP_ARG_LIST) {
			if (!fetch_parse_preview(ctx, &list[++i]))
				return false;
		} else if (!fetch_parse_item(ctx, atom)) {
			return false;
		}
	}
	return true;
}

bool imap_fetch_items_check(struct client_command *cmd,
			    const struct imap_arg *arg)
{
	struct imap_fetch_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));

	ctx->cmd = cmd;
	ctx->body_fd = -1;
	return fetch_parse_items(ctx, arg);
}

/* The FETCH modifiers (RFC 4466 2.4): CHANGEDSINCE and VANISHED
   (RFC 7162 3.1.4.1, 3.2.6), PARTIAL (RFC 9394 3.3: *partial_r, UID
   FETCH only). *error_r for BAD. */
static bool fetch_parse_modifiers(struct imap_fetch_ctx *ctx,
				  const struct imap_arg *arg, bool *vanished_r,
				  struct imap_search_partial *partial_r,
				  bool *partial_set_r, const char **error_r)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *name, *range;

	*vanished_r = false;
	*error_r = "Invalid FETCH modifier.";
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&list[i], &name))
			return false;
		if (strcasecmp(name, "CHANGEDSINCE") == 0 &&
		    ctx->changedsince == 0) {
			if (i + 1 >= count ||
			    !imap_arg_get_modseq(&list[++i], false,
						 &ctx->changedsince)) {
				*error_r = "Invalid CHANGEDSINCE value.";
				return false;
			}
		} else if (strcasecmp(name, "VANISHED") == 0 && !*vanished_r) {
			*vanished_r = true;
		} else if (strcasecmp(name, "PARTIAL") == 0 && !*partial_set_r) {
			if (i + 1 >= count ||
			    !imap_arg_get_atom(&list[++i], &range) ||
			    !imap_search_partial_parse(range, partial_r)) {
				*error_r = "Invalid PARTIAL range.";
				return false;
			}
			if (!ctx->cmd->uid) {
				*error_r = "PARTIAL is only allowed in UID FETCH.";
				return false;
			}
			*partial_set_r = true;
		} else {
			return false;
		}
	}
	if (!*vanished_r)
		return true;
	/* RFC 7162 3.2.6: UID FETCH only, after ENABLE QRESYNC, with
	   CHANGEDSINCE */
	if (!ctx->cmd->uid)
		*error_r = "VANISHED is only allowed in UID FETCH.";
	else if (!ctx->cmd->client->qresync)
		*error_r = "VANISHED needs ENABLE QRESYNC first.";
	else if (ctx->changedsince == 0)
		*error_r = "VANISHED needs CHANGEDSINCE.";
	else
		return true;
	return false;
}

/* The UID set of UID FETCH as UIDs (for VANISHED): "*" is the highest
   UID the mailbox gave out, "$" the saved result. */
static void fetch_known_uids(struct imap_fetch_ctx *ctx, const char *set,
			     struct seq_range **known_r, unsigned int *count_r)
{
	struct client_command *cmd = ctx->cmd;
	uint32_t star = mailbox_get_next_uid(ctx->box) - 1;

	if (strcmp(set, "$") == 0) {
		const struct mail_search_saved *saved =
			imap_search_saved_get(cmd->client);
		*known_r = p_malloc(cmd->pool, sizeof(**known_r) *
				    MAX(saved->count, 1));
		for (unsigned int i = 0; i < saved->count; i++) {
			(*known_r)[i].seq1 = saved->ranges[i].lo;
			(*known_r)[i].seq2 = saved->ranges[i].hi;
		}
		*count_r = saved->count;
		return;
	}
	if (imap_seqset_parse(cmd->pool, set, known_r, count_r) < 0)
		i_unreached();   /* parsed before */
	for (unsigned int i = 0; i < *count_r; i++) {
		struct seq_range *r = &(*known_r)[i];
		if (r->seq1 == SEQSET_STAR)
			r->seq1 = MAX(star, 1);
		if (r->seq1 > r->seq2) {
			uint32_t tmp = r->seq1;
			r->seq1 = r->seq2;
			r->seq2 = tmp;
		}
	}
	imap_uid_ranges_normalize(*known_r, count_r);
}

static bool cmd_fetch_continue(struct client_command *cmd)
{
	return imap_fetch_run(cmd->context);
}

static void cmd_fetch_cancel(struct client_command *cmd)
{
	imap_fetch_deinit(cmd->context);
}

/* A CONDSTORE enabling FETCH (MODSEQ, CHANGEDSINCE) and the items
   CONDSTORE adds to every FETCH that sets \Seen. */
static void fetch_condstore(struct imap_fetch_ctx *ctx)
{
	struct client *client = ctx->cmd->client;
	bool modseq = ctx->changedsince != 0;

	for (unsigned int i = 0; i < ctx->item_count; i++) {
		if (ctx->items[i].type == IMAP_FETCH_MODSEQ)
			modseq = true;
	}
	if (modseq)
		imap_condstore_enable(client);
	/* RFC 7162 3.2.4: the \Seen it sets is an update with UID and
	   MODSEQ (3.1.4.1: CHANGEDSINCE implies MODSEQ) */
	if ((ctx->set_seen && client->condstore) || ctx->changedsince != 0) {
		if (ctx->set_seen && client->condstore)
			(void)fetch_add(ctx, IMAP_FETCH_UID, "UID");
		(void)fetch_add(ctx, IMAP_FETCH_MODSEQ, "MODSEQ");
	}
}

/* RFC 9394 3.3: only the messages at positions of the partial range
   among those the set named (in UID order). */
static void fetch_partial(struct imap_fetch_ctx *ctx,
			  const struct imap_search_partial *partial)
{
	uint32_t total = 0, first, last, pos = 0;
	unsigned int n = 0;

	for (unsigned int i = 0; i < ctx->range_count; i++)
		total += ctx->ranges[i].seq2 - ctx->ranges[i].seq1 + 1;
	if (!imap_search_partial_window(partial, total, &first, &last)) {
		ctx->range_count = 0;
		return;
	}
	for (unsigned int i = 0; i < ctx->range_count; i++) {
		struct seq_range r = ctx->ranges[i];
		uint32_t len = r.seq2 - r.seq1 + 1;
		uint32_t lo = MAX(pos, first), hi = MIN(pos + len - 1, last);
		if (lo <= hi) {
			ctx->ranges[n].seq1 = r.seq1 + (lo - pos);
			ctx->ranges[n].seq2 = r.seq1 + (hi - pos);
			n++;
		}
		pos += len;
		if (pos > last)
			break;
	}
	ctx->range_count = n;
}

bool cmd_fetch(struct client_command *cmd)
{
	struct imap_fetch_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *set;

	ctx->cmd = cmd;
	ctx->box = cmd->client->mailbox;
	ctx->body_fd = -1;
	/* "$" is the SEARCHRES result (imap-search.h) */
	if (!imap_arg_get_atom(&cmd->args[0], &set) ||
	    (strcmp(set, "$") != 0 &&
	     imap_seqset_parse(cmd->pool, set, &ctx->ranges,
			       &ctx->range_count) < 0)) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	if (!fetch_parse_items(ctx, &cmd->args[1])) {
		client_send_command_error(cmd, "Invalid or unsupported "
					  "fetch attribute.");
		return true;
	}
	const char *error;
	bool vanished = false, partial_set = false;
	struct imap_search_partial partial;
	if (!imap_arg_is_eol(&cmd->args[2]) &&
	    (!fetch_parse_modifiers(ctx, &cmd->args[2], &vanished, &partial,
				    &partial_set, &error) ||
	     !imap_arg_is_eol(&cmd->args[3]))) {
		client_send_command_error(cmd, imap_arg_is_eol(&cmd->args[3]) ?
					  error : "Invalid arguments.");
		return true;
	}
	if (imap_search_seqset(cmd, set, &ctx->ranges,
			       &ctx->range_count) < 0) {
		client_send_command_error(cmd, "Invalid messageset.");
		return true;
	}
	if (partial_set)
		fetch_partial(ctx, &partial);
	fetch_condstore(ctx);
	if (vanished) {
		struct seq_range *known;
		unsigned int known_count;
		fetch_known_uids(ctx, set, &known, &known_count);
		ctx->vanished = p_malloc(cmd->pool, sizeof(*ctx->vanished));
		if (imap_vanished_init(ctx->vanished, cmd->client,
				       ctx->changedsince, known, known_count,
				       NULL, 0, NULL, 0) < 0) {
			imap_vanished_deinit(ctx->vanished);
			client_send_tagline(cmd, "NO [SERVERBUG] Internal error "
					    "occurred.");
			return true;
		}
	}
	cmd->context = ctx;
	cmd->func = cmd_fetch_continue;
	cmd->cancel = cmd_fetch_cancel;
	return imap_fetch_run(ctx);
}

bool imap_fetch_qresync(struct client_command *cmd, uint64_t since,
			struct seq_range *known, unsigned int known_count,
			const struct seq_range *mseqs, unsigned int mseq_count,
			const struct seq_range *muids, unsigned int muid_count,
			const char *done_text)
{
	struct imap_fetch_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	struct mailbox *box = cmd->client->mailbox;
	uint32_t uidnext = mailbox_get_next_uid(box);

	ctx->cmd = cmd;
	ctx->box = box;
	ctx->body_fd = -1;
	ctx->changedsince = since;
	ctx->done_text = done_text;
	fetch_items_alloc(ctx, 3);
	if (!fetch_add(ctx, IMAP_FETCH_UID, "UID") ||
	    !fetch_add(ctx, IMAP_FETCH_FLAGS, "FLAGS") ||
	    !fetch_add(ctx, IMAP_FETCH_MODSEQ, "MODSEQ"))
		i_unreached();
	/* RFC 7162 3.2.5.1: no known UIDs means 1:<UIDNEXT - 1> */
	if (known == NULL && uidnext > 1) {
		known = p_malloc(cmd->pool, sizeof(*known));
		known->seq1 = 1;
		known->seq2 = uidnext - 1;
		known_count = 1;
	}
	ctx->range_count = known_count;
	ctx->ranges = p_malloc(cmd->pool, sizeof(*ctx->ranges) *
			       MAX(known_count, 1));
	memcpy(ctx->ranges, known, sizeof(*known) * known_count);
	if (imap_seqset_resolve(box, true, ctx->ranges, &ctx->range_count) < 0)
		ctx->range_count = 0;
	ctx->vanished = p_malloc(cmd->pool, sizeof(*ctx->vanished));
	if (imap_vanished_init(ctx->vanished, cmd->client, since, known,
			       known_count, mseqs, mseq_count, muids,
			       muid_count) < 0) {
		imap_vanished_deinit(ctx->vanished);
		ctx->vanished = NULL;
		ctx->some_failed = true;
	}
	cmd->context = ctx;
	cmd->func = cmd_fetch_continue;
	cmd->cancel = cmd_fetch_cancel;
	return imap_fetch_run(ctx);
}
