/* Streaming MIME parser: splits input into lines, feeds header lines to
   the header parser, finds boundaries, and records where each part's
   header and body start and end. */
#include "lib.h"
#include "message-parser.h"
#include "rfc2231.h"

#include <strings.h>

/* "--" before a boundary and "--" after a closing one. */
#define BOUNDARY_LINE_EXTRA 4
/* The smallest field bound: a short boundary must still fit. */
#define MIN_FIELD_SIZE 256

struct boundary {
	struct message_part *part;   /* the multipart it belongs to */
	const char *str;
	size_t len;
};

struct position {
	uint64_t physical, virtual, lines;
};

enum parser_state { STATE_HEADER, STATE_BODY };

struct message_parser {
	pool_t pool;
	struct message_parser_settings set;
	struct message_header_parser *hp;
	message_header_callback_t *callback;
	void *context;

	struct message_part *root, *part;  /* part: innermost open part */
	enum parser_state state;
	unsigned int part_count;

	/* Open multiparts with a boundary, outermost first. At most
	   max_depth + 1 entries since each is a deeper part. */
	struct boundary *boundaries;
	unsigned int boundary_count;
	/* Bytes of a body line kept: enough to recognise the longest active
	   boundary line; the rest of a longer line is only counted. */
	size_t body_line_keep;

	struct position pos;          /* at the start of the current line */
	unsigned int prev_eol_len;    /* 0, 1 (LF) or 2 (CRLF) */
	/* The previous line was body content, so its line break belongs
	   to a boundary line that follows. After a header line or a
	   boundary line it stays with the part (as Dovecot counts). */
	bool prev_line_body;
	/* The previous line was a header field line: a boundary right after
	   it ends the header, and that line break is the boundary's too. */
	bool prev_line_header;
	/* The previous line was the blank line that ended the header of
	   blank_end_part: before a boundary, its break is the boundary's
	   and the header ends without it. */
	struct message_part *blank_end_part;

	buffer_t line;                /* kept start of the current line */
	size_t line_keep;
	uint64_t line_len;            /* bytes of the current line so far */
	bool line_truncated, last_cr;
};

static void parser_new_part(struct message_parser *p,
			    struct message_part *parent);

struct message_parser *
message_parser_init(pool_t pool, const struct message_parser_settings *set)
{
	struct message_parser *p = i_malloc(sizeof(*p));
	static const struct message_parser_settings defaults = {
		.max_depth = MESSAGE_PARSER_DEFAULT_MAX_DEPTH,
		.max_parts = MESSAGE_PARSER_DEFAULT_MAX_PARTS,
		.max_field_size = MESSAGE_PARSER_DEFAULT_MAX_FIELD_SIZE,
	};

	p->pool = pool;
	p->set = set != NULL ? *set : defaults;
	if (p->set.max_parts == 0)
		p->set.max_parts = 1;
	if (p->set.max_field_size < MIN_FIELD_SIZE)
		p->set.max_field_size = MIN_FIELD_SIZE;
	p->hp = message_header_parser_init(p->set.max_field_size);
	p->boundaries = i_malloc(i_mul_size(p->set.max_depth + 2,
					    sizeof(*p->boundaries)));
	buffer_init(&p->line, p->set.max_field_size);
	parser_new_part(p, NULL);
	return p;
}

void message_parser_set_header_callback(struct message_parser *p,
					message_header_callback_t *callback,
					void *context)
{
	p->callback = callback;
	p->context = context;
}

static unsigned int part_depth(const struct message_part *part)
{
	unsigned int depth = 0;

	for (; part->parent != NULL; part = part->parent)
		depth++;
	return depth;
}

/* A new part whose header starts at the current line + its length. */
static void parser_new_part_at(struct message_parser *p,
			       struct message_part *parent,
			       const struct position *start)
{
	struct message_part *part = p_malloc(p->pool, sizeof(*part));

	part->parent = parent;
	part->physical_pos = start->physical;
	part->virtual_pos = start->virtual;
	part->line_pos = start->lines;
	part->type = "text";
	part->subtype = "plain";
	if (parent == NULL) {
		p->root = part;
	} else {
		struct message_part **pp = &parent->children;
		/* Appending walks the list; the part cap bounds it. */
		while (*pp != NULL)
			pp = &(*pp)->next;
		*pp = part;
		parent->children_count++;
	}
	p->part = part;
	p->part_count++;
	p->state = STATE_HEADER;
	message_header_parser_reset(p->hp);
}

static void parser_new_part(struct message_parser *p,
			    struct message_part *parent)
{
	parser_new_part_at(p, parent, &p->pos);
}

/* ---- header fields ---- */

/* Name lengths first: a field is compared with the names of its length
   only (every header line of every parse passes here). */
#define PART_FIELD(name, f) { name, sizeof(name) - 1, f }
static const struct {
	const char *name;
	size_t name_len;
	enum message_part_field field;
} part_fields[] = {
	PART_FIELD("Content-Type", MPF_CONTENT_TYPE),
	PART_FIELD("Content-Transfer-Encoding", MPF_CONTENT_TRANSFER_ENCODING),
	PART_FIELD("Content-ID", MPF_CONTENT_ID),
	PART_FIELD("Content-Description", MPF_CONTENT_DESCRIPTION),
	PART_FIELD("Content-Disposition", MPF_CONTENT_DISPOSITION),
	PART_FIELD("Content-Language", MPF_CONTENT_LANGUAGE),
	PART_FIELD("Content-Location", MPF_CONTENT_LOCATION),
	PART_FIELD("Content-MD5", MPF_CONTENT_MD5),
	PART_FIELD("Date", MPF_DATE),
	PART_FIELD("Subject", MPF_SUBJECT),
	PART_FIELD("From", MPF_FROM),
	PART_FIELD("Sender", MPF_SENDER),
	PART_FIELD("Reply-To", MPF_REPLY_TO),
	PART_FIELD("To", MPF_TO),
	PART_FIELD("Cc", MPF_CC),
	PART_FIELD("Bcc", MPF_BCC),
	PART_FIELD("In-Reply-To", MPF_IN_REPLY_TO),
	PART_FIELD("Message-ID", MPF_MESSAGE_ID),
};

static bool part_is_message(const struct message_part *part)
{
	return part->parent == NULL ||
		(part->parent->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0;
}

static bool field_is_address(enum message_part_field f)
{
	return f == MPF_FROM || f == MPF_SENDER || f == MPF_REPLY_TO ||
		f == MPF_TO || f == MPF_CC || f == MPF_BCC;
}

/* A Content-Transfer-Encoding value that is one token and nothing else
   (what BODYSTRUCTURE reports; anything else counts as 7bit). */
static bool cte_is_one_token(pool_t pool, const char *value)
{
	struct mime_value v;

	rfc2231_parse(pool, value, false, &v);
	return v.value_valid && !v.trailing_garbage &&
		strchr(value, ';') == NULL;
}

/* A repeated field: Content-* keep the first (what a MIME reader uses),
   except Content-Disposition, the last, and Content-Transfer-Encoding,
   the first that is one token; address fields collect every occurrence
   (separated by MESSAGE_PART_FIELD_SEP), other envelope fields keep the
   last. Those are Dovecot's choices, which clients of it have lived
   with. */
static void parser_store_field(struct message_parser *p,
			       struct message_part *part,
			       enum message_part_field f,
			       const struct message_header_field *field)
{
	const char *old = part->fields[f];
	bool replace = f >= MPF_FIRST_ENVELOPE && !field_is_address(f);

	if (f == MPF_CONTENT_DISPOSITION)
		replace = true;
	else if (f == MPF_CONTENT_TRANSFER_ENCODING && old != NULL)
		replace = !cte_is_one_token(p->pool, old) &&
			cte_is_one_token(p->pool, field->value);
	if (old == NULL || replace) {
		part->fields[f] = p_strndup(p->pool, field->value,
					    field->value_len);
	} else if (field_is_address(f) &&
		   strlen(old) < p->set.max_field_size) {
		part->fields[f] = p_strdup_printf(p->pool, "%s%c%.*s", old,
			MESSAGE_PART_FIELD_SEP, (int)MIN(field->value_len,
			p->set.max_field_size), field->value);
	}
}

static void parser_header_field(struct message_parser *p,
				const struct message_header_field *field)
{
	struct message_part *part = p->part;

	if (p->callback != NULL)
		p->callback(part, field, p->context);
	if (field->missing_colon)
		return;
	size_t name_len = strlen(field->name);
	if (name_len == 12 && (strcasecmp(field->name, "MIME-Version") == 0 ||
			       strcasecmp(field->name, "Content-Type") == 0))
		part->flags |= MESSAGE_PART_FLAG_IS_MIME;
	for (unsigned int i = 0; i < N_ELEMENTS(part_fields); i++) {
		enum message_part_field f = part_fields[i].field;
		if (part_fields[i].name_len != name_len ||
		    strcasecmp(field->name, part_fields[i].name) != 0)
			continue;
		if (f >= MPF_FIRST_ENVELOPE && !part_is_message(part))
			return;
		parser_store_field(p, part, f, field);
		return;
	}
}

static void parser_set_content_type(struct message_parser *p,
				    struct message_part *part,
				    const char **boundary_r)
{
	struct mime_value ct;
	const char *slash;

	*boundary_r = NULL;
	if (part->parent != NULL &&
	    (part->parent->flags & MESSAGE_PART_FLAG_MULTIPART) != 0 &&
	    strcasecmp(part->parent->subtype, "digest") == 0) {
		part->type = "message";
		part->subtype = "rfc822";
	}
	if (part->fields[MPF_CONTENT_TYPE] != NULL) {
		rfc2231_parse(p->pool, part->fields[MPF_CONTENT_TYPE], true, &ct);
		if (ct.value_valid &&
		    (slash = strchr(ct.value, '/')) != NULL) {
			part->type = p_strndup(p->pool, ct.value,
					       (size_t)(slash - ct.value));
			part->subtype = slash + 1;
		} else if (ct.type_only &&
			   strcasecmp(ct.value, "multipart") == 0) {
			/* a multipart without subtype has no known syntax:
			   its body is data (Dovecot answers the same) */
			part->type = "application";
			part->subtype = "octet-stream";
		} else if (ct.type_only) {
			/* "Content-Type: text": the type, no subtype, as
			   Dovecot reports it (text still counts lines) */
			part->type = ct.value;
			part->subtype = "";
		} else {
			/* present but broken: no type at all, as Dovecot */
			part->type = part->subtype = "";
		}
		*boundary_r = mime_value_get_param(&ct, "boundary");
	}
	if (strcasecmp(part->type, "multipart") == 0)
		part->flags |= MESSAGE_PART_FLAG_MULTIPART;
	else if (strcasecmp(part->type, "message") == 0 &&
		 strcasecmp(part->subtype, "rfc822") == 0)
		part->flags |= MESSAGE_PART_FLAG_MESSAGE_RFC822;
	else if (strcasecmp(part->type, "text") == 0)
		part->flags |= MESSAGE_PART_FLAG_TEXT;
}

/* The header of p->part ended at end_pos (the body starts there). */
static void parser_header_end(struct message_parser *p,
			      const struct position *end_pos, bool has_body)
{
	struct message_part *part = p->part;
	struct message_header_field field;
	const char *boundary;
	bool can_nest;

	if (message_header_parser_flush(p->hp, &field))
		parser_header_field(p, &field);
	if (part->parent != NULL &&
	    (part->parent->flags & MESSAGE_PART_FLAG_MULTIPART) != 0)
		part->flags |= MESSAGE_PART_FLAG_IS_MIME;
	if ((part->flags & MESSAGE_PART_FLAG_IS_MIME) == 0) {
		/* not MIME: Content-* fields are someone else's words */
		for (unsigned int i = 0; i < MPF_FIRST_ENVELOPE; i++)
			part->fields[i] = NULL;
	}
	part->header_size.physical = end_pos->physical - part->physical_pos;
	part->header_size.virtual = end_pos->virtual - part->virtual_pos;
	part->header_size.lines = end_pos->lines - part->line_pos;
	parser_set_content_type(p, part, &boundary);
	p->state = STATE_BODY;

	can_nest = part_depth(part) < p->set.max_depth &&
		p->part_count < p->set.max_parts && has_body;
	if ((part->flags & MESSAGE_PART_FLAG_MULTIPART) != 0) {
		size_t len = boundary == NULL ? 0 : strlen(boundary);
		/* the line buffer holds max_field_size bytes, and the value
		   came from a field no longer than that */
		if (boundary == NULL ||
		    len + BOUNDARY_LINE_EXTRA > p->set.max_field_size) {
			part->flags |= MESSAGE_PART_FLAG_NO_BOUNDARY;
		} else if (can_nest) {
			struct boundary *b = &p->boundaries[p->boundary_count++];
			i_assert(p->boundary_count <= p->set.max_depth + 1);
			b->part = part;
			b->str = boundary;
			b->len = len;
			p->body_line_keep = MAX(p->body_line_keep,
						len + BOUNDARY_LINE_EXTRA);
		}
	} else if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0 &&
		   can_nest) {
		parser_new_part_at(p, part, end_pos);
	}
}

/* ---- closing parts ---- */

static void part_close(struct message_part *part, const struct position *end)
{
	uint64_t body_phys = part->physical_pos + part->header_size.physical;
	uint64_t body_virt = part->virtual_pos + part->header_size.virtual;
	uint64_t body_lines = part->line_pos + part->header_size.lines;

	if (end->physical <= body_phys) {
		part->body_size.physical = 0;
		part->body_size.virtual = 0;
		part->body_size.lines = 0;
		return;
	}
	part->body_size.physical = end->physical - body_phys;
	part->body_size.virtual = end->virtual - body_virt;
	part->body_size.lines = end->lines - body_lines;
}

/* Close parts from the innermost up to (not including) stop, at end;
   owner (if not NULL) and the parts inside it at owner_end. */
static void parser_close_until(struct message_parser *p,
			       struct message_part *stop,
			       const struct position *end,
			       const struct message_part *owner,
			       const struct position *owner_end)
{
	bool inside_owner = owner != NULL;

	while (p->part != stop) {
		struct message_part *part = p->part;
		struct position part_end = inside_owner ? *owner_end : *end;
		if (part_end.physical < part->physical_pos) {
			part_end.physical = part->physical_pos;
			part_end.virtual = part->virtual_pos;
			part_end.lines = part->line_pos;
		}
		if (p->state == STATE_HEADER)
			parser_header_end(p, &part_end, false);
		part_close(part, &part_end);
		if (part == owner)
			inside_owner = false;
		p->part = part->parent;
		p->state = STATE_BODY;
	}
}

/* ---- lines ---- */

/* Index of the boundary the line starts, or -1. When several match
   (one boundary a prefix of another), the longest wins, then the
   innermost: a line can only be meant for the one it spells fully. */
static int parser_find_boundary(struct message_parser *p,
				const unsigned char *line, size_t len,
				bool *end_r)
{
	int found = -1;

	if (len < 2 || line[0] != '-' || line[1] != '-')
		return -1;
	for (unsigned int i = p->boundary_count; i > 0; i--) {
		const struct boundary *b = &p->boundaries[i - 1];
		if (len - 2 < b->len || memcmp(line + 2, b->str, b->len) != 0)
			continue;
		if (found >= 0 && p->boundaries[found].len >= b->len)
			continue;
		found = (int)i - 1;
		*end_r = len - 2 - b->len >= 2 && line[2 + b->len] == '-' &&
			line[3 + b->len] == '-';
	}
	return found;
}

/* Only boundaries before idx stay active. */
static void parser_boundaries_pop(struct message_parser *p, unsigned int idx)
{
	p->boundary_count = idx;
	p->body_line_keep = 0;
	for (unsigned int i = 0; i < idx; i++) {
		p->body_line_keep = MAX(p->body_line_keep,
			p->boundaries[i].len + BOUNDARY_LINE_EXTRA);
	}
}

static void parser_boundary(struct message_parser *p, unsigned int idx,
			    bool end, const struct position *next)
{
	struct message_part *multipart = p->boundaries[idx].part;
	struct position before = p->pos, end_pos = p->pos;
	struct message_part *owner = NULL;

	/* The line break before a boundary belongs to the boundary (RFC
	   2046 5.1.1). After body text it ends every part closed here. After
	   the header of a part (its last field line, or the blank line that
	   ended it) the header ends without it: a part with nothing after
	   its header. That part and what is inside it end there; the parts
	   around it keep the break (as Dovecot counts: a message/rfc822 or
	   multipart part whose last part this is ends at the boundary). */
	if (p->prev_eol_len > 0) {
		before.physical -= p->prev_eol_len;
		before.virtual -= 2;
		before.lines--;
	}
	if (p->prev_eol_len == 0) {
		/* the boundary starts the message or follows a boundary */
	} else if (p->prev_line_body) {
		end_pos = before;
	} else if (p->prev_line_header) {
		owner = p->part;
	} else if (p->blank_end_part != NULL &&
		   p->blank_end_part != multipart) {
		/* (the multipart's own header keeps its blank line when the
		   first boundary follows it: there was no preamble) */
		owner = p->blank_end_part;
		owner->header_size.physical -= p->prev_eol_len;
		owner->header_size.virtual -= 2;
		owner->header_size.lines--;
	}
	parser_close_until(p, multipart, &end_pos, owner, &before);
	if (end || p->part_count >= p->set.max_parts) {
		/* closed, or out of parts: the rest is the multipart's body */
		parser_boundaries_pop(p, idx);
		return;
	}
	parser_boundaries_pop(p, idx + 1);
	parser_new_part_at(p, multipart, next);
}

static void parser_line(struct message_parser *p, const unsigned char *line,
			size_t len, unsigned int eol_len)
{
	struct position next = p->pos;
	struct message_part *blank_end = NULL;
	bool end, body_line = false, header_line = false;
	int idx;

	next.physical += p->line_len;
	next.virtual += p->line_len + (eol_len == 1 ? 1 : 0);
	next.lines += eol_len > 0 ? 1 : 0;

	idx = p->boundary_count == 0 ? -1 :
		parser_find_boundary(p, line, len, &end);
	if (idx >= 0) {
		/* a boundary line cut by the end of the message opens no
		   new part (nothing can follow it) */
		parser_boundary(p, (unsigned int)idx, end || eol_len == 0,
				&next);
	} else if (p->state == STATE_HEADER) {
		struct message_header_field field;
		if (len == 0 && !p->line_truncated) {
			blank_end = p->part;
			parser_header_end(p, &next, true);
		} else {
			header_line = true;
			if (message_header_parser_line(p->hp, line, len,
						       p->line_truncated, &field))
				parser_header_field(p, &field);
		}
	} else {
		body_line = true;
	}
	p->pos = next;
	p->prev_eol_len = eol_len;
	p->prev_line_body = body_line;
	p->prev_line_header = header_line;
	p->blank_end_part = blank_end;
}

static void parser_line_start(struct message_parser *p)
{
	buffer_reset(&p->line);
	p->line_len = 0;
	p->line_truncated = false;
	p->last_cr = false;
	p->line_keep = p->state == STATE_HEADER ? p->set.max_field_size :
		p->body_line_keep;
}

static void parser_line_add(struct message_parser *p,
			    const unsigned char *data, size_t size)
{
	size_t room = p->line_keep - p->line.used;

	if (size > room) {
		if (p->line_keep > 0)
			p->line_truncated = true;
		buffer_append_trunc(&p->line, data, room);
	} else {
		buffer_append_trunc(&p->line, data, size);
	}
	p->line_len += size;
	if (size > 0)
		p->last_cr = data[size - 1] == '\r';
}

static void parser_line_finish(struct message_parser *p, bool have_lf)
{
	unsigned int eol_len = 0;
	size_t len = p->line.used;

	if (have_lf) {
		eol_len = p->last_cr ? 2 : 1;
		/* the CR is in the kept bytes unless the line was cut */
		if (p->last_cr && len == p->line_len)
			len--;
		p->line_len++;  /* the LF itself */
	}
	parser_line(p, (const unsigned char *)p->line.data, len, eol_len);
	parser_line_start(p);
}

void message_parser_feed(struct message_parser *p, const void *data,
			 size_t size)
{
	const unsigned char *d = data;

	if (p->line_len == 0 && p->line.used == 0)
		parser_line_start(p);
	while (size > 0) {
		const unsigned char *lf = memchr(d, '\n', size);
		size_t n = lf == NULL ? size : (size_t)(lf - d);

		parser_line_add(p, d, n);
		if (lf == NULL)
			break;
		parser_line_finish(p, true);
		d += n + 1;
		size -= n + 1;
	}
}

bool message_parser_root_header_done(const struct message_parser *p)
{
	return p->part != p->root || p->state == STATE_BODY;
}

struct message_part *message_parser_finish(struct message_parser **_p)
{
	struct message_parser *p = *_p;
	struct message_part *root = p->root;

	*_p = NULL;
	if (p->line_len > 0)
		parser_line_finish(p, false);
	parser_close_until(p, NULL, &p->pos, NULL, NULL);
	message_header_parser_deinit(&p->hp);
	buffer_free(&p->line);
	i_free(p->boundaries);
	i_free(p);
	return root;
}

struct message_part *message_parse_data(pool_t pool, const void *data,
					size_t size)
{
	struct message_parser *p = message_parser_init(pool, NULL);

	message_parser_feed(p, data, size);
	return message_parser_finish(&p);
}

/* ---- sections ---- */

static struct message_part *section_step(struct message_part *container,
					 unsigned int n)
{
	if ((container->flags & MESSAGE_PART_FLAG_MULTIPART) == 0)
		return n == 1 ? container : NULL;
	struct message_part *part = container->children;
	for (; part != NULL && n > 1; n--)
		part = part->next;
	return n == 1 ? part : NULL;
}

struct message_part *message_part_find_section(struct message_part *root,
					       const char *section)
{
	struct message_part *container = root, *part = root;

	while (*section != '\0') {
		unsigned int n = 0;
		if (*section < '1' || *section > '9')
			return NULL;
		for (; *section >= '0' && *section <= '9'; section++) {
			if (n > 100000)
				return NULL;
			n = n * 10 + (unsigned int)(*section - '0');
		}
		if (*section == '.')
			section++;
		if (container == NULL)
			return NULL;
		part = section_step(container, n);
		if (part == NULL)
			return NULL;
		/* What the next number counts in: a message/rfc822's
		   message; a part reached as a multipart's child (its "1" is
		   itself, once: "1.1" of a multipart's first part that is
		   not multipart is that part, as Dovecot answers); nothing
		   after a part named itself. */
		if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0)
			container = part->children;
		else if (part != container)
			container = part;
		else
			container = NULL;
	}
	return part;
}

static void range_set(struct message_section_range *r, uint64_t pos,
		      const struct message_size *size)
{
	r->physical_pos = pos;
	r->physical_size = size->physical;
	r->virtual_size = size->virtual;
}

int message_part_get_range(const struct message_part *part,
			   enum message_section_kind kind,
			   struct message_section_range *range_r)
{
	const struct message_part *msg = part->children;
	uint64_t body_pos = part->physical_pos + part->header_size.physical;

	switch (kind) {
	case MESSAGE_SECTION_FULL:
		range_r->physical_pos = part->physical_pos;
		range_r->physical_size = part->header_size.physical +
			part->body_size.physical;
		range_r->virtual_size = part->header_size.virtual +
			part->body_size.virtual;
		return 0;
	case MESSAGE_SECTION_ALL:
		range_set(range_r, body_pos, &part->body_size);
		return 0;
	case MESSAGE_SECTION_MIME:
		range_set(range_r, part->physical_pos, &part->header_size);
		return 0;
	case MESSAGE_SECTION_HEADER:
	case MESSAGE_SECTION_TEXT:
		if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) == 0 ||
		    msg == NULL)
			return -1;
		if (kind == MESSAGE_SECTION_HEADER)
			range_set(range_r, msg->physical_pos, &msg->header_size);
		else
			range_set(range_r, msg->physical_pos +
				  msg->header_size.physical, &msg->body_size);
		return 0;
	}
	i_unreached();
}

int message_section_get_range(struct message_part *root, const char *section,
			      enum message_section_kind kind,
			      struct message_section_range *range_r)
{
	struct message_part *part;

	if (*section == '\0') {
		/* the message itself: its header and body, whatever its
		   type (a top-level message/rfc822 included) */
		switch (kind) {
		case MESSAGE_SECTION_FULL:
			break;
		case MESSAGE_SECTION_HEADER:
			kind = MESSAGE_SECTION_MIME;
			break;
		case MESSAGE_SECTION_TEXT:
			kind = MESSAGE_SECTION_ALL;
			break;
		case MESSAGE_SECTION_ALL:
		case MESSAGE_SECTION_MIME:
			return -1;
		}
		return message_part_get_range(root, kind, range_r);
	}
	part = message_part_find_section(root, section);
	if (part == NULL || kind == MESSAGE_SECTION_FULL)
		return -1;
	return message_part_get_range(part, kind, range_r);
}
