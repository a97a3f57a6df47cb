/* IMAP BODY / BODYSTRUCTURE strings. */
#include "lib.h"
#include "imap-bodystructure.h"
#include "imap-envelope.h"
#include "message-parser.h"
#include "rfc2231.h"

#include <strings.h>

/* Languages listed per part at most (Content-Language: a, b, ...). */
#define BODYSTRUCTURE_MAX_LANGUAGES 64

/* RFC 3501 requires one body part in a multipart: a multipart without
   any gets an empty text/plain (what Dovecot shows too). */
#define EMPTY_TEXT_PART_BASE \
	"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0"
#define EMPTY_TEXT_PART EMPTY_TEXT_PART_BASE ")"
#define EMPTY_TEXT_PART_EXT EMPTY_TEXT_PART_BASE " NIL NIL NIL NIL)"
#define EMPTY_ENVELOPE "(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)"

static void out_str(buffer_t *out, const char *str)
{
	buffer_append_trunc(out, str, strlen(str));
}

static void write_params(buffer_t *out, const struct mime_value *v)
{
	if (v == NULL || v->params_count == 0) {
		out_str(out, "NIL");
		return;
	}
	out_str(out, "(");
	for (unsigned int i = 0; i < v->params_count; i++) {
		if (i > 0)
			out_str(out, " ");
		imap_envelope_append_nstring(out, v->params[i].name);
		out_str(out, " ");
		imap_envelope_append_nstring(out, v->params[i].value);
	}
	out_str(out, ")");
}

static void write_disposition(pool_t pool, buffer_t *out, const char *value)
{
	struct mime_value v;

	if (value == NULL) {
		out_str(out, "NIL");
		return;
	}
	/* present but broken still shows, with an empty type */
	rfc2231_parse(pool, value, false, &v);
	out_str(out, "(");
	imap_envelope_append_nstring(out, v.value);
	out_str(out, " ");
	write_params(out, &v);
	out_str(out, ")");
}

/* Content-Language: 1#Language-Tag (RFC 3282), written as a list. */
static void write_language(buffer_t *out, const char *value)
{
	const char *langs[BODYSTRUCTURE_MAX_LANGUAGES];
	size_t lens[BODYSTRUCTURE_MAX_LANGUAGES];
	unsigned int count = 0;
	const char *p = value;

	while (p != NULL && *p != '\0' && count < N_ELEMENTS(langs)) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ',')
			p++;
		const char *start = p;
		while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t' &&
		       *p != '\n' && *p != '\r')
			p++;
		if (p > start) {
			langs[count] = start;
			lens[count++] = (size_t)(p - start);
		}
		/* a bare CR ends the list (what follows it is another
		   line's text: Dovecot stops there too) */
		if (*p == '\r')
			break;
	}
	if (count == 0) {
		out_str(out, "NIL");
		return;
	}
	out_str(out, "(");
	for (unsigned int i = 0; i < count; i++) {
		char tmp[256];
		size_t len = MIN(lens[i], sizeof(tmp) - 1);
		memcpy(tmp, langs[i], len);
		tmp[len] = '\0';
		if (i > 0)
			out_str(out, " ");
		imap_envelope_append_nstring(out, tmp);
	}
	out_str(out, ")");
}

static void write_ext_common(pool_t pool, const struct message_part *part,
			     buffer_t *out)
{
	out_str(out, " ");
	write_disposition(pool, out, part->fields[MPF_CONTENT_DISPOSITION]);
	out_str(out, " ");
	write_language(out, part->fields[MPF_CONTENT_LANGUAGE]);
	out_str(out, " ");
	imap_envelope_append_nstring_nolf(out, part->fields[MPF_CONTENT_LOCATION]);
}

/* The part's Content-Type, or NULL when it has none usable. */
static bool part_content_type(pool_t pool, const struct message_part *part,
			      struct mime_value *ct_r)
{
	const char *value = part->fields[MPF_CONTENT_TYPE];

	if (value == NULL)
		return false;
	rfc2231_parse(pool, value, true, ct_r);
	return ct_r->value_valid;
}

static void write_part(pool_t pool, const struct message_part *part,
		       buffer_t *out, bool extended);

static void write_multipart(pool_t pool, const struct message_part *part,
			    buffer_t *out, bool extended)
{
	struct mime_value ct;
	bool have_ct = part_content_type(pool, part, &ct);

	out_str(out, "(");
	for (const struct message_part *c = part->children; c != NULL;
	     c = c->next)
		write_part(pool, c, out, extended);
	if (part->children == NULL) {
		out_str(out, extended ? EMPTY_TEXT_PART_EXT : EMPTY_TEXT_PART);
	}
	out_str(out, " ");
	imap_envelope_append_nstring(out, part->subtype);
	if (extended) {
		out_str(out, " ");
		write_params(out, have_ct ? &ct : NULL);
		write_ext_common(pool, part, out);
	}
	out_str(out, ")");
}

/* Text parts always get a charset (RFC 2045 5.2: us-ascii default). */
static void write_single_params(buffer_t *out, const struct message_part *part,
				const struct mime_value *ct)
{
	bool text = (part->flags & MESSAGE_PART_FLAG_TEXT) != 0;
	bool have_charset = false;

	if (ct != NULL) {
		for (unsigned int i = 0; i < ct->params_count; i++) {
			if (strcasecmp(ct->params[i].name, "charset") == 0)
				have_charset = true;
		}
	}
	if (!text || have_charset) {
		write_params(out, ct);
		return;
	}
	if (ct == NULL || ct->params_count == 0) {
		out_str(out, "(\"charset\" \"us-ascii\")");
		return;
	}
	write_params(out, ct);
	buffer_truncate(out, out->used - 1);
	out_str(out, " \"charset\" \"us-ascii\")");
}

static void write_number(buffer_t *out, uint64_t n)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)n);
	out_str(out, tmp);
}

static bool part_is_default_text(const struct message_part *part,
				 const struct mime_value *ct, const char *enc)
{
	static const enum message_part_field others[] = {
		MPF_CONTENT_ID, MPF_CONTENT_DESCRIPTION, MPF_CONTENT_MD5,
		MPF_CONTENT_DISPOSITION, MPF_CONTENT_LANGUAGE,
		MPF_CONTENT_LOCATION,
	};

	/* Only a message's top part: Dovecot keeps the case elsewhere. */
	if (part->parent != NULL)
		return false;
	if (strcasecmp(part->type, "text") != 0 ||
	    strcasecmp(part->subtype, "plain") != 0 ||
	    strcasecmp(enc, "7bit") != 0)
		return false;
	if (ct != NULL && ct->params_count > 0 && (ct->params_count != 1 ||
			   strcasecmp(ct->params[0].name, "charset") != 0 ||
			   strcasecmp(ct->params[0].value, "us-ascii") != 0))
		return false;
	for (unsigned int i = 0; i < N_ELEMENTS(others); i++) {
		if (part->fields[others[i]] != NULL)
			return false;
	}
	return true;
}

static void write_single(pool_t pool, const struct message_part *part,
			 buffer_t *out, bool extended)
{
	struct mime_value ct, cte;
	bool have_ct = part_content_type(pool, part, &ct);
	const char *enc = "7bit";

	if (part->fields[MPF_CONTENT_TRANSFER_ENCODING] != NULL) {
		rfc2231_parse(pool, part->fields[MPF_CONTENT_TRANSFER_ENCODING],
			      false, &cte);
		/* a single token and nothing else, or the default */
		if (cte.value_valid && !cte.trailing_garbage &&
		    strchr(part->fields[MPF_CONTENT_TRANSFER_ENCODING],
			   ';') == NULL)
			enc = cte.value;
	}
	if (part_is_default_text(part, have_ct ? &ct : NULL, enc)) {
		/* Dovecot writes plain text/plain; charset=us-ascii 7bit in
		   its canonical lowercase form whatever the case used. */
		out_str(out, EMPTY_TEXT_PART_BASE);
		buffer_truncate(out, out->used - 3);  /* "0 0" */
		write_number(out, part->body_size.virtual);
		out_str(out, " ");
		write_number(out, part->body_size.lines);
		out_str(out, extended ? " NIL NIL NIL NIL)" : ")");
		return;
	}
	out_str(out, "(");
	if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0) {
		out_str(out, "\"message\" \"rfc822\"");
	} else {
		imap_envelope_append_nstring(out, part->type);
		out_str(out, " ");
		imap_envelope_append_nstring(out, part->subtype);
	}
	out_str(out, " ");
	write_single_params(out, part, have_ct ? &ct : NULL);
	out_str(out, " ");
	imap_envelope_append_nstring_nolf(out, part->fields[MPF_CONTENT_ID]);
	out_str(out, " ");
	imap_envelope_append_nstring_nolf(out, part->fields[MPF_CONTENT_DESCRIPTION]);
	out_str(out, " ");
	imap_envelope_append_nstring(out, enc);
	out_str(out, " ");
	write_number(out, part->body_size.virtual);
	if ((part->flags & MESSAGE_PART_FLAG_TEXT) != 0) {
		out_str(out, " ");
		write_number(out, part->body_size.lines);
	} else if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0) {
		/* body-type-msg needs an envelope and a body: a message that
		   was not parsed (no body at all, or past the nesting
		   limits) is an empty one, as Dovecot writes it */
		out_str(out, " ");
		if (part->children != NULL) {
			imap_envelope_write(pool, part->children, out);
			out_str(out, " ");
			write_part(pool, part->children, out, extended);
		} else {
			out_str(out, EMPTY_ENVELOPE " ");
			out_str(out, extended ? EMPTY_TEXT_PART_EXT :
				EMPTY_TEXT_PART);
		}
		out_str(out, " ");
		write_number(out, part->body_size.lines);
	}
	if (extended) {
		out_str(out, " ");
		imap_envelope_append_nstring_nolf(out, part->fields[MPF_CONTENT_MD5]);
		write_ext_common(pool, part, out);
	}
	out_str(out, ")");
}

static void write_part(pool_t pool, const struct message_part *part,
		       buffer_t *out, bool extended)
{
	if ((part->flags & MESSAGE_PART_FLAG_MULTIPART) != 0)
		write_multipart(pool, part, out, extended);
	else
		write_single(pool, part, out, extended);
}

void imap_bodystructure_write(pool_t pool, const struct message_part *part,
			      buffer_t *out, bool extended)
{
	write_part(pool, part, out, extended);
}
