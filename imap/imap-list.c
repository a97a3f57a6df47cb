/* LIST and LSUB replies (imap-list.h). */
#include "imap-common.h"
#include "imap-list.h"
#include "imap-mailbox.h"
#include "mailbox-list.h"

#include <strings.h>

/* Room for "* LIST (attributes) "/" name extended-data". */
#define IMAP_LIST_LINE_MAX (MAILBOX_NAME_WIRE_MAX * 2 + 256)

struct imap_list_ctx {
	struct imap_list_request req;
	struct mailbox_list *list;
	bool *match, *sel;
	unsigned int idx, count;
};

/* "**", "%%", "*%" and "%*" match what one "*" or "%" matches: collapse
   them so a pattern has at most one wildcard between literals. */
static char *pattern_collapse(pool_t pool, const char *pattern)
{
	char *out = p_strdup(pool, pattern), *p = out;

	for (const char *s = pattern; *s != '\0'; s++) {
		bool wild = *s == '*' || *s == '%';
		if (wild && p > out && (p[-1] == '*' || p[-1] == '%')) {
			if (*s == '*')
				p[-1] = '*';
			continue;
		}
		*p++ = *s;
	}
	*p = '\0';
	return out;
}

/* The settings' SPECIAL-USE names, normalized once per process rather
   than per LIST (five normalizations were the biggest part of LIST's own
   CPU). Keyed by the raw setting values, so another user's settings (or
   changed ones) are normalized again. One per process, like the folder
   list's memos in index/mailbox-list*.c. */
static struct {
	char *raw[MAILBOX_SPECIAL_COUNT];
	struct imap_mailbox_specials specials;
} specials_memo;

static const struct mailbox_special_names *
list_specials(const struct moat_settings *set)
{
	/* in the order of enum mailbox_special_use (imap-mailbox.c) */
	const char *const raw[MAILBOX_SPECIAL_COUNT] = {
		set->mailbox_drafts, set->mailbox_sent, set->mailbox_trash,
		set->mailbox_junk, set->mailbox_archive,
	};
	unsigned int i;

	for (i = 0; i < MAILBOX_SPECIAL_COUNT; i++) {
		if (specials_memo.raw[i] == NULL ||
		    strcmp(specials_memo.raw[i], raw[i]) != 0)
			break;
	}
	if (i < MAILBOX_SPECIAL_COUNT) {
		imap_mailbox_specials_get(set, &specials_memo.specials);
		for (i = 0; i < MAILBOX_SPECIAL_COUNT; i++) {
			i_free(specials_memo.raw[i]);
			specials_memo.raw[i] = i_strdup(raw[i]);
		}
	}
	return &specials_memo.specials.names;
}

bool imap_list_add_pattern(struct imap_list_request *req, pool_t pool,
			   const char *ref, const char *pattern)
{
	buffer_t buf;
	char *canon;

	if (req->pattern_count == IMAP_LIST_PATTERNS_MAX)
		return false;
	size_t ref_len = strlen(ref), pat_len = strlen(pattern);
	canon = p_malloc(pool, ref_len + pat_len + 1);
	memcpy(canon, ref, ref_len);
	memcpy(canon + ref_len, pattern, pat_len + 1);
	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	/* after UTF8=ACCEPT the pattern is UTF-8 as sent (a pattern that
	   is not valid UTF-8 simply matches no name) */
	if (req->utf8 ? buffer_append_str(&buf, canon) == 0 :
	    mailbox_name_mutf7_to_utf8(canon, &buf) == 0) {
		size_t first = strcspn(buf.data, MAILBOX_NAME_SEP_STR);
		if (first == 5 && strncasecmp(buf.data, "INBOX", 5) == 0)
			memcpy(buf.data, "INBOX", 5);
		req->patterns[req->pattern_count++] =
			pattern_collapse(pool, buf.data);
	}
	buffer_free(&buf);
	return true;
}

static bool pattern_can_match(const char *pattern, size_t name_len)
{
	size_t literals = 0;

	for (; *pattern != '\0'; pattern++) {
		if (*pattern != '*' && *pattern != '%')
			literals++;
	}
	return literals <= name_len;
}

bool imap_list_match(const char *pattern, const char *name)
{
	bool rows[2][MAILBOX_NAME_MAX + 2];
	size_t n = strlen(name);

	if (n > MAILBOX_NAME_MAX || !pattern_can_match(pattern, n))
		return false;
	bool *prev = rows[0], *cur = rows[1];
	memset(prev, 0, n + 1);
	prev[0] = true;
	/* prev[j]: the pattern so far matches name[0..j) */
	for (const char *p = pattern; *p != '\0'; p++) {
		cur[0] = (*p == '*' || *p == '%') && prev[0];
		for (size_t j = 1; j <= n; j++) {
			if (*p == '*')
				cur[j] = prev[j] || cur[j - 1];
			else if (*p == '%')
				cur[j] = prev[j] ||
					(cur[j - 1] && name[j - 1] != MAILBOX_NAME_SEP);
			else
				cur[j] = prev[j - 1] && name[j - 1] == *p;
		}
		bool *tmp = prev;
		prev = cur;
		cur = tmp;
	}
	return prev[n];
}

static bool node_matches(const struct imap_list_request *req,
			 const struct mailbox_list_node *node)
{
	for (unsigned int i = 0; i < req->pattern_count; i++) {
		if (imap_list_match(req->patterns[i], node->name))
			return true;
	}
	return false;
}

/* Whether the node meets the selection criteria. */
static bool node_selected(const struct imap_list_request *req,
			  const struct mailbox_list_node *node)
{
	bool exists = (node->flags & MAILBOX_NODE_EXISTS) != 0;

	if (req->lsub || (req->select & IMAP_LIST_SEL_SUBSCRIBED) != 0) {
		if ((node->flags & MAILBOX_NODE_SUBSCRIBED) == 0)
			return false;
	} else if (!exists) {
		return false;
	}
	if ((req->select & IMAP_LIST_SEL_SPECIALUSE) != 0)
		return exists && node->special != MAILBOX_SPECIAL_NONE;
	return true;
}

/* Whether some descendant is selected (*any_r) and whether one of those
   does not match (*unmatched_r): RFC 5258 CHILDINFO and the LSUB
   \Noselect parent of RFC 3501 6.3.9. */
static void node_childinfo(struct imap_list_ctx *ctx, unsigned int idx,
			   bool *any_r, bool *unmatched_r)
{
	const char *name = mailbox_list_get(ctx->list, idx)->name;

	*any_r = *unmatched_r = false;
	for (unsigned int j = idx + 1; j < ctx->count; j++) {
		if (!mailbox_name_is_child(mailbox_list_get(ctx->list, j)->name,
					   name))
			break;
		if (ctx->sel[j]) {
			*any_r = true;
			if (!ctx->match[j]) {
				*unmatched_r = true;
				return;
			}
		}
	}
}

/* Append str to the NUL-terminated text of line (size bytes), cut at
   its end; returns the new length. LIST sends many short lines: plain
   copies, no printf. */
static size_t line_add(char *line, size_t len, size_t size, const char *str)
{
	size_t n = strlen(str);

	if (n > size - 1 - len)
		n = size - 1 - len;
	memcpy(line + len, str, n);
	line[len + n] = '\0';
	return len + n;
}

static void attr_add(char *attrs, size_t size, const char *attr)
{
	size_t len = strlen(attrs);

	if (len > 0)
		len = line_add(attrs, len, size, " ");
	(void)line_add(attrs, len, size, attr);
}

static void list_attrs(const struct imap_list_request *req,
		       const struct mailbox_list_node *node, bool selected,
		       char *attrs, size_t size)
{
	bool exists = (node->flags & MAILBOX_NODE_EXISTS) != 0;
	bool children = (node->flags & MAILBOX_NODE_CHILDREN) != 0;

	attrs[0] = '\0';
	if (req->lsub) {
		if (!selected || (node->flags & MAILBOX_NODE_NOSELECT) != 0)
			attr_add(attrs, size, "\\Noselect");
		return;
	}
	if (!exists)
		attr_add(attrs, size, req->extended ? "\\NonExistent" : "\\Noselect");
	else if ((node->flags & MAILBOX_NODE_NOSELECT) != 0)
		attr_add(attrs, size, "\\Noselect");
	if (exists || children)
		attr_add(attrs, size, children ? "\\HasChildren" : "\\HasNoChildren");
	if ((node->flags & MAILBOX_NODE_SUBSCRIBED) != 0 &&
	    (req->ret & IMAP_LIST_RET_SUBSCRIBED) != 0)
		attr_add(attrs, size, "\\Subscribed");
	for (unsigned int i = 0; exists && i < MAILBOX_SPECIAL_COUNT; i++) {
		if ((node->special & (1U << i)) != 0)
			attr_add(attrs, size, mailbox_special_use_attr(1U << i));
	}
}

static void list_send_node(struct client_command *cmd,
			   struct imap_list_ctx *ctx, unsigned int idx)
{
	const struct mailbox_list_node *node = mailbox_list_get(ctx->list, idx);
	const struct imap_list_request *req = &ctx->req;
	bool any = false, unmatched = false;
	if (req->lsub || (req->select & IMAP_LIST_SEL_RECURSIVEMATCH) != 0)
		node_childinfo(ctx, idx, &any, &unmatched);
	/* an unselected parent is sent only when its selected child is not
	   (RFC 5258 3.5: no redundant CHILDINFO) */
	bool childinfo = ctx->sel[idx] ? any : unmatched;
	bool implied = !req->lsub &&
		(req->select & (IMAP_LIST_SEL_SUBSCRIBED |
				IMAP_LIST_SEL_SPECIALUSE)) == 0 &&
		(node->flags & MAILBOX_NODE_CHILDREN) != 0;
	char attrs[256], line[IMAP_LIST_LINE_MAX];
	size_t len = 0;

	if (!ctx->sel[idx] && !unmatched && !implied)
		return;
	list_attrs(req, node, ctx->sel[idx], attrs, sizeof(attrs));
	line[0] = '\0';
	len = line_add(line, len, sizeof(line),
		       req->lsub ? "* LSUB (" : "* LIST (");
	len = line_add(line, len, sizeof(line), attrs);
	len = line_add(line, len, sizeof(line), ") \"/\" ");
	len = line_add(line, len, sizeof(line),
		       imap_mailbox_name_to_wire(cmd->client, cmd->pool,
						 node->name));
	if (childinfo && !req->lsub) {
		(void)line_add(line, len, sizeof(line),
			       " (\"CHILDINFO\" (\"SUBSCRIBED\"))");
	}
	client_send_line(cmd->client, line);
	if ((req->ret & IMAP_LIST_RET_STATUS) != 0 &&
	    (node->flags & MAILBOX_NODE_SELECTABLE) != 0)
		(void)imap_status_send(cmd->client, node->name,
				       req->status_items);
}

static void list_ctx_free(struct imap_list_ctx *ctx)
{
	mailbox_list_free(&ctx->list);
	i_free(ctx->match);
	i_free(ctx->sel);
}

static void cmd_list_cancel(struct client_command *cmd)
{
	list_ctx_free(cmd->context);
}

static bool cmd_list_continue(struct client_command *cmd)
{
	struct imap_list_ctx *ctx = cmd->context;
	struct client *client = cmd->client;

	for (; ctx->idx < ctx->count; ctx->idx++) {
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL) {
			cmd->wait = CLIENT_WAIT_OUTPUT;
			return false;
		}
		if (ctx->match[ctx->idx])
			list_send_node(cmd, ctx, ctx->idx);
	}
	list_ctx_free(ctx);
	cmd->cancel = NULL;
	client_send_tagline(cmd, ctx->req.lsub ? "OK Lsub completed." :
			    "OK List completed.");
	return true;
}

bool imap_list_run(struct client_command *cmd,
		   const struct imap_list_request *req)
{
	struct imap_list_ctx *ctx = p_malloc(cmd->pool, sizeof(*ctx));
	const char *error;

	ctx->req = *req;
	if (mailbox_list_read(cmd->client->user->mail_root,
			      list_specials(cmd->client->user->set),
			      &ctx->list, &error) < 0) {
		i_error("LIST: %s", error);
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return true;
	}
	ctx->count = mailbox_list_count(ctx->list);
	ctx->match = i_malloc(ctx->count + 1);
	ctx->sel = i_malloc(ctx->count + 1);
	for (unsigned int i = 0; i < ctx->count; i++) {
		const struct mailbox_list_node *node =
			mailbox_list_get(ctx->list, i);
		ctx->match[i] = node_matches(req, node);
		ctx->sel[i] = node_selected(req, node);
	}
	cmd->context = ctx;
	cmd->cancel = cmd_list_cancel;
	cmd->func = cmd_list_continue;
	return cmd_list_continue(cmd);
}

void imap_list_send_notify(struct client *client, pool_t pool,
			   const char *name, const char *oldname)
{
	struct imap_list_request req = {
		.extended = true, .ret = IMAP_LIST_RET_SUBSCRIBED,
	};
	struct mailbox_list *list;
	char attrs[256] = "\\NonExistent";
	const char *error;

	if (mailbox_list_read(client->user->mail_root,
			      list_specials(client->user->set),
			      &list, &error) < 0) {
		i_error("LIST of %s: %s", name, error);
		return;
	}
	const struct mailbox_list_node *node = mailbox_list_lookup(list, name);
	if (node != NULL)
		list_attrs(&req, node, true, attrs, sizeof(attrs));
	mailbox_list_free(&list);
	const char *wire = imap_mailbox_name_to_wire(client, pool, name);
	if (oldname == NULL) {
		client_send_linef(client, "* LIST (%s) \"/\" %s", attrs, wire);
	} else {
		client_send_linef(client, "* LIST (%s) \"/\" %s "
				  "(\"OLDNAME\" (%s))", attrs, wire,
				  imap_mailbox_name_to_wire(client, pool,
							    oldname));
	}
}

void imap_list_send_mailbox(struct client *client, pool_t pool,
			    const char *name)
{
	struct imap_list_request req;
	struct mailbox_list *list;
	char attrs[256] = "";
	const char *error;

	memset(&req, 0, sizeof(req));
	if (mailbox_list_read(client->user->mail_root,
			      list_specials(client->user->set),
			      &list, &error) < 0) {
		/* the mailbox was just opened: the attributes are missing */
		i_error("LIST of %s: %s", name, error);
	} else {
		const struct mailbox_list_node *node =
			mailbox_list_lookup(list, name);
		if (node != NULL)
			list_attrs(&req, node, true, attrs, sizeof(attrs));
		mailbox_list_free(&list);
	}
	client_send_linef(client, "* LIST (%s) \"/\" %s", attrs,
			  imap_mailbox_name_to_wire(client, pool, name));
}
