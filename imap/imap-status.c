/* STATUS data items (imap-status.h). */
#include "imap-common.h"
#include "imap-status.h"
#include "imap-mailbox.h"
#include "mailbox-objectid.h"

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
	{ "DELETED-STORAGE", IMAP_STATUS_DELETED_STORAGE },
	{ "SIZE", IMAP_STATUS_SIZE },
	{ "RECENT", IMAP_STATUS_RECENT },
	{ "APPENDLIMIT", IMAP_STATUS_APPENDLIMIT },
	{ "HIGHESTMODSEQ", IMAP_STATUS_HIGHESTMODSEQ },
	{ "MAILBOXID", IMAP_STATUS_MAILBOXID },
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

static void status_send_line(struct client *client, const char *name,
			     enum imap_status_items items,
			     const struct mailbox_status *st,
			     const char *mailboxid)
{
	char line[CLIENT_REPLY_LINE_MAX];
	pool_t pool = pool_create("status", 1024);
	int len = snprintf(line, sizeof(line), "* STATUS %s (",
			   imap_mailbox_name_to_wire(client, pool, name));
	size_t pos = len < 0 ? 0 : MIN((size_t)len, sizeof(line) - 1);
	const char *sep = "";

#define STATUS_ADD(item, fmt, value) \
	if ((items & (item)) != 0 && pos < sizeof(line)) { \
		len = snprintf(line + pos, sizeof(line) - pos, "%s" fmt, sep, value); \
		pos += len < 0 ? 0 : (size_t)len; \
		sep = " "; \
	}
	STATUS_ADD(IMAP_STATUS_MESSAGES, "MESSAGES %u", st->messages);
	STATUS_ADD(IMAP_STATUS_UIDNEXT, "UIDNEXT %u", st->uidnext);
	STATUS_ADD(IMAP_STATUS_UIDVALIDITY, "UIDVALIDITY %u", st->uidvalidity);
	STATUS_ADD(IMAP_STATUS_UNSEEN, "UNSEEN %u", st->unseen);
	STATUS_ADD(IMAP_STATUS_DELETED, "DELETED %u", st->deleted);
	STATUS_ADD(IMAP_STATUS_SIZE, "SIZE %llu", (unsigned long long)st->size);
	/* the sum of the \Deleted messages' RFC822.SIZE, as RFC 9208 4.1.4
	   allows: the index has it, while the file sizes the quota counts
	   (smaller by the CRs a file lacks) would take a stat per message */
	STATUS_ADD(IMAP_STATUS_DELETED_STORAGE, "DELETED-STORAGE %llu",
		   (unsigned long long)st->deleted_size);
	STATUS_ADD(IMAP_STATUS_RECENT, "RECENT %u", st->recent);
	STATUS_ADD(IMAP_STATUS_HIGHESTMODSEQ, "HIGHESTMODSEQ %llu",
		   (unsigned long long)st->highest_modseq);
	/* the same for every mailbox: the CAPABILITY's APPENDLIMIT */
	STATUS_ADD(IMAP_STATUS_APPENDLIMIT, "APPENDLIMIT %llu",
		   (unsigned long long)MIN(client->user->set->imap_max_append_size,
					   (uint64_t)UINT32_MAX));
	STATUS_ADD(IMAP_STATUS_MAILBOXID, "MAILBOXID (%s)", mailboxid);
#undef STATUS_ADD
	client_send_linef(client, "%s)", line);
	pool_unref(&pool);
}

struct imap_status_cache {
	struct imap_user *user;
	struct mailbox_status_cache *handles;
	struct timeout *to_idle;
};

static void status_cache_idle(void *context)
{
	struct imap_status_cache *cache = context;

	cache->to_idle = NULL;
	if (mailbox_status_cache_expire(cache->handles,
			time(NULL) - IMAP_STATUS_CACHE_IDLE_SECS) > 0) {
		cache->to_idle = timeout_add(cache->user->ioloop,
			IMAP_STATUS_CACHE_IDLE_SECS * 1000,
			status_cache_idle, cache);
	}
}

static struct mailbox_status_cache *status_cache_get(struct imap_user *user)
{
	struct imap_status_cache *cache = user->status_cache;

	if (user->set->imap_status_cache_mailboxes == 0)
		return NULL;
	if (cache == NULL) {
		cache = i_malloc(sizeof(*cache));
		cache->user = user;
		cache->handles = mailbox_status_cache_init(
			user->set->imap_status_cache_mailboxes);
		user->status_cache = cache;
	}
	return cache->handles;
}

/* After a call that may have opened a handle: make sure idle ones close. */
static void status_cache_used(struct imap_user *user)
{
	struct imap_status_cache *cache = user->status_cache;

	if (cache != NULL && cache->to_idle == NULL &&
	    mailbox_status_cache_count(cache->handles) > 0) {
		cache->to_idle = timeout_add(user->ioloop,
			IMAP_STATUS_CACHE_IDLE_SECS * 1000,
			status_cache_idle, cache);
	}
}

void imap_status_cache_free(struct imap_status_cache **_cache)
{
	struct imap_status_cache *cache = *_cache;

	if (cache == NULL)
		return;
	*_cache = NULL;
	timeout_remove(&cache->to_idle);
	mailbox_status_cache_deinit(&cache->handles);
	i_free(cache);
}

/* RFC 8474 4.3: the folder's id file (mailbox-objectid.h). Returns 1,
   0 if the mailbox went away meanwhile, -1 on error. */
static int status_mailboxid(struct client *client, const char *name,
			    char id_r[MAILBOX_ID_LEN + 1], const char **error_r)
{
	char norm[MAILBOX_NAME_MAX + 1], path[PATH_MAX];

	if (mailbox_list_find_folder(client->user->mail_root, name, norm,
				     path) <= 0)
		return 0;
	return mailbox_id_get(path, id_r, error_r) < 0 ? -1 : 1;
}

int imap_status_send(struct client *client, const char *name,
		     enum imap_status_items items)
{
	struct mailbox *box = client->mailbox;
	enum mailbox_status_items mitems =
		(items & (IMAP_STATUS_SIZE | IMAP_STATUS_DELETED_STORAGE)) != 0 ?
		MAILBOX_STATUS_SIZE : 0;
	struct mailbox_status st;
	const char *error;
	int ret;

	if (box != NULL && strcmp(mailbox_get_name(box), name) == 0) {
		/* the selected mailbox: the session's own view */
		ret = mailbox_status_from_box(box, mitems, &st, &error) < 0 ?
			-1 : 1;
	} else {
		/* usually from the index alone (mailbox-status.c) */
		ret = mailbox_status_get_cached(status_cache_get(client->user),
				client->user->mail_root, name,
				imap_mailbox_open_flags(client, true),
				mitems, &st, &error);
		status_cache_used(client->user);
	}
	char mailboxid[MAILBOX_ID_LEN + 1] = "";
	if (ret > 0 && (items & IMAP_STATUS_MAILBOXID) != 0)
		ret = status_mailboxid(client, name, mailboxid, &error);
	if (ret < 0)
		i_error("STATUS: %s", error);
	else if (ret > 0)
		status_send_line(client, name, items, &st, mailboxid);
	return ret;
}
