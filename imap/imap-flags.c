/* Flags and keywords in IMAP syntax (imap-flags.h). */
#include "imap-common.h"
#include "imap-flags.h"
#include "imap-sync.h"

#include <strings.h>

#define MAILBOX_KEYWORDS_ALL ((1U << MAILBOX_KEYWORDS_MAX) - 1)

static const struct {
	const char *name;
	enum mail_flags flag;
} imap_system_flags[] = {
	{ "\\Answered", MAIL_ANSWERED },
	{ "\\Flagged", MAIL_FLAGGED },
	{ "\\Deleted", MAIL_DELETED },
	{ "\\Seen", MAIL_SEEN },
	{ "\\Draft", MAIL_DRAFT },
};

static int flag_list_add(const char *atom, struct imap_flag_list *list,
			 const char **error_r)
{
	if (atom[0] == '\\') {
		for (unsigned int i = 0; i < N_ELEMENTS(imap_system_flags); i++) {
			if (strcasecmp(atom, imap_system_flags[i].name) == 0) {
				list->flags |= imap_system_flags[i].flag;
				return 0;
			}
		}
		*error_r = strcasecmp(atom, "\\Recent") == 0 ?
			"\\Recent flag can't be changed." :
			"Invalid system flag.";
		return -1;
	}
	if (!mailbox_keyword_is_valid(atom)) {
		*error_r = "Invalid keyword.";
		return -1;
	}
	for (unsigned int i = 0; i < list->keyword_count; i++) {
		if (strcasecmp(list->keywords[i], atom) == 0)
			return 0;
	}
	if (list->keyword_count == MAILBOX_KEYWORDS_MAX) {
		list->too_many_keywords = true;
		return 0;
	}
	list->keywords[list->keyword_count++] = atom;
	return 0;
}

int imap_flag_list_parse(const struct imap_arg *args, bool allow_bare,
			 struct imap_flag_list *list_r, const char **error_r)
{
	const struct imap_arg *items = args;
	unsigned int count;
	const char *atom;

	memset(list_r, 0, sizeof(*list_r));
	if (imap_arg_get_list(args, &items, &count)) {
		if (!imap_arg_is_eol(&args[1]) && allow_bare) {
			*error_r = "Unexpected arguments after the flag list.";
			return -1;
		}
	} else if (!allow_bare || imap_arg_is_eol(args)) {
		*error_r = "Invalid flag list.";
		return -1;
	}
	for (; !imap_arg_is_eol(items); items++) {
		/* NIL is an atom here: flag-keyword = atom, and the keyword
		   "NIL" is as valid as any other (RFC 3501 9). */
		if ((items->type != IMAP_ARG_ATOM &&
		     items->type != IMAP_ARG_NIL) ||
		    !imap_arg_get_atom(items, &atom)) {
			*error_r = "Invalid flag list.";
			return -1;
		}
		if (flag_list_add(atom, list_r, error_r) < 0)
			return -1;
	}
	return 0;
}

int imap_flag_list_keywords(struct mailbox *box,
			    const struct imap_flag_list *list, bool create,
			    uint32_t *keywords_r, const char **error_r)
{
	uint32_t keywords = 0;

	if (list->too_many_keywords && create)
		return 0;
	for (unsigned int i = 0; i < list->keyword_count; i++) {
		unsigned int idx;
		int ret = mailbox_keyword_get(box, list->keywords[i], create,
					      &idx, error_r);
		if (ret < 0)
			return -1;
		if (ret == 0 && create)
			return 0;
		if (ret > 0)
			keywords |= 1U << idx;
	}
	*keywords_r = keywords;
	return 1;
}

static int write_keyword_names(buffer_t *buf, struct mailbox *box,
			       uint32_t keywords, bool first)
{
	for (unsigned int i = 0; i < MAILBOX_KEYWORDS_MAX; i++) {
		const char *name = (keywords & (1U << i)) == 0 ? NULL :
			mailbox_keyword_name(box, i);
		if (name == NULL)
			continue;   /* a letter without a name is not shown */
		if ((!first && buffer_append_c(buf, ' ') < 0) ||
		    buffer_append_str(buf, name) < 0)
			return -1;
		first = false;
	}
	return 0;
}

int imap_write_msg_flags(buffer_t *buf, struct mailbox *box, uint32_t seq,
			 bool recent)
{
	enum mail_flags flags = mailbox_msg_flags(box, seq);

	if (!recent)
		flags &= ~MAIL_RECENT;
	uint32_t keywords = mailbox_msg_keywords(box, seq);

	if (keywords == 0)
		return imap_write_flags(buf, flags);
	if (imap_write_flags(buf, flags) < 0)
		return -1;
	/* reopen the list: drop the ')' just written */
	buffer_truncate(buf, buf->used - 1);
	if (write_keyword_names(buf, box, keywords, flags == 0) < 0)
		return -1;
	return buffer_append_c(buf, ')');
}

void imap_send_flags_list(struct client *client)
{
	struct mailbox *box = client->mailbox;
	const char *error;
	buffer_t buf;

	if (mailbox_keywords_refresh(box, &error) < 0)
		i_error("Reading keywords of %s failed: %s",
			mailbox_get_name(box), error);
	uint32_t defined = mailbox_keywords_defined(box);

	buffer_init(&buf, IMAP_FLAGS_STR_MAX + 64);
	if (buffer_append_str(&buf, "* FLAGS (\\Answered \\Flagged \\Deleted "
			      "\\Seen \\Draft") < 0 ||
	    write_keyword_names(&buf, box, defined, false) < 0 ||
	    buffer_append_c(&buf, ')') < 0)
		i_unreached();
	client_send_line(client, buf.data);
	buffer_reset(&buf);
	if (mailbox_is_readonly(box)) {
		client_send_line(client, "* OK [PERMANENTFLAGS ()] "
				 "No permanent flags permitted");
	} else if (buffer_append_str(&buf, "* OK [PERMANENTFLAGS (\\Answered "
			"\\Flagged \\Deleted \\Seen \\Draft") < 0 ||
		   write_keyword_names(&buf, box, defined, false) < 0 ||
		   /* \* only while a new keyword can still be defined */
		   (defined != MAILBOX_KEYWORDS_ALL &&
		    buffer_append_str(&buf, " \\*") < 0) ||
		   buffer_append_str(&buf, ")] Flags permitted.") < 0) {
		i_unreached();
	} else {
		client_send_line(client, buf.data);
	}
	buffer_free(&buf);
	client->keywords_sent = defined;
}

void imap_sync_keywords(struct client *client)
{
	const char *error;

	if (client->mailbox == NULL)
		return;
	if (mailbox_keywords_refresh(client->mailbox, &error) < 0) {
		i_error("Reading keywords of %s failed: %s",
			mailbox_get_name(client->mailbox), error);
		return;
	}
	if (mailbox_keywords_defined(client->mailbox) != client->keywords_sent)
		imap_send_flags_list(client);
}
