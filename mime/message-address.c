/* RFC 5322 address list parser (section 3.4 and obsolete 4.4). */
#include "lib.h"
#include "buffer.h"
#include "message-header.h"
#include "message-address.h"

/* Bound for one name/mailbox/domain/route string. */
#define ADDRESS_PART_MAX (16 * 1024)

struct addr_ctx {
	pool_t pool;
	struct rfc822_lexer lex;
	buffer_t name, route, mailbox, domain, comment;
	struct message_address *head, **tail;
	unsigned int count;
	bool stop;   /* garbage seen: ignore the rest */
	bool local_quoted;   /* the last local-part had a quoted word */
	bool open_quote;     /* a quoted string read was never closed */
};

static const char *buf_str(struct addr_ctx *ctx, const buffer_t *buf)
{
	return p_strndup(ctx->pool, buf->data, buf->used);
}

static void add_address(struct addr_ctx *ctx, const char *name,
			const char *route, const char *mailbox,
			const char *domain, bool invalid)
{
	struct message_address *addr;

	if (ctx->count >= MESSAGE_ADDRESS_MAX_COUNT)
		return;
	if (ctx->open_quote) {
		/* it read an unterminated quoted string ("Name <a@b> with
		   the quote never closed): a missing address, and the rest
		   of the field is ignored (as Dovecot reads it) */
		ctx->open_quote = false;
		ctx->stop = true;
		name = route = NULL;
		mailbox = MESSAGE_ADDRESS_MISSING_MAILBOX;
		domain = MESSAGE_ADDRESS_MISSING_DOMAIN;
		invalid = true;
	}
	addr = p_malloc(ctx->pool, sizeof(*addr));
	addr->name = name;
	addr->route = route;
	addr->mailbox = mailbox;
	addr->domain = domain;
	addr->invalid_syntax = invalid;
	*ctx->tail = addr;
	ctx->tail = &addr->next;
	ctx->count++;
}

static bool is_word_start(int c)
{
	return c == '"' || (c >= 0 && c != ',' && c != ';' && c != ':' &&
			    c != '<' && c != '>' && c != '@' && c != '(' &&
			    c != ')' && c != '[' && c != ']' && c != '\\' &&
			    c > ' ' && c != 0x7f);
}

/* A quoted string at the lexer that never closes. */
static bool quote_is_open(const struct rfc822_lexer *lex)
{
	for (const unsigned char *p = lex->data + 1; p < lex->end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return false;
	}
	return true;
}

/* Atom that may contain dots (obsolete phrase, "Q." in names). */
static bool read_atom_or_dot(struct addr_ctx *ctx, buffer_t *out)
{
	bool any = false;

	for (;;) {
		if (rfc822_lexer_peek(&ctx->lex) == '.') {
			buffer_append_trunc(out, ".", 1);
			ctx->lex.data++;
			any = true;
		} else if (rfc822_read_atom(&ctx->lex, out)) {
			any = true;
		} else {
			return any;
		}
	}
}

/* phrase = 1*word, words joined by one space. */
static bool parse_phrase(struct addr_ctx *ctx, buffer_t *out)
{
	bool any = false;

	buffer_reset(out);
	while (rfc822_skip_cfws(&ctx->lex) &&
	       is_word_start(rfc822_lexer_peek(&ctx->lex))) {
		if (any)
			buffer_append_trunc(out, " ", 1);
		if (rfc822_lexer_peek(&ctx->lex) == '"') {
			if (quote_is_open(&ctx->lex))
				ctx->open_quote = true;
			(void)rfc822_read_quoted(&ctx->lex, out);
		}
		else if (!read_atom_or_dot(ctx, out))
			break;
		any = true;
	}
	return any;
}

/* local-part = word *("." word); quoted words keep no quotes. */
static bool parse_local_part(struct addr_ctx *ctx)
{
	bool any = false;

	buffer_reset(&ctx->mailbox);
	ctx->local_quoted = false;
	for (;;) {
		(void)rfc822_skip_cfws(&ctx->lex);
		int c = rfc822_lexer_peek(&ctx->lex);
		if (c == '"') {
			if (quote_is_open(&ctx->lex))
				ctx->open_quote = true;
			(void)rfc822_read_quoted(&ctx->lex, &ctx->mailbox);
			ctx->local_quoted = true;
		} else if (!rfc822_read_atom(&ctx->lex, &ctx->mailbox)) {
			if (c != '.')
				return any;
		}
		any = true;
		(void)rfc822_skip_cfws(&ctx->lex);
		if (rfc822_lexer_peek(&ctx->lex) != '.')
			return true;
		buffer_append_trunc(&ctx->mailbox, ".", 1);
		ctx->lex.data++;
	}
}

static bool parse_domain(struct addr_ctx *ctx, buffer_t *out)
{
	buffer_reset(out);
	(void)rfc822_skip_cfws(&ctx->lex);
	if (rfc822_lexer_peek(&ctx->lex) == '[')
		return rfc822_read_domain_literal(&ctx->lex, out);
	if (!rfc822_read_dot_atom(&ctx->lex, out))
		return false;
	/* "b." (a message cut after the dot): no domain, as Dovecot
	   reads it */
	if (out->used > 0 && ((const char *)out->data)[out->used - 1] == '.')
		buffer_reset(out);
	return true;
}

enum addr_spec_result {
	ADDR_SPEC_OK,
	ADDR_SPEC_NO_DOMAIN,   /* local-part and then the end of it */
	ADDR_SPEC_BROKEN,      /* local-part followed by something else */
};

/* addr-spec; sets mailbox and domain. */
static enum addr_spec_result parse_addr_spec(struct addr_ctx *ctx)
{
	(void)parse_local_part(ctx);
	buffer_reset(&ctx->domain);
	(void)rfc822_skip_cfws(&ctx->lex);
	int c = rfc822_lexer_peek(&ctx->lex);
	if (c != '@') {
		/* (a ':' after it, "a:;" in a group: a mailbox without a
		   domain too, as Dovecot reads it) */
		return c < 0 || c == ',' || c == ';' || c == '>' || c == ':' ?
			ADDR_SPEC_NO_DOMAIN : ADDR_SPEC_BROKEN;
	}
	ctx->lex.data++;
	(void)parse_domain(ctx, &ctx->domain);
	return ADDR_SPEC_OK;
}

/* obs-route = "@" domain *("," ["@" domain]) ":". Returns false if
   the ':' is missing. */
static bool parse_route(struct addr_ctx *ctx)
{
	buffer_t dom;

	buffer_reset(&ctx->route);
	buffer_init(&dom, ADDRESS_PART_MAX);
	while (rfc822_skip_cfws(&ctx->lex)) {
		int c = rfc822_lexer_peek(&ctx->lex);
		if (c == ',') {
			ctx->lex.data++;
			continue;
		}
		if (c != '@')
			break;
		ctx->lex.data++;
		(void)parse_domain(ctx, &dom);
		if (ctx->route.used > 0)
			buffer_append_trunc(&ctx->route, ",", 1);
		buffer_append_trunc(&ctx->route, "@", 1);
		buffer_append_trunc(&ctx->route, dom.data, dom.used);
	}
	buffer_free(&dom);
	if (rfc822_lexer_peek(&ctx->lex) != ':')
		return false;
	ctx->lex.data++;
	return true;
}

static const char *str_or_missing(struct addr_ctx *ctx, const buffer_t *buf,
				  const char *missing, bool *invalid)
{
	if (buf->used > 0)
		return buf_str(ctx, buf);
	*invalid = true;
	return missing;
}

/* angle-addr at '<' with the phrase already in ctx->name. */
static void parse_angle_addr(struct addr_ctx *ctx, bool have_name)
{
	bool invalid = false;
	const char *route = NULL, *domain;

	ctx->lex.data++;
	(void)rfc822_skip_cfws(&ctx->lex);
	if (rfc822_lexer_peek(&ctx->lex) == '@') {
		route = parse_route(ctx) ? buf_str(ctx, &ctx->route) :
			MESSAGE_ADDRESS_INVALID_ROUTE;
	}
	enum addr_spec_result ret = parse_addr_spec(ctx);
	const char *mailbox = str_or_missing(ctx, &ctx->mailbox,
		MESSAGE_ADDRESS_MISSING_MAILBOX, &invalid);
	if (ret == ADDR_SPEC_BROKEN) {
		/* "<a:b@c>": what follows cannot be trusted either */
		domain = MESSAGE_ADDRESS_SYNTAX_ERROR;
		invalid = true;
		ctx->stop = true;
	} else {
		domain = str_or_missing(ctx, &ctx->domain,
			MESSAGE_ADDRESS_MISSING_DOMAIN, &invalid);
		(void)rfc822_skip_cfws(&ctx->lex);
		if (rfc822_lexer_peek(&ctx->lex) == '>') {
			ctx->lex.data++;
		} else {
			/* "<a@b" never closed: the domain is not trusted,
			   as Dovecot marks it */
			domain = MESSAGE_ADDRESS_SYNTAX_ERROR;
			invalid = true;
		}
	}
	/* an empty display name ("" <a@b>) is no name: NIL, as other
	   servers send it */
	add_address(ctx, have_name && ctx->name.used > 0 ?
		    buf_str(ctx, &ctx->name) : NULL,
		    route, mailbox, domain, invalid);
}

/* mailbox = name-addr / addr-spec */
static void parse_mailbox(struct addr_ctx *ctx)
{
	const unsigned char *start = ctx->lex.data;
	bool have_name = parse_phrase(ctx, &ctx->name);
	bool invalid = false;

	if (rfc822_lexer_peek(&ctx->lex) == '<') {
		parse_angle_addr(ctx, have_name);
		return;
	}
	ctx->lex.data = start;
	buffer_reset(&ctx->comment);
	ctx->lex.last_comment = &ctx->comment;
	enum addr_spec_result ret = parse_addr_spec(ctx);
	if (ret == ADDR_SPEC_BROKEN ||
	    (ret == ADDR_SPEC_NO_DOMAIN && ctx->local_quoted)) {
		/* "Some Name" without an address: a name, nothing else
		   (a quoted word without "@" is a name too, as Dovecot
		   reads it; a bare word is a mailbox) */
		ctx->lex.last_comment = NULL;
		ctx->lex.data = start;
		(void)parse_phrase(ctx, &ctx->name);
		add_address(ctx, buf_str(ctx, &ctx->name), NULL,
			    MESSAGE_ADDRESS_MISSING_MAILBOX,
			    MESSAGE_ADDRESS_MISSING_DOMAIN, true);
		return;
	}
	/* a trailing "(Real Name)" comment names the address */
	(void)rfc822_skip_cfws(&ctx->lex);
	ctx->lex.last_comment = NULL;
	const char *mailbox = str_or_missing(ctx, &ctx->mailbox,
		MESSAGE_ADDRESS_MISSING_MAILBOX, &invalid);
	const char *domain = str_or_missing(ctx, &ctx->domain,
		MESSAGE_ADDRESS_MISSING_DOMAIN, &invalid);
	add_address(ctx, ctx->comment.used > 0 ? buf_str(ctx, &ctx->comment) :
		    NULL, NULL, mailbox, domain, invalid);
}

/* After an address: the list goes on only at a ',' (or ';' ending a
   group). Anything else is garbage, and the rest of the header is
   ignored, as Dovecot does. */
static void check_separator(struct addr_ctx *ctx, bool in_group)
{
	if (!rfc822_skip_cfws(&ctx->lex))
		return;
	int c = rfc822_lexer_peek(&ctx->lex);
	if (c != ',' && !(in_group && c == ';'))
		ctx->stop = true;
}

/* An empty element (", ,") stands for an address that is missing. */
static void add_missing(struct addr_ctx *ctx)
{
	add_address(ctx, NULL, NULL, MESSAGE_ADDRESS_MISSING_MAILBOX,
		    MESSAGE_ADDRESS_MISSING_DOMAIN, true);
}

static void parse_mailbox_list(struct addr_ctx *ctx, bool in_group)
{
	bool after_comma = true;

	while (!ctx->stop && rfc822_skip_cfws(&ctx->lex)) {
		int c = rfc822_lexer_peek(&ctx->lex);
		if (c == ',') {
			if (after_comma)
				add_missing(ctx);
			ctx->lex.data++;
			after_comma = true;
			continue;
		}
		if (in_group && c == ';')
			return;
		parse_mailbox(ctx);
		after_comma = false;
		if (!ctx->stop)
			check_separator(ctx, in_group);
	}
}

/* address = mailbox / group */
static void parse_address(struct addr_ctx *ctx)
{
	const unsigned char *start = ctx->lex.data;

	if (parse_phrase(ctx, &ctx->name) &&
	    rfc822_lexer_peek(&ctx->lex) == ':') {
		ctx->lex.data++;
		add_address(ctx, NULL, NULL, buf_str(ctx, &ctx->name), NULL,
			    false);
		parse_mailbox_list(ctx, true);
		if (rfc822_lexer_peek(&ctx->lex) == ';')
			ctx->lex.data++;
		add_address(ctx, NULL, NULL, NULL, NULL, false);
		return;
	}
	ctx->lex.data = start;
	ctx->open_quote = false;
	parse_mailbox(ctx);
}

struct message_address *message_address_parse(pool_t pool, const char *str,
					      size_t len)
{
	struct addr_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.pool = pool;
	ctx.tail = &ctx.head;
	buffer_init(&ctx.name, ADDRESS_PART_MAX);
	buffer_init(&ctx.route, ADDRESS_PART_MAX);
	buffer_init(&ctx.mailbox, ADDRESS_PART_MAX);
	buffer_init(&ctx.domain, ADDRESS_PART_MAX);
	buffer_init(&ctx.comment, ADDRESS_PART_MAX);
	rfc822_lexer_init(&ctx.lex, str, len);
	bool after_comma = true;
	while (!ctx.stop && rfc822_skip_cfws(&ctx.lex)) {
		if (rfc822_lexer_peek(&ctx.lex) == ',') {
			if (after_comma)
				add_missing(&ctx);
			ctx.lex.data++;
			after_comma = true;
			continue;
		}
		parse_address(&ctx);
		after_comma = false;
		if (!ctx.stop)
			check_separator(&ctx, false);
	}
	buffer_free(&ctx.name);
	buffer_free(&ctx.route);
	buffer_free(&ctx.mailbox);
	buffer_free(&ctx.domain);
	buffer_free(&ctx.comment);
	return ctx.head;
}
