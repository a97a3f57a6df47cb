/* STATUS data items (imap-status.h). */
#include "imap-common.h"
#include "imap-status.h"
#include "imap-mailbox.h"

#include <strings.h>

static const struct {
	const char *name;
	enum imap_status_items item;
} status_items[] = {
	{ "MESSAGES", IMAP_STATUS_MESSAGES },
	{ "UIDNEXT", IMAP_STATUS_UIDNEXT },
	{ "UIDVALIDITY", IMAP_STATUS_UIDVALIDITY },
	{ "UNSEEN", IMAP_STATUS_UNSEEN },
	{ "DELETED", IMAP_STATUS_DELETED },
	{ "SIZE", IMAP_STATUS_SIZE },
	{ "RECENT", IMAP_STATUS_RECENT },
	{ "APPENDLIMIT", IMAP_STATUS_APPENDLIMIT },
};

bool imap_status_parse_items(const struct imap_arg *arg,
			     enum imap_status_items *items_r)
{
	const struct imap_arg *list;
	unsigned int count, j;
	const char *atom;

	*items_r = 0;
	if (!imap_arg_get_list(arg, &list, &count) || count == 0)
		return false;
	for (unsigned int i = 0; i < count; i++) {
		if (!imap_arg_get_atom(&list[i], &atom))
			return false;
		for (j = 0; j < N_ELEMENTS(status_items); j++) {
			if (strcasecmp(atom, status_items[j].name) == 0)
				break;
		}
		if (j == N_ELEMENTS(status_items))
			return false;
		*items_r |= status_items[j].item;
	}
	return true;
}

struct status_counts {
	uint32_t unseen, deleted;
	uint64_t size;
};

static int status_count(struct mailbox *box, enum imap_status_items items,
			struct status_counts *counts)
{
	uint32_t count = mailbox_get_count(box);
	const char *error;

	memset(counts, 0, sizeof(*counts));
	for (uint32_t seq = 1; seq <= count; seq++) {
		if (mailbox_msg_is_expunged(box, seq))
			continue;
		enum mail_flags flags = mailbox_msg_flags(box, seq);
		if ((flags & MAIL_SEEN) == 0)
			counts->unseen++;
		if ((flags & MAIL_DELETED) != 0)
			counts->deleted++;
		uint64_t vsize;
		if ((items & IMAP_STATUS_SIZE) == 0)
			continue;
		if (mailbox_msg_vsize(box, seq, &vsize, &error) < 0) {
			if (errno == ENOENT)
				continue;   /* expunged meanwhile */
			i_error("STATUS: %s", error);
			return -1;
		}
		counts->size += vsize;
	}
	return 0;
}

static void status_send_line(struct client *client, struct mailbox *box,
			     const char *name, enum imap_status_items items,
			     const struct status_counts *counts)
{
	char line[CLIENT_REPLY_LINE_MAX];
	pool_t pool = pool_create("status", 1024);
	int len = snprintf(line, sizeof(line), "* STATUS %s (",
			   imap_mailbox_name_to_wire(pool, name));
	size_t pos = len < 0 ? 0 : MIN((size_t)len, sizeof(line) - 1);
	const char *sep = "";

#define STATUS_ADD(item, fmt, value) \
	if ((items & (item)) != 0 && pos < sizeof(line)) { \
		len = snprintf(line + pos, sizeof(line) - pos, "%s" fmt, sep, value); \
		pos += len < 0 ? 0 : (size_t)len; \
		sep = " "; \
	}
	STATUS_ADD(IMAP_STATUS_MESSAGES, "MESSAGES %u", mailbox_get_count(box));
	STATUS_ADD(IMAP_STATUS_UIDNEXT, "UIDNEXT %u", mailbox_get_next_uid(box));
	STATUS_ADD(IMAP_STATUS_UIDVALIDITY, "UIDVALIDITY %u",
		   mailbox_get_uidvalidity(box));
	STATUS_ADD(IMAP_STATUS_UNSEEN, "UNSEEN %u", counts->unseen);
	STATUS_ADD(IMAP_STATUS_DELETED, "DELETED %u", counts->deleted);
	STATUS_ADD(IMAP_STATUS_SIZE, "SIZE %llu",
		   (unsigned long long)counts->size);
	STATUS_ADD(IMAP_STATUS_RECENT, "RECENT %u",
		   mailbox_get_recent_count(box));
	/* the same for every mailbox: the CAPABILITY's APPENDLIMIT */
	STATUS_ADD(IMAP_STATUS_APPENDLIMIT, "APPENDLIMIT %llu",
		   (unsigned long long)MIN(client->user->set->imap_max_append_size,
					   (uint64_t)UINT32_MAX));
#undef STATUS_ADD
	client_send_linef(client, "%s)", line);
	pool_unref(&pool);
}

int imap_status_send(struct client *client, const char *name,
		     enum imap_status_items items)
{
	struct mailbox *box = client->mailbox;
	struct status_counts counts;
	const char *error;
	int ret;

	if (box == NULL || strcmp(mailbox_get_name(box), name) != 0) {
		ret = mailbox_open(client->user->mail_root, name,
				   imap_mailbox_open_flags(client, true),
				   &box, &error);
		if (ret <= 0) {
			if (ret < 0)
				i_error("STATUS: opening mailbox failed: %s", error);
			return ret;
		}
	}
	ret = status_count(box, items, &counts);
	if (ret == 0)
		status_send_line(client, box, name, items, &counts);
	if (box != client->mailbox)
		mailbox_close(&box);
	return ret < 0 ? -1 : 1;
}
