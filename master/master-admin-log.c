/* The last ADMIN_LOG_RING_SIZE warnings and errors of master and its
   children (moatadm log), and the failed-login counter, fed by the log
   hook (log.h): every line master writes passes here once. Fixed
   memory: the ring is part of struct master_admin. */
#include "master-admin-private.h"

#include <time.h>

/* Lines at these levels are kept; a line without a known level (a
   sanitizer report of a child) is kept too. */
static bool admin_log_is_notable(const char *text, size_t len)
{
	static const char *const quiet[] = { "debug: ", "info: " };

	for (unsigned int i = 0; i < N_ELEMENTS(quiet); i++) {
		size_t qlen = strlen(quiet[i]);
		if (len >= qlen && memcmp(text, quiet[i], qlen) == 0)
			return false;
	}
	return len > 0;
}

/* auth's line for fail2ban (doc/fail2ban.md) is a stable interface:
   "auth[PID]: info: auth failed: ...". */
static bool admin_log_is_auth_failure(const char *prefix, const char *text,
				      size_t len)
{
	static const char marker[] = "info: auth failed: ";

	return strncmp(prefix, "auth[", 5) == 0 && len >= sizeof(marker) - 1 &&
		memcmp(text, marker, sizeof(marker) - 1) == 0;
}

static void admin_log_hook(void *context, const char *prefix,
			   const char *text, size_t len)
{
	struct master_admin *admin = context;

	if (admin_log_is_auth_failure(prefix, text, len))
		admin->stats.logins_failed++;
	if (!admin_log_is_notable(text, len))
		return;
	struct admin_log_entry *entry = &admin->ring[admin->ring_next];
	entry->time = time(NULL);
	/* log.c already replaced control bytes; %.*s cuts long lines. */
	snprintf(entry->line, sizeof(entry->line), "%s%.*s", prefix,
		 (int)MIN(len, (size_t)ADMIN_LOG_LINE_MAX), text);
	admin->ring_next = (admin->ring_next + 1) % ADMIN_LOG_RING_SIZE;
	if (admin->ring_count < ADMIN_LOG_RING_SIZE)
		admin->ring_count++;
}

void admin_log_init(struct master_admin *admin)
{
	log_set_hook(admin_log_hook, admin);
}

void admin_log_deinit(struct master_admin *admin ATTR_UNUSED)
{
	log_set_hook(NULL, NULL);
}

/* Oldest first, one ROW each: time (ISO 8601, UTC) and line. */
void admin_log_send(struct admin_conn *client)
{
	struct master_admin *admin = client->admin;
	unsigned int first = (admin->ring_next + ADMIN_LOG_RING_SIZE -
			      admin->ring_count) % ADMIN_LOG_RING_SIZE;

	for (unsigned int i = 0; i < admin->ring_count; i++) {
		const struct admin_log_entry *entry =
			&admin->ring[(first + i) % ADMIN_LOG_RING_SIZE];
		char when[32];
		struct tm tm;
		gmtime_r(&entry->time, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		admin_send_rowv(client, "time", when, "line", entry->line, NULL);
	}
}
