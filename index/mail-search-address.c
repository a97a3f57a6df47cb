/* The address form of From/To/Cc/Bcc for SEARCH FROM, TO, CC and BCC
   (mail-search-private.h). RFC 3501/9051 match these keys against the
   ENVELOPE's address structure, so the header is parsed as the ENVELOPE
   parses it (mime/message-address.c: comments and folding whitespace
   inside an addr-spec dropped, obsolete "john . doe @ example . com"
   joined) and written out plainly, as Dovecot writes it for its match:

     Name <local@domain>, other@domain, group: member@domain;

   with display names RFC 2047-decoded and quoted-strings unquoted, so
   "John (the man) Doe <john (x) @ (y) example.com>" gives
   "John Doe <john@example.com>". The caller also matches the header
   text itself (what a client sees there). The placeholders the parser
   puts in for missing pieces (MISSING_DOMAIN...) are not in the text:
   they are not in the message. */
#include "lib.h"
#include "buffer.h"
#include "mail-search-private.h"
#include "message-address.h"
#include "message-header.h"
#include "rfc2047.h"

#include <string.h>

static bool is_placeholder(const char *s)
{
	return s == NULL || strcmp(s, MESSAGE_ADDRESS_MISSING_MAILBOX) == 0 ||
		strcmp(s, MESSAGE_ADDRESS_MISSING_DOMAIN) == 0 ||
		strcmp(s, MESSAGE_ADDRESS_SYNTAX_ERROR) == 0;
}

/* Appends, cutting what does not fit (out is bounded; a cut text only
   finds fewer matches). */
static void put(buffer_t *out, const char *s)
{
	buffer_append_trunc(out, s, strlen(s));
}

/* route:mailbox@domain, without what is missing */
static void put_spec(buffer_t *out, const struct message_address *addr)
{
	bool mailbox = !is_placeholder(addr->mailbox);
	bool domain = !is_placeholder(addr->domain);

	if (addr->route != NULL) {
		put(out, addr->route);
		put(out, ":");
	}
	if (mailbox)
		put(out, addr->mailbox);
	if (mailbox && domain)
		put(out, "@");
	if (domain)
		put(out, addr->domain);
}

static void put_address(pool_t pool, buffer_t *out,
			const struct message_address *addr)
{
	const char *name = addr->name == NULL ? "" :
		rfc2047_decode(pool, addr->name, strlen(addr->name));
	bool spec = addr->route != NULL || !is_placeholder(addr->mailbox) ||
		!is_placeholder(addr->domain);

	put(out, name);
	if (!spec)
		return;
	bool brackets = *name != '\0' || addr->route != NULL;
	if (*name != '\0')
		put(out, " ");
	if (brackets)
		put(out, "<");
	put_spec(out, addr);
	if (brackets)
		put(out, ">");
}

const char *mail_search_address_text(pool_t pool, const char *value,
				     size_t len, size_t *len_r)
{
	const struct message_address *addr;
	buffer_t out;
	bool sep = false;   /* ", " before the next address */

	buffer_init(&out, MAIL_SEARCH_ADDRESS_TEXT_MAX);
	addr = message_address_parse(pool, value, len);
	for (; addr != NULL; addr = addr->next) {
		if (addr->mailbox == NULL && addr->domain == NULL) {
			put(&out, ";");   /* a group's end */
			sep = true;
			continue;
		}
		if (sep)
			put(&out, ", ");
		if (addr->domain == NULL) {
			/* a group's start: its name */
			put(&out, addr->mailbox);
			put(&out, ": ");
			sep = false;
			continue;
		}
		put_address(pool, &out, addr);
		sep = true;
	}
	*len_r = out.used;
	const char *text = p_strndup(pool, out.data, out.used);
	buffer_free(&out);
	return text;
}
