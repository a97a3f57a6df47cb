/* IMAP ENVELOPE and IMAP string quoting. */
#include "lib.h"
#include "imap-envelope.h"
#include "message-address.h"
#include "message-parser.h"

static void out_append(buffer_t *out, const void *data, size_t size)
{
	buffer_append_trunc(out, data, size);
}

static void out_str(buffer_t *out, const char *str)
{
	out_append(out, str, strlen(str));
}

static void append_literal(buffer_t *out, const char *data, size_t size)
{
	char hdr[32];
	int n = snprintf(hdr, sizeof(hdr), "{%zu}\r\n", size);

	out_append(out, hdr, (size_t)n);
	out_append(out, data, size);
}

/* More '"' and '\' than this to escape: a literal reads better (and it
   is where Dovecot switches too). */
#define QUOTED_MAX_ESCAPES 4

static bool needs_literal(const char *str, size_t len)
{
	unsigned int escapes = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];
		if (c == '\r' || c == '\n' || c >= 0x80)
			return true;
		if ((c == '"' || c == '\\') && ++escapes > QUOTED_MAX_ESCAPES)
			return true;
	}
	return false;
}

static void append_string_len(buffer_t *out, const char *str, size_t len)
{
	if (needs_literal(str, len)) {
		append_literal(out, str, len);
		return;
	}
	out_append(out, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		if (str[i] == '"' || str[i] == '\\')
			out_append(out, "\\", 1);
		out_append(out, &str[i], 1);
	}
	out_append(out, "\"", 1);
}

void imap_envelope_append_nstring(buffer_t *out, const char *str)
{
	if (str == NULL)
		out_str(out, "NIL");
	else
		append_string_len(out, str, strlen(str));
}

void imap_envelope_append_nstring_nolf(buffer_t *out, const char *str)
{
	if (str == NULL || strpbrk(str, "\r\n") == NULL) {
		imap_envelope_append_nstring(out, str);
		return;
	}
	bool literal = false;
	buffer_t tmp;
	buffer_init(&tmp, strlen(str));
	for (; *str != '\0'; str++) {
		/* an LF is a fold, a CR left in a value a bare one: both read
		   as a space, which the white space after them already is
		   (as Dovecot unfolds) */
		if (*str != '\r' && *str != '\n')
			buffer_append_trunc(&tmp, str, 1);
		else if (str[1] != ' ' && str[1] != '\t' && str[1] != '\r' &&
			 str[1] != '\n' && str[1] != '\0')
			buffer_append_trunc(&tmp, " ", 1);
	}
	if (literal)
		append_literal(out, tmp.data, tmp.used);
	else
		append_string_len(out, tmp.data, tmp.used);
	buffer_free(&tmp);
}

static bool is_lwsp(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void imap_append_string_for_humans(buffer_t *out, const char *str)
{
	size_t len;
	bool change = false;
	buffer_t tmp;

	if (str == NULL) {
		out_str(out, "NIL");
		return;
	}
	len = strlen(str);
	buffer_init(&tmp, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];
		if (is_lwsp(str[i])) {
			/* a run of whitespace: one space unless at an end */
			size_t start = i;
			while (i + 1 < len && is_lwsp(str[i + 1]))
				i++;
			if (start > 0 && i + 1 < len)
				buffer_append_trunc(&tmp, " ", 1);
			if (c != ' ' || i > start || start == 0 || i + 1 == len)
				change = true;
			continue;
		}
		if (c == '"' || c == '\\' || c >= 0x80)
			change = true;
		buffer_append_trunc(&tmp, &str[i], 1);
	}
	if (!change)
		append_string_len(out, tmp.data, tmp.used);
	else if (tmp.used == 0)
		out_str(out, "\"\"");
	else
		append_literal(out, tmp.data, tmp.used);
	buffer_free(&tmp);
}

static void write_address(buffer_t *out, const struct message_address *a)
{
	out_append(out, "(", 1);
	imap_append_string_for_humans(out, a->name);
	out_append(out, " ", 1);
	imap_envelope_append_nstring(out, a->route);
	out_append(out, " ", 1);
	imap_envelope_append_nstring(out, a->mailbox);
	out_append(out, " ", 1);
	imap_envelope_append_nstring(out, a->domain);
	out_append(out, ")", 1);
}

/* value may hold several headers' values (MESSAGE_PART_FIELD_SEP):
   each is parsed on its own and the lists are joined. */
static void write_address_list(pool_t pool, buffer_t *out, const char *value)
{
	bool any = false;

	while (value != NULL) {
		const char *sep = strchr(value, MESSAGE_PART_FIELD_SEP);
		size_t len = sep != NULL ? (size_t)(sep - value) : strlen(value);
		struct message_address *addr =
			message_address_parse(pool, value, len);
		for (; addr != NULL; addr = addr->next) {
			out_append(out, any ? "" : "(", any ? 0 : 1);
			write_address(out, addr);
			any = true;
		}
		value = sep != NULL ? sep + 1 : NULL;
	}
	out_str(out, any ? ")" : "NIL");
}

static bool address_list_has_any(pool_t pool, const char *value)
{
	while (value != NULL) {
		const char *sep = strchr(value, MESSAGE_PART_FIELD_SEP);
		size_t len = sep != NULL ? (size_t)(sep - value) : strlen(value);
		if (message_address_parse(pool, value, len) != NULL)
			return true;
		value = sep != NULL ? sep + 1 : NULL;
	}
	return false;
}

void imap_envelope_write(pool_t pool, const struct message_part *msg,
			 buffer_t *out)
{
	const char *const *f = msg->fields;
	const char *sender = f[MPF_SENDER], *reply_to = f[MPF_REPLY_TO];

	/* RFC 3501: sender and reply-to default to from; so does one
	   that holds no address at all ("Sender: " with nothing after) */
	if (!address_list_has_any(pool, sender))
		sender = f[MPF_FROM];
	if (!address_list_has_any(pool, reply_to))
		reply_to = f[MPF_FROM];
	out_append(out, "(", 1);
	imap_envelope_append_nstring_nolf(out, f[MPF_DATE]);
	out_append(out, " ", 1);
	imap_append_string_for_humans(out, f[MPF_SUBJECT]);
	out_append(out, " ", 1);
	write_address_list(pool, out, f[MPF_FROM]);
	out_append(out, " ", 1);
	write_address_list(pool, out, sender);
	out_append(out, " ", 1);
	write_address_list(pool, out, reply_to);
	out_append(out, " ", 1);
	write_address_list(pool, out, f[MPF_TO]);
	out_append(out, " ", 1);
	write_address_list(pool, out, f[MPF_CC]);
	out_append(out, " ", 1);
	write_address_list(pool, out, f[MPF_BCC]);
	out_append(out, " ", 1);
	imap_envelope_append_nstring_nolf(out, f[MPF_IN_REPLY_TO]);
	out_append(out, " ", 1);
	imap_envelope_append_nstring_nolf(out, f[MPF_MESSAGE_ID]);
	out_append(out, ")", 1);
}
