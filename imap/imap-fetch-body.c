/* Section specifiers, the message structure and section sources
   (imap-fetch-body.h). The byte reader is imap-body-stream.c. */
#include "imap-common.h"
#include "imap-fetch-body.h"
#include "imap-fetch-cache.h"
#include "message-parser.h"
#include "rfc2231.h"

#include <ctype.h>
#include <strings.h>

/* Per-message pool: the part tree of a normal message is a few KiB. */
#define MSG_STRUCTURE_POOL_SIZE (16 * 1024)
#define MSG_STRUCTURE_READ_SIZE (32 * 1024)
/* How much of each file is read ahead for a parse of headers only. */
#define MSG_STRUCTURE_AHEAD_HEADER (16 * 1024)

/* ---- section specifiers (RFC 3501 / RFC 9051 "section") ---- */

static bool is_field_char(unsigned char c)
{
	/* astring without quoted/literal: any CHAR except specials */
	return c > ' ' && c < 0x7f && c != '(' && c != ')' && c != '{' &&
		c != '"' && c != '\\' && c != '%' && c != '*' && c != ']';
}

/* One header-fld-name (atom or "quoted") at *pp. Appends its echo. */
static const char *parse_field_name(pool_t pool, const char **pp,
				    buffer_t *echo)
{
	const char *p = *pp;
	char name[IMAP_SECTION_FIELD_NAME_MAX + 1];
	size_t len = 0;
	bool quoted = *p == '"';

	if (quoted)
		p++;
	for (;; p++) {
		unsigned char c = (unsigned char)*p;
		if (quoted) {
			if (c == '"')
				break;
			if (c == '\\' && (p[1] == '"' || p[1] == '\\'))
				c = (unsigned char)*++p;
			else if (c == '\0' || c == '\\' || c >= 0x80)
				return NULL;
		} else if (!is_field_char(c)) {
			break;
		}
		if (len == IMAP_SECTION_FIELD_NAME_MAX)
			return NULL;
		name[len++] = (char)toupper(c);
	}
	if (len == 0)
		return NULL;
	name[len] = '\0';
	*pp = quoted ? p + 1 : p;
	if (quoted) {
		if (imap_append_quoted(echo, name) < 0)
			return NULL;
	} else if (buffer_append_str(echo, name) < 0) {
		return NULL;
	}
	return p_strdup(pool, name);
}

/* " (NAME NAME ...)" up to the end of spec. */
static int parse_field_list(pool_t pool, const char *p,
			    struct imap_section *sec, buffer_t *echo)
{
	const char **fields = p_malloc(pool, sizeof(*fields) *
				       (IMAP_SECTION_MAX_FIELDS + 1));
	unsigned int count = 0;

	if (strncmp(p, " (", 2) != 0 || buffer_append_str(echo, " (") < 0)
		return -1;
	p += 2;
	for (;;) {
		if (count == IMAP_SECTION_MAX_FIELDS)
			return -1;
		if ((fields[count++] = parse_field_name(pool, &p, echo)) == NULL)
			return -1;
		if (*p != ' ')
			break;
		p++;
		if (buffer_append_c(echo, ' ') < 0)
			return -1;
	}
	if (strcmp(p, ")") != 0 || buffer_append_c(echo, ')') < 0)
		return -1;
	sec->fields = fields;
	sec->field_count = count;
	return 0;
}

/* The section-text after the part numbers (or alone). */
static int parse_section_text(pool_t pool, const char *p, bool have_part,
			      struct imap_section *sec, buffer_t *echo)
{
	static const struct {
		const char *name;
		enum imap_section_text text;
	} texts[] = {
		{ "HEADER.FIELDS.NOT", IMAP_SECTION_HEADER_FIELDS_NOT },
		{ "HEADER.FIELDS", IMAP_SECTION_HEADER_FIELDS },
		{ "HEADER", IMAP_SECTION_HEADER },
		{ "TEXT", IMAP_SECTION_TEXT },
		{ "MIME", IMAP_SECTION_MIME },
	};

	for (unsigned int i = 0; i < N_ELEMENTS(texts); i++) {
		size_t len = strlen(texts[i].name);
		if (strncasecmp(p, texts[i].name, len) != 0)
			continue;
		sec->text = texts[i].text;
		if (buffer_append_str(echo, texts[i].name) < 0)
			return -1;
		if (sec->text == IMAP_SECTION_MIME && !have_part)
			return -1;
		if (sec->text == IMAP_SECTION_HEADER_FIELDS ||
		    sec->text == IMAP_SECTION_HEADER_FIELDS_NOT)
			return parse_field_list(pool, p + len, sec, echo);
		return p[len] == '\0' ? 0 : -1;
	}
	return -1;
}

int imap_section_parse(pool_t pool, const char *spec, bool binary,
		       struct imap_section *sec_r, const char **echo_r)
{
	const char *p = spec;
	buffer_t echo;
	int ret = 0;

	memset(sec_r, 0, sizeof(*sec_r));
	sec_r->binary = binary;
	/* section-part: nz-number *("." nz-number); a zero is accepted and
	   names no part, as in Dovecot */
	while (*p >= '0' && *p <= '9') {
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p != '.' || p[1] < '0' || p[1] > '9')
			break;
		p++;
	}
	sec_r->part = p_strndup(pool, spec, (size_t)(p - spec));
	buffer_init(&echo, strlen(spec) * 2 + 16);
	if (buffer_append_str(&echo, sec_r->part) < 0)
		ret = -1;
	else if (*p == '\0')
		ret = 0;
	else if (binary)
		ret = -1;
	else if (p != spec && (*p != '.' || buffer_append_c(&echo, '.') < 0))
		ret = -1;
	else
		ret = parse_section_text(pool, p == spec ? p : p + 1,
					 p != spec, sec_r, &echo);
	if (ret == 0)
		*echo_r = p_strdup(pool, echo.data);
	buffer_free(&echo);
	return ret;
}

bool imap_section_needs_structure(const struct imap_section *sec)
{
	return sec->binary || sec->part[0] != '\0' ||
		sec->text != IMAP_SECTION_BODY;
}

bool imap_section_header_only(const struct imap_section *sec)
{
	return !sec->binary && sec->part[0] == '\0' &&
		sec->text != IMAP_SECTION_BODY &&
		sec->text != IMAP_SECTION_MIME;
}

/* ---- message structure ---- */

void imap_msg_structure_clear(struct imap_msg_structure *ms)
{
	if (ms->pool != NULL)
		pool_unref(&ms->pool);
	ms->root = NULL;
	ms->seq = 0;
	ms->header_only = false;
	if (ms->has_fd) {
		i_close_fd(&ms->fd);
		ms->has_fd = false;
	}
}

int imap_msg_structure_fd(const struct imap_msg_structure *ms, uint32_t seq)
{
	return ms->pool != NULL && ms->seq == seq && ms->has_fd ? ms->fd : -1;
}

/* box: read ahead for the FETCH (mailbox-read-ahead.h); NULL for a file
   another reader (a SEARCH) has read already. */
static int msg_structure_parse(struct imap_msg_structure *ms,
			       struct mailbox *box, int fd, bool header_only)
{
	struct message_parser *parser = message_parser_init(ms->pool, NULL);
	unsigned char buf[MSG_STRUCTURE_READ_SIZE];
	off_t ahead_len = header_only ? MSG_STRUCTURE_AHEAD_HEADER : 0;
	uint64_t pos = 0;
	ssize_t ret;

	for (;;) {
		if (box != NULL) {
			ret = mailbox_read_ahead_pread(box, &ms->read_ahead,
						       ms->seq, fd, buf,
						       sizeof(buf), pos,
						       ahead_len);
		} else {
			ret = pread(fd, buf, sizeof(buf), (off_t)pos);
			if (ret < 0 && errno == EINTR)
				continue;
		}
		if (ret <= 0)
			break;
		message_parser_feed(parser, buf, (size_t)ret);
		pos += (uint64_t)ret;
		imap_fetch_counters.parse_bytes += (uint64_t)ret;
		if (header_only && message_parser_root_header_done(parser))
			break;
	}
	ms->root = message_parser_finish(&parser);
	ms->header_only = header_only;
	return ret < 0 ? -1 : 0;
}

static int msg_parse(struct imap_msg_structure *ms, struct mailbox *box,
		     uint32_t seq, bool header_only, const char **error_r)
{
	imap_msg_structure_clear(ms);
	int fd = imap_fetch_msg_open(box, seq, error_r);
	if (fd == -1)
		return -1;
	ms->pool = pool_create("fetch structure", MSG_STRUCTURE_POOL_SIZE);
	ms->seq = seq;
	int ret = msg_structure_parse(ms, box, fd, header_only);
	if (ret < 0) {
		*error_r = "read() of the message failed";
		imap_msg_structure_clear(ms);
		i_close_fd(&fd);
		return -1;
	}
	ms->fd = fd;
	ms->has_fd = true;
	return 0;
}

int imap_msg_header_parse_fd(struct imap_msg_structure *ms, uint32_t seq,
			      int fd)
{
	imap_msg_structure_clear(ms);
	ms->pool = pool_create("fetch structure", MSG_STRUCTURE_POOL_SIZE);
	ms->seq = seq;
	if (msg_structure_parse(ms, NULL, fd, true) < 0) {
		imap_msg_structure_clear(ms);
		return -1;
	}
	return 0;
}

int imap_msg_structure_get(struct imap_msg_structure *ms,
			   struct mailbox *box, uint32_t seq,
			   const char **error_r)
{
	if (ms->pool != NULL && ms->seq == seq && !ms->header_only)
		return 0;
	return msg_parse(ms, box, seq, false, error_r);
}

int imap_msg_header_get(struct imap_msg_structure *ms,
			struct mailbox *box, uint32_t seq,
			const char **error_r)
{
	if (ms->pool != NULL && ms->seq == seq)
		return 0;
	return msg_parse(ms, box, seq, true, error_r);
}

/* ---- where a section is ---- */

/* BINARY: how to undo the part's Content-Transfer-Encoding. Returns 0,
   or -1 for an encoding that RFC 3516 says to refuse. */
static int cte_filter(const struct message_part *part,
		      enum imap_body_filter *filter_r)
{
	const char *cte = part->fields[MPF_CONTENT_TRANSFER_ENCODING];
	struct mime_value value;
	pool_t pool;
	int ret = 0;

	*filter_r = IMAP_BODY_FILTER_NONE;
	/* A multipart is not decoded (RFC 2045 6.4 allows it no encoding;
	   its parts are what the client decodes). A message/rfc822 is: RFC
	   2046 5.2.1 forbids encoding it too, but when it was encoded,
	   BINARY is the only way to the encapsulated message. */
	if (cte == NULL || (part->flags & MESSAGE_PART_FLAG_IS_MIME) == 0 ||
	    (part->flags & MESSAGE_PART_FLAG_MULTIPART) != 0)
		return 0;
	/* the mechanism is the value's first token: "quoted-printable;"
	   is still quoted-printable (as Dovecot decodes it), though
	   BODYSTRUCTURE reports only a lone token */
	pool = pool_create("cte", 1024);
	rfc2231_parse(pool, cte, false, &value);
	const char *mech = value.value;
	if (!value.value_valid || strcasecmp(mech, "7bit") == 0 ||
	    strcasecmp(mech, "8bit") == 0 || strcasecmp(mech, "binary") == 0)
		*filter_r = IMAP_BODY_FILTER_NONE;
	else if (strcasecmp(mech, "base64") == 0)
		*filter_r = IMAP_BODY_FILTER_BASE64;
	else if (strcasecmp(mech, "quoted-printable") == 0)
		*filter_r = IMAP_BODY_FILTER_QP;
	else
		ret = -1;
	pool_unref(&pool);
	return ret;
}

void imap_body_source_header(const struct message_size *hdr,
			     const struct imap_section *sec,
			     uint64_t msg_vsize, struct imap_body_source *src_r)
{
	i_assert(imap_section_header_only(sec));
	memset(src_r, 0, sizeof(*src_r));
	src_r->found = true;
	if (sec->text == IMAP_SECTION_TEXT) {
		src_r->phys_pos = hdr->physical;
		src_r->virt_size = msg_vsize > hdr->virtual ?
			msg_vsize - hdr->virtual : 0;
		return;
	}
	src_r->virt_size = hdr->virtual;
	if (sec->text == IMAP_SECTION_HEADER_FIELDS)
		src_r->filter = IMAP_BODY_FILTER_HEADER_FIELDS;
	else if (sec->text == IMAP_SECTION_HEADER_FIELDS_NOT)
		src_r->filter = IMAP_BODY_FILTER_HEADER_FIELDS_NOT;
}

static enum message_section_kind section_kind(const struct imap_section *sec)
{
	switch (sec->text) {
	case IMAP_SECTION_BODY:
		return sec->part[0] == '\0' ? MESSAGE_SECTION_FULL :
			MESSAGE_SECTION_ALL;
	case IMAP_SECTION_HEADER:
	case IMAP_SECTION_HEADER_FIELDS:
	case IMAP_SECTION_HEADER_FIELDS_NOT:
		return MESSAGE_SECTION_HEADER;
	case IMAP_SECTION_TEXT:
		return MESSAGE_SECTION_TEXT;
	case IMAP_SECTION_MIME:
		return MESSAGE_SECTION_MIME;
	}
	i_unreached();
}

int imap_body_source_get(const struct message_part *root,
			 const struct imap_section *sec, uint64_t msg_vsize,
			 struct imap_body_source *src_r)
{
	struct message_section_range range;

	memset(src_r, 0, sizeof(*src_r));
	if (root == NULL) {
		/* BODY[]: the whole file */
		src_r->found = true;
		src_r->virt_size = msg_vsize;
		return 0;
	}
	struct message_part *part =
		message_part_find_section((struct message_part *)root,
					  sec->part);
	if (part == NULL ||
	    message_section_get_range((struct message_part *)root, sec->part,
				      section_kind(sec), &range) < 0)
		return 0;   /* no such section: empty, as Dovecot answers */
	if (sec->binary && sec->part[0] != '\0' &&
	    cte_filter(part, &src_r->filter) < 0)
		return -1;
	if (sec->text == IMAP_SECTION_HEADER_FIELDS)
		src_r->filter = IMAP_BODY_FILTER_HEADER_FIELDS;
	else if (sec->text == IMAP_SECTION_HEADER_FIELDS_NOT)
		src_r->filter = IMAP_BODY_FILTER_HEADER_FIELDS_NOT;
	src_r->found = true;
	src_r->phys_pos = range.physical_pos;
	src_r->virt_size = range.virtual_size;
	return 0;
}
