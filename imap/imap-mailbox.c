/* Mailbox names on the wire (imap-mailbox.h). */
#include "imap-common.h"
#include "imap-mailbox.h"

#include <strings.h>

/* The wire form to UTF-8: as it is in UTF-8 mode (client_utf8_names();
   checked by mailbox_name_normalize() later), else decoded from
   modified UTF-7. */
static int wire_to_utf8(const struct client *client, const char *wire,
			buffer_t *dest)
{
	if (!client_utf8_names(client))
		return mailbox_name_mutf7_to_utf8(wire, dest);
	return buffer_append_str(dest, wire);
}

bool imap_mailbox_name_decode(const struct client *client, const char *wire,
			      char name_r[MAILBOX_NAME_MAX + 1])
{
	const char *error;
	buffer_t buf;
	bool ret;

	if (strlen(wire) > MAILBOX_NAME_WIRE_MAX)
		return false;
	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	ret = wire_to_utf8(client, wire, &buf) == 0 &&
		mailbox_name_normalize(buf.data, name_r, &error) ==
		MAILBOX_NAME_OK;
	buffer_free(&buf);
	return ret;
}

bool imap_mailbox_name_get(struct client_command *cmd, const char *wire,
			   char name_r[MAILBOX_NAME_MAX + 1])
{
	const char *error;
	buffer_t buf;

	if (strlen(wire) > MAILBOX_NAME_WIRE_MAX) {
		client_send_tagline(cmd, "NO [LIMIT] Mailbox name is too long");
		return false;
	}
	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	if (wire_to_utf8(cmd->client, wire, &buf) < 0) {
		buffer_free(&buf);
		client_send_tagline(cmd, "NO [CANNOT] Mailbox name is not valid "
				    "modified UTF-7");
		return false;
	}
	enum mailbox_name_status st = mailbox_name_normalize(buf.data, name_r,
							     &error);
	buffer_free(&buf);
	if (st != MAILBOX_NAME_OK) {
		client_send_taglinef(cmd, "NO [%s] %s",
			st == MAILBOX_NAME_TOO_LONG ? "LIMIT" : "CANNOT", error);
		return false;
	}
	return true;
}

static bool wire_needs_quotes(const char *str)
{
	if (*str == '\0' || strcasecmp(str, "NIL") == 0)
		return true;
	for (; *str != '\0'; str++) {
		if (strchr("(){ %*\"\\]", *str) != NULL ||
		    (unsigned char)*str < 0x20 || (unsigned char)*str >= 0x7f)
			return true;
	}
	return false;
}

const char *imap_mailbox_name_to_wire(const struct client *client,
				      pool_t pool, const char *name)
{
	buffer_t buf;

	buffer_init(&buf, MAILBOX_NAME_WIRE_MAX);
	/* names come from mailbox-list (valid UTF-8): this can't fail.
	   In UTF-8 mode they go as they are: 8-bit bytes make a quoted
	   string, which RFC 6855 section 3 and RFC 9051 allow then. */
	if (client_utf8_names(client) ? buffer_append_str(&buf, name) < 0 :
	    mailbox_name_utf8_to_mutf7(name, &buf) < 0)
		i_panic("mailbox name not encodable: %s", name);
	if (!wire_needs_quotes(buf.data)) {
		const char *ret = p_strdup(pool, buf.data);
		buffer_free(&buf);
		return ret;
	}
	char *out = p_malloc(pool, buf.used * 2 + 3);
	char *p = out;
	*p++ = '"';
	for (size_t i = 0; i < buf.used; i++) {
		if (buf.data[i] == '"' || buf.data[i] == '\\')
			*p++ = '\\';
		*p++ = buf.data[i];
	}
	*p++ = '"';
	*p = '\0';
	buffer_free(&buf);
	return out;
}

void imap_mailbox_list_error(struct client_command *cmd,
			     enum mailbox_list_error code, const char *error)
{
	const char *resp = "CANNOT";

	switch (code) {
	case MAILBOX_LIST_ERR_NONE:
	case MAILBOX_LIST_ERR_INVALID:
	case MAILBOX_LIST_ERR_CANNOT:
		break;
	case MAILBOX_LIST_ERR_LIMIT:
		resp = "LIMIT";
		break;
	case MAILBOX_LIST_ERR_EXISTS:
		resp = "ALREADYEXISTS";
		break;
	case MAILBOX_LIST_ERR_NOTFOUND:
		resp = "NONEXISTENT";
		break;
	case MAILBOX_LIST_ERR_HASCHILDREN:
		resp = "HASCHILDREN";
		break;
	case MAILBOX_LIST_ERR_INTERNAL:
		/* logged by mailbox-list; the client gets no paths */
		client_send_tagline(cmd, "NO [SERVERBUG] Internal error occurred. "
				    "Refer to server log for more information.");
		return;
	}
	client_send_taglinef(cmd, "NO [%s] %s", resp, error);
}

enum mailbox_open_flags imap_mailbox_open_flags(struct client *client,
						bool readonly)
{
	enum mailbox_open_flags flags = MAILBOX_OPEN_QUOTA |
		(readonly ? MAILBOX_OPEN_READONLY : 0);

	if (client->user->set->mail_fsync == MOAT_FSYNC_NEVER)
		flags |= MAILBOX_OPEN_NO_FSYNC;
	return flags;
}

static bool name_affected(struct mailbox *box, const char *name,
			  bool children)
{
	const char *boxname = mailbox_get_name(box);

	return strcmp(boxname, name) == 0 ||
		(children && mailbox_name_is_child(boxname, name));
}

void imap_mailbox_release(struct client *client, const char *name,
			  bool children)
{
	if (client->append_box != NULL)
		mailbox_close(&client->append_box);
	if (client->mailbox != NULL &&
	    name_affected(client->mailbox, name, children)) {
		client_unselect(client);
		client_send_line(client, "* OK [CLOSED] Mailbox closed.");
	}
}

void imap_mailbox_specials_get(const struct moat_settings *set,
			       struct imap_mailbox_specials *specials_r)
{
	/* in the order of enum mailbox_special_use */
	const char *const names[MAILBOX_SPECIAL_COUNT] = {
		set->mailbox_drafts, set->mailbox_sent, set->mailbox_trash,
		set->mailbox_junk, set->mailbox_archive,
	};
	const char *error;

	memset(&specials_r->names, 0, sizeof(specials_r->names));
	for (unsigned int i = 0; i < MAILBOX_SPECIAL_COUNT; i++) {
		if (names[i][0] != '\0' &&
		    mailbox_name_normalize(names[i], specials_r->buf[i],
					   &error) == MAILBOX_NAME_OK)
			specials_r->names.name[i] = specials_r->buf[i];
	}
}

void imap_mailbox_autocreate(struct imap_user *user)
{
	struct imap_mailbox_specials specials;
	const char *error;

	if (user->specials_created)
		return;
	user->specials_created = true;
	imap_mailbox_specials_get(user->set, &specials);
	if (mailbox_list_autocreate(user->mail_root, &specials.names,
				    &error) < 0)
		i_error("Creating the default mailboxes failed: %s", error);
}
